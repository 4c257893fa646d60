"""A trace that lost spans (its root, or a span between its model calls and the rest), through the real CLI on
OTLP/JSON lines the SDK's exporter wrote: one example whose every metric is an ``error`` naming the trace and the
missing spans, never its fragments scored as whole traces. Traces whose examples are whole stay as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.project import run_cli
from tests.traces.otel import chat_span, recording
from tests.traces.test_otlp_reader import agent_trace
from tests.traces.test_traces_cli import project

METRICS = {
    "metrics": {
        "answered": {"type": "contains", "field": "text", "value": "shipped"},
        "calls": {"type": "steps", "count": "tool_calls", "max": 5},
    }
}


def _run(root: Path, spans: Any, config: dict[str, Any] = METRICS) -> dict[str, Any]:
    project(root, config, spans)
    result = run_cli("run", "--no-history", "--format", "json", cwd=root)
    assert result.code == 0, result.err
    card: dict[str, Any] = result.json()
    return card


def _without(spans: Any, *names: str) -> list[Any]:
    return [span for span in spans if span.name not in names]


def test_an_agent_trace_whose_root_span_was_dropped_is_one_partial_example(tmp_path: Path) -> None:
    """invoke_agent dropped: its two model calls and its tool call hang from a span the file lacks. Read as before,
    they were three examples (the tool call's answer scored alone, the first call's question judged without its
    answer); now one malformed example, `partial_trace`, an `error` for every metric (never a pass or 0.0)."""
    with recording() as (tracer, finished):
        agent_trace(tracer)
        spans = finished()
    root = next(span for span in spans if span.name == "invoke_agent support")
    card = _run(tmp_path, _without(spans, "invoke_agent support"))
    assert card["dataset"]["examples"] == 1
    for metric in card["metrics"]:
        population = metric["population"]
        assert population["included"] == 0 and population["excluded_by_status"] == {"error": 1}, metric
        (diagnostic,) = population["top_diagnostics"]
        assert diagnostic["code"] == "partial_trace"
        assert f"{root.context.trace_id:032x} is partial" in diagnostic["example"]
        assert f"{root.context.span_id:016x}" in diagnostic["example"]  # the span it lacks
        assert "3 top-level GenAI spans are in 3 fragments" in diagnostic["example"]
        assert metric["estimate"] is None  # nothing measured: no figure, never 0.0


def test_a_span_lost_between_the_agent_and_its_model_calls_makes_the_trace_partial(tmp_path: Path) -> None:
    """The root is there, but a framework span between it and a model call was dropped: that call is cut off from
    its agent. Read as before, the agent was one example without that call and the call another; now one
    partial example."""
    with recording() as (tracer, finished):
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
        with tracer.start_as_current_span("invoke_agent support", attributes=agent):
            chat_span(tracer, "Where is order A-17?", "Let me look.")
            with tracer.start_as_current_span("retry wrapper"):
                chat_span(tracer, "Where is order A-17?", "It has shipped.")
        spans = finished()
    whole = _run(tmp_path / "whole", spans)
    assert whole["dataset"]["examples"] == 1
    (answered,) = [metric for metric in whole["metrics"] if metric["name"] == "answered"]
    assert answered["population"]["included"] == 1 and answered["estimate"]["point"] == 1.0
    partial = _run(tmp_path / "partial", _without(spans, "retry wrapper"))
    assert partial["dataset"]["examples"] == 1
    for metric in partial["metrics"]:
        assert metric["population"]["excluded_by_status"] == {"error": 1}, metric
        assert metric["population"]["top_diagnostics"][0]["code"] == "partial_trace"


def test_whole_examples_of_a_trace_stay_as_they_were(tmp_path: Path) -> None:
    """Two agents side by side under a request's span are two examples, whether or not that span's own parent is
    in the file (a trace that began in another service, exported elsewhere); and with `unit: span` each model call
    is an example of its own whatever was dropped above it."""
    with recording() as (tracer, finished):
        with tracer.start_as_current_span("POST /support"):
            agent_trace(tracer)
            agent_trace(tracer)
        spans = finished()
    card = _run(tmp_path / "rooted", spans)
    assert card["dataset"]["examples"] == 2
    assert all(metric["population"]["included"] == 2 for metric in card["metrics"])
    # The request span's parent lies in another service's file: the same two examples.
    request = next(span for span in spans if span.name == "POST /support")
    evals = project(tmp_path / "remote", METRICS, spans)
    text = (evals / "traces.jsonl").read_text()
    request_id = f"{request.context.span_id:016x}"
    rewritten = []
    for line in text.splitlines():
        data = json.loads(line)
        for resource in data["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    if span["spanId"] == request_id:
                        span["parentSpanId"] = "00f067aa0ba902b7"
        rewritten.append(json.dumps(data))
    (evals / "traces.jsonl").write_text("\n".join(rewritten) + "\n")
    remote = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path / "remote")
    assert remote.code == 0, remote.err
    assert remote.json()["dataset"]["examples"] == 2
    assert all(metric["population"]["included"] == 2 for metric in remote.json()["metrics"])
    # `unit: span`: the root dropped, each model call is still an example (a call is whole on its own).
    evals = project(tmp_path / "calls", METRICS, _without(spans, "invoke_agent support", "POST /support"))
    config = yaml.safe_load((evals / "evalglass.yaml").read_text())
    config["dataset"]["traces"] = {"select": {"unit": "span"}}
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config))
    calls = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path / "calls")
    assert calls.code == 0, calls.err
    assert calls.json()["dataset"]["examples"] == 4
