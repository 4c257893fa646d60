"""A recorded output read as a trajectory by one metric and as text by another is not both: the text metric is
refused at its line (exit 2), saying `field: text`; a trace's `output` is a trajectory the same way."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import Project, run_cli
from tests.traces.otel import chat_span, recording
from tests.traces.test_traces_cli import project as trace_project

TRAJECTORY = {
    "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}],
    "tool_calls": [],
    "text": "Hello.",
}


def recorded(tmp_path: Path, metrics: dict[str, object]) -> Project:
    project = Project(tmp_path)
    project.evals.mkdir(exist_ok=True)
    project.write_rows([{"id": "a", "trajectory": TRAJECTORY, "expected": []}])
    project.write_ledger({})
    project.write_config(
        {
            "version": 1,
            "dataset": {"name": "trips", "path": "data.jsonl"},
            "task": {"type": "recorded", "field": "trajectory"},
            "metrics": metrics,
        }
    )
    return project


def test_text_metric_beside_a_trajectory_metric_on_a_recorded_output_is_refused(tmp_path: Path) -> None:
    metrics: dict[str, object] = {
        "calls": {"type": "tool_calls", "reference": "expected", "mode": "exact", "vacuous": "pass"},
        "greets": {"type": "contains", "value": "Hello"},
    }
    result = recorded(tmp_path, metrics).run()
    assert result.code == 2, result.out + result.err
    (line,) = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert "evalglass.yaml:" in line and "metric 'greets'" in line and "metric 'calls'" in line
    assert "`field: text`" in line and "Traceback" not in result.err

    metrics["greets"] = {"type": "contains", "value": "Hello", "field": "text"}
    project = recorded(tmp_path, metrics)
    result = project.run()
    assert result.code == 0, result.err


def test_an_answer_metric_on_a_trace_output_is_refused(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "How long is the refund window?", "30 days")
        spans = finished()
    trace_project(tmp_path, {"metrics": {"says": {"type": "regex", "pattern": "days"}}}, spans)
    result = run_cli("run", "--no-history", cwd=tmp_path)
    assert result.code == 2, result.out + result.err
    assert "metric 'says' (regex)" in result.err and "`field: text`" in result.err
    trace_project(tmp_path, {"metrics": {"says": {"type": "regex", "pattern": "days", "field": "text"}}}, spans)
    result = run_cli("run", "--no-history", cwd=tmp_path)
    assert result.code == 0, result.err
