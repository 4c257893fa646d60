"""Issue 26, item 2, for the interval rules: a ``lower_bound`` gate's pass rests on the interval it records
(``compared``, the unfavourable end, and ``favourable_bound``), so a forger who raises those ends past the threshold
and calls the gate ``pass`` must be refused as every other forged pass is. The ends are bound to what the files
hold: a comparative gate's to the recorded paired difference's interval, a Wilson or Clopper–Pearson bound to the
count of passes and ``n`` the scorecard records (computed again), any bound of a method whose interval holds the
point to the value. And an honest undecided gate (blocked, ``undecided``) is shown, not refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.project import make_project
from tests.e2e.test_renderers_refuse import Card, assert_every_reader_refuses, edit_scorecard, green
from tests.e2e.test_verdicts import approve


def gate_named(card: Card, name: str) -> Card:
    gate: Card = next(gate for gate in card["decision"]["gates"] if gate["name"] == name)
    return gate


def test_a_comparative_undecided_gate_forged_to_pass_by_its_interval_ends_is_refused(tmp_path):
    from tests.e2e.test_comparative_gates import setup
    from tests.e2e.test_undecided import table_pattern

    # 4 regressed pairs, 1 improved over 300: -0.01, an interval straddling -0.02 (the undecided case of issue 27).
    project, _ = setup(tmp_path, table_pattern(255, 4, 1, 40), rule="lower_bound", margin=0.02)
    assert project.run("--out", "out").code == 1
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = gate_named(card, "no-regression")
    assert gate["outcome"] == "blocked" and [reason["code"] for reason in gate["reasons"]] == ["undecided"]
    assert gate["compared"] < -0.02 < gate["favourable_bound"]
    shown = project.cli("view", "out")
    assert shown.code == 0 and "undecided" in shown.out, shown.err  # honest and undecided: shown

    def forged(card: Card) -> None:
        gate = gate_named(card, "no-regression")
        gate.update(outcome="pass", reasons=[], compared=-0.015, favourable_bound=0.0)
        green(card)

    edit_scorecard(tmp_path / "out", forged)
    assert_every_reader_refuses(project, "out", "decision.gates.no-regression.compared")


def wilson_project(tmp_path: Path, threshold: float):
    """``accuracy`` under ``lower_bound`` (Wilson: exact_match is binary): 0.75 measured over 8 examples."""
    project = make_project(
        tmp_path, gates={"accuracy": {"metric": "exact", "proposed_threshold": threshold, "rule": "lower_bound"}}
    )
    project.write_ledger(approve(project, threshold=threshold))
    return project


def test_a_wilson_bound_raised_to_the_value_is_refused(tmp_path):
    project = wilson_project(tmp_path, threshold=0.7)
    assert project.run("--out", "out").code == 1
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = gate_named(card, "accuracy")
    assert gate["bound_method"] == "wilson" and gate["value"] == 0.75
    assert [reason["code"] for reason in gate["reasons"]] == ["undecided"]
    shown = project.cli("view", "out")
    assert shown.code == 0 and "undecided" in shown.out, shown.err  # honest and undecided: shown

    def forged(card: Card) -> None:
        # Both ends on their own sides of the value: only computing the bound again from 6 of 8 tells.
        gate_named(card, "accuracy").update(outcome="pass", reasons=[], compared=0.75, favourable_bound=0.9)
        green(card)

    edit_scorecard(tmp_path / "out", forged)
    assert_every_reader_refuses(project, "out", "decision.gates.accuracy.compared")


def test_an_undecided_gate_forged_to_fail_by_dropping_its_favourable_bound_is_refused(tmp_path):
    """Found by the property test of test_renderers_refuse_property: readers used to take a ``lower_bound`` result
    without ``favourable_bound`` as one made before the three-way rule and decide it on the compared end alone, so
    dropping that one field turned an honest "cannot tell yet" (6 of 8 against 0.5) into a shortfall the data does
    not show. Every run since the three-way rule records both ends; a result without one is refused."""
    project = wilson_project(tmp_path, threshold=0.5)
    assert project.run("--out", "out").code == 1
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = gate_named(card, "accuracy")
    assert gate["outcome"] == "blocked" and [reason["code"] for reason in gate["reasons"]] == ["undecided"]

    def forged(card: Card) -> None:
        gate = gate_named(card, "accuracy")
        gate.update(outcome="fail", reasons=[{"code": "below_threshold", "message": "forged"}])
        gate.pop("favourable_bound")
        card["decision"]["verdict"] = "fail"

    edit_scorecard(tmp_path / "out", forged)
    assert_every_reader_refuses(project, "out", "decision.gates.accuracy.favourable_bound")


def test_a_t_bound_moved_past_the_value_is_refused(tmp_path):
    """A continuous metric's bound (Student's t) cannot be computed without the scores, but its interval always
    holds the value: a compared bound above the value is refused."""
    project = make_project(
        tmp_path,
        metrics={"closeness": {"type": "python", "function": "scorer.py:score"}},
        gates={"accuracy": {"metric": "closeness", "proposed_threshold": 0.5, "rule": "lower_bound"}},
    )
    (project.evals / "scorer.py").write_text(
        "def score(record):\n    return {'yes': 0.6, 'no': 0.1}[record['expected']]\n"
    )
    project.write_ledger(approve(project, threshold=0.5))
    assert project.run("--out", "out").code == 1
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = gate_named(card, "accuracy")
    assert gate["bound_method"] == "student_t" and gate["value"] < 0.5, gate

    def forged(card: Card) -> None:
        gate_named(card, "accuracy").update(outcome="pass", reasons=[], compared=0.5, favourable_bound=0.6)
        green(card)

    edit_scorecard(tmp_path / "out", forged)
    assert_every_reader_refuses(project, "out", "on the favourable side of its value")
