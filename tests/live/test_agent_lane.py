"""The agent lane against a real OpenAI-compatible server on 127.0.0.1 whose model turns are scripted per prompt:
what an agent does wrong is kept in its trajectory; what the evaluator lacks is a lane failure; steps are cached."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pydantic
import pytest

from evalglass.core.conversation import Trajectory
from evalglass.core.trajectory import Call, read_calls
from evalglass.core.usage import Price
from evalglass.engine.produce.cache import CacheMode, CallCache
from evalglass.lanes.base import LaneConfigError
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import fast_retrier, parse_task_spec, run

TOOLS = '''
import asyncio, time

def weather(city: str) -> dict:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return {"city": city, "celsius": 21}

def add_to_cart(item: str, *, state: dict) -> str:
    """Add an item to the cart."""
    state.setdefault("cart", []).append(item)
    return "added"

def slow(seconds: float) -> str:
    time.sleep(seconds)
    return "late"

async def slow_async(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "late"

def odd() -> object:
    return {1, 2}
'''


@pytest.fixture
def base(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(textwrap.dedent(TOOLS))
    return tmp_path


def agent(server: FakeOpenAI, **overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "agent",
        "base_url": server.base_url,
        "model": "agent-model",
        "api_key_env": None,
        "prompt": "{{ q }}",
        "tools": {
            "weather": "tools.py:weather",
            "add_to_cart": "tools.py:add_to_cart",
            "slow": "tools.py:slow",
            "slow_async": "tools.py:slow_async",
            "odd": "tools.py:odd",
        },
        "retry": {"max_attempts": 3, "initial_delay": 0, "max_delay": 0},
    }
    spec.update(overrides)
    return spec


def produce(spec: dict[str, Any], base: Path, *examples: dict[str, Any], **kw: Any) -> list[LaneOutcome]:
    async def go() -> list[LaneOutcome]:
        lane = build_lane(parse_task_spec(spec), base_dir=base, executor=AsyncioExecutor(8), env={}, **kw)
        try:
            return [await lane.produce(f"e{index}", fields, 0) for index, fields in enumerate(examples)]
        finally:
            await lane.aclose()

    return run(go())


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_what_goes_wrong_in_a_trajectory_is_kept_and_the_trajectory_goes_on(base: Path) -> None:
    turns = {
        "Weather in Paris?": [
            {"tool_calls": [call("weather", {"city": "Paris"}), call("weather", {"city": "Atlantis"})]},
            {"tool_calls": [call("add_to_cart", {"item": "umbrella"}), call("teleport", {}), call("weather", "{city")]},
            {"tool_calls": [call("weather", {"town": "Paris"}), call("weather", ["Paris"]), call("odd", {})]},
            "It is 21 degrees.",
        ]
    }
    with FakeOpenAI(turns=turns) as server:
        (outcome,) = produce(agent(server), base, {"q": "Weather in Paris?"})
        requests = [request.body for request in server.requests]
    assert isinstance(outcome, LaneOutput), outcome
    trajectory = outcome.value
    Trajectory.model_validate(trajectory)  # the declared form, `evalglass schema trajectory`
    assert trajectory["finish"] == "stop" and trajectory["steps"] == 4 and trajectory["text"] == "It is 21 degrees."
    outcomes = [(c["name"], c.get("result"), c.get("error_type")) for c in trajectory["tool_calls"]]
    assert outcomes == [
        ("weather", {"city": "Paris", "celsius": 21}, None),
        ("weather", None, "ValueError"),
        ("add_to_cart", "added", None),
        ("teleport", None, "unknown_tool"),
        ("weather", None, "arguments_not_json"),
        ("weather", None, "arguments_rejected"),
        ("weather", None, "arguments_rejected"),
        ("odd", None, "result_not_json"),
    ]
    assert trajectory["tool_calls"][4]["invalid_arguments"] == "{city"
    assert trajectory["final_state"] == {"cart": ["umbrella"]}
    # the model was told each error in a tool message, one per call, and every tool was offered with its schema
    second = requests[1]["messages"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_0_1", "content": "error: ValueError: no such city"}
    weather = next(tool for tool in requests[0]["tools"] if tool["function"]["name"] == "weather")
    assert weather["function"]["description"] == "The weather in a city."
    assert weather["function"]["parameters"]["required"] == ["city"]
    cart = next(tool for tool in requests[0]["tools"] if tool["function"]["name"] == "add_to_cart")
    assert "state" not in cart["function"]["parameters"]["properties"]
    # the metrics read the calls as made
    assert read_calls(trajectory)[4] == Call("weather", read_calls(trajectory)[4].arguments, "{city")


def test_a_step_budget_spent_ends_the_trajectory_with_max_steps(base: Path) -> None:
    with FakeOpenAI(turns={"Loop": [{"tool_calls": [call("weather", {"city": "Paris"})]}]}) as server:
        (outcome,) = produce(agent(server, max_steps=3), base, {"q": "Loop"})
        assert server.request_count == 3
    assert isinstance(outcome, LaneOutput)
    assert outcome.value["finish"] == "max_steps" and outcome.value["steps"] == 3
    assert len(outcome.value["tool_calls"]) == 3  # each turn's calls were run


def test_tokens_and_cost_per_trajectory_are_the_sum_of_its_steps(base: Path) -> None:
    turns = {"Weather?": [{"tool_calls": [call("weather", {"city": "Oslo"})]}, "Cold."]}
    with FakeOpenAI(turns=turns) as server:
        prices = {"agent-model": Price(prompt_per_million=2_000_000, completion_per_million=1_000_000)}
        (outcome,) = produce(agent(server), base, {"q": "Weather?"}, prices=prices)
    assert isinstance(outcome, LaneOutput) and outcome.model_calls is not None
    steps = [usage for usage, _ in outcome.model_calls]
    assert len(steps) == 2 and outcome.tries == 2
    prompt = sum(usage.prompt_tokens for usage in steps)
    completion = sum(usage.completion_tokens for usage in steps)
    assert outcome.value["usage"] == {"input_tokens": prompt, "output_tokens": completion}
    assert outcome.value["cost"] == pytest.approx(2 * prompt + completion)


def test_recorded_tools_replay_the_example_s_results(base: Path) -> None:
    turns = {
        "Find it": [
            {"tool_calls": [call("search", {"q": "a"}), call("search", {"q": "b"}), call("search", {"q": "a"})]},
            "Done.",
        ],
        "Find more": [{"tool_calls": [call("search", {"q": "zzz"})]}, "Done."],
    }
    recorded = [
        {"name": "search", "arguments": {"q": "a"}, "result": ["first a"]},
        {"name": "search", "arguments": {"q": "a"}, "error": "rate limited"},
        {"name": "search", "result": ["anything"]},
    ]
    with FakeOpenAI(turns=turns) as server:
        spec = agent(
            server, tools={"search": {"recorded": True, "description": "Search.", "parameters": {"type": "object"}}}
        )
        found, missing = produce(
            spec, base, {"q": "Find it", "tool_results": recorded}, {"q": "Find more", "tool_results": recorded[:2]}
        )
    assert isinstance(found, LaneOutput)
    results = [(c.get("result"), c.get("error_type"), c.get("error")) for c in found.value["tool_calls"]]
    assert results == [(["first a"], None, None), (["anything"], None, None), (None, "recorded_error", "rate limited")]
    # a call the recording cannot answer: the replay cannot say what the tool did, so there is no trajectory
    assert isinstance(missing, LaneFailure) and missing.code == "no_recorded_result"


def test_a_slow_tool_is_a_tool_error_and_the_trajectory_goes_on(base: Path) -> None:
    turns = {"Wait": [{"tool_calls": [call("slow", {"seconds": 5}), call("slow_async", {"seconds": 5})]}, "Gave up."]}
    with FakeOpenAI(turns=turns) as server:
        (outcome,) = produce(agent(server, step_timeout=0.2), base, {"q": "Wait"})
    assert isinstance(outcome, LaneOutput)
    assert [c["error_type"] for c in outcome.value["tool_calls"]] == ["tool_timeout", "tool_timeout"]
    assert outcome.value["finish"] == "stop"


def test_what_the_evaluator_lacks_is_a_lane_failure_never_a_trajectory(base: Path) -> None:
    turns = {"Slow model": ["fine"], "Slow steps": [{"tool_calls": [call("slow", {"seconds": 0.3})]}]}
    with FakeOpenAI(turns=turns) as server:
        failing = {"q": "[[behaviour:500]] Weather?"}
        slow_model = {"q": "[[behaviour:slow:3]] Slow model"}
        outcomes = produce(agent(server, step_timeout=0.5), base, failing, slow_model)
        endless = produce(agent(server, trajectory_timeout=1.0, max_steps=50), base, {"q": "Slow steps"})
        missing_state = produce(agent(server, state="cart"), base, {"q": "x"})
    codes = [outcome.code for outcome in [*outcomes, *endless, *missing_state] if isinstance(outcome, LaneFailure)]
    assert codes == ["call_server_error", "agent_step_timeout", "agent_timeout", "state_missing"]
    assert isinstance(outcomes[0], LaneFailure) and outcomes[0].tries == 3  # retried before giving up


def test_a_transient_fault_is_retried_within_the_step(base: Path) -> None:
    with FakeOpenAI(turns={"Hi": ["Hello."]}) as server:
        (outcome,) = produce(agent(server), base, {"q": "[[behaviour:500,ok]] Hi"}, retrier=fast_retrier(3))
    assert isinstance(outcome, LaneOutput) and outcome.tries == 2 and outcome.value["text"] == "Hello."


def test_every_step_goes_through_the_cache_and_a_rerun_replays_it_exactly(base: Path, tmp_path: Path) -> None:
    turns = {
        "Plan": [
            {"tool_calls": [call("add_to_cart", {"item": "tea"})]},
            {"tool_calls": [call("weather", {"city": "Rome"})]},
            "Done.",
        ]
    }
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server)
        first_cache = CallCache(tmp_path / "cache.sqlite", CacheMode.USE, run="one")
        (first,) = produce(spec, base, {"q": "Plan"}, cache=first_cache)
        first_cache.close()
        assert server.request_count == 3
        again = CallCache(tmp_path / "cache.sqlite", CacheMode.USE, run="two")
        (second,) = produce(spec, base, {"q": "Plan"}, cache=again)
        again.close()
        assert server.request_count == 3  # every step replayed
    assert isinstance(first, LaneOutput) and isinstance(second, LaneOutput)
    assert second.value == first.value and second.cached and not first.cached
    assert second.model_calls is not None and all(cached for _, cached in second.model_calls)
    assert second.tries == first.tries == 3


def test_tools_are_declared_so_a_model_can_be_told_about_them(base: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match="either a host function"):
        parse_task_spec({**agent(FakeOpenAI()), "tools": {"t": {"description": "no source"}}})
    with pytest.raises(pydantic.ValidationError, match="tool name"):
        parse_task_spec({**agent(FakeOpenAI()), "tools": {"has space": "recorded"}})
    with pytest.raises(pydantic.ValidationError, match="tools"):
        parse_task_spec({**agent(FakeOpenAI()), "tools": {}})
    with pytest.raises(LaneConfigError, match="missing_function"):
        produce({**agent(FakeOpenAI()), "tools": {"m": "tools.py:missing_function"}}, base)


KEEPING_TOOLS = '''
def cart(item: str, *, state: dict) -> list:
    """Add an item and return the cart itself (the state's own list, changed by later calls)."""
    state.setdefault("cart", []).append(item)
    return state["cart"]

def sort_in_place(items: list) -> int:
    items.sort()
    items.append("changed")
    return len(items)
'''


def test_a_step_records_results_and_arguments_as_they_were_when_the_tool_returned(tmp_path: Path) -> None:
    (tmp_path / "keeping.py").write_text(textwrap.dedent(KEEPING_TOOLS))
    turns = {
        "Shop": [
            {"tool_calls": [call("cart", {"item": "tea"})]},
            {"tool_calls": [call("cart", {"item": "milk"}), call("sort_in_place", {"items": ["b", "a"]})]},
            "done",
        ]
    }
    with FakeOpenAI(turns=turns) as server:
        spec = agent(server, tools={"cart": "keeping.py:cart", "sort_in_place": "keeping.py:sort_in_place"})
        (outcome,) = produce(spec, tmp_path, {"q": "Shop"})
        requests = [request.body for request in server.requests]
    assert isinstance(outcome, LaneOutput), outcome
    trajectory = outcome.value
    calls = [(c["name"], c["arguments"], c.get("result")) for c in trajectory["tool_calls"]]
    assert calls == [
        ("cart", {"item": "tea"}, ["tea"]),
        ("cart", {"item": "milk"}, ["tea", "milk"]),
        ("sort_in_place", {"items": ["b", "a"]}, 3),
    ]
    assert trajectory["final_state"] == {"cart": ["tea", "milk"]}
    # what the model was told at the second step is what the first call answered then, in the request and after it
    told = [[m["content"] for m in request["messages"] if m["role"] == "tool"] for request in requests[1:]]
    assert told == [['["tea"]'], ['["tea"]', '["tea","milk"]', "3"]]
    tool_messages = [m for m in trajectory["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["parts"][0]["response"] == ["tea"]
