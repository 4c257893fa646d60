"""The agent lane's cost per model step: EvalGlass's loop beside a bare client loop, same scripted server, same minute.

Issue 32 asks that the agent lane's per-step overhead against the fake server be at most 2× a bare client loop doing
the same steps. One fake OpenAI-compatible server (``python -m evalglass.testing.fake_openai --turns``, its own
process, so its CPU is not counted) answers in ``--latency`` seconds and scripts every conversation (``task N``):
nine turns that each call one tool, then an answer, so each trajectory is ten model steps and nine tool calls
(``--steps N``: N - 1 turns that call a tool, then the answer; a long conversation, whose every step sends it all).

Each measurement is a fresh child process that runs ``--trajectories`` trajectories at concurrency
``--concurrency`` (requests in flight) and reports the CPU (user + system, every thread, ``time.process_time``) and
wall time of the trajectories alone (imports, set-up and the first connection outside the clock for both):

* ``bare``: ``aiohttp.ClientSession``; per trajectory, a loop that posts the conversation and the tool definition,
  reads the answer's tool calls, parses their arguments, calls the same host function, appends the assistant and
  tool messages and goes on until the model answers. The least work a client can do for the same steps.
* ``lane``: EvalGlass's ``agent`` lane as a run drives it (``produce`` per example): the prompt template, the step
  request and its cache key, the retrier, ``AsyncioExecutor.submit``, the OpenAI step client (``ChatClient``), the
  tool's signature check and thread, the trajectory record. No call cache.

Both freeze what is alive before the clock (``gc.freeze``), as ``run`` does when its stream starts: without it the
collector's full passes rescan the ~100,000 objects of the lane's imports (pydantic, the SDK) about once a hundred
steps, a third of the lane's CPU here that a run never pays.
* ``lane`` with ``--cache``: the same, with the call cache on and cold (a fresh SQLite file per child, as ``run``
  opens it): each step's answer and request stored. The child also reports the file's bytes once closed and the
  stored requests' (``request_bytes``): a trajectory's steps each store the request they keyed.
* ``run`` (with ``--run``): the scoring phase of ``evalglass run`` on the same examples (``phase_cpu.py``): the lane
  with the call cache on and cold, a ``tool_calls`` and a ``steps`` metric, scores and outputs written.

Clients run in rotation (bare, lane, run, bare, …) so a busy phase of a shared machine hits all of them.

    .venv/bin/python benchmarks/bench_agent_lane.py --trajectories 200 --rounds 3 --run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from outfolder import clear_run_folder

HERE = Path(__file__).resolve().parent
STEPS = 10

TOOLS = '''
def lookup(item: str, page: int) -> dict:
    """Look an item up."""
    return {"item": item, "page": page, "found": True}
'''

CONFIG = """\
version: 1
dataset: {{name: agents, path: data.jsonl}}
task:
  type: agent
  base_url: {base_url}
  model: bench
  api_key_env: null
  prompt: "{{{{ request }}}}"
  tools: {{lookup: tools.py:lookup}}
  max_steps: {steps}
concurrency: {{max_in_flight: {concurrency}}}
metrics:
  right_calls: {{type: tool_calls, reference: expected_calls, measure: f1}}
  turns: {{type: steps, count: model_turns, max: {steps}}}
"""


def script(trajectories: int) -> dict[str, list[Any]]:
    """Per conversation: nine turns with one tool call each, then the answer."""
    calls = [
        {"tool_calls": [{"name": "lookup", "arguments": {"item": "i", "page": step}}]} for step in range(STEPS - 1)
    ]
    return {f"task {n}": [*calls, f"Done with task {n}."] for n in range(-1, trajectories)}


@contextmanager
def scripted_server(latency: float, trajectories: int) -> Iterator[str]:
    with tempfile.TemporaryDirectory() as scratch:
        turns = Path(scratch) / "turns.json"
        turns.write_text(json.dumps(script(trajectories)))
        argv = [sys.executable, "-m", "evalglass.testing.fake_openai", "--port", "0", "--latency", str(latency)]
        server = subprocess.Popen([*argv, "--turns", str(turns)], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            yield server.stdout.readline().split()[-1]
        finally:
            server.terminate()
            server.wait(timeout=10)


def lookup(item: str, page: int) -> dict[str, Any]:
    return {"item": item, "page": page, "found": True}


TOOL_DEFINITION = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look an item up.",
        "parameters": {
            "type": "object",
            "properties": {"item": {"type": "string"}, "page": {"type": "integer"}},
            "required": ["item", "page"],
        },
    },
}


# --------------------------------------------------------------------------------------------- the clients
async def _bare(base_url: str, trajectories: int, concurrency: int) -> tuple[float, float, int]:
    import aiohttp

    url = base_url.rstrip("/") + "/chat/completions"
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def trajectory(n: int) -> int:
            messages: list[dict[str, Any]] = [{"role": "user", "content": f"task {n}"}]
            for step in range(STEPS):
                body = {"model": "bench", "messages": messages, "tools": [TOOL_DEFINITION]}
                async with gate, session.post(url, json=body) as response:
                    response.raise_for_status()
                    message = (await response.json())["choices"][0]["message"]
                messages.append(message)
                calls = message.get("tool_calls") or []
                if not calls:
                    return step + 1
                for call in calls:
                    result = lookup(**json.loads(call["function"]["arguments"]))
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
            return STEPS

        await trajectory(-1)  # the first connection, outside the clock as for the lane
        gc.freeze()  # what is alive before the clock, frozen as for the lane
        cpu, wall = time.process_time(), time.perf_counter()
        steps = await asyncio.gather(*(trajectory(n) for n in range(trajectories)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, sum(steps)


#: Figures a child reports besides its CPU, wall and steps (the cache's bytes, with ``--cache``).
EXTRA: dict[str, int] = {}
CACHE = False


async def _lane(base_url: str, trajectories: int, concurrency: int) -> tuple[float, float, int]:
    import sqlite3

    from pydantic import TypeAdapter

    from evalglass.engine.produce.cache import CacheMode, CallCache
    from evalglass.engine.produce.cachekey import CacheSecret
    from evalglass.lanes.executor import AsyncioExecutor
    from evalglass.lanes.ports import LaneOutput
    from evalglass.lanes.registry import build_lane
    from evalglass.lanes.specs import TaskSpec

    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "tools.py").write_text(TOOLS)
        spec = TypeAdapter(TaskSpec).validate_python(
            {
                "type": "agent",
                "base_url": base_url,
                "model": "bench",
                "api_key_env": None,
                "prompt": "{{ request }}",
                "tools": {"lookup": "tools.py:lookup"},
                "max_steps": STEPS,
            }
        )
        executor = AsyncioExecutor(concurrency)
        path = Path(scratch) / ".evalglass-cache.sqlite"
        secret = CacheSecret(b"b" * 32, "bench")
        cache = CallCache(path, CacheMode.USE, run="bench", secret=secret) if CACHE else None
        lane = build_lane(spec, base_dir=Path(scratch), executor=executor, cache=cache)
        await lane.produce("warm", {"request": "task -1"}, 0)
        jobs = [(f"t{n}", {"request": f"task {n}"}, 0) for n in range(trajectories)]
        # `run` freezes everything alive when its stream starts (engine/datasets/dataset.py), so the collector's
        # full passes do not rescan the modules and models loaded: so does this, and the bare loop alike.
        gc.freeze()
        cpu, wall, before = time.process_time(), time.perf_counter(), tool_workers_cpu(lane)
        outcomes = await asyncio.gather(*(lane.produce(*job) for job in jobs))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        # The host tools' own processes (lanes/hosttools.py) are part of the lane's cost: counted in its CPU.
        cpu += sum(seconds - before.get(pid, 0.0) for pid, seconds in tool_workers_cpu(lane).items())
        await lane.aclose()
        await executor.aclose()
        if cache is not None:
            cache.close()
            EXTRA["cache_bytes"] = path.stat().st_size
            with sqlite3.connect(path) as db:
                EXTRA["request_bytes"] = db.execute("SELECT sum(length(request)) FROM calls").fetchone()[0]
                EXTRA["entries"] = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    failed = [outcome for outcome in outcomes if not isinstance(outcome, LaneOutput)]
    if failed:
        raise SystemExit(f"lane: {len(failed)} trajectories failed, e.g. {failed[0]}")
    return cpu, wall, sum(outcome.value["steps"] for outcome in outcomes if isinstance(outcome, LaneOutput))


def tool_workers_cpu(lane: Any) -> dict[int, float]:
    """CPU seconds (user + system) of each of the lane's tool worker processes alive now, by pid, from /proc
    (they are not this process's children, so ``process_time`` and ``wait4`` do not count them). None for a lane
    whose tools run in its own process."""
    workers = getattr(lane, "_workers", None)
    if workers is None:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for worker in [*workers._idle, *workers._busy]:
        pid = worker.process.pid
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return found


CLIENTS = {"bare": _bare, "lane": _lane}


def measure_client(client: str, base_url: str, trajectories: int, concurrency: int) -> tuple[float, float]:
    argv = [sys.executable, __file__, "--child", client, "--url", base_url, "--trajectories", str(trajectories)]
    argv += ["--steps", str(STEPS), *(["--cache"] if CACHE else [])]
    proc = subprocess.run(
        [*argv, "--concurrency", str(concurrency)], capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{client} failed: {proc.stderr[-2000:]}")
    figures = json.loads(proc.stdout.splitlines()[-1])
    if figures["steps"] != trajectories * STEPS:
        raise SystemExit(f"{client}: {figures['steps']} steps, expected {trajectories * STEPS}")
    if "cache_bytes" in figures:
        EXTRA.update({name: figures[name] for name in ("cache_bytes", "request_bytes", "entries")})
    return figures["cpu"], figures["wall"]


def write_project(folder: Path, base_url: str, trajectories: int, concurrency: int) -> None:
    (folder / "tools.py").write_text(TOOLS)
    (folder / "authority.yaml").write_text("")
    (folder / "evalglass.yaml").write_text(CONFIG.format(base_url=base_url, steps=STEPS, concurrency=concurrency))
    expected = [{"name": "lookup", "arguments": {"item": "i", "page": step}} for step in range(STEPS - 1)]
    with (folder / "data.jsonl").open("w") as handle:
        for n in range(trajectories):
            handle.write(json.dumps({"id": f"t{n}", "request": f"task {n}", "expected_calls": expected}) + "\n")


def run_phase(folder: Path) -> tuple[float, float]:
    """CPU and wall of the scoring phase of one `evalglass run`, the call cache cold (``phase_cpu.py``)."""
    for stale in folder.glob(".evalglass-cache.sqlite*"):
        stale.unlink()
    figures = folder / "phase.json"
    command = [sys.executable, str(HERE / "phase_cpu.py"), str(figures), "run"]
    argv = [*command, "--format", "json", "--no-progress", "--no-history", "--out", "out"]
    clear_run_folder(argv, folder)
    proc = subprocess.run(
        argv,
        cwd=folder, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"evalglass run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    card = json.loads(proc.stdout)
    for metric in card["metrics"]:
        if metric["population"]["included"] != card["dataset"]["examples"] or metric["estimate"]["point"] != 1.0:
            raise SystemExit(f"{metric['name']}: not every trajectory was measured as scripted")
    phase = json.loads(figures.read_text())
    return phase["cpu"], phase["wall"]


def measure(
    trajectories: int, concurrency: int, latency: float, rounds: int, *, run: bool
) -> dict[str, list[tuple[float, float]]]:
    """(CPU, wall) seconds of each round per client, in rotation."""
    names = [*CLIENTS, *(["run"] if run else [])]
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    with scripted_server(latency, trajectories) as base_url, tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_project(folder, base_url, trajectories, concurrency)
        for _ in range(rounds):
            for name in CLIENTS:
                found[name].append(measure_client(name, base_url, trajectories, concurrency))
            if run:
                found["run"].append(run_phase(folder))
    return found


def main() -> int:
    global STEPS, CACHE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trajectories", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=STEPS, help="model steps per trajectory (a long conversation)")
    parser.add_argument("--run", action="store_true", help="measure `evalglass run`'s scoring phase too")
    parser.add_argument("--cache", action="store_true", help="the lane with the call cache on (cold)")
    parser.add_argument("--child", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    STEPS, CACHE = args.steps, args.cache
    if args.child:
        cpu, wall, steps = asyncio.run(CLIENTS[args.child](args.url, args.trajectories, args.concurrency))
        print(json.dumps({"cpu": cpu, "wall": wall, "steps": steps, **EXTRA}))
        return 0
    steps = args.trajectories * STEPS
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.trajectories} trajectories x {STEPS} steps, "
        f"concurrency {args.concurrency}, server latency {args.latency * 1000:g} ms, {args.rounds} rounds"
    )
    started = time.monotonic()
    found = measure(args.trajectories, args.concurrency, args.latency, args.rounds, run=args.run)
    print(f"measured in rotation within {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f} at the end")
    if EXTRA:  # the warm-up trajectory's entries are in the file too
        print(
            f"lane's call cache: {EXTRA['cache_bytes']:,} bytes on disk, {EXTRA['request_bytes']:,} of stored "
            f"requests, {EXTRA['entries']} entries ({args.trajectories + 1} trajectories)"
        )
    bare = statistics.median(cpu for cpu, _ in found["bare"])
    print("| client | CPU µs per step (median, best) | ratio to bare (CPU, medians) | wall s (median) |")
    print("|---|---|---|---|")
    for name, rounds in found.items():
        cpus = [cpu for cpu, _ in rounds]
        median = statistics.median(cpus)
        print(
            f"| {name} | {median / steps * 1e6:.0f}, {min(cpus) / steps * 1e6:.0f} | {median / bare:.2f}x | "
            f"{statistics.median(wall for _, wall in rounds):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
