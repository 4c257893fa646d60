"""decide_run, the one path from recorded score columns to a verdict (``run`` and ``verify`` both call it).

These drive it in process with real columns and ledgers: what is measured (reduction, population, estimate,
sensitivity), which authority each kind of gate gets (gold, judges, expiry, stale causes), what the interval rule
compares, what it advises, and that gates the ledger activates but the config does not declare still block.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import (
    BaselineApproval,
    BlockReason,
    CalibrationRecord,
    DatasetValidation,
    GateApproval,
    JudgeRequirement,
    JudgeStanding,
    Ledger,
    Policy,
)
from evalglass.core.checks import BindingStatus, CheckOutcome, CheckReason, CheckResult, ExitCodePolicy, Repair
from evalglass.core.columns import ScoreColumn
from evalglass.core.comparative import BaselineRun, ComparativeInputs
from evalglass.core.compare import MetricSide
from evalglass.core.decide import GateInput, MetricInput, RunShape, decide_run
from evalglass.core.estimate import IntervalSpec
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import GateRule, GateSpec
from evalglass.core.score import Score
from evalglass.core.stats import Direction, Reducer, ScaleSpec, confidence_interval, examples_to_decide

FP = "sha256:" + "1" * 64
DATA_FP = "sha256:" + "2" * 64
TODAY = "2026-06-01"
GOLD_FP = "sha256:" + "4" * 64


def column(values: list[float | None]) -> ScoreColumn:
    """A column of measured values; None is an example the metric could not measure (an error)."""
    out = ScoreColumn()
    for value in values:
        out.append(Score.error("boom", "no answer") if value is None else value)
    return out


def metric(values: list[float | None], name: str = "m", **fields) -> MetricInput:
    return MetricInput(
        name=name,
        type=fields.pop("type", "exact_match"),
        description=fields.pop("description", None),
        uses_reference=fields.pop("uses_reference", False),
        column=column(values),
        **fields,
    )


def approve(threshold: float | None = 0.5, **fields) -> GateApproval:
    return GateApproval(active=True, threshold=threshold, fingerprint=FP, **fields)


def gate(name: str = "g", subject: str = "m", **spec) -> GateInput:
    stale_cause = spec.pop("stale_cause", None)
    check_result = spec.pop("check_result", None)
    key = "check" if check_result is not None or spec.pop("is_check", False) else "metric"
    return GateInput(
        name=name,
        spec=GateSpec(**{key: subject}, **spec),
        fingerprint=FP,
        check_result=check_result,
        stale_cause=stale_cause,
    )


def run(
    metrics: list[MetricInput],
    gates: list[GateInput],
    ledger: Ledger,
    shape: RunShape | None = None,
    gold: bool = True,
    **kw,
):
    """Decide with the dataset's gold validated (every metric gate stands on it) unless ``gold`` is off or the
    ledger says otherwise."""
    examples = len(metrics[0].column) if metrics else 0
    if gold and not ledger.datasets:
        ledger = ledger.model_copy(
            update={"datasets": {"data": DatasetValidation(validated_gold=True, fingerprint=DATA_FP)}}
        )
    return decide_run(
        metrics,
        gates,
        ledger,
        "data",
        DATA_FP,
        shape or RunShape(examples=examples),
        today=kw.pop("today", TODAY),
        **kw,
    )


def only(payload) -> GateResult:
    (result,) = payload.gates
    return result


def codes(result: GateResult) -> list[BlockReason]:
    return [reason.code for reason in result.reasons]


# --- what is measured ---


def test_the_point_is_the_mean_of_the_included_examples_and_the_rest_are_counted_not_zeroed() -> None:
    summaries, payload = run(
        [metric([1.0, None, 0.0, 1.0, 1.0])], [gate(tolerate=())], Ledger(gates={"g": approve(0.5)})
    )
    (summary,) = summaries
    assert summary.estimate is not None
    assert summary.estimate.point == pytest.approx(0.75)
    assert summary.estimate.n == 4
    assert summary.population.included == 4
    assert summary.population.excluded_total == 1
    # An error is never tolerated: the gate blocks instead of passing on four of five.
    result = only(payload)
    assert result.outcome is Outcome.BLOCKED
    assert codes(result) == [BlockReason.INCOMPLETE_MEASUREMENT]
    assert payload.exit_code == 1


def test_examples_the_run_never_scored_are_missing_and_block() -> None:
    summaries, payload = run([metric([1.0, 1.0])], [gate()], Ledger(gates={"g": approve(0.5)}), RunShape(examples=3))
    assert summaries[0].population.missing == 1
    assert summaries[0].population.expected == 3
    assert codes(only(payload)) == [BlockReason.INCOMPLETE_MEASUREMENT]


def test_nothing_measured_has_no_estimate_and_blocks() -> None:
    summaries, payload = run([metric([None, None])], [gate()], Ledger(gates={"g": approve(0.5)}))
    assert summaries[0].estimate is None
    assert BlockReason.NO_MEASURED_VALUE in codes(only(payload))
    assert only(payload).value is None


def test_samples_are_reduced_per_example_before_the_mean_and_the_reduction_is_recorded() -> None:
    # Two examples with three samples each: per-example means 1/3 and 1.
    rows = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    shape = RunShape(examples=2, example_of_row=np.array([0, 0, 0, 1, 1, 1], dtype=np.int64))
    summaries, payload = run(
        [metric(rows, reducer=Reducer.MEAN)], [gate()], Ledger(gates={"g": approve(0.6)}), shape=shape
    )
    estimate = summaries[0].estimate
    assert estimate is not None
    assert estimate.point == pytest.approx(2 / 3)
    assert estimate.n == 2
    assert estimate.samples == 6
    assert estimate.reducer is Reducer.MEAN
    assert summaries[0].population.expected == 2
    assert only(payload).outcome is Outcome.PASS


def test_majority_reduction_decides_on_the_reduced_values() -> None:
    rows = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    shape = RunShape(examples=2, example_of_row=np.array([0, 0, 0, 1, 1, 1], dtype=np.int64))
    summaries, payload = run(
        [metric(rows, reducer=Reducer.MAJORITY)], [gate()], Ledger(gates={"g": approve(0.6)}), shape=shape
    )
    assert summaries[0].estimate is not None
    assert summaries[0].estimate.point == pytest.approx(0.5)  # majority: 0 then 1
    assert only(payload).outcome is Outcome.FAIL


def test_one_row_per_example_records_no_reduction() -> None:
    summaries, _ = run([metric([1.0, 0.0], reducer=Reducer.MAX, k=2)], [], Ledger())
    estimate = summaries[0].estimate
    assert estimate is not None
    assert (estimate.reducer, estimate.k, estimate.samples) == (None, None, None)


def test_the_interval_is_over_the_included_values_with_their_clusters() -> None:
    values = [0.2, None, 0.9, 0.4, 0.8, 0.1, 0.7]
    clusters = np.array([0, 0, 1, 1, 2, 2, 3], dtype=np.int64)
    summaries, _ = run([metric(values)], [], Ledger(), RunShape(examples=7, clusters=clusters))
    estimate = summaries[0].estimate
    assert estimate is not None and estimate.interval is not None
    included = np.array([0.2, 0.9, 0.4, 0.8, 0.1, 0.7])
    expected = confidence_interval(included, clusters=np.array([0, 1, 1, 2, 2, 3]))
    assert (estimate.interval.method, estimate.interval.low, estimate.interval.high) == (
        expected.method,
        expected.low,
        expected.high,
    )


def test_an_interval_the_method_cannot_give_is_a_stated_problem_not_a_crash() -> None:
    summaries, _ = run([metric([0.3, 0.6], interval=IntervalSpec(method="clopper_pearson"))], [], Ledger())
    estimate = summaries[0].estimate
    assert estimate is not None
    assert estimate.interval is None
    assert estimate.interval_problem is not None and "binary" in estimate.interval_problem
    assert estimate.point == pytest.approx(0.45)


def test_sensitivity_puts_each_excluded_example_at_either_end_of_the_scale() -> None:
    summaries, _ = run([metric([1.0, 0.5, None, None], scale=ScaleSpec(min=0.0, max=1.0))], [], Ledger())
    estimate = summaries[0].estimate
    assert estimate is not None and estimate.sensitivity is not None
    sensitivity = estimate.sensitivity
    assert (sensitivity.low, sensitivity.high, sensitivity.excluded) == (
        pytest.approx(1.5 / 4),
        pytest.approx(3.5 / 4),
        2,
    )
    assert (sensitivity.scale_min, sensitivity.scale_max) == (0.0, 1.0)


def test_no_sensitivity_without_a_scale_or_with_values_outside_it() -> None:
    no_scale, _ = run([metric([1.0, None])], [], Ledger())
    outside, _ = run([metric([3.0, None], scale=ScaleSpec(min=0.0, max=1.0))], [], Ledger())
    assert no_scale[0].estimate is not None and no_scale[0].estimate.sensitivity is None
    assert outside[0].estimate is not None and outside[0].estimate.sensitivity is None


# --- which gates decide, and on what authority ---


@pytest.mark.parametrize(
    ("threshold", "outcome", "exit_code"), [(0.75, Outcome.PASS, 0), (0.76, Outcome.FAIL, 1), (0.5, Outcome.PASS, 0)]
)
def test_a_point_gate_compares_the_mean_with_the_approved_threshold(threshold, outcome, exit_code) -> None:
    _, payload = run([metric([1.0, 1.0, 1.0, 0.0])], [gate()], Ledger(gates={"g": approve(threshold)}))
    result = only(payload)
    assert (result.outcome, result.compared, result.threshold) == (outcome, 0.75, threshold)
    assert payload.exit_code == exit_code


def test_lower_is_better_flips_the_comparison() -> None:
    _, payload = run(
        [metric([0.2, 0.4])],
        [gate(direction=Direction.LOWER_IS_BETTER)],
        Ledger(gates={"g": approve(0.25)}),
    )
    assert only(payload).outcome is Outcome.FAIL
    assert "above the approved threshold" in only(payload).reasons[0].message


def test_the_proposed_threshold_decides_nothing_until_the_ledger_approves_one() -> None:
    _, unapproved = run([metric([1.0])], [gate(proposed_threshold=0.5)], Ledger())
    _, no_threshold = run([metric([1.0])], [gate(proposed_threshold=0.5)], Ledger(gates={"g": approve(None)}))
    assert only(unapproved).outcome is Outcome.INFORMATIONAL
    assert unapproved.exit_code == 0
    assert codes(only(no_threshold)) == [BlockReason.NO_APPROVED_THRESHOLD]


def test_a_reference_metric_needs_validated_gold_of_this_very_dataset() -> None:
    values = [metric([1.0, 1.0], uses_reference=True)]
    ledger = Ledger(gates={"g": approve(0.5)})
    _, no_gold = run(values, [gate()], ledger, gold=False)
    assert codes(only(no_gold)) == [BlockReason.GOLD_NOT_VALIDATED]
    stale = ledger.model_copy(
        update={"datasets": {"data": DatasetValidation(validated_gold=True, fingerprint="sha256:" + "3" * 64)}}
    )
    assert codes(only(run(values, [gate()], stale)[1])) == [BlockReason.GOLD_STALE]
    good = ledger.model_copy(update={"datasets": {"data": DatasetValidation(validated_gold=True, fingerprint=DATA_FP)}})
    assert only(run(values, [gate()], good)[1]).outcome is Outcome.PASS
    # A metric that uses no reference stands on the gold too: which examples it measures is approved with it.
    unreferenced = only(run([metric([1.0, 1.0])], [gate()], ledger, gold=False)[1])
    assert codes(unreferenced) == [BlockReason.GOLD_NOT_VALIDATED]
    assert "the gate measures the examples of dataset 'data'" in unreferenced.reasons[0].message
    assert only(run([metric([1.0, 1.0])], [gate()], good)[1]).outcome is Outcome.PASS
    # A run recorded before that (core.recordrules) is re-derived as it was decided: no gold needed.
    before = run([metric([1.0, 1.0])], [gate()], ledger, gold=False, examples_bound=False)[1]
    assert only(before).outcome is Outcome.PASS


def test_approvals_expire_on_the_run_day_given() -> None:
    ledger = Ledger(gates={"g": approve(0.5, expires_on="2026-06-01")})
    assert only(run([metric([1.0])], [gate()], ledger, today="2026-06-01")[1]).outcome is Outcome.PASS
    late = only(run([metric([1.0])], [gate()], ledger, today="2026-06-02")[1])
    assert codes(late) == [BlockReason.APPROVAL_EXPIRED]


def test_a_stale_approval_says_the_cause_the_engine_found() -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, threshold=0.5, fingerprint="sha256:" + "9" * 64)})
    result = only(run([metric([1.0])], [gate(stale_cause="evaluator exact_match@2 is now @3")], ledger)[1])
    assert codes(result) == [BlockReason.APPROVAL_STALE]
    assert "evaluator exact_match@2 is now @3" in result.reasons[0].message


def _calibration(judge_fingerprint: str, agreed: int, n: int) -> dict:
    return {
        "judge": "m",
        "judge_fingerprint": judge_fingerprint,
        "created_at": "2026-05-01T00:00:00+00:00",
        "tool_version": "0",
        "model": "x",
        "rubric": "r",
        "labels_file": "l.jsonl",
        "labels_sha256": "0" * 64,
        "n": n,
        "excluded": 0,
        "categories": (0, 1),
        "confusion": ((agreed, 0), (n - agreed, 0)),
        "agreed": agreed,
        "agreement": agreed / n,
        "agreement_interval": {"low": 0.9, "high": 0.99, "confidence": 0.95},
        "kappa": None,
        "ordinal": False,
    }


def test_a_judge_gate_gets_its_judge_standing_and_blocks_until_calibrated() -> None:
    record = CalibrationRecord(**_calibration(FP, 190, 200))
    ledger = Ledger(
        gates={"g": approve(0.5)}, judges={"m": JudgeRequirement(min_agreement=0.8, calibration=record.digest)}
    )
    judge = JudgeStanding(metric="m", fingerprint=FP)
    result = only(run([metric([1.0])], [gate()], ledger, judges={"m": judge})[1])
    assert codes(result) == [BlockReason.JUDGE_UNCALIBRATED]
    calibrated = JudgeStanding(metric="m", fingerprint=FP, calibration=record)
    assert only(run([metric([1.0])], [gate()], ledger, judges={"m": calibrated})[1]).outcome is Outcome.PASS
    # A record the ledger does not approve (another agreement: another digest) does not decide, ...
    other = JudgeStanding(metric="m", fingerprint=FP, calibration=CalibrationRecord(**_calibration(FP, 199, 200)))
    assert codes(only(run([metric([1.0])], [gate()], ledger, judges={"m": other})[1])) == [
        BlockReason.CALIBRATION_UNAPPROVED
    ]
    # ... except in re-deriving a run recorded before the ledger approved records, which decided on the one found.
    older = other.model_copy(update={"approved_record": False})
    assert only(run([metric([1.0])], [gate()], ledger, judges={"m": older})[1]).outcome is Outcome.PASS
    # The standing is looked up by the gate's metric: another metric's judge does not touch this gate.
    assert only(run([metric([1.0])], [gate()], ledger, judges={"other": judge})[1]).outcome is Outcome.PASS


def test_a_gate_the_ledger_activates_but_the_config_does_not_declare_blocks_the_run() -> None:
    ledger = Ledger(gates={"g": approve(0.5), "renamed": approve(0.9)})
    _, payload = run([metric([1.0])], [gate()], ledger, ledger_where={"renamed": "authority.yaml:7"})
    by_name = {result.name: result for result in payload.gates}
    assert by_name["g"].outcome is Outcome.PASS
    assert by_name["renamed"].outcome is Outcome.BLOCKED
    assert codes(by_name["renamed"]) == [BlockReason.GATE_UNDECLARED]
    assert "authority.yaml:7" in by_name["renamed"].reasons[0].message
    assert payload.verdict is Outcome.BLOCKED and payload.exit_code == 1


def test_several_gates_each_decide_and_the_worst_is_the_verdict() -> None:
    ledger = Ledger(gates={"easy": approve(0.5), "hard": approve(0.9)})
    _, payload = run([metric([1.0, 1.0, 0.0])], [gate("easy"), gate("hard")], ledger)
    assert [(r.name, r.outcome) for r in payload.gates] == [("easy", Outcome.PASS), ("hard", Outcome.FAIL)]
    assert payload.verdict is Outcome.FAIL


# --- check gates ---


def check_result(outcome: CheckOutcome, *, binding: BindingStatus = BindingStatus.BOUND) -> CheckResult:
    policy = ExitCodePolicy(id="p1", pass_codes=(0,), inconclusive_codes=(5,))
    exit_code = {CheckOutcome.PASS: 0, CheckOutcome.FAIL: 1, CheckOutcome.INCONCLUSIVE: 5}.get(outcome)
    bound = binding is BindingStatus.BOUND
    return CheckResult(
        check_id="lint",
        outcome=outcome,
        repair={
            CheckOutcome.PASS: Repair.ACCEPT_WORK,
            CheckOutcome.FAIL: Repair.INVESTIGATE_WORK,
            CheckOutcome.INCONCLUSIVE: Repair.GATHER_EVIDENCE,
            CheckOutcome.ERROR: Repair.REPAIR_MEASUREMENT,
        }[outcome],
        reason={
            CheckOutcome.INCONCLUSIVE: CheckReason.DECLARED_INCONCLUSIVE,
            CheckOutcome.ERROR: CheckReason.TIMEOUT,
        }.get(outcome),
        target="src",
        binding=binding,
        requested_fingerprint=FP if bound else None,
        observed_fingerprint=FP,
        observed_after_fingerprint=FP,
        command=("lint",),
        timeout_s=10.0,
        command_started=True,
        exit_code=exit_code,
        policy=policy,
        policy_fingerprint=policy.fingerprint,
        started_at="2026-06-01T00:00:00Z",
        duration_s=0.1,
        output_cap_bytes=1000,
    )


@pytest.mark.parametrize(
    ("outcome", "verdict", "code"),
    [
        (CheckOutcome.PASS, Outcome.PASS, None),
        (CheckOutcome.FAIL, Outcome.FAIL, BlockReason.BELOW_THRESHOLD),
        (CheckOutcome.INCONCLUSIVE, Outcome.BLOCKED, BlockReason.CHECK_NOT_PASSED),
        (CheckOutcome.ERROR, Outcome.BLOCKED, BlockReason.CHECK_NOT_PASSED),
    ],
)
def test_a_check_gate_decides_on_its_recorded_result(outcome, verdict, code) -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint=FP)})
    result = only(run([], [gate(subject="lint", check_result=check_result(outcome))], ledger)[1])
    assert result.outcome is verdict
    assert codes(result) == ([] if code is None else [code])


def test_a_check_gate_needs_no_threshold_and_no_gold() -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint=FP)})
    result = only(run([], [gate(subject="lint", check_result=check_result(CheckOutcome.PASS))], ledger)[1])
    assert result.outcome is Outcome.PASS
    assert result.subject == "lint"


def test_a_check_gate_requiring_a_binding_blocks_an_unbound_pass() -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint=FP, require_binding=True)})
    unbound = check_result(CheckOutcome.PASS, binding=BindingStatus.UNBOUND)
    result = only(run([], [gate(subject="lint", check_result=unbound)], ledger)[1])
    assert codes(result) == [BlockReason.CHECK_UNBOUND]


def test_a_check_gate_whose_result_was_not_recorded_cannot_be_decided() -> None:
    with pytest.raises(ValueError, match="no result was recorded"):
        run([], [gate(subject="lint", is_check=True)], Ledger(gates={"g": GateApproval(active=True, fingerprint=FP)}))


def test_a_stale_check_approval_says_its_cause() -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint="sha256:" + "8" * 64)})
    result = only(
        run(
            [],
            [gate(subject="lint", check_result=check_result(CheckOutcome.PASS), stale_cause="inputs changed")],
            ledger,
        )[1]
    )
    assert codes(result) == [BlockReason.APPROVAL_STALE]
    assert "inputs changed" in result.reasons[0].message


def test_a_check_gate_is_checked_for_expiry_on_the_run_day() -> None:
    ledger = Ledger(gates={"g": GateApproval(active=True, fingerprint=FP, expires_on="2026-05-31")})
    result = only(run([], [gate(subject="lint", check_result=check_result(CheckOutcome.PASS))], ledger)[1])
    assert codes(result) == [BlockReason.APPROVAL_EXPIRED]


# --- interval rule (lower_bound) ---


def test_lower_bound_compares_the_one_sided_bound_at_the_gate_level() -> None:
    values = [0.9, 0.8, 0.95, 0.85, 0.7, 0.9, 0.88, 0.92]
    _, payload = run([metric(values)], [gate(rule=GateRule.LOWER_BOUND, level=0.95)], Ledger(gates={"g": approve(0.6)}))
    result = only(payload)
    # Two-sided at 2 * 0.95 - 1 = 90 %: each end is a one-sided 95 % bound.
    interval = confidence_interval(np.array(values), level=0.9)
    assert result.outcome is Outcome.PASS
    assert result.compared == pytest.approx(interval.low)
    assert result.favourable_bound == pytest.approx(interval.high)
    assert result.level == 0.95
    assert result.bound_method == interval.method.value


def test_lower_bound_lower_is_better_compares_the_upper_end() -> None:
    values = [0.1, 0.2, 0.15, 0.05, 0.3, 0.1]
    _, payload = run(
        [metric(values)],
        [gate(rule=GateRule.LOWER_BOUND, direction=Direction.LOWER_IS_BETTER)],
        Ledger(gates={"g": approve(0.5)}),
    )
    interval = confidence_interval(np.array(values), level=0.9)
    result = only(payload)
    assert result.outcome is Outcome.PASS
    assert result.compared == pytest.approx(interval.high)


def test_lower_bound_undecided_advises_the_examples_that_would_decide() -> None:
    values = [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]  # 0.7
    _, payload = run([metric(values)], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.6)}))
    result = only(payload)
    assert result.outcome is Outcome.BLOCKED
    assert codes(result) == [BlockReason.UNDECIDED]
    expected = examples_to_decide(point=0.7, threshold=0.6, level=0.95, variance=None, binary=True)
    assert expected is not None and expected > 10
    assert result.required_n == expected
    assert f"about {expected:,} examples (now 10)" in result.reasons[0].message
    assert result.required_epochs is None  # one sample per example: no epochs advice
    assert payload.exit_code == 1


def test_lower_bound_advice_for_a_continuous_metric_uses_the_observed_variance() -> None:
    values = [0.62, 0.71, 0.55, 0.8, 0.66, 0.59, 0.74, 0.68]
    _, payload = run([metric(values)], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.65)}))
    result = only(payload)
    assert codes(result) == [BlockReason.UNDECIDED]
    # Student-t records its standard error: n * se^2 is the sample variance.
    variance = float(np.var(values, ddof=1))
    point = float(np.mean(values))
    assert result.required_n == examples_to_decide(point=point, threshold=0.65, level=0.95, variance=variance)


def test_lower_bound_with_samples_also_advises_samples_per_example() -> None:
    # Four examples, two samples each, that vary within an example.
    rows = [0.6, 0.8, 0.7, 0.5, 0.9, 0.6, 0.65, 0.75]
    shape = RunShape(examples=4, example_of_row=np.repeat(np.arange(4, dtype=np.int64), 2))
    _, payload = run(
        [metric(rows, reducer=Reducer.MEAN)],
        [gate(rule=GateRule.LOWER_BOUND)],
        Ledger(gates={"g": approve(0.66)}),
        shape=shape,
    )
    result = only(payload)
    assert codes(result) == [BlockReason.UNDECIDED]
    assert result.required_n is not None
    assert result.required_epochs is not None and result.required_epochs > 2
    assert "samples per example" in result.reasons[0].message


def test_lower_bound_on_a_point_on_the_threshold_advises_nothing() -> None:
    _, payload = run(
        [metric([0.5, 0.7, 0.3, 0.5])], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.5)})
    )
    result = only(payload)
    assert codes(result) == [BlockReason.UNDECIDED]
    assert result.required_n is None
    assert "no number of examples decides" in result.reasons[0].message


def test_lower_bound_without_an_approved_threshold_gives_no_advice() -> None:
    _, payload = run([metric([0.5, 0.7, 0.3])], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(None)}))
    result = only(payload)
    assert codes(result) == [BlockReason.NO_APPROVED_THRESHOLD]
    assert result.required_n is None


def test_lower_bound_with_one_value_has_no_bound_and_blocks() -> None:
    _, payload = run([metric([0.9])], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.5)}))
    result = only(payload)
    assert codes(result) == [BlockReason.INTERVAL_UNDEFINED]


def test_lower_bound_whose_method_cannot_apply_blocks_instead_of_crashing() -> None:
    spec = IntervalSpec(method="clopper_pearson")
    _, payload = run(
        [metric([0.3, 0.6, 0.9], interval=spec)], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.5)})
    )
    assert codes(only(payload)) == [BlockReason.INTERVAL_UNDEFINED]


def test_lower_bound_with_clusters_bounds_with_the_cluster_method() -> None:
    values = [0.9, 0.8, 0.95, 0.85, 0.7, 0.9, 0.88, 0.92]
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3], dtype=np.int64)
    _, payload = run(
        [metric(values)],
        [gate(rule=GateRule.LOWER_BOUND)],
        Ledger(gates={"g": approve(0.6)}),
        RunShape(examples=8, clusters=clusters),
    )
    interval = confidence_interval(np.array(values), level=0.9, clusters=clusters)
    result = only(payload)
    assert result.bound_method == interval.method.value
    assert result.compared == pytest.approx(interval.low)


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 1.0]), min_size=2, max_size=40),
    threshold=st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]),
)
def test_lower_bound_never_passes_where_the_point_rule_fails(values: list[float], threshold: float) -> None:
    """The interval rule is stricter on the good side: it passes only where the point is at or above the
    threshold, and it fails only where the point is below it."""
    ledger = Ledger(gates={"point": approve(threshold), "bound": approve(threshold)})
    _, payload = run([metric(values)], [gate("point"), gate("bound", rule=GateRule.LOWER_BOUND)], ledger)
    by_name = {result.name: result for result in payload.gates}
    if by_name["bound"].outcome is Outcome.PASS:
        assert by_name["point"].outcome is Outcome.PASS
    if by_name["bound"].outcome is Outcome.FAIL:
        assert by_name["point"].outcome is Outcome.FAIL
    point = sum(values) / len(values)
    assert by_name["point"].outcome is (Outcome.PASS if point >= threshold else Outcome.FAIL)


# --- comparative gates ---


def _side(values: list[float]) -> MetricSide:
    c = column(values)
    return MetricSide(values=c.values(), states=c.states(), definition="def", scale=None)


def comparative_inputs(base: list[float], approved: str = FP) -> ComparativeInputs:
    ids = np.array([f"ex-{i}" for i in range(len(base))], dtype=object)
    return ComparativeInputs(
        ids=ids,
        gold_fingerprint=GOLD_FP,
        definitions={"m": "def"},
        baselines={
            "main": BaselineRun(
                name="main",
                location="runs/main",
                fingerprint=approved,
                run_id="r0",
                gold_fingerprint=GOLD_FP,
                ids=ids,
                metrics={"m": _side(base)},
            )
        },
    )


def test_a_comparative_gate_decides_on_the_difference_from_the_baseline() -> None:
    base = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint=FP)},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP)},
    )
    same = only(run([metric(base)], [gate(compare_to="main")], ledger, comparative=comparative_inputs(base))[1])
    assert same.outcome is Outcome.PASS
    assert same.compared == 0.0 and same.threshold == -0.1
    worse = [0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    dropped = only(run([metric(worse)], [gate(compare_to="main")], ledger, comparative=comparative_inputs(base))[1])
    assert dropped.outcome is Outcome.FAIL
    assert dropped.compared == pytest.approx(-0.25)


def test_a_comparative_gate_checks_its_approval_baseline_and_expiry() -> None:
    base = [1.0, 1.0, 0.0, 1.0]
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint=FP, expires_on="2026-05-01")},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP, expires_on="2026-05-01")},
    )
    result = only(run([metric(base)], [gate(compare_to="main")], ledger, comparative=comparative_inputs(base))[1])
    assert codes(result) == [BlockReason.APPROVAL_EXPIRED, BlockReason.BASELINE_EXPIRED]


def test_a_comparative_gate_on_a_reference_metric_needs_gold() -> None:
    base = [1.0, 1.0, 0.0, 1.0]
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint=FP)},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP)},
    )
    result = only(
        run(
            [metric(base, uses_reference=True)],
            [gate(compare_to="main")],
            ledger,
            comparative=comparative_inputs(base),
            gold=False,
        )[1]
    )
    assert BlockReason.GOLD_NOT_VALIDATED in codes(result)
    # Without a reference, a comparative gate is bound to its baseline's examples (not_comparable), not the gold.
    result = only(
        run([metric(base)], [gate(compare_to="main")], ledger, comparative=comparative_inputs(base), gold=False)[1]
    )
    assert BlockReason.GOLD_NOT_VALIDATED not in codes(result)


def test_a_comparative_gate_says_a_stale_cause() -> None:
    base = [1.0, 1.0, 0.0, 1.0]
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint="sha256:" + "7" * 64)},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP)},
    )
    result = only(
        run(
            [metric(base)],
            [gate(compare_to="main", stale_cause="rubric edited")],
            ledger,
            comparative=comparative_inputs(base),
        )[1]
    )
    assert codes(result) == [BlockReason.APPROVAL_STALE]
    assert "rubric edited" in result.reasons[0].message


def test_a_comparative_gate_without_comparative_inputs_is_a_caller_error() -> None:
    with pytest.raises(ValueError, match="no comparative inputs"):
        run([metric([1.0])], [gate(compare_to="main")], Ledger())


def test_a_comparative_lower_bound_gate_with_samples_advises_samples_per_example() -> None:
    rows = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    shape = RunShape(examples=6, example_of_row=np.repeat(np.arange(6, dtype=np.int64), 2))
    base_column = column([0.5, 1.0, 0.5, 0.5, 0.5, 1.0])
    ids = np.array([f"ex-{i}" for i in range(6)], dtype=object)
    from evalglass.core.stats import WithinSpread

    base = MetricSide(
        values=base_column.values(),
        states=base_column.states(),
        definition="def",
        scale=None,
        within=WithinSpread(samples=2, variance=0.25),
    )
    inputs = ComparativeInputs(
        ids=ids,
        gold_fingerprint=GOLD_FP,
        definitions={"m": "def"},
        baselines={
            "main": BaselineRun(
                name="main",
                location="runs/main",
                fingerprint=FP,
                gold_fingerprint=GOLD_FP,
                ids=ids,
                metrics={"m": base},
            )
        },
    )
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint=FP)},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP)},
    )
    result = only(
        run(
            [metric(rows, reducer=Reducer.MEAN)],
            [gate(compare_to="main", rule=GateRule.LOWER_BOUND)],
            ledger,
            shape=shape,
            comparative=inputs,
        )[1]
    )
    assert codes(result) == [BlockReason.UNDECIDED]
    assert result.comparison is not None and result.comparison.samples == 2
    assert result.required_epochs is not None


def test_policy_forbidding_all_gating_blocks_every_kind_of_gate() -> None:
    ledger = Ledger(
        policy=Policy(forbid_all_gating=True),
        gates={"m": approve(0.5), "c": GateApproval(active=True, fingerprint=FP)},
    )
    _, payload = run(
        [metric([1.0])],
        [gate("m"), gate("c", subject="lint", check_result=check_result(CheckOutcome.PASS))],
        ledger,
    )
    assert all(codes(result) == [BlockReason.POLICY_FORBIDDEN] for result in payload.gates)
    assert math.isclose(payload.gates[0].value or 0.0, 1.0)


def test_lower_bound_with_nothing_measured_blocks_with_no_bound() -> None:
    _, payload = run([metric([None, None, None])], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.5)}))
    result = only(payload)
    assert codes(result) == [BlockReason.NO_MEASURED_VALUE, BlockReason.INCOMPLETE_MEASUREMENT]
    assert (result.compared, result.favourable_bound, result.required_n) == (None, None, None)


def test_a_bootstrap_bound_uses_the_recorded_seed_and_resamples() -> None:
    values = [0.62, 0.71, 0.55, 0.8, 0.66, 0.59, 0.74, 0.68]
    spec = IntervalSpec(method="bootstrap_percentile", seed=3, resamples=500)
    _, payload = run(
        [metric(values, interval=spec)],
        [gate(rule=GateRule.LOWER_BOUND, level=0.9)],
        Ledger(gates={"g": approve(0.66)}),
    )
    result = only(payload)
    expected = confidence_interval(np.array(values), level=0.8, method="bootstrap_percentile", seed=3, resamples=500)
    assert (result.compared, result.favourable_bound) == (expected.low, expected.high)
    assert codes(result) == [BlockReason.UNDECIDED]
    # A bootstrap records no standard error: the advice is from the values' own variance.
    variance = float(np.var(values, ddof=1))
    point = float(np.mean(values))
    assert result.required_n == examples_to_decide(point=point, threshold=0.66, level=0.9, variance=variance)


def test_a_bootstrap_bound_on_two_values_still_advises() -> None:
    spec = IntervalSpec(method="bootstrap_percentile", seed=1, resamples=200)
    _, payload = run(
        [metric([0.4, 0.9], interval=spec)], [gate(rule=GateRule.LOWER_BOUND)], Ledger(gates={"g": approve(0.6)})
    )
    result = only(payload)
    assert codes(result) == [BlockReason.UNDECIDED]
    assert result.required_n is not None and result.required_n > 2


def test_clustered_examples_are_worth_less_so_more_are_advised() -> None:
    """Examples in a cluster move together (the design effect): the advice counts that, not the bare variance."""
    values = [0.61, 0.63, 0.72, 0.74, 0.58, 0.6, 0.7, 0.69, 0.66, 0.64]
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4], dtype=np.int64)
    ledger = Ledger(gates={"g": approve(0.655)})
    _, flat = run([metric(values)], [gate(rule=GateRule.LOWER_BOUND)], ledger)
    _, clustered = run(
        [metric(values)], [gate(rule=GateRule.LOWER_BOUND)], ledger, RunShape(examples=10, clusters=clusters)
    )
    assert codes(only(flat)) == codes(only(clustered)) == [BlockReason.UNDECIDED]
    flat_n, clustered_n = only(flat).required_n, only(clustered).required_n
    assert flat_n is not None and clustered_n is not None
    assert clustered_n > flat_n


def test_a_higher_level_asks_for_more_examples_and_more_samples() -> None:
    rows = [0.6, 0.8, 0.7, 0.5, 0.9, 0.6, 0.65, 0.75, 0.7, 0.6]
    shape = RunShape(examples=5, example_of_row=np.repeat(np.arange(5, dtype=np.int64), 2))
    advice = {}
    for level in (0.8, 0.99):
        _, payload = run(
            [metric(rows, reducer=Reducer.MEAN)],
            [gate(rule=GateRule.LOWER_BOUND, level=level)],
            Ledger(gates={"g": approve(0.66)}),
            shape=shape,
        )
        result = only(payload)
        assert codes(result) == [BlockReason.UNDECIDED]
        advice[level] = (result.required_n, result.required_epochs)
    (n_low, epochs_low), (n_high, epochs_high) = advice[0.8], advice[0.99]
    assert n_low is not None and n_high is not None and n_high > n_low
    assert epochs_low is not None and epochs_high is not None and epochs_high > epochs_low


def test_at_least_k_counts_an_example_only_when_k_of_its_samples_pass() -> None:
    # Three samples per example; passes per example: 3, 2, 1.
    rows = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    shape = RunShape(examples=3, example_of_row=np.repeat(np.arange(3, dtype=np.int64), 3))
    points = {}
    for k in (1, 2, 3):
        summaries, _ = run([metric(rows, reducer=Reducer.AT_LEAST_K, k=k)], [], Ledger(), shape=shape)
        estimate = summaries[0].estimate
        assert estimate is not None and estimate.k == k
        points[k] = estimate.point
    assert points == {1: pytest.approx(1.0), 2: pytest.approx(2 / 3), 3: pytest.approx(1 / 3)}


def test_the_summary_carries_the_metric_as_declared() -> None:
    summaries, _ = run(
        [metric([1.0], name="accuracy", type="exact_match", description="answers match", uses_reference=True)],
        [],
        Ledger(),
    )
    (summary,) = summaries
    assert (summary.name, summary.type, summary.description, summary.uses_reference) == (
        "accuracy",
        "exact_match",
        "answers match",
        True,
    )


def test_the_estimate_interval_follows_the_metric_interval_spec() -> None:
    values = [0.62, 0.71, 0.55, 0.8, 0.66, 0.59, 0.74, 0.68]
    spec = IntervalSpec(method="bootstrap_percentile", level=0.9, seed=5, resamples=300)
    summaries, _ = run([metric(values, interval=spec)], [], Ledger())
    estimate = summaries[0].estimate
    assert estimate is not None and estimate.interval is not None
    expected = confidence_interval(np.array(values), level=0.9, method="bootstrap_percentile", seed=5, resamples=300)
    assert (estimate.interval.low, estimate.interval.high, estimate.interval.level) == (
        expected.low,
        expected.high,
        0.9,
    )
    assert estimate.interval.params["seed"] == 5 and estimate.interval.params["resamples"] == 300
    assert estimate.interval_problem is None


def test_a_comparative_gate_compares_on_the_metric_scale_and_the_run_clusters() -> None:
    base = [1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    ledger = Ledger(
        gates={"g": GateApproval(active=True, margin=0.1, fingerprint=FP)},
        baselines={"main": BaselineApproval(run="runs/main", fingerprint=FP)},
    )
    inputs = comparative_inputs(base)
    baselines = {name: replace(found, metrics={"m": scaled_side(base)}) for name, found in inputs.baselines.items()}
    inputs = replace(inputs, baselines=baselines)
    unit = ScaleSpec(min=0.0, max=1.0)
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3], dtype=np.int64)
    result = only(
        run(
            [metric(base, scale=unit)],
            [gate(compare_to="main", rule=GateRule.LOWER_BOUND)],
            ledger,
            RunShape(examples=8, clusters=clusters),
            comparative=inputs,
        )[1]
    )
    assert BlockReason.NOT_COMPARABLE not in codes(result)
    assert result.bound_method is not None and result.bound_method.startswith("cluster")


def scaled_side(values: list[float]) -> MetricSide:
    c = column(values)
    return MetricSide(values=c.values(), states=c.states(), definition="def", scale=ScaleSpec(min=0.0, max=1.0))


@pytest.mark.parametrize("subject", ["m@v", "m@v-vs-w"])
def test_a_gate_on_a_variants_judge_gets_the_declared_judges_standing(subject: str) -> None:
    """A variant changes the task, never the judge: a gate on ``m@v`` (or on the difference ``m@v-vs-w``) stands
    on judge ``m``'s calibration, and blocks while it is uncalibrated, as a gate on ``m`` does."""
    record = CalibrationRecord(**_calibration(FP, 190, 200))
    ledger = Ledger(
        gates={"g": approve(0.5 if "-vs-" not in subject else -0.1)},
        judges={"m": JudgeRequirement(min_agreement=0.8, calibration=record.digest)},
    )
    judge = JudgeStanding(metric="m", fingerprint=FP)
    result = only(run([metric([1.0], name=subject)], [gate(subject=subject)], ledger, judges={"m": judge})[1])
    assert codes(result) == [BlockReason.JUDGE_UNCALIBRATED]
    calibrated = JudgeStanding(metric="m", fingerprint=FP, calibration=record)
    assert (
        only(run([metric([1.0], name=subject)], [gate(subject=subject)], ledger, judges={"m": calibrated})[1]).outcome
        is Outcome.PASS
    )
