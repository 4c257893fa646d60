"""Lane throughput: N chat calls at concurrency C against a fake endpoint that answers in L seconds.

Issue 5's target: with a server that answers in 50 ms, 5,000 calls at concurrency 64 complete within 15 % of the
ideal time (calls x latency / concurrency = 3.906 s).

The fake server runs in its own process (``python -m evalglass.testing.fake_openai``) so that its CPU does not
compete with the client's event loop for the GIL. The client is the real path a run takes: a ``chat`` task lane
(Jinja2 prompt, request fingerprint and cache key) -> retrier -> ``AsyncioExecutor.submit`` -> ``ChatClient``
(the ``openai`` SDK's headers, aiohttp's connection pool) -> HTTP. Timing starts cold (no warm-up, connections
opened inside).

    .venv/bin/python benchmarks/bench_lanes.py                  # 5000 calls, c=64, 50 ms, 3 repeats
    .venv/bin/python benchmarks/bench_lanes.py --calls 1000 --repeat 1 --cache
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from fake_server import fake_server, report
from pydantic import TypeAdapter

from evalglass.engine.produce.cache import CallCache
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.lanes.specs import TaskSpec


async def one_run(
    base_url: str, calls: int, concurrency: int, transport: str, cache_dir: Path | None
) -> tuple[float, float]:
    spec = TypeAdapter(TaskSpec).validate_python(
        {
            "type": "chat",
            "base_url": base_url,
            "model": "bench",
            "api_key_env": None,
            "prompt": "Question {{ n }}: {{ text }}",
            "cache": cache_dir is not None,
        }
    )
    cache = CallCache(cache_dir / "bench.sqlite", "refresh") if cache_dir is not None else None
    executor = AsyncioExecutor(concurrency)
    lane = build_lane(spec, base_dir=Path.cwd(), executor=executor, cache=cache, transport=transport)  # type: ignore[arg-type]
    jobs = [(f"ex{n}", {"n": n, "text": "what is the answer?"}, 0) for n in range(calls)]
    cpu_before = time.process_time()
    started = time.perf_counter()
    outcomes = await executor.run(jobs, lambda job: lane.produce(*job))
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    await lane.aclose()
    if cache is not None:
        cache.close()
    failed = [o for o in outcomes if not isinstance(o, LaneOutput)]
    if failed:
        raise SystemExit(f"{len(failed)} calls failed, e.g. {failed[0]}")
    if executor.stats.peak_in_flight > concurrency:
        raise SystemExit(f"concurrency limit broken: peak {executor.stats.peak_in_flight} > {concurrency}")
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", choices=["auto", "direct", "httpx"], default="auto")
    parser.add_argument("--cache", action="store_true", help="write every result to a (refresh-mode) SQLite cache")
    parser.add_argument("--json", action="store_true", help="end with one JSON line: ideal, walls, cpus (run.py)")
    args = parser.parse_args()

    with fake_server(args.latency) as base_url:
        ideal = args.calls * args.latency / args.concurrency
        print(
            f"{args.calls} calls, concurrency {args.concurrency}, server latency {args.latency * 1000:g} ms, "
            f"transport {args.transport}{', cache on' if args.cache else ''}; ideal {ideal:.3f} s"
        )
        ratios, walls, cpus = [], [], []
        with tempfile.TemporaryDirectory() as scratch:
            cache_dir = Path(scratch) if args.cache else None
            for attempt in range(1, args.repeat + 1):
                wall, cpu = asyncio.run(one_run(base_url, args.calls, args.concurrency, args.transport, cache_dir))
                ratios.append(wall / ideal)
                walls.append(wall)
                cpus.append(cpu)
                print(
                    f"  run {attempt}: wall {wall:.3f} s  ratio {wall / ideal:.3f}  "
                    f"client CPU {cpu / args.calls * 1000:.3f} ms/call"
                )
        report(ratios)
    if args.json:
        print(json.dumps({"ideal": ideal, "walls": walls, "cpus": cpus}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
