"""A run with 4 variants against a run with 1, same examples, same fake server (issue 33's target: at most 4.4x,
wall and CPU).

One fake OpenAI-compatible server (``python -m evalglass.testing.fake_openai``, its own process, so its CPU is not
counted) answers every call in ``--latency`` seconds. Each round runs the whole command, ``evalglass run`` on
``--examples`` examples (a chat lane, one ``contains`` metric, ``--no-cache`` so every call is made, artifacts
written), once with one variant and once with four (four models), in rotation (1, 4, 1, 4, ...), so a busy phase
of the shared machine hits both. Wall time is the command's; CPU is the child's user + system time
(``resource.getrusage(RUSAGE_CHILDREN)`` around it: the supervisor parent and the command child, every thread).

    .venv/bin/python benchmarks/bench_variants.py                     # 400 examples, 10 ms, 5 rounds
    .venv/bin/python benchmarks/bench_variants.py --examples 100 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from fake_server import fake_server
from outfolder import clear_run_folder

TARGET = 4.4
MODELS = ("model-a", "model-b", "model-c", "model-d")


def write_project(folder: Path, base_url: str, examples: int, variants: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(json.dumps({"id": f"q{n}", "question": f"question {n}"}) + "\n" for n in range(examples))
    (folder / "data.jsonl").write_text(rows)
    (folder / "authority.yaml").write_text("version: 1\n")
    config = {
        "version": 1,
        "dataset": {"name": "bench", "path": "data.jsonl"},
        "task": {
            "type": "chat",
            "base_url": base_url,
            "model": MODELS[0],
            "api_key_env": None,
            "prompt": "{{ question }}",
        },
        "variants": {name: {"model": name} for name in MODELS[:variants]},
        "metrics": {"echoed": {"type": "contains", "reference": "question"}},
    }
    path = folder / f"evalglass-{variants}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def measure(folder: Path, config: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `evalglass run` of ``config``."""
    argv = [
        "run",
        "--config",
        str(config),
        "--no-cache",
        "--no-history",
        "--no-progress",
        "--format",
        "json",
        "--out",
        "out",
    ]
    clear_run_folder(argv, folder)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalglass", *argv], cwd=folder, capture_output=True, text=True, timeout=900
    )
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with fake_server(args.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        one = write_project(folder, base_url, args.examples, 1)
        four = write_project(folder, base_url, args.examples, 4)
        measure(folder, one)  # warm the file cache and the interpreter's pyc files, outside the figures
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(args.rounds):
            wall_one, cpu_one = measure(folder, one)
            wall_four, cpu_four = measure(folder, four)
            walls.append(wall_four / wall_one)
            cpus.append(cpu_four / cpu_one)
            print(
                f"1 variant {wall_one:.2f} s wall {cpu_one:.2f} s CPU | 4 variants {wall_four:.2f} s wall "
                f"{cpu_four:.2f} s CPU | ratio wall {walls[-1]:.2f} CPU {cpus[-1]:.2f}",
                flush=True,
            )
    load = os.getloadavg()
    wall_median, cpu_median = statistics.median(walls), statistics.median(cpus)
    verdict = "within" if max(wall_median, cpu_median) <= TARGET else "NOT within"
    print(
        f"{args.examples} examples, {args.latency * 1000:.0f} ms latency, {args.rounds} rounds, load "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}: median ratio wall {wall_median:.2f}, CPU {cpu_median:.2f} "
        f"({verdict} the {TARGET} target)"
    )


if __name__ == "__main__":
    main()
