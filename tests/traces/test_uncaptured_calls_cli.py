"""Tool calls a trace holds only in messages its instrumentation did not capture are unknown, never "no call": a metric
on them is ``content_not_captured`` through the real CLI, whether it reads the whole output or ``field:
tool_calls``, on a trace of one span or of several."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.project import run_cli
from tests.traces.otel import chat_span, recording
from tests.traces.test_traces_cli import project, scores_of

ASKED = {"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": {"order": "A-17"}}


def spans() -> Any:
    """Per shape (one chat span; an agent span over two chat spans, the second given the conversation so far): one
    trace whose content was captured (one call to lookup_order) and one whose content was not."""
    user = {"role": "user", "parts": [{"type": "text", "content": "Where is A-17?"}]}
    called = {"role": "assistant", "parts": [ASKED]}
    answered = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "shipped"}]}

    def captured(**attributes: Any) -> dict[str, str]:
        return {name: json.dumps(value) for name, value in attributes.items()}

    with recording() as (tracer, finished):
        for capture in (True, False):
            first = captured(**{"gen_ai.input.messages": [user], "gen_ai.output.messages": [called]}) if capture else {}
            chat_span(tracer, None, None, finish="tool_calls", extra=first)
            root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
            with tracer.start_as_current_span("invoke_agent support", attributes=root):
                chat_span(tracer, None, None, finish="tool_calls", extra=first)
                history = [user, called, answered]
                second = captured(**{"gen_ai.input.messages": history}) if capture else {}
                chat_span(tracer, None, "Shipped." if capture else None, extra=second)
        return finished()


METRICS = {
    "calls": {"type": "steps", "count": "tool_calls", "field": "tool_calls"},
    "answered_alone": {"type": "steps", "count": "tool_calls", "max": 0},
    "no_loop": {"type": "loop", "repeats": 2, "field": "tool_calls"},
}


def test_calls_in_uncaptured_messages_are_not_captured_not_none(tmp_path: Path) -> None:
    project(tmp_path, {"metrics": METRICS}, spans())
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    for metric in METRICS:
        scores = scores_of(tmp_path, metric)
        assert len(scores) == 4
        unmeasured = [score for score in scores if isinstance(score, dict) and score["status"] == "non_evaluable"]
        assert len(unmeasured) == 2, (metric, scores)
        assert all(score["diagnostics"][0]["code"] == "content_not_captured" for score in unmeasured)
    # the captured traces are measured: one call each (a count, a budget of 0 exceeded, no loop)
    assert sorted(score for score in scores_of(tmp_path, "calls") if not isinstance(score, dict)) == [1.0, 1.0]


def test_usage_a_span_did_not_report_is_not_recorded_not_the_worst_value(tmp_path: Path) -> None:
    """A span without token counts (a provider that returns none) is a gap in the evidence: a budget on the tokens is
    `non_evaluable` `not_recorded` there, and decides on the spans that report them."""
    with recording() as (tracer, finished):
        for index in range(4):
            chat_span(tracer, f"Q{index}", "A", input_tokens=None if index == 3 else 12)
        traces = finished()
    metrics = {"small_prompt": {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 100}}
    project(tmp_path, {"metrics": metrics}, traces)
    result = run_cli("run", "--no-history", cwd=tmp_path)
    assert result.code == 0, result.err
    scores = scores_of(tmp_path, "small_prompt")
    assert scores[:3] == [1.0, 1.0, 1.0]
    assert scores[3]["status"] == "non_evaluable" and scores[3]["diagnostics"][0]["code"] == "not_recorded"
    assert "usage.input_tokens" in scores[3]["diagnostics"][0]["message"]
