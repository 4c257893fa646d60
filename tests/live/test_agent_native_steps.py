"""The agent lane's native step clients against the fake Anthropic and Gemini servers: the same script gives the same
trajectory whichever API answers (the API's call ids and token counts aside), finish reasons are named alike, and
an answer with neither text nor a call is a malformed response, never an empty turn."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.modelstep import NativeStepClient, OpenAIStepClient
from evalglass.lanes.ports import LaneOutcome, LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_gemini import FakeGemini
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, parse_task_spec, run

TOOLS = '''
def weather(city: str) -> dict:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return {"city": city, "celsius": 21}

def add_to_cart(item: str, *, state: dict) -> str:
    """Add an item to the cart."""
    state.setdefault("cart", []).append(item)
    return "added"
'''

SCRIPT = {
    "Weather in Paris?": [
        {
            "content": "Looking.",
            "tool_calls": [
                {"name": "weather", "arguments": {"city": "Paris"}},
                {"name": "weather", "arguments": {"city": "Atlantis"}},
            ],
        },
        {
            "tool_calls": [
                {"name": "add_to_cart", "arguments": {"item": "umbrella"}},
                {"name": "teleport", "arguments": {}},
            ]
        },
        "It is 21 degrees.",
    ],
    "Write a novel.": [{"content": "Once upon a", "finish_reason": "{length}"}],
    "Say nothing.": [{"content": "", "finish_reason": "{blocked}"}],
}
#: Each API's own name for a truncated and for a blocked answer.
REASONS = {
    "openai": {"length": "length", "blocked": "content_filter"},
    "anthropic": {"length": "max_tokens", "blocked": "refusal"},
    "gemini": {"length": "MAX_TOKENS", "blocked": "SAFETY"},
}


def fake(provider: str) -> FakeOpenAI:
    turns = {
        prompt: [
            turn
            if isinstance(turn, str)
            else {
                **turn,
                **(
                    {"finish_reason": turn["finish_reason"].format(**REASONS[provider])}
                    if "finish_reason" in turn
                    else {}
                ),
            }
            for turn in script
        ]
        for prompt, script in SCRIPT.items()
    }
    if provider == "anthropic":
        return FakeAnthropic(turns=turns)
    if provider == "gemini":
        return FakeGemini(turns=turns)
    return FakeOpenAI(turns=turns)


def produce(provider: str, base: Path, *prompts: str) -> tuple[list[LaneOutcome], type]:
    base.mkdir(parents=True, exist_ok=True)
    (base / "tools.py").write_text(textwrap.dedent(TOOLS))
    with fake(provider) as server:
        spec = parse_task_spec(
            {
                "type": "agent",
                "provider": provider,
                "base_url": server.base_url,
                "model": "agent-model",
                "api_key_env": "EVALGLASS_TEST_KEY",
                "max_tokens": 64,
                "prompt": "{{ q }}",
                "tools": {"weather": "tools.py:weather", "add_to_cart": "tools.py:add_to_cart"},
                "retry": {"max_attempts": 2, "initial_delay": 0, "max_delay": 0},
            }
        )

        async def go() -> tuple[list[LaneOutcome], type]:
            lane = build_lane(spec, base_dir=base, executor=AsyncioExecutor(4), env=KEY_ENV)
            try:
                outcomes = [await lane.produce(f"e{i}", {"q": prompt}, 0) for i, prompt in enumerate(prompts)]
                return outcomes, type(lane.client)  # type: ignore[attr-defined]
            finally:
                await lane.aclose()

        return run(go())


def without_ids(trajectory: dict[str, Any]) -> dict[str, Any]:
    """The trajectory as the same script gives it from any API: call ids, tokens and the model name are the API's."""
    messages = [
        {**message, "parts": [{k: v for k, v in part.items() if k != "id"} for part in message["parts"]]}
        for message in trajectory["messages"]
    ]
    calls = [{k: v for k, v in call.items() if k != "id"} for call in trajectory["tool_calls"]]
    kept = {k: v for k, v in trajectory.items() if k not in ("usage", "model", "messages", "tool_calls")}
    return {**kept, "messages": messages, "tool_calls": calls}


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_the_same_script_gives_the_same_trajectory_whichever_api_answers(provider: str, tmp_path: Path) -> None:
    (native,), client = produce(provider, tmp_path / provider, "Weather in Paris?")
    (reference,), reference_client = produce("openai", tmp_path / "openai", "Weather in Paris?")
    assert (client, reference_client) == (NativeStepClient, OpenAIStepClient)
    assert isinstance(native, LaneOutput) and isinstance(reference, LaneOutput)
    trajectory = native.value
    assert without_ids(trajectory) == without_ids(reference.value)
    assert trajectory["finish"] == "stop" and trajectory["steps"] == 3
    assert [call.get("error_type") for call in trajectory["tool_calls"]] == [None, "ValueError", None, "unknown_tool"]
    assert trajectory["final_state"] == {"cart": ["umbrella"]}
    ids = [call["id"] for call in trajectory["tool_calls"]]
    assert len(set(ids)) == 4 and all(ids)  # the API's own ids, one per call, each answered by its result
    assert trajectory["usage"]["input_tokens"] > 0 and native.usage is not None


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_finish_reasons_are_named_alike_and_a_blocked_answer_is_an_empty_answer(provider: str, tmp_path: Path) -> None:
    """A blocked answer ends the trajectory as the model's (empty) answer on every API, its reason kept: what the
    system under test did, measured, never the evaluator's failure."""
    (truncated, blocked), _ = produce(provider, tmp_path, "Write a novel.", "Say nothing.")
    assert isinstance(truncated, LaneOutput)
    assert (truncated.value["finish"], truncated.value["text"]) == ("length", "Once upon a")
    assert isinstance(blocked, LaneOutput), blocked
    assert blocked.value["finish"] == REASONS[provider]["blocked"]
    assert not blocked.value.get("text") and not blocked.value["tool_calls"]
