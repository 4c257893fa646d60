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
