"""The agent lane against the native APIs through the real CLI: `provider: anthropic` (Messages API, `tool_use` /
`tool_result` blocks) and `provider: gemini` (`generateContent`, `functionCall` / `functionResponse` parts), each
against its fake server, which refuses a tool result that answers no call of the turn before it. Tokens come from
each API's own usage fields (the prompt cache's reads and writes priced apart), rate limits and overloads are
retried by the lane's policy, a malformed answer is a lane failure, and a repeated run asks nothing again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_gemini import FakeGemini
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass

TOOLS = '''
def weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "celsius": len(city)}


def add_to_cart(item: str, *, state: dict) -> str:
    """Add an item to the cart."""
    state.setdefault("cart", []).append(item)
    return "added"
'''

#: Per conversation (its first user message): look up the weather, add an item to the cart, answer.
STEPS = 3
PRICE = {
    "prompt_per_million": 1.0,
    "completion_per_million": 2.0,
    "cache_read_per_million": 0.1,
    "cache_write_per_million": 1.25,
}


def script(number: int) -> list[Any]:
    return [
        {"content": "Let me look.", "tool_calls": [{"name": "weather", "arguments": {"city": f"city{number}"}}]},
        {"tool_calls": [{"name": "add_to_cart", "arguments": {"item": f"item{number % 3}"}}]},
        f"Done with {number}.",
    ]


#: The prompt of each example: `task N`, with a directive that scripts the fake's faults for some.
FAULTS = {3: "[[behaviour:{busy},ok]]", 4: "[[behaviour:429:0,ok]]", 5: "[[behaviour:malformed]]"}


def prompt(number: int, busy: str) -> str:
    fault = FAULTS.get(number, "").format(busy=busy)
    return f"task {number} {fault}".strip()


@pytest.fixture(params=["anthropic", "gemini"])
def server(request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    busy = "529" if request.param == "anthropic" else "503"
    turns = {f"task {number}": script(number) for number in range(8)}
    fake: FakeOpenAI = (
        FakeAnthropic(turns=turns, cache_read=2, cache_write=1)
        if request.param == "anthropic"
        else FakeGemini(turns=turns, cache_read=2)
    )
    fake.provider = request.param  # type: ignore[attr-defined]
    fake.busy = busy  # type: ignore[attr-defined]
    with fake:
        yield fake


def write(project: LiveProject, server: FakeOpenAI, count: int) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    task = {
        "type": "agent",
        "provider": server.provider,  # type: ignore[attr-defined]
        "base_url": project.base_url,
        "model": "agent-model",
        "api_key_env": "EVALGLASS_E2E_KEY",
        "max_tokens": 256,
        "system": "Use the tools.",
        "prompt": "{{ request }}",
        "tools": {"weather": "tools.py:weather", "add_to_cart": "tools.py:add_to_cart"},
        "max_steps": 4,
        "timeout": 5,
        "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.02},
    }
    rows = [
        {
            "id": f"t{number}",
            "request": prompt(number, server.busy),  # type: ignore[attr-defined]
            "expected_calls": [
                {"name": "weather", "arguments": {"city": f"city{number}"}},
                {"name": "add_to_cart", "arguments": {"item": f"item{number % 3}"}},
            ],
        }
        for number in range(count)
    ]
    metrics = {
        "right_calls": {"type": "tool_calls", "reference": "expected_calls", "mode": "exact"},
        "few_steps": {"type": "steps", "count": "model_turns", "max": 3},
    }
    project.write(rows, task=task, metrics=metrics, prices={"agent-model": PRICE})


def outputs(project: LiveProject) -> dict[str, dict[str, Any]]:
    lines = (project.last_run() / "outputs.jsonl").read_text().splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def test_an_agent_runs_against_a_native_api_with_its_tokens_cost_and_faults(
    project: LiveProject, server: FakeOpenAI
) -> None:
    provider = server.provider  # type: ignore[attr-defined]
    write(project, server, 8)
    result = project.run()
    assert result.code == 0, result.err
    rows = outputs(project)

    trajectory = rows["t0"]["samples"][0]["output"]
    assert (trajectory["finish"], trajectory["steps"], trajectory["text"]) == ("stop", STEPS, "Done with 0.")
    assert [(call["name"], call["arguments"], call["result"]) for call in trajectory["tool_calls"]] == [
        ("weather", {"city": "city0"}, {"city": "city0", "celsius": 5}),
        ("add_to_cart", {"item": "item0"}, "added"),
    ]
    assert trajectory["final_state"] == {"cart": ["item0"]}
    # The API's own ids came back and went out again with the results (the fakes refuse a result for no call).
    prefix = "toolu_" if provider == "anthropic" else "call_"
    assert [call["id"] for call in trajectory["tool_calls"]] == [f"{prefix}0_0", f"{prefix}1_0"]

    # Tokens from the API's usage fields: every input token counted, the prompt cache's reads (and Anthropic's
    # writes) kept apart and priced at their own rates.
    usage = trajectory["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["cache_read_input_tokens"] == 2 * STEPS
    if provider == "anthropic":
        assert usage["cache_creation_input_tokens"] == 1 * STEPS
        writes = 1 * STEPS
    else:
        assert "cache_creation_input_tokens" not in usage
        writes = 0
    reads = 2 * STEPS
    expected_cost = (
        (usage["input_tokens"] - reads - writes) * 1.0 + reads * 0.1 + writes * 1.25 + usage["output_tokens"] * 2.0
    ) / 1e6
    assert trajectory["cost"] == pytest.approx(expected_cost)

    # In each request: the API's tool shape, the system prompt where the API takes it.
    bodies = [request.body for request in server.requests if request.status == 200]
    last = next(body for body in bodies if "task 0" in json.dumps(body) and "item0" in json.dumps(body))
    if provider == "anthropic":
        assert last["system"] == "Use the tools." and last["max_tokens"] == 256
        assert {tool["name"] for tool in last["tools"]} == {"weather", "add_to_cart"}
        assert "input_schema" in last["tools"][0]
        blocks = [block["type"] for message in last["messages"] for block in message["content"]]
        assert blocks.count("tool_use") == 2 and blocks.count("tool_result") == 2
    else:
        assert last["systemInstruction"] == {"parts": [{"text": "Use the tools."}]}
        assert last["generationConfig"] == {"maxOutputTokens": 256}
        declared = last["tools"][0]["functionDeclarations"]
        assert {tool["name"] for tool in declared} == {"weather", "add_to_cart"}
        parts = [next(iter(part)) for content in last["contents"] for part in content["parts"]]
        assert parts.count("functionCall") == 2 and parts.count("functionResponse") == 2

    # An overload (Anthropic 529, Gemini 503) and a 429 are retried, and the trajectory goes on as if none happened;
    # a malformed answer (not retried by default) is a lane failure, never a trajectory.
    for number in (3, 4):
        retried = rows[f"t{number}"]["samples"][0]
        assert retried["output"]["finish"] == "stop" and retried["output"]["steps"] == STEPS
    failed = rows["t5"]["samples"][0]
    assert "output" not in failed and failed["error"]["code"] == "call_malformed_response"
    scorecard = json.loads((project.last_run() / "scorecard.json").read_text())
    assert scorecard["calls"]["retries"] == 2
    values = {metric["name"]: metric for metric in scorecard["metrics"]}
    assert values["right_calls"]["estimate"]["point"] == pytest.approx(1.0)
    assert values["right_calls"]["population"]["excluded_by_status"] == {"error": 1}
    (diagnostic,) = values["right_calls"]["population"]["top_diagnostics"]
    assert diagnostic["code"] == "call_malformed_response"
    (tokens,) = scorecard["usage"]
    assert tokens["calls"] == 7 * STEPS  # one per model step of the seven trajectories
    assert tokens["prompt_cache_read_tokens"] == 2 * tokens["calls"]
    assert tokens["prompt_cache_write_tokens"] == (tokens["calls"] if provider == "anthropic" else 0)
    assert tokens["cost"] == pytest.approx(
        sum(row["samples"][0].get("output", {}).get("cost", 0) for row in rows.values())
    )
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def test_a_repeated_native_agent_run_replays_every_step_from_the_cache(
    project: LiveProject, server: FakeOpenAI
) -> None:
    write(project, server, 3)
    assert project.run().code == 0
    first = outputs(project)
    asked = server.request_count
    assert asked == 3 * STEPS

    server.reset()
    again = project.run()
    assert again.code == 0, again.err
    assert server.request_count == 0
    second = outputs(project)
    for example_id, row in first.items():
        assert second[example_id]["samples"][0]["output"] == row["samples"][0]["output"]
    scorecard = json.loads((project.last_run() / "scorecard.json").read_text())
    (tokens,) = scorecard["usage"]
    assert tokens["cached_calls"] == asked and tokens["calls"] == 0
