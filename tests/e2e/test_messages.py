"""Messages a user reads: each says what happened, where, and what to do (issue 11, items 16-18)."""

from __future__ import annotations

import pytest

from tests.e2e.project import make_project
from tests.e2e.test_verdicts import approve


def test_explain_a_gate_blocked_because_no_bound_exists(tmp_path):
    project = make_project(
        tmp_path,
        metrics={"exact": {"type": "exact_match", "reference": "expected", "interval": {"method": "student_t"}}},
        gates={"accuracy": {"metric": "exact", "rule": "lower_bound"}},
    )
    project.write_rows([{"id": "only", "expected": "y", "output": "y"}])
    project.write_ledger(approve(project, threshold=0.5))
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert result.code == 1 and gate["outcome"] == "blocked"
    assert [reason["code"] for reason in gate["reasons"]] == ["interval_undefined"]
    explained = project.cli("explain", "accuracy")
    assert explained.code == 0, explained.err
    assert "interval_undefined" in explained.out and "add examples" in explained.out


def test_explain_an_unknown_name_is_one_line(tmp_path):
    project = make_project(tmp_path)
    project.run()
    result = project.cli("explain", "nope")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "error: no gate or metric named 'nope' in this run (known: accuracy, exact) — pass a gate or metric name "
        "from this run"
    ]


@pytest.mark.parametrize(
    ("direction", "threshold", "relation", "sign"),
    [("higher_is_better", 0.8, "below", "≥"), ("lower_is_better", 0.5, "above", "≤")],
)
def test_a_failing_gate_says_below_threshold_with_value_and_threshold(tmp_path, direction, threshold, relation, sign):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "direction": direction}})
    project.write_ledger(approve(project, threshold=threshold))
    result = project.run("--format", "json", "--out", "out")
    gate = result.json()["decision"]["gates"][0]
    assert result.code == 1 and gate["outcome"] == "fail"
    assert gate["reasons"] == [
        {
            "code": "below_threshold",
            "message": f"the value 0.75 is {relation} the approved threshold (needs {sign} {threshold})",
        }
    ]
    verified = project.cli("verify", "out")
    assert verified.code == 0, verified.out  # verify re-derives the reason too
    for shown in (project.cli("view", "out").out, project.cli("explain", "accuracy", "--run", "out").out):
        assert "below_threshold" in shown
    assert "below_threshold" in (tmp_path / "out" / "report.md").read_text()


def test_verify_names_a_removed_below_threshold_reason(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.8))
    project.run("--out", "out")
    card_path = tmp_path / "out" / "scorecard.json"
    card_path.write_text(card_path.read_text().replace('"below_threshold"', '"below_min_n"'))
    result = project.cli("verify", "out")
    assert result.code == 1 and "reasons" in result.out and "below_threshold" in result.out
