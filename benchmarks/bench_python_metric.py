"""A recorded run scored by one ``python`` metric (``def score(output, reference)``, in its worker process): the CPU
of ``evalglass run`` and of every process it starts (the fork server and the metric's worker included: this process
is their subreaper, waits for them all, then reads ``RUSAGE_CHILDREN``), for two checkouts in rotation.

    python benchmarks/bench_python_metric.py --examples 10000 --rounds 8 --against /tmp/base/src

``--gated``: two metrics naming that function, each declared by a gate (proposed, not approved: the guard applies
all the same), so each has a worker of its own (before, they shared one).

``--against`` is another checkout's ``src`` folder (``git worktree add /tmp/base main``); without it only this
checkout is measured. Each round runs every checkout once, so a slow phase of a shared machine hits both; the
medians are printed, and whether the runs' scores.jsonl are byte-identical. Linux only (``prctl``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PR_SET_CHILD_SUBREAPER = 36
CONFIG = """\
version: 1
dataset: {name: bench, path: data.jsonl}
task: {type: recorded, field: output}
metrics:
  mine: {type: python, function: host.py:score, field: answer, reference: expected}
"""


GATED = """\
  other: {type: python, function: host.py:score, field: answer, reference: expected}
gates:
  mine: {metric: mine, proposed_threshold: 0.5}
  other: {metric: other, proposed_threshold: 0.5}
"""


def write_project(folder: Path, n: int, gated: bool = False) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "host.py").write_text("def score(output, reference):\n    return 1.0 if output == reference else 0.0\n")
    (folder / "evalglass.yaml").write_text(CONFIG + (GATED if gated else ""))
    (folder / "authority.yaml").write_text("version: 1\n")
    rng = random.Random(20261205)
    with (folder / "data.jsonl").open("w") as handle:
        for i in range(n):
            expected = f"answer {rng.randrange(100)}"
            got = expected if rng.random() < 0.8 else "wrong"
            handle.write(json.dumps({"id": f"ex-{i}", "expected": expected, "output": {"answer": got}}) + "\n")


def one_run(folder: Path, src: str) -> tuple[float, bytes]:
    """CPU seconds of one run with ``src`` first on the import path (every process it started included), and its
    scores."""
    shutil.rmtree(folder / "out", ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = [sys.executable, "-m", "evalglass", "run", "--no-progress", "--no-history", "--out", "out"]
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    while True:  # the fork server and its workers, orphaned to this process
        try:
            os.wait()
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{src}: exit {done.returncode}\n{done.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, (folder / "out" / "scores.jsonl").read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--against", help="another checkout's src folder, measured in rotation with this one")
    parser.add_argument("--work", type=Path, default=HERE / ".data" / "python-metric")
    parser.add_argument("--gated", action="store_true", help="two gated metrics naming the one function")
    args = parser.parse_args()
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    write_project(args.work, args.examples, args.gated)
    sources = [str(HERE.parent / "src"), *([args.against] if args.against else [])]
    cpu: dict[str, list[float]] = {src: [] for src in sources}
    scores: dict[str, bytes] = {}
    for _ in range(args.rounds):
        for src in sources:
            seconds, written = one_run(args.work, src)
            cpu[src].append(seconds)
            scores.setdefault(src, written)
    for src in sources:
        rounds = " ".join(f"{seconds:.3f}" for seconds in cpu[src])
        print(f"{src}: CPU median {statistics.median(cpu[src]):.3f} s ({rounds})")
    print(f"scores.jsonl identical: {len(set(scores.values())) == 1}; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
