"""Smaller parts of the decision core whose output a reader or an approval depends on: what an approval's
fingerprint covers, how a verdict counts its gates, what an untrusted score says, and which diagnostics a
population shows first."""

from __future__ import annotations

import pytest

from evalglass.core.authority import (
    BlockReason,
    GateApproval,
    JudgeStanding,
    Ledger,
    Reason,
    declared_gate_authority,
)
from evalglass.core.columns import ScoreColumn
from evalglass.core.fingerprint import fingerprint_of
from evalglass.core.gates import GateResult, Outcome, interval_label
from evalglass.core.gatespec import GateSpec
from evalglass.core.population import TOP_DIAGNOSTICS, population_of
from evalglass.core.score import Score, Status, Validity, score_violation, value_violation
from evalglass.core.verdict import VerdictPayload

FP = "sha256:" + "0" * 64


def test_an_approval_covers_the_rule_not_the_prose_or_the_proposal() -> None:
    spec = GateSpec(metric="m", proposed_threshold=0.8, description="what it is for")
    assert spec.fingerprint_payload() == {
        "metric": "m",
        "direction": "higher_is_better",
        "tolerate": [],
        "rule": "point",
    }
    reworded = GateSpec(metric="m", proposed_threshold=0.6, description="reworded")
    assert fingerprint_of(reworded.fingerprint_payload()) == fingerprint_of(spec.fingerprint_payload())


def test_an_interval_rule_approval_covers_its_level_and_a_comparative_one_its_baseline() -> None:
    spec = GateSpec(
        metric="m",
        rule="lower_bound",
        level=0.9,
        compare_to="main",
        proposed_margin=0.1,
        min_n=5,
        tolerate=("skipped",),
    )
    assert spec.fingerprint_payload() == {
        "metric": "m",
        "direction": "higher_is_better",
        "tolerate": ["skipped"],
        "rule": "lower_bound",
        "level": 0.9,
        "min_n": 5,
        "compare_to": "main",
    }
    other_level = spec.model_copy(update={"level": 0.95})
    assert fingerprint_of(other_level.fingerprint_payload()) != fingerprint_of(spec.fingerprint_payload())


def test_a_check_gate_approval_covers_the_state_it_expects() -> None:
    spec = GateSpec(check="c", expect_state=FP)
    assert spec.fingerprint_payload() == {
        "check": "c",
        "expect_state": FP,
        "direction": "higher_is_better",
        "tolerate": [],
        "rule": "point",
    }


def _gate(name: str, outcome: Outcome) -> GateResult:
    if outcome is Outcome.INFORMATIONAL:
        return GateResult(name=name, subject="m", active=False, outcome=outcome, fingerprint=FP)
    if outcome is Outcome.BLOCKED:
        reason = Reason(code=BlockReason.NO_MEASURED_VALUE, message="nothing measured")
        return GateResult(name=name, subject="m", active=True, outcome=outcome, reasons=(reason,), fingerprint=FP)
    value = 0.9 if outcome is Outcome.PASS else 0.1
    reasons = () if outcome is Outcome.PASS else (Reason(code=BlockReason.BELOW_THRESHOLD, message="short"),)
    return GateResult(
        name=name,
        subject="m",
        active=True,
        outcome=outcome,
        reasons=reasons,
        compared=value,
        value=value,
        threshold=0.5,
        fingerprint=FP,
    )


def test_a_verdict_counts_its_gates_by_outcome() -> None:
    outcomes = [Outcome.PASS, Outcome.FAIL, Outcome.PASS, Outcome.BLOCKED, Outcome.INFORMATIONAL, Outcome.PASS]
    payload = VerdictPayload.decide([_gate(f"g{i}", outcome) for i, outcome in enumerate(outcomes)])
    assert {outcome: payload.count(outcome) for outcome in Outcome} == {
        Outcome.PASS: 3,
        Outcome.FAIL: 1,
        Outcome.BLOCKED: 1,
        Outcome.INFORMATIONAL: 1,
    }


def test_an_untrusted_score_keeps_its_value_out_and_says_why_in_full() -> None:
    score = Score.untrusted(7.0, "off_scale", "the judge answered 7 on a 1-5 scale", detail="raw: '7'")
    assert not score.included
    assert score.value == 7.0
    assert [(d.code, d.message, d.detail) for d in score.diagnostics] == [
        ("off_scale", "the judge answered 7 on a 1-5 scale", "raw: '7'")
    ]


def test_the_most_frequent_diagnostics_come_first_ties_by_code_and_only_the_top_few() -> None:
    column = ScoreColumn()
    # Counts: e=4, b=3, a=3, d=2, c=2, f=1 (f falls off the top five); one 'b' is on a measured score.
    for code, times in [("c", 2), ("f", 1), ("a", 3), ("e", 4), ("d", 2), ("b", 2)]:
        for _ in range(times):
            column.append(Score.error(code, f"message {code}"))
    column.append(Score.untrusted(0.5, "b", "message b"))
    column.append(
        Score(status=Status.SCORED, validity="valid", value=0.0, diagnostics=(Score.error("b", "x").diagnostics))
    )
    population = population_of(column, len(column))
    ranked = [(item.code, item.count, item.included) for item in population.top_diagnostics]
    assert len(ranked) == TOP_DIAGNOSTICS
    assert ranked == [("b", 4, 1), ("e", 4, 0), ("a", 3, 0), ("c", 2, 0), ("d", 2, 0)]
    assert population.top_diagnostics[0].example == "message b"


def test_more_scores_than_examples_is_refused() -> None:
    column = ScoreColumn()
    column.append(1.0)
    column.append(0.0)
    with pytest.raises(ValueError) as caught:
        population_of(column, 1)
    assert str(caught.value) == "2 scores recorded for 1 expected examples"


def test_a_check_gate_is_never_held_to_a_judge_or_to_gold() -> None:
    judge = JudgeStanding(metric="m", fingerprint=FP)
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint=FP)})
    common = {"today": "2026-06-01", "name": "g", "fingerprint": FP, "dataset": "d", "dataset_fingerprint": FP}
    as_check = declared_gate_authority(ledger, check=True, uses_reference=True, judge=judge, **common)
    assert as_check.reasons == ()
    as_metric = declared_gate_authority(ledger, check=False, uses_reference=True, judge=judge, **common)
    assert [reason.code for reason in as_metric.reasons] == [
        BlockReason.GOLD_NOT_VALIDATED,
        BlockReason.JUDGE_UNCALIBRATED,
        BlockReason.NO_APPROVED_THRESHOLD,
    ]


def test_the_interval_an_undecided_reason_names_is_two_sided_at_twice_the_level_less_one() -> None:
    assert interval_label(0.95) == "90%"
    assert interval_label(0.9) == "80%"
    # A record written before gates recorded their level reads at the default level.
    assert interval_label(None) == "90%"


def test_a_score_that_cannot_exist_says_which_rule_it_breaks() -> None:
    assert value_violation(True) == "a bool is not a measured number; return 1.0/0.0 explicitly"
    assert value_violation("0.5") == "value must be a real number, got str"
    assert value_violation(float("inf")) == "value must be finite, got inf"
    assert value_violation(0.5) is None
    assert score_violation(Status.SCORED, Validity.VALID, None, False) == "a scored score needs a value"
    assert score_violation(Status.SCORED, Validity.VALID, float("nan"), False) == "value must be finite, got nan"
    assert score_violation(Status.SCORED, Validity.VALID, 1.0, False) is None


def test_unmeasured_scores_keep_their_detail_and_evidence() -> None:
    error = Score.error("timeout", "no answer in 30 s", "after 30.0 s")
    assert (error.status, error.validity) == (Status.ERROR, Validity.NOT_MEASURED)
    assert [(d.code, d.message, d.detail) for d in error.diagnostics] == [
        ("timeout", "no answer in 30 s", "after 30.0 s")
    ]
    skipped = Score.non_evaluable("no_reference", "the example has no reference", "field 'expected'")
    assert (skipped.status, skipped.validity) == (Status.NON_EVALUABLE, Validity.NOT_APPLICABLE)
    assert skipped.diagnostics[0].detail == "field 'expected'"
    cited = Score.unmeasured(Status.SKIPPED, "skipped", "not asked", evidence=("check:c",))
    assert cited.evidence == ("check:c",)


def test_only_an_interval_rule_gate_records_a_favourable_bound() -> None:
    with pytest.raises(ValueError) as caught:
        GateResult(
            name="g",
            subject="m",
            active=True,
            outcome=Outcome.PASS,
            compared=0.9,
            favourable_bound=0.95,
            threshold=0.5,
            fingerprint=FP,
        )
    assert "gate g: only a lower_bound gate with a compared bound has a favourable bound" in str(caught.value)
