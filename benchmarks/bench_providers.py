"""Per-call overhead of the native provider paths beside the OpenAI-compatible path, same machine, same minute.

Three fake servers, each in its own process (``python -m evalglass.testing.fake_<provider>``, so their CPU
is not counted), answer every call in ``--latency`` seconds. Each measurement is a fresh child process that drives
a ``chat`` lane as a run does (Jinja2 prompt, cache key, retrier, ``AsyncioExecutor.submit``, the provider's
client: ``ChatClient`` for ``openai``, ``NativeClient`` with the provider's wire module for ``anthropic`` and
``gemini``) through ``--calls`` calls at concurrency ``--concurrency``, and reports the CPU (``time.process_time``,
every thread) and wall time of the calls alone (imports, set-up and the first connection outside the clock). The
providers run in rotation (openai, anthropic, gemini, openai, …) so a busy phase of a shared machine hits each
alike; the figure is each native path's median CPU per call over the OpenAI path's, round by round.

    .venv/bin/python benchmarks/bench_providers.py                 # 2000 calls, c=32, 5 ms, 5 rounds
    .venv/bin/python benchmarks/bench_providers.py --calls 500 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from fake_server import fake_server

PROVIDERS = ("openai", "anthropic", "gemini")
KEY_ENV = "EVALGLASS_BENCH_KEY"


async def _lane_calls(provider: str, base_url: str, calls: int, concurrency: int) -> tuple[float, float]:
    from pydantic import TypeAdapter

    from evalglass.lanes.executor import AsyncioExecutor
    from evalglass.lanes.ports import LaneOutput
    from evalglass.lanes.registry import build_lane
    from evalglass.lanes.specs import TaskSpec

    spec = TypeAdapter(TaskSpec).validate_python(
        {
            "type": "chat",
            "provider": provider,
            "base_url": base_url,
            "model": "bench",
            "api_key_env": KEY_ENV,
            "prompt": "Question {{ n }}: {{ text }}",
            "max_tokens": 64,
            "cache": False,
        }
    )
    executor = AsyncioExecutor(concurrency)
    lane = build_lane(spec, base_dir=Path.cwd(), executor=executor, cache=None)
    warm = await lane.produce("warm", {"n": -1, "text": "warm up"}, 0)
    if not isinstance(warm, LaneOutput):
        raise SystemExit(f"{provider}: the warm-up call failed: {warm}")
    jobs = [(f"ex{n}", {"n": n, "text": "what is the answer?"}, 0) for n in range(calls)]
    cpu_before, started = time.process_time(), time.perf_counter()
    outcomes = await executor.run(jobs, lambda job: lane.produce(*job))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    await lane.aclose()
    failed = [o for o in outcomes if not isinstance(o, LaneOutput)]
    if failed:
        raise SystemExit(f"{provider}: {len(failed)} calls failed, e.g. {failed[0]}")
    return wall, cpu


def _child(provider: str, base_url: str, calls: int, concurrency: int) -> None:
    wall, cpu = asyncio.run(_lane_calls(provider, base_url, calls, concurrency))
    print(json.dumps({"wall": wall, "cpu": cpu}))


def measure(calls: int, concurrency: int, latency: float, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per provider: CPU and wall seconds per call, one value per round."""
    figures: dict[str, dict[str, list[float]]] = {p: {"cpu": [], "wall": []} for p in PROVIDERS}
    env = {**os.environ, KEY_ENV: "bench-key"}
    with ExitStack() as stack:
        urls = {p: stack.enter_context(fake_server(latency, p)) for p in PROVIDERS}
        for _ in range(rounds):
            for provider in PROVIDERS:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", provider, urls[provider], str(calls), str(concurrency)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                ).stdout
                result = json.loads(out.strip().splitlines()[-1])
                figures[provider]["cpu"].append(result["cpu"] / calls)
                figures[provider]["wall"].append(result["wall"] / calls)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.005)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--child", nargs=4, metavar=("PROVIDER", "URL", "CALLS", "CONCURRENCY"), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="end with one JSON line of the figures")
    args = parser.parse_args()
    if args.child:
        provider, url, calls, concurrency = args.child
        _child(provider, url, int(calls), int(concurrency))
        return 0
    load = os.getloadavg()
    figures = measure(args.calls, args.concurrency, args.latency, args.rounds)
    print(
        f"{args.calls} calls x {args.rounds} rounds, concurrency {args.concurrency}, latency {args.latency * 1000:g} "
        f"ms; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
    )
    summary: dict[str, dict[str, float]] = {}
    base = figures["openai"]
    for provider in PROVIDERS:
        cpu, wall = figures[provider]["cpu"], figures[provider]["wall"]
        ratios = [mine / theirs for mine, theirs in zip(cpu, base["cpu"], strict=True)]
        wall_ratios = [mine / theirs for mine, theirs in zip(wall, base["wall"], strict=True)]
        summary[provider] = {
            "cpu_us_per_call": statistics.median(cpu) * 1e6,
            "wall_us_per_call": statistics.median(wall) * 1e6,
            "cpu_ratio_to_openai": statistics.median(ratios),
            "wall_ratio_to_openai": statistics.median(wall_ratios),
        }
        row = summary[provider]
        print(
            f"{provider:>9}: CPU {row['cpu_us_per_call']:7.1f} us/call (x{row['cpu_ratio_to_openai']:.3f} of openai, "
            f"rounds {min(ratios):.3f}-{max(ratios):.3f}), wall {row['wall_us_per_call']:7.1f} us/call "
            f"(x{row['wall_ratio_to_openai']:.3f})"
        )
    load = os.getloadavg()
    print(f"load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
