"""End to end through the CLI: `evalglass run` with a chat lane over N examples at concurrency C, server latency L.

Issue 5's target: with a server that answers in 50 ms, 5,000 calls at concurrency 64 complete within 15 % of the
ideal time (calls x latency / concurrency = 3.906 s). This measures the whole command a user runs, not only the
lane: process start, config and dataset loading, the manifest, the live pipeline (one call per example through the
executor, the retrier, the cache and the chat client; a builtin metric per example; ordered writes to
scores.jsonl), the decision, the artifacts. The call cache is on (every call is a miss and is written), as in a
real first run; `--no-cache` measures without it.

The wall time includes the fixed cost of starting the command (about a second on a 2-core machine, mostly imports:
the openai SDK, numpy/scipy, pydantic models), which does not grow with the dataset; the "scoring phase" figure is
the live pipeline alone, as the run's own progress summary reports it. The fake server runs in its own process so
that its CPU does not compete with the run's event loop.

    .venv/bin/python benchmarks/bench_live_run.py                    # 5000 examples, c=64, 50 ms, 3 repeats
    .venv/bin/python benchmarks/bench_live_run.py --examples 500 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fake_server import fake_server, report
from outfolder import clear_run_folder


def write_project(folder: Path, base_url: str, examples: int, concurrency: int) -> None:
    config = {
        "dataset": {"name": "bench", "path": "data.jsonl"},
        "task": {
            "type": "chat",
            "base_url": base_url,
            "model": "bench",
            "api_key_env": None,
            "prompt": "Question {{ n }}: {{ text }}",
        },
        "concurrency": {"max_in_flight": concurrency},
        "metrics": {"answered": {"type": "contains", "reference": "text"}},
    }
    (folder / "evalglass.yaml").write_text(json.dumps(config))  # JSON is YAML
    (folder / "authority.yaml").write_text("")
    with (folder / "data.jsonl").open("w") as handle:
        for n in range(examples):
            handle.write(json.dumps({"id": f"ex{n}", "n": n, "text": "what is the answer?"}) + "\n")


def one_run(folder: Path, extra: list[str]) -> tuple[float, float | None]:
    for stale in folder.glob(".evalglass-cache.sqlite*"):
        stale.unlink()
    argv = [sys.executable, "-m", "evalglass", "run", "--format", "json", "--out", "out", "--no-history", *extra]
    clear_run_folder(argv, folder)
    started = time.perf_counter()
    proc = subprocess.run(
        argv,
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"evalglass run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    card = json.loads(proc.stdout)
    population = card["metrics"][0]["population"]
    if population["included"] != card["dataset"]["examples"]:
        raise SystemExit(f"not every example was measured: {population}")
    # The plain progress reporter (stderr is not a terminal here) ends with the scoring phase's own duration.
    phase = re.search(r"scored \d+ examples in ([0-9.]+)s", proc.stderr)
    return wall, float(phase.group(1)) if phase else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cache", action="store_true", help="run with --no-cache")
    args = parser.parse_args()

    with fake_server(args.latency) as base_url:
        ideal = args.examples * args.latency / args.concurrency
        print(
            f"evalglass run: {args.examples} examples (one chat call each), concurrency {args.concurrency}, server "
            f"latency {args.latency * 1000:g} ms, cache {'off' if args.no_cache else 'on (cold)'}; ideal {ideal:.3f} s"
        )
        ratios = []
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            write_project(folder, base_url, args.examples, args.concurrency)
            for attempt in range(1, args.repeat + 1):
                wall, phase = one_run(folder, ["--no-cache"] if args.no_cache else [])
                ratios.append(wall / ideal)
                scoring = f"  (scoring phase {phase:.2f} s, ratio {phase / ideal:.3f})" if phase else ""
                print(f"  run {attempt}: wall {wall:.3f} s  ratio {wall / ideal:.3f}{scoring}")
        report(ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
