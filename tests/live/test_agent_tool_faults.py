"""The agent lane's tools under faults, against a real OpenAI-compatible server on 127.0.0.1: a tool that raises what
an asyncio future refuses or what reads as a cancellation, one that raises its own TimeoutError, one that returns
a value orjson writes but that is not JSON (a datetime, a dataclass it keeps changing): each is the call's outcome
as it happened, and the trajectory goes on."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from evalglass.core.conversation import Trajectory
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import parse_task_spec
from .test_agent_lane import agent, call

FAULTY_TOOLS = '''
import asyncio, dataclasses, datetime

@dataclasses.dataclass
class Cart:
    items: list

CART = Cart([])

def keep(item: str) -> Cart:
    """Add an item and return the cart itself (changed by later calls)."""
    CART.items.append(item)
    return CART

def when() -> datetime.date:
    return datetime.date(2024, 1, 2)

def ratio() -> float:
    return float("nan")

def exhausted() -> int:
    return next(iter([]))

def gives_up() -> int:
    raise asyncio.CancelledError("the tool gave up")

async def gives_up_async() -> int:
    raise asyncio.CancelledError("the tool gave up")

def own_timeout() -> int:
    raise TimeoutError("the socket read timed out")

async def own_timeout_async() -> int:
    raise TimeoutError("the socket read timed out")
'''

NAMES = ["keep", "when", "ratio", "exhausted", "gives_up", "gives_up_async", "own_timeout", "own_timeout_async"]


def produce_bounded(spec: dict[str, Any], base: Path, fields: dict[str, Any]) -> LaneOutcome:
    """One trajectory, given far more time than it needs: a hang is the fault, reported as a timeout."""

    async def go() -> LaneOutcome:
        lane = build_lane(parse_task_spec(spec), base_dir=base, executor=AsyncioExecutor(8), env={})
        try:
            return await asyncio.wait_for(lane.produce("e0", fields, 0), 60)
        finally:
            await lane.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("step_timeout", [None, 30.0])
def test_a_faulty_tool_is_its_call_s_outcome_and_the_trajectory_is_plain_json(
    tmp_path: Path, step_timeout: float | None
) -> None:
    (tmp_path / "faulty.py").write_text(textwrap.dedent(FAULTY_TOOLS))
    turns = {
        "Go": [
            {"tool_calls": [call("keep", {"item": "tea"}), *(call(name, {}) for name in NAMES[1:])]},
            {"tool_calls": [call("keep", {"item": "milk"})]},
            "done",
        ]
    }
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server, tools={name: f"faulty.py:{name}" for name in NAMES}, step_timeout=step_timeout)
        outcome = produce_bounded(spec, tmp_path, {"q": "Go"})
        requests = [request.body for request in server.requests]
    assert isinstance(outcome, LaneOutput), outcome
    trajectory = outcome.value
    Trajectory.model_validate(trajectory)
    assert orjson.loads(orjson.dumps(trajectory)) == trajectory  # plain JSON: what a reader of the outputs gets
    assert trajectory["finish"] == "stop" and trajectory["steps"] == 3
    outcomes = [(c["name"], c.get("result"), c.get("error_type")) for c in trajectory["tool_calls"]]
    assert outcomes == [
        ("keep", {"items": ["tea"]}, None),  # as returned, not as the tool's cart became
        ("when", "2024-01-02", None),
        ("ratio", None, "result_not_json"),  # a NaN is not JSON: never told the model as null
        ("exhausted", None, "StopIteration"),
        ("gives_up", None, "CancelledError"),
        ("gives_up_async", None, "CancelledError"),
        ("own_timeout", None, "TimeoutError"),
        ("own_timeout_async", None, "TimeoutError"),
        ("keep", {"items": ["tea", "milk"]}, None),
    ]
    errors = {c["name"]: c["error"] for c in trajectory["tool_calls"] if "error" in c}
    assert errors["own_timeout"] == errors["own_timeout_async"] == "TimeoutError: the socket read timed out"
    assert errors["gives_up"] == "CancelledError: the tool gave up"
    told = [m["content"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert told[:3] == [
        '{"items":["tea"]}',
        "2024-01-02",
        "error: ratio returned a float that is not JSON (nan is not a JSON number)",
    ]


@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_python_lane_coroutine_s_own_cancelled_error_is_its_error_not_the_run_s_cancellation(
    tmp_path: Path, timeout: float | None
) -> None:
    """The same class in the python lane: an async host function that raises CancelledError itself (no one cancelled
    the example) is that example's error, and the examples beside it are produced."""
    (tmp_path / "host.py").write_text(
        textwrap.dedent(
            """
            import asyncio

            async def answer(example):
                if example["q"] == "give up":
                    raise asyncio.CancelledError("the host gave up")
                return example["q"]
            """
        )
    )
    spec = parse_task_spec({"type": "python", "function": "host.py:answer", "timeout": timeout})

    async def go() -> list[LaneOutcome]:
        lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(8))
        try:
            return [await asyncio.wait_for(lane.produce(q, {"q": q}, 0), 60) for q in ("give up", "fine")]
        finally:
            await lane.aclose()

    gave_up, fine = asyncio.run(go())
    assert isinstance(gave_up, LaneFailure) and gave_up.code == "task_raised", gave_up
    assert "CancelledError: the host gave up" in gave_up.message
    assert isinstance(fine, LaneOutput) and fine.value == "fine"


STATE_TOOLS = """
import pathlib, time

def slow_cart(item: str, *, state: dict) -> str:
    time.sleep(0.5)
    state.setdefault("cart", []).append(item)
    pathlib.Path(__file__).with_name("wrote").touch()
    return "added"
"""


def test_a_timed_out_tool_s_late_write_never_reaches_the_trajectory_s_state(tmp_path: Path) -> None:
    """A state tool over its timeout has its worker process killed: it never writes late (its file is never made),
    and the trajectory (its final_state, and the tools after it) keeps the state as it was before the call."""
    (tmp_path / "statetools.py").write_text(textwrap.dedent(STATE_TOOLS))
    turns = {"Shop": [{"tool_calls": [call("slow_cart", {"item": "tea"})]}, "done"]}
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server, tools={"slow_cart": "statetools.py:slow_cart"}, step_timeout=0.1)
        outcome = produce_bounded(spec, tmp_path, {"q": "Shop"})
    assert isinstance(outcome, LaneOutput), outcome
    time.sleep(1.0)  # twice what the tool sleeps: a call left running would have written by now
    assert not (tmp_path / "wrote").exists()
    trajectory = outcome.value
    assert [c.get("error_type") for c in trajectory["tool_calls"]] == ["tool_timeout"]
    assert trajectory["final_state"] == {}


CHURNING_TOOLS = """
import pathlib, time

def remember(*, state: dict) -> str:
    state["seen"] = {"a", "b"} if state.get("sets") else ["a", "b"]
    return "kept"

def measure(*, state: dict) -> str:
    state["ratio"] = float("nan")
    return "measured"

def churn(*, state: dict) -> str:
    # Changes the state without pause until the test releases it: keys come and go, so the dict changes size.
    released = pathlib.Path(__file__).with_name("released")
    deadline = time.monotonic() + 60
    n = 0
    while not released.exists() and time.monotonic() < deadline:
        state[f"k{n % 500}"] = n
        if n % 500 == 499:
            for k in range(500):
                state.pop(f"k{k}", None)
        n += 1
    return "done"
"""


@pytest.mark.parametrize("sets", [False, True])
def test_a_state_changed_by_a_timed_out_tool_is_not_kept_and_one_not_json_is_refused(
    tmp_path: Path, sets: bool
) -> None:
    """The state crosses to the tool's worker and back as JSON: a tool that leaves it holding what is not JSON (a
    set) fails the trajectory at once, in one line naming the tool and the value; a tool killed at its timeout while
    it changes the state leaves none of its changes (the trajectory goes on with the state as it was before)."""
    (tmp_path / "churning.py").write_text(textwrap.dedent(CHURNING_TOOLS))
    turns = {"Churn": [{"tool_calls": [call("remember", {})]}, {"tool_calls": [call("churn", {})]}, "done"]}
    tools = {"remember": "churning.py:remember", "churn": "churning.py:churn"}
    try:
        with FakeOpenAI(turns=turns) as server:
            spec = agent(server, tools=tools, step_timeout=0.3, state="start")
            outcome = produce_bounded(spec, tmp_path, {"q": "Churn", "start": {"sets": sets}})
    finally:
        (tmp_path / "released").touch()
    if sets:
        assert isinstance(outcome, LaneFailure), outcome
        assert outcome.code == "state_not_json"
        assert outcome.message.startswith("remember left the trajectory's state as what is not JSON (")
        assert "set" in outcome.message
        assert "\n" not in outcome.message
        return
    assert isinstance(outcome, LaneOutput), outcome
    trajectory = outcome.value
    assert [c.get("error_type") for c in trajectory["tool_calls"]] == [None, "tool_timeout"]
    final = trajectory["final_state"]
    assert final == {"sets": False, "seen": ["a", "b"]}  # nothing churn wrote before it was killed
    assert orjson.loads(orjson.dumps(final)) == final


def test_a_final_state_that_is_not_json_fails_the_trajectory_in_one_line(tmp_path: Path) -> None:
    """outputs.jsonl holds the final state as JSON: one that is not (a set) fails the trajectory, never an output
    that metrics see one way in this run and a replay another (it is seen as the tool that left it returns)."""
    (tmp_path / "churning.py").write_text(textwrap.dedent(CHURNING_TOOLS))
    turns = {"Keep": [{"tool_calls": [call("remember", {})]}, "done"]}
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server, tools={"remember": "churning.py:remember"}, state="start")
        outcome = produce_bounded(spec, tmp_path, {"q": "Keep", "start": {"sets": True}})
    assert isinstance(outcome, LaneFailure) and outcome.code == "state_not_json", outcome
    assert outcome.message.startswith(
        "remember left the trajectory's state as what is not JSON (Type is not JSON serializable: set)"
    )


def test_a_final_state_holding_a_nan_fails_the_trajectory_never_a_silent_null(tmp_path: Path) -> None:
    """orjson writes a NaN as null: a state holding one would reach final_state as a plausible null, another value."""
    (tmp_path / "churning.py").write_text(textwrap.dedent(CHURNING_TOOLS))
    turns = {"Keep": [{"tool_calls": [call("measure", {})]}, "done"]}
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server, tools={"measure": "churning.py:measure"}, state="start")
        outcome = produce_bounded(spec, tmp_path, {"q": "Keep", "start": {}})
    assert isinstance(outcome, LaneFailure) and outcome.code == "state_not_json", outcome
    assert outcome.message.startswith(
        "measure left the trajectory's state as what is not JSON (nan is not a JSON number)"
    ), outcome.message


ENDING_TOOLS = """
import os, pathlib

def once(n: int) -> str:
    with pathlib.Path(__file__).with_name("made.txt").open("a") as made:
        made.write(f"{n}\\n")
    if n == 2:
        os._exit(0)
    return f"made {n}"
"""


def test_a_tool_that_ends_its_worker_is_that_call_s_error_and_no_call_is_made_twice(tmp_path: Path) -> None:
    """A tool call is made once: the one that ends its worker process (`os._exit`) is the call's
    `tool_worker_lost`, told to the model, and is not made again; the calls before and after it are made once each
    (every call writes a line), on a fresh worker after the death."""
    (tmp_path / "ending.py").write_text(textwrap.dedent(ENDING_TOOLS))
    steps = [{"tool_calls": [call("once", {"n": n})]} for n in (1, 2, 3)]
    with FakeOpenAI(turns={"Go": [*steps, "done"]}) as server:
        spec = agent(server, tools={"once": "ending.py:once"}, max_steps=5)
        outcome = produce_bounded(spec, tmp_path, {"q": "Go"})
    assert isinstance(outcome, LaneOutput), outcome
    calls = outcome.value["tool_calls"]
    assert [c.get("result") for c in calls] == ["made 1", None, "made 3"]
    assert calls[1]["error_type"] == "tool_worker_lost"
    assert "its worker process ended with exit code 0" in calls[1]["error"]
    assert (tmp_path / "made.txt").read_text().split() == ["1", "2", "3"]


def test_a_tool_worker_killed_while_idle_is_the_next_call_s_loss_and_the_call_after_gets_a_fresh_one(
    tmp_path: Path,
) -> None:
    """The event loop watches a tool worker's pipe from its first call until it is killed (lanes/hostworker.py,
    ``_Worker.watch_on``): a worker killed between calls makes its pipe readable with no call waiting. The loop
    stops watching it (else it would say so at every turn), the next call is that worker's loss, never another
    call's answer, and the call after it is answered by a fresh worker."""
    import os
    import signal

    from evalglass.lanes.hosttools import ToolWorkers, decode_reply, tool_request
    from evalglass.lanes.hostworker import WorkerDied

    (tmp_path / "tools.py").write_text("import os\n\ndef pid() -> int:\n    return os.getpid()\n")
    workers = ToolWorkers({"pid": "tools.py:pid"}, str(tmp_path), declared=frozenset(), width=1)
    request = tool_request("pid", {}, None)

    async def go() -> tuple[int, str, int, int]:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, workers.describe)
        first = decode_reply(await workers.call_here(request, 10.0))
        assert first is not None and first[0] == 0
        os.kill(first[1], signal.SIGKILL)
        await asyncio.sleep(0.2)  # the loop turns with the dead worker's pipe readable and no call waiting
        try:
            await workers.call_here(request, 10.0)
        except WorkerDied as exc:
            lost = str(exc)
        else:
            lost = ""
        second = decode_reply(await workers.call_here(request, 10.0))
        third = decode_reply(await workers.call_here(request, 10.0))
        assert second is not None and third is not None
        return first[1], lost, second[1], third[1]

    try:
        killed, lost, fresh, again = asyncio.run(go())
    finally:
        workers.close()
    assert "killed by SIGKILL" in lost or "closed the pipe" in lost, lost
    assert fresh != killed and again == fresh
