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

Then the whole command, in the same rotation: ``evalglass run`` (a chat lane, one ``contains`` metric, artifacts
written; call cache on and cold, and with ``--run-no-cache`` also ``--no-cache``) on ``--calls`` examples, through
``phase_cpu.py``, which records the CPU of the run's **scoring phase** alone (every thread of the process: the event
loop, the call cache's writer; from the first example started to the last written): the lane plus the call cache,
the metric, the ordered writes of scores.jsonl and outputs.jsonl and the progress counters, without start-up or the
decision. (An earlier version took the difference of two whole runs of N and 2N examples; on a shared machine that
difference was noisier than the figure.)

    .venv/bin/python benchmarks/bench_chat_cpu.py --run-no-cache        # 2000 calls, c=64, 10 ms, 5 rounds
    .venv/bin/python benchmarks/bench_chat_cpu.py --calls 500 --rounds 1 --no-run
    .venv/bin/python benchmarks/bench_chat_cpu.py --run-warm             # and a rerun on the warm cache
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
from outfolder import clear_run_folder

PROMPT = "Question {n}: what is the answer?"


# --------------------------------------------------------------------------------------------- the two clients
async def _bare(base_url: str, calls: int, concurrency: int, *, warm: bool = True) -> tuple[float, float]:
    """``warm``: the first connection is opened before the clock starts (as for the lane); else every connection
    is opened inside it (as a run's scoring phase opens them: ``bench_chat_wall.py``)."""
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

        if warm:
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
    from evalglass.lanes.ports import LaneOutput
    from evalglass.lanes.registry import build_lane
    from evalglass.lanes.specs import TaskSpec

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


async def _bare_cold(base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    return await _bare(base_url, calls, concurrency, warm=False)


CLIENTS = {"bare": _bare, "lane": _lane}
#: Measured by other benchmarks through :func:`measure_client`, not in this one's rotation.
OTHER_CLIENTS = {"bare-cold": _bare_cold}


def _child(client: str, base_url: str, calls: int, concurrency: int) -> None:
    cpu, wall = asyncio.run({**CLIENTS, **OTHER_CLIENTS}[client](base_url, calls, concurrency))
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
def run_phase(folder: Path, extra: tuple[str, ...] = (), *, warm: bool = False) -> tuple[float, float]:
    """CPU and wall time of the scoring phase of one `evalglass run` (``phase_cpu.py``) with a cold call cache, or
    with ``warm`` the cache as the run before it left it (every call a hit, each entry's MAC checked)."""
    for stale in () if warm else folder.glob(".evalglass-cache.sqlite*"):
        stale.unlink()
    figures = folder / "phase.json"
    command = [sys.executable, str(Path(__file__).with_name("phase_cpu.py")), str(figures), "run"]
    argv = [*command, "--format", "json", "--no-progress", "--no-history", "--out", "out", *extra]
    clear_run_folder(argv, folder)
    proc = subprocess.run(
        argv,
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )
    if proc.returncode != 0:
        raise SystemExit(f"evalglass run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    card = json.loads(proc.stdout)
    if card["metrics"][0]["population"]["included"] != card["dataset"]["examples"]:
        raise SystemExit("not every example was measured")
    phase = json.loads(figures.read_text())
    return phase["cpu"], phase["wall"]


# --------------------------------------------------------------------------------------------- report
def per_thousand(cpu: float, calls: int) -> float:
    return cpu / calls * 1000


def measure(
    calls: int,
    concurrency: int,
    latency: float,
    rounds: int,
    *,
    run: bool = True,
    run_no_cache: bool = False,
    run_warm: bool = False,
) -> dict[str, list[tuple[float, float]]]:
    """(CPU, wall) seconds of each round, per client: ``bare``, ``lane`` and, with ``run``, ``run`` (the scoring
    phase of `evalglass run`, call cache on and cold), with ``run_warm`` then ``run, warm cache`` (the same run
    again, every call answered by the cache ``run`` just filled) and with ``run_no_cache`` also ``run --no-cache``;
    every client once per round, in rotation."""
    runs: list[tuple[str, tuple[str, ...]]] = [("run", ())] if run else []
    runs += [("run, warm cache", ())] if run and run_warm else []
    runs += [("run --no-cache", ("--no-cache",))] if run and run_no_cache else []
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in [*CLIENTS, *(label for label, _ in runs)]}
    with fake_server(latency) as base_url, tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_project(folder, base_url, calls, concurrency)
        for _ in range(rounds):
            for name in CLIENTS:
                found[name].append(measure_client(name, base_url, calls, concurrency))
            for label, extra in runs:
                found[label].append(run_phase(folder, extra, warm=label == "run, warm cache"))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-run", action="store_true", help="only the two clients, not `evalglass run`")
    parser.add_argument("--run-no-cache", action="store_true", help="measure `evalglass run` with --no-cache too")
    parser.add_argument("--run-warm", action="store_true", help="measure `evalglass run` on a warm call cache too")
    parser.add_argument("--child", choices=sorted({**CLIENTS, **OTHER_CLIENTS}), help=argparse.SUPPRESS)
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
    started = time.monotonic()
    found = measure(
        args.calls,
        args.concurrency,
        args.latency,
        args.rounds,
        run=not args.no_run,
        run_no_cache=args.run_no_cache,
        run_warm=args.run_warm,
    )
    print(f"measured in rotation within {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f} at the end")
    names = list(found)
    cpu = {name: [per_thousand(used, args.calls) for used, _ in rounds] for name, rounds in found.items()}
    wall = {name: [took for _, took in rounds] for name, rounds in found.items()}
    bare = statistics.median(cpu["bare"])
    print("| client | CPU s per 1,000 calls (median, best) | ratio to bare (medians) | wall s (median) |")
    print("|---|---|---|---|")
    for name in names:
        median = statistics.median(cpu[name])
        print(
            f"| {name} | {median:.3f}, {min(cpu[name]):.3f} | {median / bare:.2f}x | "
            f"{statistics.median(wall[name]):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
