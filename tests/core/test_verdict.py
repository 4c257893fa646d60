"""The Verdict Engine: precedence, ci_should_fail, exit codes, and a payload that refuses to be friendlier."""

from __future__ import annotations

import itertools
import json

import pytest
from pydantic import ValidationError

from evalglass.core.authority import Authority, BlockReason, Reason
from evalglass.core.estimate import Estimate
from evalglass.core.gates import GateResult, Outcome, evaluate_gate
from evalglass.core.gatespec import GateSpec, Tolerable
from evalglass.core.population import Population, StateCount
from evalglass.core.score import Status, Validity
from evalglass.core.verdict import VerdictPayload

FP = "sha256:" + "0" * 64


def gate(name: str, outcome: Outcome) -> GateResult:
    if outcome is Outcome.INFORMATIONAL:
        return GateResult(name=name, subject="m", active=False, outcome=outcome, fingerprint=FP)
    if outcome is Outcome.BLOCKED:
        reason = Reason(code=BlockReason.NO_MEASURED_VALUE, message="nothing measured")
        return GateResult(name=name, subject="m", active=True, outcome=outcome, reasons=(reason,), fingerprint=FP)
    compared = 0.9 if outcome is Outcome.PASS else 0.1
    return GateResult(
        name=name,
        subject="m",
        active=True,
        outcome=outcome,
        compared=compared,
        value=compared,
        threshold=0.5,
        fingerprint=FP,
    )


# The precedence table: what the run verdict is for each mix of gate outcomes present.
PRECEDENCE_ROWS = [
    ([Outcome.BLOCKED], Outcome.BLOCKED, True, 1),
    ([Outcome.BLOCKED, Outcome.FAIL, Outcome.PASS, Outcome.INFORMATIONAL], Outcome.BLOCKED, True, 1),
    ([Outcome.FAIL], Outcome.FAIL, True, 1),
    ([Outcome.FAIL, Outcome.PASS, Outcome.INFORMATIONAL], Outcome.FAIL, True, 1),
    ([Outcome.PASS], Outcome.PASS, False, 0),
    ([Outcome.PASS, Outcome.INFORMATIONAL], Outcome.PASS, False, 0),
    ([Outcome.INFORMATIONAL], Outcome.INFORMATIONAL, False, 0),
    ([], Outcome.INFORMATIONAL, False, 0),
]


@pytest.mark.parametrize(("outcomes", "verdict", "ci_fail", "code"), PRECEDENCE_ROWS)
def test_precedence_table(outcomes, verdict, ci_fail, code):
    payload = VerdictPayload.decide([gate(f"g{i}", o) for i, o in enumerate(outcomes)])
    assert (payload.verdict, payload.ci_should_fail, payload.exit_code) == (verdict, ci_fail, code)


@pytest.mark.parametrize("outcomes", list(itertools.product(list(Outcome), repeat=3)))
def test_every_three_gate_mix_takes_the_highest_precedence(outcomes):
    order = [Outcome.INFORMATIONAL, Outcome.PASS, Outcome.FAIL, Outcome.BLOCKED]
    payload = VerdictPayload.decide([gate(f"g{i}", o) for i, o in enumerate(outcomes)])
    assert payload.verdict == max(outcomes, key=order.index)


def _friendlier(verdict: Outcome) -> list[tuple[str, object]]:
    return [("verdict", v.value) for v in Outcome if v is not verdict] + [
        ("ci_should_fail", verdict not in (Outcome.FAIL, Outcome.BLOCKED)),
        ("exit_code", 2),
        ("exit_code", 0 if verdict in (Outcome.FAIL, Outcome.BLOCKED) else 1),
    ]


@pytest.mark.parametrize("verdict", list(Outcome))
def test_payload_refuses_any_mismatch_on_load(verdict):
    payload = VerdictPayload.decide([gate("g", verdict)])
    for field, forged in _friendlier(verdict):
        raw = json.loads(payload.model_dump_json())
        raw[field] = forged
        with pytest.raises(ValidationError):
            VerdictPayload.model_validate(raw)


def test_payload_refuses_mismatch_on_construction():
    with pytest.raises(ValidationError, match="contradicts"):
        VerdictPayload(gates=(gate("g", Outcome.BLOCKED),), verdict=Outcome.PASS, ci_should_fail=False, exit_code=0)


def test_gate_result_refuses_an_outcome_its_numbers_contradict():
    raw = json.loads(gate("g", Outcome.FAIL).model_dump_json())
    raw["outcome"] = "pass"
    with pytest.raises(ValidationError, match="is fail, not pass"):
        GateResult.model_validate(raw)
    raw = json.loads(gate("g", Outcome.BLOCKED).model_dump_json())
    raw["outcome"] = "pass"
    with pytest.raises(ValidationError):
        GateResult.model_validate(raw)
    raw["reasons"] = []
    with pytest.raises(ValidationError):  # pass without a compared value and threshold
        GateResult.model_validate(raw)


def test_informational_run_says_exit_zero_is_not_a_quality_check():
    assert "does not mean quality was checked" in VerdictPayload.decide([]).meaning


# ---------------------------------------------------------------- blocking conditions, one table row each


def population(included: int, *excluded: tuple[Status, Validity, int], missing: int = 0) -> Population:
    counts = tuple(StateCount(status=s, validity=v, count=c) for s, v, c in excluded)
    return Population(
        expected=included + sum(c for *_, c in excluded) + missing,
        included=included,
        excluded=counts,
        missing=missing,
    )


ACTIVE = Authority(active=True, threshold=0.5)
EST = Estimate(point=0.8, n=10)
spec = GateSpec(metric="m")

BLOCKING_ROWS = [
    (
        "authority reason",
        Authority(active=True, threshold=0.5, reasons=(Reason(code=BlockReason.POLICY_FORBIDDEN, message="x"),)),
        EST,
        population(10),
        spec,
        {"policy_forbidden"},
    ),
    (
        "approval stale",
        Authority(active=True, threshold=0.5, reasons=(Reason(code=BlockReason.APPROVAL_STALE, message="x"),)),
        EST,
        population(10),
        spec,
        {"approval_stale"},
    ),
    (
        "no measured value",
        ACTIVE,
        None,
        population(0, (Status.ERROR, Validity.NOT_MEASURED, 3)),
        spec,
        {"no_measured_value", "incomplete_measurement"},
    ),
    (
        "error excluded",
        ACTIVE,
        EST,
        population(10, (Status.ERROR, Validity.NOT_MEASURED, 1)),
        spec,
        {"incomplete_measurement"},
    ),
    (
        "blocked excluded",
        ACTIVE,
        EST,
        population(10, (Status.BLOCKED, Validity.NOT_MEASURED, 1)),
        spec,
        {"incomplete_measurement"},
    ),
    (
        "invalid excluded",
        ACTIVE,
        EST,
        population(10, (Status.SCORED, Validity.INVALID, 1)),
        spec,
        {"incomplete_measurement"},
    ),
    ("missing score", ACTIVE, EST, population(10, missing=1), spec, {"incomplete_measurement"}),
    (
        "non_evaluable untolerated",
        ACTIVE,
        EST,
        population(10, (Status.NON_EVALUABLE, Validity.NOT_APPLICABLE, 1)),
        spec,
        {"incomplete_measurement"},
    ),
    (
        "skipped untolerated",
        ACTIVE,
        EST,
        population(10, (Status.SKIPPED, Validity.NOT_MEASURED, 1)),
        spec,
        {"incomplete_measurement"},
    ),
    (
        "error cannot be tolerated",
        ACTIVE,
        EST,
        population(10, (Status.ERROR, Validity.NOT_APPLICABLE, 1)),
        GateSpec(metric="m", tolerate=(Tolerable.NOT_APPLICABLE,)),
        {"incomplete_measurement"},
    ),
    (
        "no approved threshold",
        Authority(
            active=True,
            threshold=None,
            reasons=(Reason(code=BlockReason.NO_APPROVED_THRESHOLD, message="x"),),
        ),
        EST,
        population(10),
        spec,
        {"no_approved_threshold"},
    ),
    (
        "every reason recorded",
        Authority(
            active=True,
            reasons=(
                Reason(code=BlockReason.POLICY_FORBIDDEN, message="x"),
                Reason(code=BlockReason.NO_APPROVED_THRESHOLD, message="y"),
            ),
        ),
        None,
        population(0, (Status.ERROR, Validity.NOT_MEASURED, 1)),
        spec,
        {"policy_forbidden", "no_approved_threshold", "no_measured_value", "incomplete_measurement"},
    ),
]


@pytest.mark.parametrize(
    ("label", "authority", "estimate", "pop", "gate_spec", "reasons"),
    BLOCKING_ROWS,
    ids=[r[0] for r in BLOCKING_ROWS],
)
def test_blocking_conditions(label, authority, estimate, pop, gate_spec, reasons):
    result = evaluate_gate("g", gate_spec, FP, authority, estimate, pop)
    assert result.outcome is Outcome.BLOCKED
    assert {r.code.value for r in result.reasons} == reasons


@pytest.mark.parametrize(
    ("status", "validity", "tolerate"),
    [
        (Status.NON_EVALUABLE, Validity.NOT_APPLICABLE, (Tolerable.NON_EVALUABLE,)),
        (Status.SKIPPED, Validity.NOT_MEASURED, (Tolerable.SKIPPED,)),
        (Status.SKIPPED, Validity.NOT_APPLICABLE, (Tolerable.NOT_APPLICABLE,)),
    ],
)
def test_tolerated_exclusions_do_not_block(status, validity, tolerate):
    result = evaluate_gate(
        "g", GateSpec(metric="m", tolerate=tolerate), FP, ACTIVE, EST, population(10, (status, validity, 2))
    )
    assert result.outcome is Outcome.PASS


@pytest.mark.parametrize(
    ("point", "direction", "expected"),
    [
        (0.5, "higher_is_better", Outcome.PASS),
        (0.49, "higher_is_better", Outcome.FAIL),
        (0.5, "lower_is_better", Outcome.PASS),
        (0.51, "lower_is_better", Outcome.FAIL),
    ],
)
def test_pass_and_fail_compare_the_point_with_the_approved_threshold(point, direction, expected):
    result = evaluate_gate(
        "g",
        GateSpec(metric="m", direction=direction),
        FP,
        ACTIVE,
        Estimate(point=point, n=10),
        population(10),
    )
    assert result.outcome is expected


def test_inactive_gate_is_informational_whatever_the_measurement():
    result = evaluate_gate(
        "g", spec, FP, Authority(active=False), None, population(0, (Status.ERROR, Validity.NOT_MEASURED, 5))
    )
    assert result.outcome is Outcome.INFORMATIONAL and not result.reasons


def test_proposed_threshold_never_gates():
    result = evaluate_gate(
        "g", GateSpec(metric="m", proposed_threshold=0.1), FP, Authority(active=False), EST, population(10)
    )
    assert result.outcome is Outcome.INFORMATIONAL


BELOW = Reason(code=BlockReason.BELOW_THRESHOLD, message="the value 0.1 is below the approved threshold (needs ≥ 0.5)")
STALE = Reason(code=BlockReason.APPROVAL_STALE, message="stale")


@pytest.mark.parametrize(
    ("outcome", "compared", "reasons"),
    [
        (Outcome.PASS, 0.9, (BELOW,)),  # a passing gate does not say it is below its threshold
        (Outcome.FAIL, 0.1, (STALE,)),  # a blocking reason makes the gate blocked, not failed
        (Outcome.FAIL, 0.1, (BELOW, BELOW)),
        (Outcome.BLOCKED, 0.1, (STALE, BELOW)),  # blocked gates carry blocking reasons only
        (Outcome.BLOCKED, 0.1, (BELOW,)),
    ],
)
def test_a_gate_result_refuses_reasons_its_outcome_contradicts(outcome, compared, reasons):
    with pytest.raises(ValidationError):
        GateResult(
            name="g",
            subject="m",
            active=True,
            outcome=outcome,
            compared=compared,
            threshold=0.5,
            reasons=reasons,
            fingerprint=FP,
        )


def test_only_below_threshold_does_not_block():
    assert [reason for reason in BlockReason if not reason.blocks] == [BlockReason.BELOW_THRESHOLD]
