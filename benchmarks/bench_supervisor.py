"""What the supervisor costs (issue 26): start-up and per example, this checkout against an earlier one, in rotation.

    git archive main src | tar -x -C /tmp/before      # the earlier code, once
    python benchmarks/bench_supervisor.py --before /tmp/before/src --repeats 15

Every case runs as ``python -m evalglass ...`` twice per round, once with ``PYTHONPATH`` on the earlier ``src/``
(``--before``) and once on this checkout's, alternating, so a slow phase of a shared machine hits both alike; both
trees are compiled to bytecode first. Wall time, CPU (user + system of the process and what it waited for, as the
kernel accounts the reaped child: the supervisor's parent and its child together) and peak RSS come from
``wait4``. Each case reports the median and the best of its rounds, and after/before as the ratio of medians.

Cases: ``run --example quickstart`` and ``preflight`` of the same config (start-up: what every command pays);
a recorded run of ``--examples`` lines with three builtin metrics (``benchmarks/run.py``'s case 1, beside its
floor); a python lane returning a precomputed answer over ``--examples`` lines (``bench_python_lane.py``'s sync
case, beside its floor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_python_lane import write_project  # noqa: E402
from run import Measurement, generate, measure, project  # noqa: E402

SRC = HERE.parent / "src"


@dataclass(frozen=True)
class Case:
    label: str
    argv: list[str]
    cwd: Path
    #: Whether the case runs EvalGlass (measured before and after) or is a floor (measured once per round).
    evalglass: bool = True


def measured(label: str, argv: list[str], cwd: Path, pythonpath: str | None) -> Measurement:
    """``run.measure`` of ``argv`` with ``PYTHONPATH`` set to ``pythonpath`` (None: as this process has it)."""
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath
    try:
        return measure(label, argv, cwd, {0, 1})
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def compile_tree(src: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "evalglass")], check=True)


def quickstart_config(pythonpath: str) -> str:
    # The package's own folder: the same for the tree measured before and after (neither's functions are called).
    script = (
        "import evalglass, pathlib; "
        "print(pathlib.Path(evalglass.__file__).parent / 'examples' / 'quickstart' / 'evalglass.yaml')"
    )
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="the earlier code's src/ folder")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--skip", nargs="*", default=[], help="case labels to leave out")
    args = parser.parse_args()
    before, after = str(args.before.resolve()), str(SRC.resolve())
    for tree in (args.before, SRC):
        compile_tree(tree)
    evalglass = [sys.executable, "-m", "evalglass"]
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="evalglass-supervisor-") as tmp:
        work = Path(tmp)
        quick = work / "quickstart"
        quick.mkdir()
        dataset = generate(args.examples)
        recorded = project(work / "recorded", dataset, gated=False)
        lane = work / "lane"
        write_project(lane, "sync", args.examples)
        cases = [
            Case("run --example quickstart", [*evalglass, "run", "--example", "quickstart"], quick),
            Case("preflight (quickstart)", [*evalglass, "preflight", "--config", quickstart_config(after)], quick),
            Case(
                f"recorded run, {args.examples:,} lines", [*evalglass, "run", "--out", "out", "--no-history"], recorded
            ),
            Case("floor of the recorded run", [sys.executable, str(HERE / "floor.py"), str(dataset)], work, False),
            Case(
                f"python lane, {args.examples:,} calls",
                [*evalglass, "run", "--out", "out", "--no-history", "--no-progress"],
                lane,
            ),
            Case("floor of the python lane", [sys.executable, "floor.py", "data.jsonl"], lane, False),
        ]
        cases = [case for case in cases if case.label not in args.skip]
        found: dict[tuple[str, str], list[Measurement]] = {}
        for round_number in range(args.repeats):
            for case in cases:
                sides = (("before", before), ("after", after)) if case.evalglass else (("floor", None),)
                if round_number % 2:  # which side goes first alternates too
                    sides = tuple(reversed(sides))
                for side, path in sides:
                    found.setdefault((case.label, side), []).append(measured(case.label, case.argv, case.cwd, path))
    load_end = os.getloadavg()
    print(
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.repeats} rounds in rotation, "
        f"load average {load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("| case | side | wall median (best) | CPU median (best) | peak RSS | after/before: wall, CPU (medians) |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        sides = ("before", "after") if case.evalglass else ("floor",)
        medians: dict[str, tuple[float, float]] = {}
        for side in sides:
            runs = found[(case.label, side)]
            wall = statistics.median(m.seconds for m in runs)
            cpu = statistics.median(m.cpu_seconds for m in runs)
            medians[side] = (wall, cpu)
            ratio = ""
            if side == "after":
                ratio = f"{wall / medians['before'][0]:.3f}×, {cpu / medians['before'][1]:.3f}×"
            print(
                f"| {case.label} | {side} | {wall:.3f} s ({min(m.seconds for m in runs):.3f} s) | "
                f"{cpu:.3f} s ({min(m.cpu_seconds for m in runs):.3f} s) | {max(m.peak_rss_mb for m in runs):.0f} MB "
                f"| {ratio} |"
            )


if __name__ == "__main__":
    main()
