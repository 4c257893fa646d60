"""A command lane's per-call overhead beside a bare ``subprocess.run`` loop (issue 17, target 4: reported).

The command is ``cat`` (the example's JSON on stdin comes back on stdout: the least a command can do), one call per
example, one at a time (``concurrency: 1``, so the run does what the loop does, call after call). The bare loop is
the least a Python program does for the same: ``subprocess.run(["cat"], input=line, capture_output=True)`` per
dataset line, the output parsed as JSON. Each is measured at N and 2N examples as a fresh process (wall time and
CPU from ``wait4``, which counts the commands it reaped); the difference over the N extra calls is the *marginal*
cost per call, so start-up (imports, config, the decision) cancels out. Rounds run in rotation (bare, lane, ...).

    .venv/bin/python benchmarks/bench_command_lane.py                 # 500 calls, 3 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_python_lane import run_child

BARE = """\
import subprocess, sys
import orjson
n = 0
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        done = subprocess.run(["cat"], input=line, capture_output=True, check=True)
        n += orjson.loads(done.stdout)["n"] >= 0
print(n)
"""


def write_project(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "dataset": {"name": "bench", "path": "data.jsonl"},
        "task": {"type": "command", "argv": ["cat"], "output": "json", "concurrency": 1},
        "metrics": {"answered": {"type": "exact_match", "field": "n", "reference": "n"}},
    }
    (folder / "evalglass.yaml").write_text(json.dumps(config))
    (folder / "authority.yaml").write_text("")
    (folder / "bare.py").write_text(BARE)
    with (folder / "data.jsonl").open("w") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": f"ex-{i}", "n": i}) + "\n")


def measure(calls: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Per client (``bare``, ``lane``): the marginal (wall, CPU) seconds per call of each round, in rotation."""
    run_argv = [sys.executable, "-m", "evalglass", "run", "--format", "json", "--no-progress", "--no-history"]
    run_argv += ["--out", "out"]
    marginal: dict[str, list[tuple[float, float]]] = {"bare": [], "lane": []}
    with tempfile.TemporaryDirectory() as scratch:
        small, large = Path(scratch) / "small", Path(scratch) / "large"
        write_project(small, calls)
        write_project(large, 2 * calls)
        for _ in range(rounds):
            for name in marginal:
                argv = [sys.executable, "bare.py", "data.jsonl"] if name == "bare" else run_argv
                one, two = run_child(argv, small), run_child(argv, large)
                marginal[name].append(((two.wall - one.wall) / calls, (two.cpu - one.cpu) / calls))
    return marginal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d %H:%M')} UTC; {args.calls} extra calls, "
        f"{args.rounds} rounds in rotation"
    )
    marginal = measure(args.calls, args.rounds)
    print("| client | wall ms per call (median) | CPU ms per call (median, with the command's own) |")
    print("|---|---|---|")
    for name, figures in marginal.items():
        wall = statistics.median(f[0] for f in figures) * 1000
        cpu = statistics.median(f[1] for f in figures) * 1000
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")
    bare_wall = statistics.median(f[0] for f in marginal["bare"])
    lane_wall = statistics.median(f[0] for f in marginal["lane"])
    print(
        f"lane overhead per call: {(lane_wall - bare_wall) * 1e6:.0f} µs wall ({lane_wall / bare_wall:.2f}x the loop)"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
