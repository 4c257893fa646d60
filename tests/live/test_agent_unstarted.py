"""Work of the agent lane that never started is not reported as work that ran too long: a tool call waiting for a
tool worker, and a model step waiting for a concurrency slot. Real worker processes, a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

from evalglass.lanes.agent import AgentLane
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneOutcome, LaneOutput
from evalglass.lanes.specs import AgentLaneSpec
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import parse_task_spec, run
from .test_agent_lane import agent, call

HANGING = """
import pathlib, time

def hang() -> str:
    released = pathlib.Path(__file__).with_name("released")
    deadline = time.monotonic() + 60
    while not released.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return "late"
"""


def spec_of(server: FakeOpenAI, **overrides: Any) -> AgentLaneSpec:
    spec = parse_task_spec(agent(server, tools={"hang": "hanging.py:hang"}, retry={"max_attempts": 1}, **overrides))
    assert isinstance(spec, AgentLaneSpec)
    return spec


def produce_all(lane_of: Any, examples: list[dict[str, Any]]) -> list[LaneOutcome]:
    async def go() -> list[LaneOutcome]:
        lane = lane_of()
        try:
            jobs = (lane.produce(f"e{n}", fields, 0) for n, fields in enumerate(examples))
            return list(await asyncio.wait_for(asyncio.gather(*jobs), 60))
        finally:
            await lane.aclose()

    return run(go())


def test_a_tool_call_waiting_for_a_worker_is_not_timed_out_by_the_wait(tmp_path: Path) -> None:
    """One tool worker at a time, six trajectories whose tool hangs, step_timeout 0.3s: each call over its timeout
    has its worker killed (nothing is left running to hold a worker), so every call gets a worker in turn and its
    own 0.3s once sent. Each is the tool's `tool_timeout`, told to the model; none fails for want of a worker."""
    (tmp_path / "hanging.py").write_text(textwrap.dedent(HANGING))
    turns = {"Hang": [{"tool_calls": [call("hang", {})]}, "Gave up."]}
    try:
        with FakeOpenAI(turns=turns) as server:
            spec = spec_of(server, step_timeout=0.3, cache=False)
            outcomes = produce_all(
                lambda: AgentLane(spec, base_dir=tmp_path, executor=AsyncioExecutor(8), env={}, tool_threads=1),
                [{"q": "Hang"}] * 6,
            )
    finally:
        (tmp_path / "released").touch()
    assert all(isinstance(outcome, LaneOutput) for outcome in outcomes), outcomes
    for outcome in outcomes:
        assert isinstance(outcome, LaneOutput)
        assert [c["error_type"] for c in outcome.value["tool_calls"]] == ["tool_timeout"]
        assert outcome.value["text"] == "Gave up."


def test_a_model_step_waiting_for_a_concurrency_slot_is_not_timed_out_by_the_wait(tmp_path: Path) -> None:
    """One call in flight at a time, each answered in 1s, step_timeout 2.5s: the fourth trajectory's step waits 3s
    for its slot. The step's clock starts when its first attempt is sent, so every step ends within it."""
    (tmp_path / "hanging.py").write_text(textwrap.dedent(HANGING))
    with FakeOpenAI(turns={"Q": ["fine"]}) as server:
        spec = spec_of(server, step_timeout=2.5, cache=False)
        outcomes = produce_all(
            lambda: AgentLane(spec, base_dir=tmp_path, executor=AsyncioExecutor(1), env={}),
            [{"q": "[[behaviour:slow:1]] Q"}] * 4,
        )
        assert server.request_count == 4 and server.max_in_flight == 1  # the steps queued behind each other
    assert all(isinstance(outcome, LaneOutput) for outcome in outcomes), outcomes
    assert [outcome.value["text"] for outcome in outcomes if isinstance(outcome, LaneOutput)] == ["fine"] * 4
