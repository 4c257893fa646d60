"""A python lane end to end against its floor: `evalglass run` beside a loop that calls the same function (issue 17).

The workload (issue 17's targets 1 and 2): N examples, a python lane whose function returns a precomputed answer
(``sync``) or awaits ``asyncio.sleep(0)`` first (``async``), one ``exact_match`` metric. The floor is the least a
Python program does for the same answer: read the JSONL with orjson, call the function on each example's fields
(``asyncio.run`` over a loop that awaits each call, for the async function), compare with the reference, count.
It writes nothing, so the ratio is EvalGlass's whole cost (start-up, reading, the lane, scoring, the ordered
writes of scores.jsonl and outputs.jsonl, the decision, the artifacts) over bare work.

Every measured command is a fresh process; wall time, CPU (user + system, as the kernel accounts the reaped child)
and peak RSS come from ``wait4``. The floor and the run are measured in rotation (floor, run, floor, run, ...) so a
busy phase of a shared machine hits both, and each reports its best of ``--repeats``. The run's scorecard must
measure every example with the floor's exact-match mean, so a fast path that changed a score cannot produce a figure.

    .venv/bin/python benchmarks/bench_python_lane.py                          # sync and async, 100k and 1M
    .venv/bin/python benchmarks/bench_python_lane.py --sizes 20000 --kinds sync --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from outfolder import clear_run_folder

HERE = Path(__file__).resolve().parent
#: Examples in the run whose CPU time is subtracted to give the CPU per example (start-up, imports and the decision
#: cancel out), so that whether it grows with N shows.
SMALL = 1_000

FUNCTIONS = {
    "sync": "def answer(example):\n    return example['answer']\n",
    "async": (
        "import asyncio\n\n\nasync def answer(example):\n    await asyncio.sleep(0)\n    return example['answer']\n"
    ),
}

FLOOR = """\
import asyncio, inspect, sys
import orjson
sys.path.insert(0, {folder!r})
from app import answer

def main(path):
    hits = n = 0
    with open(path, "rb") as handle:
        for raw in handle:
            record = orjson.loads(raw)
            hits += answer(record) == record["expected"]
            n += 1
    print(hits / n)

async def amain(path):
    hits = n = 0
    with open(path, "rb") as handle:
        for raw in handle:
            record = orjson.loads(raw)
            hits += (await answer(record)) == record["expected"]
            n += 1
    print(hits / n)

if inspect.iscoroutinefunction(answer):
    asyncio.run(amain(sys.argv[1]))
else:
    main(sys.argv[1])
"""


@dataclass(frozen=True)
class Measurement:
    wall: float
    cpu: float
    peak_rss_mb: float
    stdout: str


def write_project(folder: Path, kind: str, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(FUNCTIONS[kind])
    config = {
        "dataset": {"name": "bench", "path": "data.jsonl"},
        "task": {"type": "python", "function": "app.py:answer"},
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
    }
    (folder / "evalglass.yaml").write_text(json.dumps(config))  # JSON is YAML
    (folder / "authority.yaml").write_text("")
    (folder / "floor.py").write_text(FLOOR.format(folder=str(folder)))
    with (folder / "data.jsonl").open("w") as handle:
        for i in range(n):
            expected = f"answer {i % 97}"
            got = expected if i % 5 else f"wrong {i % 13}"
            handle.write(json.dumps({"id": f"ex-{i}", "question": f"q {i}", "answer": got, "expected": expected}))
            handle.write("\n")


def run_child(argv: list[str], cwd: Path) -> Measurement:
    """``argv`` as a child: wall, CPU and peak RSS from ``wait4`` (stdout read first, stderr to a file)."""
    clear_run_folder(argv, cwd)
    with tempfile.TemporaryFile() as errors, tempfile.TemporaryFile() as output:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=output, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        errors.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{argv}: exit {proc.returncode}\n{errors.read().decode(errors='replace')[-3000:]}")
        return Measurement(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output.read().decode())


def one_case(folder: Path, n: int, repeats: int) -> tuple[Measurement, Measurement]:
    floor_argv = [sys.executable, "floor.py", "data.jsonl"]
    run_argv = [sys.executable, "-m", "evalglass", "run", "--format", "json", "--no-progress", "--no-history"]
    run_argv += ["--out", "out"]
    floors: list[Measurement] = []
    runs: list[Measurement] = []
    for _ in range(repeats):
        floors.append(run_child(floor_argv, folder))
        runs.append(run_child(run_argv, folder))
    floor = min(floors, key=lambda m: m.wall)
    run = min(runs, key=lambda m: m.wall)
    card = json.loads(run.stdout)
    population = card["metrics"][0]["population"]
    if population["included"] != n:
        raise SystemExit(f"not every example was measured: {population}")
    expected = float(floor.stdout.strip())
    found = card["metrics"][0]["estimate"]["point"]
    if abs(found - expected) > 1e-12:
        raise SystemExit(f"the run's exact-match mean {found} differs from the floor's {expected}")
    return floor, run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--kinds", nargs="+", choices=sorted(FUNCTIONS), default=["sync", "async"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M')} UTC, best of {args.repeats} in rotation"
    )
    print(
        "| examples | function | floor wall / CPU | run wall / CPU | peak RSS (run) | wall ratio | CPU ratio "
        f"| run CPU per example beyond {SMALL:,} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        small: dict[str, Measurement] = {}
        for kind in args.kinds:  # what a run costs before its examples do (start-up, imports, the decision)
            folder = Path(scratch) / f"{kind}-{SMALL}"
            write_project(folder, kind, SMALL)
            small[kind] = one_case(folder, SMALL, args.repeats)[1]
        for n in args.sizes:
            for kind in args.kinds:
                folder = Path(scratch) / f"{kind}-{n}"
                write_project(folder, kind, n)
                floor, run = one_case(folder, n, args.repeats)
                marginal = (run.cpu - small[kind].cpu) / (n - SMALL) * 1e6
                print(
                    f"| {n:,} | {kind} | {floor.wall:.2f} s / {floor.cpu:.2f} s | {run.wall:.2f} s / {run.cpu:.2f} s "
                    f"| {run.peak_rss_mb:.0f} MB | **{run.wall / floor.wall:.1f}×** | {run.cpu / floor.cpu:.1f}× "
                    f"| {marginal:.1f} µs |",
                    flush=True,
                )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
