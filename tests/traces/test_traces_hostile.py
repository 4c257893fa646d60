"""Traces as a sloppy exporter writes them: a value no instrumented call can report is a malformed trace at its
place, never a measurement."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import run_cli
from tests.traces.otel import chat_span, recording
from tests.traces.test_traces_cli import project


def test_a_negative_token_count_is_a_malformed_trace_not_a_cheap_call(tmp_path: Path) -> None:
    """A negative count passes any budget on tokens (and, summed into a trace's usage, would make an expensive trace
    pass it): it is no measurement of the call."""
    with recording() as (tracer, finished):
        chat_span(tracer, "Q1", "30 days", input_tokens=4000)
        chat_span(tracer, "Q2", "30 days", input_tokens=5000)
        chat_span(tracer, "Q3", "30 days", input_tokens=-4900)
        spans = finished()
    budget = {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 4500}
    project(tmp_path, {"metrics": {"budget": budget}}, spans)
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    (found,) = result.json()["metrics"]
    assert found["population"]["included"] == 2, found
    assert found["population"]["excluded_by_status"] == {"error": 1}
    (diagnostic,) = found["population"]["top_diagnostics"]
    assert diagnostic["code"] == "malformed_trace" and "gen_ai.usage.input_tokens" in diagnostic["example"]
    assert "-4900" in diagnostic["example"]
