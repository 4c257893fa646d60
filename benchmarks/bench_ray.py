"""Case 9: the Ray executor against the local one, through real `evalglass run` processes.

    .venv/bin/python benchmarks/bench_ray.py                # 2,000 CPU-bound examples, 2,000 I/O-bound, 2,000 no-op
    .venv/bin/python benchmarks/bench_ray.py --smoke        # small N, to keep the harness from rotting

A local Ray cluster is started for the benchmark (one head node offering one CPU per core, so one worker per core;
its own RAY_TMPDIR; stopped by its process group, never `ray stop`). Three python lanes, each scored by one builtin
metric, each run locally and on Ray:

* CPU-bound: ~20 ms of pure-Python work per example (calibrated here first). Locally the lane's threads share one
  GIL; on Ray each example is a task on a worker process. Target: a speed-up close to the number of cores.
* I/O-bound: an async lane awaiting 20 ms per example. Async calls stay on the driver's event loop (docs/cluster.md),
  so Ray must cost nothing here. Target: not more than 10 % slower than local.
* No-op: returns at once; what an example costs on the Ray path itself, in microseconds (the per-task overhead).

Every figure is a *marginal* time: a run of N examples minus a run of a few (twice the cores), divided by the
difference, each a fresh process, so what a run pays once (interpreter start, connecting to the cluster, starting
the job's worker processes, writing artifacts) is left out and what is compared is the per-example cost. A small N
(``--smoke``) leaves that one-off cost's noise spread over few examples: its figures keep the harness alive, they
are not measurements. CPU time is the `evalglass` process's (the driver), from `wait4`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

CPU_LANE = """\
LOOPS = {loops}

def answer(record):
    total = 0
    for i in range(LOOPS):
        total += i * i % 7
    return {{"n": record["n"], "total": total}}
"""

IO_LANE = """\
import asyncio

async def answer(record):
    await asyncio.sleep(0.02)
    return {"n": record["n"]}
"""

NOOP_LANE = """\
def answer(record):
    return {"n": record["n"]}
"""


def calibrate(target_s: float = 0.02) -> int:
    """Loop iterations of the CPU lane's body that take ``target_s`` of CPU on this machine (best of 5)."""
    loops = 300_000
    best = min(_timed(loops) for _ in range(5))
    return max(1000, int(loops * target_s / best))


def _timed(loops: int) -> float:
    """CPU seconds (not wall: on a loaded machine the wall clock also counts the time spent waiting for a core)."""
    started = time.process_time()
    total = 0
    for i in range(loops):
        total += i * i % 7
    return time.process_time() - started


def project(folder: Path, lane: str, examples: int, address: str | None, concurrency: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lane.py").write_text(lane)
    (folder / "data.jsonl").write_text("".join(json.dumps({"id": f"ex-{n}", "n": n}) + "\n" for n in range(examples)))
    (folder / "authority.yaml").write_text("version: 1\n")
    executor = f"executor: {{type: ray, address: '{address}'}}\n" if address else ""
    (folder / "evalglass.yaml").write_text(
        "version: 1\n"
        "dataset: {name: bench, path: data.jsonl}\n"
        f"task: {{type: python, function: lane.py:answer, concurrency: {concurrency}}}\n"
        f"concurrency: {{max_in_flight: {concurrency}}}\n"
        f"{executor}"
        "metrics:\n  has_n: {type: json_valid}\n"
    )
    return folder


def run(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one `evalglass run` (a fresh process)."""
    argv = [sys.executable, "-m", "evalglass", "run", "--no-progress", "--no-cache", "--out", "out"]
    shutil.rmtree(folder / "out", ignore_errors=True)
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"evalglass run failed in {folder}:\n{err.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def marginal(
    work: Path, name: str, lane: str, n: int, address: str | None, concurrency: int, env: dict[str, str], base: int
) -> tuple[float, float]:
    """(per-example wall s, per-example driver CPU s) of N examples over ``base`` examples (a run of ``base``
    examples already starts the worker processes a Ray job starts, so their start-up is not counted per example)."""
    few = run(project(work / f"{name}-{base}", lane, base, address, concurrency), env)
    many = run(project(work / f"{name}-{n}", lane, n, address, concurrency), env)
    return (many[0] - few[0]) / (n - base), (many[1] - few[1]) / (n - base)


@contextlib.contextmanager
def ray_cluster(cpus: int) -> Iterator[tuple[str, dict[str, str]]]:
    tmpdir = tempfile.mkdtemp(prefix="eg-bench-ray-", dir="/tmp")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": tmpdir}
    log = Path(tmpdir) / "head.log"
    with log.open("wb") as handle:
        head = subprocess.Popen(
            [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", f"--port={port}",
             "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--include-dashboard=false",
             "--disable-usage-stats"],
            stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while b"Ray runtime started" not in log.read_bytes():
            if head.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the Ray head did not start:\n{log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        yield f"127.0.0.1:{port}", env
    finally:
        for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                head.wait(timeout=wait)
                break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(tmpdir, ignore_errors=True)


#: Sizes of ``--smoke``: the harness kept alive, not a measurement (module docstring).
SMOKE = {"cpu": 60, "io": 300, "noop": 300}


def measure(examples: dict[str, int]) -> tuple[int, dict[str, tuple[float, float]]]:
    """The CPU lane's calibrated loop count, and per lane (``cpu``, ``io``, ``noop``) and executor (``local``,
    ``ray``), e.g. ``cpu-ray``: the marginal (wall, driver CPU) seconds per example over ``examples[lane]``."""
    cores = os.cpu_count() or 1
    loops = calibrate()
    lanes = {"cpu": (CPU_LANE.format(loops=loops), 32), "io": (IO_LANE, 64), "noop": (NOOP_LANE, 32)}
    found: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="eg-bench-") as tmp, ray_cluster(cores) as (address, env):
        for lane, (code, concurrency) in lanes.items():
            for where, at in (("local", None), ("ray", address)):
                name = f"{lane}-{where}"
                found[name] = marginal(Path(tmp), name, code, examples[lane], at, concurrency, env, 2 * cores)
    return loops, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-examples", type=int, default=2000)
    parser.add_argument("--io-examples", type=int, default=2000)
    parser.add_argument("--noop-examples", type=int, default=2000)
    parser.add_argument("--smoke", action="store_true", help="small N: 60 CPU-bound, 300 I/O-bound, 300 no-op")
    args = parser.parse_args(argv)
    if args.smoke:
        args.cpu_examples, args.io_examples, args.noop_examples = SMOKE["cpu"], SMOKE["io"], SMOKE["noop"]
    cores = os.cpu_count() or 1
    loops, found = measure({"cpu": args.cpu_examples, "io": args.io_examples, "noop": args.noop_examples})
    local_cpu, ray_cpu = found["cpu-local"], found["cpu-ray"]
    local_io, ray_io = found["io-local"], found["io-ray"]
    local_noop, ray_noop = found["noop-local"], found["noop-ray"]
    rows: list[str] = []
    speedup = local_cpu[0] / ray_cpu[0]
    io_ratio = ray_io[0] / local_io[0]
    rows.append(
        f"| {args.cpu_examples:,} | CPU-bound lane (~20 ms, {loops:,} loops) | speed-up close to {cores} cores | "
        f"**{speedup:.2f}×** (local {local_cpu[0] * 1e3:.1f} ms, Ray {ray_cpu[0] * 1e3:.1f} ms per example; "
        f"driver CPU {local_cpu[1] * 1e3:.1f} / {ray_cpu[1] * 1e3:.2f} ms) |"
    )
    rows.append(
        f"| {args.io_examples:,} | I/O-bound async lane (20 ms, 64 in flight) | Ray ≤ 1.10× local | "
        f"**{io_ratio:.2f}×** (local {local_io[0] * 1e6:.0f} µs, Ray {ray_io[0] * 1e6:.0f} µs per example) |"
    )
    rows.append(
        f"| {args.noop_examples:,} | per-task overhead (no-op lane) | — | "
        f"**{ray_noop[0] * 1e6:.0f} µs** wall per example on Ray ({ray_noop[1] * 1e6:.0f} µs driver CPU); "
        f"local {local_noop[0] * 1e6:.0f} µs ({local_noop[1] * 1e6:.0f} µs CPU) |"
    )
    print(f"{cores} cores, Ray head with {cores} CPUs (one worker per core)")
    print("| examples | case | target | figure |\n|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
