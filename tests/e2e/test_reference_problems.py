"""A reference the metric cannot compare with is the gold's problem, through the CLI (issue #32).

``contains@5``, ``set_overlap@5``, ``tool_calls@5``: a gold of the wrong type is ``non_evaluable``
``reference_wrong_type``, counted in the population and tolerable with ``tolerate: [non_evaluable]``. Before, it was an
``error``, which no gate tolerates: one bad gold row blocked the gate on a system that answered every example right.
``enum@5``: values written as JSON numbers take a text answer that spells one, as ``exact_match@5`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.runs.artifacts import score_rows
from tests.e2e.project import approve_as_is, make_project

CALL = [{"name": "search", "arguments": {"q": "paris"}}]

#: Per metric: its config, and rows whose answers are all right, the last with a gold of the wrong type.
CASES: dict[str, tuple[dict[str, Any], list[tuple[Any, Any]]]] = {
    "contains": (
        {"type": "contains", "reference": "expected"},
        [("Paris is big", "Paris"), ("in Rome", ["Rome"]), ("Oslo", "Oslo"), ("Lyon", 7)],
    ),
    "set_overlap": (
        {"type": "set_overlap", "reference": "expected"},
        [(["a", "b"], ["b", "a"]), (["c"], ["c"]), (["d"], ["d"]), (["e"], "e")],
    ),
    "tool_calls": (
        {"type": "tool_calls", "reference": "expected", "mode": "exact"},
        [(CALL, CALL), (CALL, CALL), (CALL, CALL), (CALL, "search")],
    ),
}


def _project(tmp_path: Path, name: str, tolerate: bool) -> Any:
    config, pairs = CASES[name]
    gate: dict[str, Any] = {"metric": "m", "proposed_threshold": 0.9}
    if tolerate:
        gate["tolerate"] = ["non_evaluable"]
    project = make_project(tmp_path, metrics={"m": config}, gates={"g": gate})
    project.write_rows(
        [{"id": f"ex-{index}", "expected": gold, "output": output} for index, (output, gold) in enumerate(pairs)]
    )
    approve_as_is(project, 0.9, ["g"])
    return project


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_gold_of_the_wrong_type_is_non_evaluable_counted_and_tolerable(tmp_path: Path, name: str) -> None:
    project = _project(tmp_path, name, tolerate=True)
    result = project.run("--format", "json")
    card = result.json()
    gate = card["decision"]["gates"][0]
    assert (result.code, gate["outcome"], gate["value"]) == (0, "pass", 1.0), (gate, result.err)
    population = card["metrics"][0]["population"]
    assert population["included"] == 3 and population["excluded_by_status"] == {"non_evaluable": 1}, population
    (diagnostic,) = population["top_diagnostics"]
    assert diagnostic["code"] == "reference_wrong_type" and "needs a reference that is" in diagnostic["example"]
    bad = {row["id"]: row["scores"]["m"] for row in score_rows(project.last_run() / "scores.jsonl")}["ex-3"]
    assert bad["status"] == "non_evaluable" and bad.get("value") is None, bad
    assert project.cli("verify", str(project.last_run())).code == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_untolerated_gold_problem_still_blocks_the_gate(tmp_path: Path, name: str) -> None:
    """Tolerance is declared: without it the gold's problem is an incomplete measurement, never a silent pass."""
    result = _project(tmp_path, name, tolerate=False).run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert gate["outcome"] == "blocked" and result.code != 0, gate


def test_enum_values_written_as_numbers_take_text_that_spells_them(tmp_path: Path) -> None:
    rows = [
        {"id": "four", "output": "4"},
        {"id": "seven", "output": " 7.0\n"},
        {"id": "yes", "output": "true"},
        {"id": "number", "output": 4},
        {"id": "words", "output": "five"},
    ]
    project = make_project(
        tmp_path,
        metrics={"label": {"type": "enum", "values": [4, 7, True]}},
        gates={"g": {"metric": "label", "proposed_threshold": 0.7}},
    )
    project.write_rows(rows)
    approve_as_is(project, 0.7, ["g"])
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert (result.code, gate["outcome"], gate["value"]) == (0, "pass", 0.8), (gate, result.err)
    scores = {row["id"]: row["scores"]["label"] for row in score_rows(project.last_run() / "scores.jsonl")}
    assert scores == {"four": 1.0, "seven": 1.0, "yes": 1.0, "number": 1.0, "words": 0.0}, scores
    assert project.cli("verify", str(project.last_run())).code == 0
