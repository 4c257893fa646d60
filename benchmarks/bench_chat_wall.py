"""Wall time of a chat run's scoring phase beside a bare aiohttp client, same server, same minute (issue 17, target 3).

One fake OpenAI-compatible server (``python -m evalglass.testing.fake_openai``, its own process) answers every call
in ``--latency`` seconds. Two clients make the same ``--calls`` chat completions at concurrency ``--concurrency``,
each a fresh process, in rotation (bare, run, bare, run, ...), so a busy phase of a shared machine hits both:

* ``bare``: ``bench_chat_cpu``'s bare client (``aiohttp.ClientSession.post``, ``response.json()``, a semaphore),
  timed from its first request to its last answer, its connections opened inside the clock as the run's are
  (``bare-cold``);
* ``run``: ``evalglass run`` on the same number of examples (a chat lane, one ``contains`` metric, call cache on and
  cold, artifacts written). Its **scoring phase** is the run's own figure: the progress reporter's last line,
  ``scored N examples in X s``, timed by the run from the moment its first example is started to the moment its
  last is written (``engine/produce/progress.py``; reading the config, the manifest, deciding and writing the report are
  outside it). The whole process's wall time is reported beside it.

Each condition is measured twice: on the machine as it is (``quiet``), and with a busy process beside it
(``busy``): a CPU burner (``while True: pass``, its own process, started by this benchmark) that takes a core for
itself, as another job on a CI runner would. The ratio is the median scoring phase over the median bare wall time.

    .venv/bin/python benchmarks/bench_chat_wall.py                      # 3000 calls, c=64, 50 ms, 3 rounds
    .venv/bin/python benchmarks/bench_chat_wall.py --latency 0.01       # the CPU-bound case (bare client saturated)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from bench_chat_cpu import measure_client
from bench_live_run import one_run, write_project
from fake_server import fake_server

#: Target 3: the scoring phase within 15 % of the bare client's wall time.
TARGET = 1.15


def measure_run(folder: Path) -> tuple[float, float]:
    """(scoring phase, whole process) wall seconds of one `evalglass run` with a cold call cache."""
    whole, phase = one_run(folder, [])
    if phase is None:
        raise SystemExit("evalglass run printed no scoring-phase line")
    return phase, whole


@contextmanager
def cpu_burner(on: bool) -> Iterator[None]:
    """A process that keeps one core busy for as long as the block runs (nothing when ``on`` is false)."""
    if not on:
        yield
        return
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # scheduled and spinning before the first measurement
        yield
    finally:
        burner.kill()
        burner.wait(timeout=10)


def measure(
    calls: int, concurrency: int, latency: float, rounds: int, conditions: list[str]
) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Per condition (``quiet``, ``busy``): the bare client's wall seconds, the run's scoring phase and the whole
    run's, one of each per round, in rotation."""
    found: dict[str, tuple[list[float], list[float], list[float]]] = {}
    with fake_server(latency) as base_url, tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_project(folder, base_url, calls, concurrency)
        for condition in conditions:
            bare: list[float] = []
            phase: list[float] = []
            whole: list[float] = []
            with cpu_burner(condition == "busy"):
                for _ in range(rounds):
                    bare.append(measure_client("bare-cold", base_url, calls, concurrency)[1])
                    scoring, total = measure_run(folder)
                    phase.append(scoring)
                    whole.append(total)
            found[condition] = (bare, phase, whole)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--conditions", default="quiet,busy", help="comma-separated: quiet, busy")
    args = parser.parse_args()

    ideal = args.calls * args.latency / args.concurrency
    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.2f}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {args.calls} calls, concurrency "
        f"{args.concurrency}, server latency {args.latency * 1000:g} ms (ideal {ideal:.2f} s), {args.rounds} rounds"
    )
    print("| condition | bare wall s (median, all) | run scoring phase s (median, all) | ratio | whole run s |")
    print("|---|---|---|---|---|")
    verdicts = []
    found = measure(args.calls, args.concurrency, args.latency, args.rounds, args.conditions.split(","))
    for condition, (bare, phase, whole) in found.items():
        ratio = statistics.median(phase) / statistics.median(bare)
        verdicts.append((condition, ratio))
        print(
            f"| {condition} | {statistics.median(bare):.2f} ({', '.join(f'{x:.2f}' for x in bare)}) | "
            f"{statistics.median(phase):.2f} ({', '.join(f'{x:.2f}' for x in phase)}) | **{ratio:.3f}** | "
            f"{statistics.median(whole):.2f} |"
        )
    for condition, ratio in verdicts:
        verdict = "within" if ratio <= TARGET else "NOT within"
        print(f"{condition}: scoring phase / bare = {ratio:.3f}, {verdict} the {TARGET:.2f} target")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
