"""What the check every reader of a run makes (issue 26: ``engine.decide.consistency.load_checked``) costs.

    python benchmarks/bench_render_check.py --before /work/main/src     # `view` before/after, in rotation
    python benchmarks/bench_render_check.py --gates 200 --repeats 1      # a smoke size

Two finished runs are written once (untimed): case 2 of ``run.py`` at 100,000 examples (three builtin metrics, one
active gate), and a suite of --gates metrics with one active gate each over 20 examples. Then:

- ``evalglass view`` of each run, wall and CPU (the child's user + system time), best of --repeats in rotation with
  the same command run from the source tree given as --before (the code without the check);
- in this process, best of --repeats: loading the two files as ``view`` did before the check (the scorecard, the run
  record) against ``load_checked`` (the same two files, the digests and every gate decided again), CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_preflight import TYPES  # noqa: E402
from run import activate, compile_bytecode, generate, machine, project, rotated  # noqa: E402

COMPILE = "import compileall, evalglass, os; compileall.compile_dir(os.path.dirname(evalglass.__file__), quiet=1)"


def large_run(workdir: Path, evalglass: list[str]) -> Path:
    folder = project(workdir, generate(100_000), gated=True)
    activate(folder, evalglass)
    subprocess.run([*evalglass, "run", "--out", "out", "--no-history"], cwd=folder, check=False, capture_output=True)
    return folder / "out"


def many_gates_run(workdir: Path, evalglass: list[str], gates: int) -> Path:
    folder = workdir / "gates"
    folder.mkdir(parents=True, exist_ok=True)
    dataset = generate(20)  # report.md reads the scores once per gate (failing.gate_examples): kept small
    metrics = {f"m{i:04d}": {**TYPES[i % 4]} for i in range(gates)}
    config = {
        "version": 1,
        "dataset": {"name": "bench", "path": str(dataset)},
        "task": {"type": "recorded", "field": "output"},
        "metrics": metrics,
        "gates": {f"g{i:04d}": {"metric": f"m{i:04d}", "proposed_threshold": 0.5} for i in range(gates)},
    }
    (folder / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "authority.yaml").write_text("version: 1\n")
    probe = subprocess.run(
        [*evalglass, "preflight", "--format", "json"], cwd=folder, capture_output=True, text=True, check=False
    )
    found = json.loads(probe.stdout)
    entries = {gate["name"]: gate["fingerprint"] for gate in found["gates"]}
    ledger = {
        "version": 1,
        "gates": {name: {"active": True, "threshold": 0.5, "fingerprint": value} for name, value in entries.items()},
        "datasets": {"bench": {"validated_gold": True, "fingerprint": found["dataset"]["fingerprint"] or ""}},
    }
    (folder / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))
    subprocess.run([*evalglass, "run", "--out", "out", "--no-history"], cwd=folder, check=False, capture_output=True)
    card = json.loads((folder / "out" / "scorecard.json").read_text())
    assert len(card["decision"]["gates"]) == gates and all(gate["active"] for gate in card["decision"]["gates"])
    return folder / "out"


def in_process(folder: Path, repeats: int) -> tuple[float, float]:
    """CPU seconds (best of ``repeats``): loading as before (scorecard, run record, ledger-snapshot comparison),
    and ``load_checked``."""
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.engine.runs.artifacts import load_runrecord, load_scorecard

    load_checked(folder)  # warm: models built, modules imported

    def before() -> None:
        load_scorecard(folder)
        load_runrecord(folder)

    def after() -> None:
        load_checked(folder)

    timings: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(repeats):
        for name, work in (("before", before), ("after", after)):
            start = time.process_time()
            work()
            timings[name].append(time.process_time() - start)
    return min(timings["before"]), min(timings["after"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gates", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="A source tree (its src/) without the check, for `view` before.")
    args = parser.parse_args()
    python = sys.executable
    compile_bytecode(python)
    evalglass = [python, "-m", "evalglass"]
    workdir = Path(tempfile.mkdtemp(prefix="bench-render-check-"))
    try:
        runs = {"100,000 examples, 1 gate": large_run(workdir, evalglass)}
        runs[f"20 examples, {args.gates:,} gates"] = many_gates_run(workdir, evalglass, args.gates)
        if args.before is not None:
            subprocess.run(["env", f"PYTHONPATH={args.before}", python, "-c", COMPILE], check=True)
        print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f} at the start")
        print("| run | command | wall | CPU | peak RSS |")
        print("|---|---|---|---|---|")
        for label, folder in runs.items():
            view = ["view", str(folder)]
            commands: list[tuple[str, list[str], Path, set[int]]] = [("after", [*evalglass, *view], workdir, {0})]
            if args.before is not None:  # `env` execs the interpreter: the measured process is the same one
                before = ["env", f"PYTHONPATH={args.before}", *evalglass, *view]
                commands.insert(0, ("before", before, workdir, {0}))
            found = rotated(args.repeats, commands)
            for name, measured in found.items():
                wall, cpu, rss = measured.seconds, measured.cpu_seconds, measured.peak_rss_mb
                print(f"| {label} | view ({name}) | {wall:.3f} s | {cpu:.3f} s | {rss:.0f} MB |")
            old, new = in_process(folder, args.repeats)
            print(
                f"| {label} | in process: load before / load_checked | | {old * 1000:.1f} ms / {new * 1000:.1f} ms | |"
            )
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
