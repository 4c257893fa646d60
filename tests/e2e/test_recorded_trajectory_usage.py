"""A recorded trajectory's usage is what its writer recorded: a total it lacks, holds as null, or lists in
`not_recorded` is `non_evaluable` `not_recorded` for a metric that reads it, never the worst value of a wrong answer
and never a number the writer said it did not have."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.project import Project

TRAJECTORY = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}]}
ROWS = [
    {"id": "whole", "trajectory": {**TRAJECTORY, "usage": {"input_tokens": 10, "output_tokens": 2}, "cost": 0.5}},
    {"id": "no-input", "trajectory": {**TRAJECTORY, "usage": {"output_tokens": 2}}},
    {"id": "null-cost", "trajectory": {**TRAJECTORY, "usage": {"input_tokens": 10}, "cost": None}},
    # An agent lane's trajectory with a step that reported no usage: its cost is listed, not made of the rest.
    {
        "id": "listed",
        "trajectory": {**TRAJECTORY, "usage": {"output_tokens": 2}, "not_recorded": ["usage.input_tokens", "cost"]},
    },
    {"id": "no-usage", "trajectory": TRAJECTORY},
]


def statuses(project: Project, metric: str) -> dict[str, tuple[str, Any, str | None]]:
    from evalglass.engine.runs.artifacts import score_rows

    found: dict[str, tuple[str, Any, str | None]] = {}
    for row in score_rows(project.last_run() / "scores.jsonl"):
        score = row["scores"][metric]
        if not isinstance(score, dict):
            found[row["id"]] = ("scored", score, None)
            continue
        code = score["diagnostics"][0]["code"] if score.get("diagnostics") else None
        found[row["id"]] = (score["status"], score.get("value"), code)
    return found


def test_recorded_usage_a_trajectory_lacks_is_not_recorded_not_a_wrong_answer(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.evals.mkdir()
    project.write_rows(ROWS)
    project.write_ledger({})
    project.write_config(
        {
            "version": 1,
            "dataset": {"name": "trips", "path": "data.jsonl"},
            "task": {"type": "recorded", "field": "trajectory"},
            "metrics": {
                "few_input": {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 100},
                "cheap": {"type": "numeric_bounds", "field": "cost", "max": 1},
                "answered": {"type": "contains", "field": "text", "value": "Hello"},
            },
        }
    )
    result = project.run()
    assert result.code == 0, result.err
    unrecorded = ("non_evaluable", None, "not_recorded")
    assert statuses(project, "few_input") == {
        "whole": ("scored", 1.0, None),
        "no-input": unrecorded,
        "null-cost": ("scored", 1.0, None),
        "listed": unrecorded,
        "no-usage": unrecorded,
    }
    assert statuses(project, "cheap") == {
        "whole": ("scored", 1.0, None),
        "no-input": unrecorded,
        "null-cost": unrecorded,
        "listed": unrecorded,
        "no-usage": unrecorded,
    }
    # The answer's own fields are still the system's: a trajectory without text is a wrong answer, measured.
    answered = statuses(project, "answered")
    assert answered["whole"][0] == "scored" and answered["whole"][1] == 0.0
    assert answered["whole"][2] == "output_field_missing"


def test_a_trace_whose_model_call_reported_no_input_count_is_not_recorded(tmp_path: Path) -> None:
    from tests.e2e.project import run_cli
    from tests.traces.otel import chat_span, recording
    from tests.traces.test_traces_cli import project as trace_project
    from tests.traces.test_traces_cli import scores_of

    with recording() as (tracer, finished):
        root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai"}
        with tracer.start_as_current_span("invoke_agent support", attributes=root):
            chat_span(tracer, "Where is A-17?", None, input_tokens=100, output_tokens=10)
            chat_span(tracer, "Where is A-17?", "Shipped.", input_tokens=None, output_tokens=20)
        spans = finished()
    metrics = {
        "few_input": {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 150},
        "few_output": {"type": "numeric_bounds", "field": "usage.output_tokens", "max": 150},
    }
    trace_project(tmp_path, {"metrics": metrics}, spans)
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    (unrecorded,) = scores_of(tmp_path, "few_input")
    assert unrecorded["status"] == "non_evaluable" and unrecorded["diagnostics"][0]["code"] == "not_recorded"
    assert scores_of(tmp_path, "few_output") == [1.0]
