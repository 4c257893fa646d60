"""CPU per 1,000 chat calls: EvalGlass's live path beside a bare aiohttp client, same loopback server, same minute.

Issue 11 measured ≈ 0.5 ms of CPU per call on EvalGlass's event loop against 0.05 ms for a bare aiohttp client. This
benchmark reports that figure so that issue 17 (which will cut it) has a before and after. It measures, never
optimises.

One fake OpenAI-compatible server (``python -m evalglass.testing.fake_openai``, its own process, so its CPU is not
counted) answers every call in ``--latency`` seconds. Each measurement is a fresh child process that sends
``--calls`` chat completions at concurrency ``--concurrency`` and reports the CPU (user + system, every thread of
the process, ``time.process_time``) and wall time of the calls alone: imports, set-up and the first connection are
outside the clock for every client alike. The clients, run in rotation (bare, lane, bare, lane, …) so a busy phase
of a shared machine hits both:

* ``bare``: ``aiohttp.ClientSession`` posting the request JSON and reading ``choices[0].message.content``, an
  ``asyncio.Semaphore`` for the concurrency. The least work a client can do.
* ``lane``: EvalGlass's ``chat`` lane as a run drives it: Jinja2 prompt, request fingerprint and cache key, the
  retrier, ``AsyncioExecutor.submit``, ``ChatClient`` (the openai SDK's headers, aiohttp's pool). No cache.

Then, separately, the whole command: ``evalglass run`` (call cache on, one ``contains`` metric, artifacts written)
on ``--calls`` and on twice as many examples, as child processes whose CPU the kernel reports (``wait4``). The
difference divided by the extra examples is the **marginal** CPU per example of the live pipeline (the lane, the
cache write, the metric, the ordered writes, outputs.jsonl), with start-up and the decision cancelled out.

    .venv/bin/python benchmarks/bench_chat_cpu.py                       # 2000 calls, c=64, 10 ms, 5 rounds
    .venv/bin/python benchmarks/bench_chat_cpu.py --calls 500 --rounds 1 --no-run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench_live_run import write_project
from fake_server import fake_server

PROMPT = "Question {n}: what is the answer?"


# --------------------------------------------------------------------------------------------- the two clients
async def _bare(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    import aiohttp

    url = base_url.rstrip("/") + "/chat/completions"
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(n: int) -> str:
            body = {"model": "bench", "messages": [{"role": "user", "content": PROMPT.format(n=n)}]}
            async with gate, session.post(url, json=body) as response:
                response.raise_for_status()
                return str((await response.json())["choices"][0]["message"]["content"])

        await one(-1)  # the first connection, outside the clock as for the lane
        cpu, wall = time.process_time(), time.perf_counter()
        answers = await asyncio.gather(*(one(n) for n in range(calls)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if len(answers) != calls or not all(answers):
        raise SystemExit("bare client: an answer is missing")
    return cpu, wall


async def _lane(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    from pydantic import TypeAdapter

    from evalglass.lanes.executor import AsyncioExecutor
    from evalglass.lanes.specs import TaskSpec
    from evalglass.lanes.task import LaneOutput, build_lane

    spec = TypeAdapter(TaskSpec).validate_python(
        {
            "type": "chat",
            "base_url": base_url,
            "model": "bench",
            "api_key_env": None,
            "prompt": "Question {{ n }}: what is the answer?",
        }
    )
    executor = AsyncioExecutor(concurrency)
    lane = build_lane(spec, base_dir=Path.cwd(), executor=executor, cache=None)
    await lane.produce("warm", {"n": -1}, 0)  # the first connection, outside the clock as for the bare client
    jobs = [(f"ex{n}", {"n": n}, 0) for n in range(calls)]
    cpu, wall = time.process_time(), time.perf_counter()
    outcomes = await executor.run(jobs, lambda job: lane.produce(*job))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await lane.aclose()
    await executor.aclose()
    failed = [outcome for outcome in outcomes if not isinstance(outcome, LaneOutput)]
    if failed:
        raise SystemExit(f"lane: {len(failed)} calls failed, e.g. {failed[0]}")
    return cpu, wall


CLIENTS = {"bare": _bare, "lane": _lane}


def _child(client: str, base_url: str, calls: int, concurrency: int) -> None:
    cpu, wall = asyncio.run(CLIENTS[client](base_url, calls, concurrency))
    print(json.dumps({"cpu": cpu, "wall": wall}))


def measure_client(client: str, base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    command = [sys.executable, __file__, "--child", client, "--url", base_url]
    proc = subprocess.run(
        [*command, "--calls", str(calls), "--concurrency", str(concurrency)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{client} failed: {proc.stderr[-2000:]}")
    figures = json.loads(proc.stdout.splitlines()[-1])
    return figures["cpu"], figures["wall"]


# --------------------------------------------------------------------------------------------- the whole command
def run_cpu(folder: Path, extra: tuple[str, ...] = ()) -> tuple[float, float]:
    """CPU (user + system, as the kernel accounts the reaped child) and wall time of one cold `evalglass run`."""
    for stale in folder.glob(".evalglass-cache.sqlite*"):
        stale.unlink()
    before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalglass", "run", "--format", "json", "--no-progress", "--out", "out", *extra],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu() - before
    if proc.returncode != 0:
        raise SystemExit(f"evalglass run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    card = json.loads(proc.stdout)
    if card["metrics"][0]["population"]["included"] != card["dataset"]["examples"]:
        raise SystemExit("not every example was measured")
    return cpu, wall


def _children_cpu() -> float:
    """User + system CPU of every reaped child so far (the server is reaped only at the end)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------------------------- report
def per_thousand(cpu: float, calls: int) -> float:
    return cpu / calls * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-run", action="store_true", help="only the two clients, not `evalglass run`")
    parser.add_argument("--run-no-cache", action="store_true", help="measure `evalglass run` with --no-cache too")
    parser.add_argument("--child", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.url, args.calls, args.concurrency)
        return 0

    print(
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {args.calls} calls per "
        f"measurement, concurrency {args.concurrency}, server latency {args.latency * 1000:g} ms, {args.rounds} rounds"
    )
    cpu: dict[str, list[float]] = {name: [] for name in CLIENTS}
    wall: dict[str, list[float]] = {name: [] for name in CLIENTS}
    with fake_server(args.latency) as base_url:
        started = time.monotonic()
        for _ in range(args.rounds):
            for name in CLIENTS:
                used, took = measure_client(name, base_url, args.calls, args.concurrency)
                cpu[name].append(per_thousand(used, args.calls))
                wall[name].append(took)
        print(f"clients measured in rotation within {time.monotonic() - started:.0f} s")
        print("| client | CPU s per 1,000 calls (median, best) | wall s per run (median) |")
        print("|---|---|---|")
        for name in CLIENTS:
            print(
                f"| {name} | {statistics.median(cpu[name]):.3f}, {min(cpu[name]):.3f} | "
                f"{statistics.median(wall[name]):.2f} |"
            )
        ratio = statistics.median(cpu["lane"]) / statistics.median(cpu["bare"])
        print(f"lane / bare CPU (medians): {ratio:.1f}x")

        if not args.no_run:
            with tempfile.TemporaryDirectory() as scratch:
                small, large = Path(scratch) / "small", Path(scratch) / "large"
                small.mkdir(parents=True, exist_ok=True)
                large.mkdir(parents=True, exist_ok=True)
                write_project(small, base_url, args.calls, args.concurrency)
                write_project(large, base_url, 2 * args.calls, args.concurrency)
                variants = [("cache on", ())] + ([("--no-cache", ("--no-cache",))] if args.run_no_cache else [])
                for label, extra in variants:
                    marginal: list[float] = []
                    for _ in range(args.rounds):
                        small_cpu, _ = run_cpu(small, extra)
                        large_cpu, _ = run_cpu(large, extra)
                        marginal.append(per_thousand(large_cpu - small_cpu, args.calls))
                    print(
                        f"evalglass run, marginal CPU s per 1,000 examples (one chat call each, {label}): median "
                        f"{statistics.median(marginal):.3f}, best {min(marginal):.3f} "
                        f"({statistics.median(marginal) / statistics.median(cpu['bare']):.1f}x the bare client)"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
