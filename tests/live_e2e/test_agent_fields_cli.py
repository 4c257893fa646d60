"""A metric on a field an agent lane never records is the config's mistake, refused before any call (exit 2), never a
worst value scored on every example (a red the agent could not mend)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject
from .test_agent_cli import TOOLS

CHECK = "import sys; sys.exit(0)"


def scripted(body: dict[str, Any]) -> Any:
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if turn == 0:
        return {"tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]}
    return "Done."


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(turns=scripted) as fake:
        yield fake


def write(project: LiveProject, metrics: dict[str, Any], tools: dict[str, str], **top: Any) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    task = project.agent(tools, max_steps=3)
    checks = {"ok": {"command": [sys.executable, "-c", CHECK]}}
    rows = [{"id": f"t{n}", "request": f"task {n}"} for n in range(3)]
    project.write(rows, task=task, metrics=metrics, checks=checks, **top)


def test_a_field_the_trajectory_never_holds_is_refused_at_its_line(project: LiveProject, server: FakeOpenAI) -> None:
    metrics = {
        "fast": {"type": "numeric_bounds", "field": "latency_ms", "max": 2000},
        "cheap": {"type": "numeric_bounds", "field": "cost", "max": 1},
        "answered": {"type": "contains", "field": "text", "value": "Done"},
    }
    write(project, metrics, {"weather": "tools.py:weather"})
    result = project.run()
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(lines) == 2, result.err
    assert any("metrics.fast.field" in line and "'latency_ms'" in line and "never holds" in line for line in lines)
    assert any("metrics.cheap.field" in line and "prices:" in line and "cost" in line for line in lines)
    assert server.request_count == 0

    # With a price for its model, the cost is recorded and measured.
    metrics.pop("fast")
    price = {"prompt_per_million": 1.0, "completion_per_million": 1.0}
    write(project, metrics, {"weather": "tools.py:weather"}, prices={"agent-model": price})
    result = project.run()
    assert result.code == 0, result.err
    cheap = [row["scores"]["cheap"] for row in project.scores()]
    assert cheap and all(score == 1.0 for score in cheap)  # scored and valid


def test_final_state_without_a_stateful_tool_is_refused_not_scored_zero(
    project: LiveProject, server: FakeOpenAI
) -> None:
    metrics = {"cart": {"type": "final_state", "check": "ok"}}
    write(project, metrics, {"weather": "tools.py:weather"})
    result = project.run()
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    assert "metric 'cart' reads the trajectory's final_state" in result.err and "`state`" in result.err
    assert server.request_count == 0

    # A tool that keeps state: the same metric measures.
    write(project, metrics, {"weather": "tools.py:weather", "add_to_cart": "tools.py:add_to_cart"})
    result = project.run()
    assert result.code == 0, result.err
    cart = [row["scores"]["cart"] for row in project.scores()]
    assert [(score["status"], score["value"]) for score in cart] == [("scored", 1.0)] * 3
