"""Every gate record the rule can write, field for field: outcome, reasons (word for word), notes, the numbers
compared and the advice. A scorecard carries these records and every renderer reads them, so a changed field is a
changed decision or a changed reason. One scenario per branch of ``evaluate_gate``, ``evaluate_check_gate`` and
``undeclared_results``."""

from __future__ import annotations

import pytest

from evalglass.core.authority import Authority, BlockReason, GateApproval, Ledger, Reason
from evalglass.core.checks import CHECK_REPAIRS, BindingStatus, CheckOutcome, CheckReason, CheckResult, ExitCodePolicy
from evalglass.core.estimate import Estimate
from evalglass.core.gates import Advice, evaluate_check_gate, evaluate_gate, undeclared_results
from evalglass.core.gatespec import GateRule, GateSpec, Tolerable
from evalglass.core.population import Population, StateCount
from evalglass.core.score import Status, Validity
from evalglass.core.stats import Direction, Interval, Method

FP = "sha256:" + "1" * 64
OTHER = "sha256:" + "5" * 64


def population(included, *excluded, missing=0):
    states = tuple(StateCount(status=s, validity=v, count=c) for s, v, c in excluded)
    return Population(
        expected=included + sum(c for *_, c in excluded) + missing, included=included, excluded=states, missing=missing
    )


def estimate(point, n):
    return Estimate(point=point, n=n)


def interval(low, high, point):
    return Interval(point=point, low=low, high=high, level=0.9, method=Method.STUDENT_T, n=20)


ACTIVE = Authority(active=True, threshold=0.8)
ACTIVE_LOW = Authority(active=True, threshold=0.3)
INACTIVE = Authority(active=False)
FORBIDDEN = Authority(
    active=True,
    threshold=0.8,
    reasons=(Reason(code=BlockReason.POLICY_FORBIDDEN, message="frozen"),),
    notes=("expiring: soon",),
)
NOTED = Authority(active=True, threshold=0.8, notes=("expiring: soon",))

POINT = GateSpec(metric="m", proposed_threshold=0.7)
LOWER = GateSpec(metric="m", direction=Direction.LOWER_IS_BETTER)
BOUND = GateSpec(metric="m", rule=GateRule.LOWER_BOUND, level=0.95)
BOUND_LOWER = GateSpec(metric="m", rule=GateRule.LOWER_BOUND, level=0.9, direction=Direction.LOWER_IS_BETTER)
MIN_N = GateSpec(metric="m", min_n=10)
TOLERANT = GateSpec(metric="m", tolerate=(Tolerable.NON_EVALUABLE, Tolerable.NOT_APPLICABLE))

NE = (Status.NON_EVALUABLE, Validity.NOT_APPLICABLE)
SK = (Status.SKIPPED, Validity.NOT_APPLICABLE)
ERR = (Status.ERROR, Validity.NOT_MEASURED)
INV = (Status.SCORED, Validity.INVALID)
BLK = (Status.BLOCKED, Validity.NOT_MEASURED)

METRIC = {
    "inactive": (POINT, INACTIVE, estimate(0.9, 20), population(20), None, None),
    "point_pass": (POINT, NOTED, estimate(0.8, 20), population(20), None, None),
    "point_fail": (POINT, ACTIVE, estimate(0.7999, 20), population(20), None, None),
    "point_lower_pass": (LOWER, ACTIVE_LOW, estimate(0.3, 20), population(20), None, None),
    "point_lower_fail": (LOWER, ACTIVE_LOW, estimate(0.31, 20), population(20), None, None),
    "nothing_measured": (POINT, ACTIVE, None, population(0, (*ERR, 3)), None, None),
    "nothing_expected": (POINT, ACTIVE, None, population(0), None, None),
    "forbidden_min_n_incomplete": (
        MIN_N,
        FORBIDDEN,
        estimate(0.9, 5),
        population(5, (*ERR, 1), (*INV, 2), missing=1),
        None,
        None,
    ),
    "at_min_n": (MIN_N, ACTIVE, estimate(0.9, 10), population(10), None, None),
    "tolerated": (TOLERANT, ACTIVE, estimate(0.9, 5), population(5, (*NE, 2)), None, None),
    "skipped_tolerated_by_validity": (TOLERANT, ACTIVE, estimate(0.9, 5), population(5, (*SK, 2)), None, None),
    "non_evaluable_not_tolerated": (
        GateSpec(metric="m", tolerate=(Tolerable.SKIPPED,)),
        ACTIVE,
        estimate(0.9, 5),
        population(5, (*NE, 2)),
        None,
        None,
    ),
    "tolerated_status_blocked": (
        GateSpec(metric="m", tolerate=(Tolerable.NOT_APPLICABLE,)),
        ACTIVE,
        estimate(0.9, 5),
        population(5, (*BLK, 1), (*SK, 1)),
        None,
        None,
    ),
    "point_ignores_bound_and_advice": (
        POINT,
        ACTIVE,
        estimate(0.9, 20),
        population(20),
        interval(0.7, 0.95, 0.9),
        Advice(examples=5, epochs=3),
    ),
    "bound_pass": (
        BOUND,
        ACTIVE,
        estimate(0.9, 20),
        population(20),
        interval(0.85, 0.95, 0.9),
        Advice(examples=12, epochs=None),
    ),
    "bound_undecided": (
        BOUND,
        ACTIVE,
        estimate(0.84, 20),
        population(20),
        interval(0.75, 0.93, 0.84),
        Advice(examples=1234, epochs=7),
    ),
    "bound_undecided_no_advice": (BOUND, ACTIVE, estimate(0.8, 20), population(20), interval(0.7, 0.9, 0.8), Advice()),
    "bound_undecided_epochs_only": (
        BOUND,
        ACTIVE,
        estimate(0.8, 20),
        population(20),
        interval(0.7, 0.9, 0.8),
        Advice(epochs=4),
    ),
    "bound_fail": (BOUND, ACTIVE, estimate(0.6, 20), population(20), interval(0.5, 0.7, 0.6), None),
    "bound_lower_fail": (BOUND_LOWER, ACTIVE_LOW, estimate(0.5, 20), population(20), interval(0.4, 0.6, 0.5), None),
    "bound_lower_pass": (BOUND_LOWER, ACTIVE_LOW, estimate(0.2, 20), population(20), interval(0.1, 0.25, 0.2), None),
    "bound_undefined": (BOUND, ACTIVE, estimate(0.9, 1), population(1), None, None),
    "bound_nothing_measured": (BOUND, ACTIVE, None, population(0, (*ERR, 2)), None, None),
}

POLICY = ExitCodePolicy(id="p1", pass_codes=(0,), inconclusive_codes=(5,))


def check(outcome, *, binding=BindingStatus.BOUND, unbound_inputs=()):
    code = {CheckOutcome.PASS: 0, CheckOutcome.FAIL: 1, CheckOutcome.INCONCLUSIVE: 5}.get(outcome)
    bound = binding is BindingStatus.BOUND
    return CheckResult(
        check_id="lint",
        outcome=outcome,
        repair=CHECK_REPAIRS[outcome],
        reason={
            CheckOutcome.INCONCLUSIVE: CheckReason.DECLARED_INCONCLUSIVE,
            CheckOutcome.ERROR: CheckReason.TIMEOUT,
        }.get(outcome),
        target="src",
        binding=binding,
        requested_fingerprint=FP if bound else None,
        observed_fingerprint=FP,
        observed_after_fingerprint=None if outcome is CheckOutcome.ERROR else FP,
        command=("lint",),
        unbound_inputs=unbound_inputs,
        timeout_s=10.0,
        command_started=True,
        exit_code=code,
        policy=POLICY,
        policy_fingerprint=POLICY.fingerprint,
        started_at="2026-06-01T00:00:00Z",
        duration_s=0.1,
        output_cap_bytes=1000,
    )


INPUTS_UNBOUND = (
    "check 'lint' does not bind its test code: its command runs folder 'tests', which no `inputs:` covers, so a "
    "change there leaves an approval standing; declare them under the check's `inputs:` and approve the new "
    "fingerprint (or accept unbound code: `require_binding: false` in the gate's ledger entry)"
)
CHECK = GateSpec(check="lint")
CHECK_AUTH = Authority(active=True)
BINDING = Authority(active=True, require_binding=True)
CHECKS = {
    "check_inactive": (INACTIVE, check(CheckOutcome.PASS)),
    "check_pass": (Authority(active=True, notes=("expiring: soon",)), check(CheckOutcome.PASS)),
    "check_fail": (CHECK_AUTH, check(CheckOutcome.FAIL)),
    "check_inconclusive": (CHECK_AUTH, check(CheckOutcome.INCONCLUSIVE)),
    "check_error": (CHECK_AUTH, check(CheckOutcome.ERROR)),
    "check_unbound_pass_noted": (CHECK_AUTH, check(CheckOutcome.PASS, binding=BindingStatus.UNBOUND)),
    "check_unbound_fail_noted": (CHECK_AUTH, check(CheckOutcome.FAIL, binding=BindingStatus.UNBOUND)),
    "check_unbound_pass_required": (BINDING, check(CheckOutcome.PASS, binding=BindingStatus.UNBOUND)),
    "check_unbound_error_required": (BINDING, check(CheckOutcome.ERROR, binding=BindingStatus.UNBOUND)),
    "check_inputs_noted": (
        Authority(active=True, accept_unbound_code=True),
        check(CheckOutcome.PASS, unbound_inputs=("folder 'tests'", "runner 'pytest'")),
    ),
    # Unbound test code blocks unless the ledger accepts it (`require_binding: false`): no note-only default.
    "check_inputs_blocked": (CHECK_AUTH, check(CheckOutcome.PASS, unbound_inputs=("folder 'tests'",))),
    "check_inputs_required": (BINDING, check(CheckOutcome.FAIL, unbound_inputs=("folder 'tests'",))),
    "check_inputs_error_required": (BINDING, check(CheckOutcome.INCONCLUSIVE, unbound_inputs=("folder 'tests'",))),
    "check_forbidden_unbound_noted": (
        Authority(
            active=True,
            reasons=(Reason(code=BlockReason.POLICY_FORBIDDEN, message="frozen"),),
            notes=("expiring: soon",),
        ),
        check(CheckOutcome.PASS, binding=BindingStatus.UNBOUND),
    ),
    "check_forbidden": (
        Authority(active=True, reasons=(Reason(code=BlockReason.POLICY_FORBIDDEN, message="frozen"),)),
        check(CheckOutcome.PASS),
    ),
}


def metric_record(name: str) -> dict:
    spec, authority, est, pop, bound, advice = METRIC[name]
    result = evaluate_gate("g", spec, FP, authority, est, pop, bound=bound, advice=advice)
    return result.model_dump(mode="json", exclude_none=True)


def check_record(name: str) -> dict:
    authority, result = CHECKS[name]
    return evaluate_check_gate("g", CHECK, FP, authority, result).model_dump(mode="json", exclude_none=True)


def undeclared_records() -> list[dict]:
    ledger = Ledger(
        gates={
            "kept": GateApproval(active=True, threshold=0.5, fingerprint=FP),
            "acuracy": GateApproval(active=True, threshold=0.9),
            "old": GateApproval(active=False, threshold=0.1, fingerprint=OTHER),
            "zzz_retired": GateApproval(active=True, threshold=0.2, fingerprint=OTHER),
        }
    )
    where = {"acuracy": "evals/authority.yaml:12"}
    results = undeclared_results(ledger, ["kept", "accuracy"], where)
    return [result.model_dump(mode="json", exclude_none=True) for result in results]


METRIC_RECORDS: dict[str, dict] = {
    "inactive": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": False,
        "outcome": "informational",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "point_pass": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": ["expiring: soon"],
        "value": 0.8,
        "compared": 0.8,
        "threshold": 0.8,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "point_fail": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {"code": "below_threshold", "message": "the value 0.7999 is below the approved threshold (needs ≥ 0.8)"}
        ],
        "notes": [],
        "value": 0.7999,
        "compared": 0.7999,
        "threshold": 0.8,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "point_lower_pass": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.3,
        "compared": 0.3,
        "threshold": 0.3,
        "direction": "lower_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "point_lower_fail": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {"code": "below_threshold", "message": "the value 0.31 is above the approved threshold (needs ≤ 0.3)"}
        ],
        "notes": [],
        "value": 0.31,
        "compared": 0.31,
        "threshold": 0.3,
        "direction": "lower_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "nothing_measured": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "no_measured_value",
                "message": (
                    "no score was measured (scored and valid) to compare: one example measured validly would give "
                    "a value (the metric's diagnostics say why each was excluded)"
                ),
            },
            {"code": "incomplete_measurement", "message": "3 of 3 examples were not measured validly (3 error)"},
        ],
        "notes": [],
        "threshold": 0.8,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "nothing_expected": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "no_measured_value",
                "message": (
                    "no score was measured (scored and valid) to compare: one example measured validly would give "
                    "a value (the metric's diagnostics say why each was excluded)"
                ),
            }
        ],
        "notes": [],
        "threshold": 0.8,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "forbidden_min_n_incomplete": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {"code": "policy_forbidden", "message": "frozen"},
            {"code": "below_min_n", "message": "5 examples were measured; the gate needs at least 10"},
            {
                "code": "incomplete_measurement",
                "message": "4 of 9 examples were not measured validly (1 error, 2 invalid, 1 missing)",
            },
        ],
        "notes": ["expiring: soon"],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 5,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "at_min_n": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 10,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "tolerated": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 5,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "skipped_tolerated_by_validity": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 5,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "non_evaluable_not_tolerated": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {"code": "incomplete_measurement", "message": "2 of 7 examples were not measured validly (2 non_evaluable)"}
        ],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 5,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "tolerated_status_blocked": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {"code": "incomplete_measurement", "message": "1 of 7 examples were not measured validly (1 blocked)"}
        ],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 5,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "point_ignores_bound_and_advice": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "compared": 0.9,
        "threshold": 0.8,
        "proposed_threshold": 0.7,
        "direction": "higher_is_better",
        "rule": "point",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_pass": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.9,
        "compared": 0.85,
        "favourable_bound": 0.95,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "bound_method": "student_t",
        "n": 20,
        "required_n": 12,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_undecided": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "undecided",
                "message": "the 90% interval of the value [0.75, 0.93] (each end a 95% one-sided "
                "bound) straddles the approved threshold 0.8: the data show neither "
                "that the gate is met nor that it is missed; about 1,234 examples "
                "(now 20) would decide at the observed value 0.84, or about 7 samples "
                "per example over the same examples",
            }
        ],
        "notes": [],
        "value": 0.84,
        "compared": 0.75,
        "favourable_bound": 0.93,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "bound_method": "student_t",
        "n": 20,
        "required_n": 1234,
        "required_epochs": 7,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_undecided_no_advice": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "undecided",
                "message": "the 90% interval of the value [0.7, 0.9] (each end a 95% "
                "one-sided bound) straddles the approved threshold 0.8: the "
                "data show neither that the gate is met nor that it is "
                "missed; no number of examples decides at the observed "
                "value 0.8, which sits on the threshold",
            }
        ],
        "notes": [],
        "value": 0.8,
        "compared": 0.7,
        "favourable_bound": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "bound_method": "student_t",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_undecided_epochs_only": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "undecided",
                "message": "the 90% interval of the value [0.7, 0.9] (each end a 95% "
                "one-sided bound) straddles the approved threshold 0.8: "
                "the data show neither that the gate is met nor that it "
                "is missed; no number of examples decides at the observed "
                "value 0.8, which sits on the threshold, or about 4 "
                "samples per example over the same examples",
            }
        ],
        "notes": [],
        "value": 0.8,
        "compared": 0.7,
        "favourable_bound": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "bound_method": "student_t",
        "n": 20,
        "required_epochs": 4,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_fail": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {
                "code": "below_threshold",
                "message": "the 95% lower confidence bound 0.5 is below the approved threshold (needs ≥ 0.8)",
            }
        ],
        "notes": [],
        "value": 0.6,
        "compared": 0.5,
        "favourable_bound": 0.7,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "bound_method": "student_t",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_lower_fail": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {
                "code": "below_threshold",
                "message": "the 90% upper confidence bound 0.6 is above the approved threshold (needs ≤ 0.3)",
            }
        ],
        "notes": [],
        "value": 0.5,
        "compared": 0.6,
        "favourable_bound": 0.4,
        "threshold": 0.3,
        "direction": "lower_is_better",
        "rule": "lower_bound",
        "level": 0.9,
        "bound_method": "student_t",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_lower_pass": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [],
        "value": 0.2,
        "compared": 0.25,
        "favourable_bound": 0.1,
        "threshold": 0.3,
        "direction": "lower_is_better",
        "rule": "lower_bound",
        "level": 0.9,
        "bound_method": "student_t",
        "n": 20,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_undefined": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "interval_undefined",
                "message": "no 95% one-sided bound exists for 1 measured examples with this method: at least 2 "
                "measured examples are needed to decide it (1 now)",
            }
        ],
        "notes": [],
        "value": 0.9,
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "n": 1,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "bound_nothing_measured": {
        "name": "g",
        "subject": "m",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "no_measured_value",
                "message": (
                    "no score was measured (scored and valid) to compare: one example measured validly would give "
                    "a value (the metric's diagnostics say why each was excluded)"
                ),
            },
            {"code": "incomplete_measurement", "message": "2 of 2 examples were not measured validly (2 error)"},
        ],
        "notes": [],
        "threshold": 0.8,
        "direction": "higher_is_better",
        "rule": "lower_bound",
        "level": 0.95,
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
}
CHECK_RECORDS: dict[str, dict] = {
    "check_inactive": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": False,
        "outcome": "informational",
        "reasons": [],
        "notes": [],
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_pass": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": ["expiring: soon"],
        "value": 1.0,
        "compared": 1.0,
        "threshold": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_fail": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {
                "code": "below_threshold",
                "message": "check 'lint' ended FAIL (0.0) is below the approved threshold (needs ≥ 1)",
            }
        ],
        "notes": [],
        "value": 0.0,
        "compared": 0.0,
        "threshold": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_inconclusive": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "check_not_passed",
                "message": "check 'lint' ended INCONCLUSIVE (declared_inconclusive): gather better evidence",
            }
        ],
        "notes": [],
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_error": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {"code": "check_not_passed", "message": "check 'lint' ended ERROR (timeout): repair the measurement"}
        ],
        "notes": [],
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_unbound_pass_noted": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [
            "unbound: check 'lint' ended PASS against whatever state its target had; "
            "no expect_state ties this result to an approved state"
        ],
        "value": 1.0,
        "compared": 1.0,
        "threshold": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_unbound_fail_noted": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "fail",
        "reasons": [
            {
                "code": "below_threshold",
                "message": "check 'lint' ended FAIL (0.0) is below the approved threshold (needs ≥ 1)",
            }
        ],
        "notes": [
            "unbound: check 'lint' ended FAIL against whatever state its target had; "
            "no expect_state ties this result to an approved state"
        ],
        "value": 0.0,
        "compared": 0.0,
        "threshold": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_unbound_pass_required": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "check_unbound",
                "message": "check 'lint' ran unbound (the gate names no "
                "expect_state) and the ledger requires a binding; add "
                "`expect_state:` to the gate with the state `evalglass "
                "check` prints",
            }
        ],
        "notes": [],
        "value": 1.0,
        "compared": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_unbound_error_required": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {"code": "check_not_passed", "message": "check 'lint' ended ERROR (timeout): repair the measurement"}
        ],
        "notes": [],
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_inputs_noted": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "pass",
        "reasons": [],
        "notes": [
            "check 'lint' does not bind its test code: its command runs folder 'tests', "
            "runner 'pytest', which no `inputs:` covers, so a change there leaves an "
            "approval standing"
        ],
        "value": 1.0,
        "compared": 1.0,
        "threshold": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_inputs_required": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "check_inputs_unbound",
                "message": INPUTS_UNBOUND,
            }
        ],
        "notes": [],
        "value": 0.0,
        "compared": 0.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_inputs_blocked": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [{"code": "check_inputs_unbound", "message": INPUTS_UNBOUND}],
        "notes": [],
        "value": 1.0,
        "compared": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_inputs_error_required": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "check_not_passed",
                "message": "check 'lint' ended INCONCLUSIVE (declared_inconclusive): gather better evidence",
            }
        ],
        "notes": [],
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_forbidden_unbound_noted": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [{"code": "policy_forbidden", "message": "frozen"}],
        "notes": [
            "expiring: soon",
            "unbound: check 'lint' ended PASS against whatever state its target "
            "had; no expect_state ties this result to an approved state",
        ],
        "value": 1.0,
        "compared": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
    "check_forbidden": {
        "name": "g",
        "subject": "lint",
        "subject_kind": "check",
        "active": True,
        "outcome": "blocked",
        "reasons": [{"code": "policy_forbidden", "message": "frozen"}],
        "notes": [],
        "value": 1.0,
        "compared": 1.0,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    },
}
UNDECLARED_RECORDS: list[dict] = [
    {
        "name": "acuracy",
        "subject": "acuracy",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "gate_undeclared",
                "message": "the ledger activates gate 'acuracy' (evals/authority.yaml:12), but the config declares "
                "no gate of that name (did you mean 'accuracy'?); declare it again, or retire it in the "
                "ledger with `active: false`",
            }
        ],
        "notes": [],
        "threshold": 0.9,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "",
    },
    {
        "name": "zzz_retired",
        "subject": "zzz_retired",
        "subject_kind": "metric",
        "active": True,
        "outcome": "blocked",
        "reasons": [
            {
                "code": "gate_undeclared",
                "message": "the ledger activates gate 'zzz_retired', but the config declares no gate of that name; "
                "declare it again, or retire it in the ledger with `active: false`",
            }
        ],
        "notes": [],
        "threshold": 0.2,
        "direction": "higher_is_better",
        "rule": "point",
        "fingerprint": "sha256:5555555555555555555555555555555555555555555555555555555555555555",
    },
]


@pytest.mark.parametrize("name", list(METRIC))
def test_a_metric_gate_writes_exactly_this_record(name: str) -> None:
    assert metric_record(name) == METRIC_RECORDS[name]


@pytest.mark.parametrize("name", list(CHECKS))
def test_a_check_gate_writes_exactly_this_record(name: str) -> None:
    assert check_record(name) == CHECK_RECORDS[name]


def test_only_active_undeclared_gates_block_and_each_says_where_it_is() -> None:
    assert undeclared_records() == UNDECLARED_RECORDS


def test_every_scenario_has_its_record() -> None:
    assert set(METRIC) == set(METRIC_RECORDS)
    assert set(CHECKS) == set(CHECK_RECORDS)
