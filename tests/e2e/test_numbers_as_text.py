"""A text answer that spells the gold's number or boolean is right (`exact_match@5`), through the CLI.

A system that answers in text says 42 as "42", and a dataset written as JSON says it as 42. Before, every such pair
scored 0.0 (`type_mismatch`) whatever the answer said, so a gate on a bot that was right on every example failed
"below the approved threshold". Text that spells another value, or no number at all, is still a wrong answer."""

from __future__ import annotations

from pathlib import Path

from evalglass.engine.runs.artifacts import score_rows
from tests.e2e.project import approve_as_is, make_project

ROWS = [
    {"id": "sum", "question": "2 + 2?", "expected": 4, "output": "4"},
    {"id": "pi", "question": "pi to two places?", "expected": 3.14, "output": " 3.14\n"},
    {"id": "count", "question": "How many legs has a spider?", "expected": 8, "output": "8.0"},
    {"id": "yes", "question": "Is water wet?", "expected": True, "output": "true"},
    {"id": "label", "question": "Category id of refunds?", "expected": "12", "output": 12},
    {"id": "wrong", "question": "3 + 3?", "expected": 6, "output": "7"},
    {"id": "words", "question": "10 / 2?", "expected": 5, "output": "five"},
]


def test_text_that_spells_the_gold_number_is_the_right_answer(tmp_path: Path) -> None:
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "proposed_threshold": 0.7}})
    project.write_rows(ROWS)
    approve_as_is(project, 0.7, ["accuracy"])
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert (result.code, gate["outcome"], gate["value"]) == (0, "pass", 5 / 7), (gate, result.err)
    scores = {row["id"]: row["scores"]["exact"] for row in score_rows(project.last_run() / "scores.jsonl")}
    assert {key: scores[key] for key in ("sum", "pi", "count", "yes", "label", "wrong")} == {
        "sum": 1.0,
        "pi": 1.0,
        "count": 1.0,
        "yes": 1.0,
        "label": 1.0,
        "wrong": 0.0,
    }
    words = scores["words"]  # no number spelt: the types differ, a wrong answer with its note
    assert (words["value"], words["diagnostics"][0]["code"]) == (0.0, "type_mismatch"), words
    assert project.cli("verify", str(project.last_run())).code == 0
