"""A check result refuses any set of facts that cannot be true together, and says which, word for word: the message
is what the runner's author reads when a record is wrong. Also the texts a result gives of itself (``summary``,
the policy's ``describe``, the score it maps to). Each case is one branch of ``CheckResult._violation``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.checks import (
    CHECK_REPAIRS,
    BindingStatus,
    CheckOutcome,
    CheckReason,
    CheckResult,
    ExitCodePolicy,
    Repair,
    combined_outcome,
    to_score,
)

FP_A = "sha256:" + "a" * 64
FP_B = "sha256:" + "b" * 64
POLICY = ExitCodePolicy(id="p", inconclusive_codes=[2])
TOTAL = ExitCodePolicy(id="t", pass_codes=[0], fail_codes=[1])
E, INC, F, P = CheckOutcome.ERROR, CheckOutcome.INCONCLUSIVE, CheckOutcome.FAIL, CheckOutcome.PASS
NOT_STARTED = {"command_started": False, "exit_code": None, "observed_after_fingerprint": None}
MISMATCH = {
    "outcome": E,
    "binding": BindingStatus.MISMATCH,
    "requested_fingerprint": FP_B,
    "reason": CheckReason.BINDING_MISMATCH,
    **NOT_STARTED,
}
UNAVAILABLE = {
    "outcome": E,
    "binding": BindingStatus.UNAVAILABLE,
    "requested_fingerprint": FP_B,
    "observed_fingerprint": None,
    "reason": CheckReason.TARGET_UNAVAILABLE,
    **NOT_STARTED,
}


def fields(**overrides: Any) -> dict[str, Any]:
    policy = overrides.pop("policy", POLICY)
    out: dict[str, Any] = {
        "check_id": "c",
        "outcome": P,
        "target": "src",
        "binding": BindingStatus.BOUND,
        "requested_fingerprint": FP_A,
        "observed_fingerprint": FP_A,
        "observed_after_fingerprint": FP_A,
        "command": ("python", "check.py"),
        "timeout_s": 5.0,
        "command_started": True,
        "exit_code": 0,
        "policy": policy,
        "policy_fingerprint": policy.fingerprint,
        "started_at": "2025-01-02T03:04:05Z",
        "duration_s": 0.5,
        "output_cap_bytes": 4,
    }
    out.update(overrides)
    out.setdefault("repair", CHECK_REPAIRS[out["outcome"]])
    return out


REFUSED = {
    "repair": {"repair": Repair.GATHER_EVIDENCE},
    "policy_fingerprint": {"policy_fingerprint": FP_B},
    "no_target_fingerprints": {"target": None},
    "no_target_after_only": {"target": None, "requested_fingerprint": None, "observed_fingerprint": None},
    "bound_other": {"requested_fingerprint": FP_B},
    "bound_unrequested": {"requested_fingerprint": None},
    "unbound_requested": {"binding": BindingStatus.UNBOUND},
    "mismatch_unrequested": {**MISMATCH, "requested_fingerprint": None},
    "mismatch_unobserved": {**MISMATCH, "observed_fingerprint": None},
    "mismatch_equal": {**MISMATCH, "requested_fingerprint": FP_A},
    "unavailable_observed": {**UNAVAILABLE, "observed_fingerprint": FP_A},
    "unbound_unobserved": {
        "binding": BindingStatus.UNBOUND,
        "requested_fingerprint": None,
        "observed_fingerprint": None,
        "observed_after_fingerprint": None,
    },
    "mismatch_started": {**MISMATCH, "command_started": True, "exit_code": 1, "observed_after_fingerprint": FP_A},
    "mismatch_not_error": {**MISMATCH, "outcome": F, "reason": None},
    "mismatch_reason": {**MISMATCH, "reason": CheckReason.TARGET_UNAVAILABLE},
    "unavailable_reason": {**UNAVAILABLE, "reason": CheckReason.SPAWN_FAILED},
    "exit_and_signal": {"signal": 9},
    "not_started_signal": {**NOT_STARTED, "outcome": E, "reason": CheckReason.SPAWN_FAILED, "signal": 9},
    "not_started_after": {
        **NOT_STARTED,
        "outcome": E,
        "reason": CheckReason.SPAWN_FAILED,
        "observed_after_fingerprint": FP_A,
    },
    "not_started_stdout": {**NOT_STARTED, "outcome": E, "reason": CheckReason.SPAWN_FAILED, "stdout_tail": "x"},
    "not_started_stderr": {**NOT_STARTED, "outcome": E, "reason": CheckReason.SPAWN_FAILED, "stderr_tail": "x"},
    "not_started_stdout_bytes": {
        **NOT_STARTED,
        "outcome": E,
        "reason": CheckReason.SPAWN_FAILED,
        "stdout_total_bytes": 1,
    },
    "not_started_stderr_bytes": {
        **NOT_STARTED,
        "outcome": E,
        "reason": CheckReason.SPAWN_FAILED,
        "stderr_total_bytes": 1,
    },
    "exit_256": {"outcome": F, "exit_code": 256},
    "exit_negative": {"outcome": F, "exit_code": -1},
    "stdout_over_cap": {"stdout_tail": "x" * 17, "stdout_total_bytes": 17},
    "stderr_over_cap": {"stderr_tail": "x" * 17, "stderr_total_bytes": 17},
    "pass_reason": {"reason": CheckReason.TIMEOUT},
    "pass_not_started": {**NOT_STARTED},
    "pass_signal": {"exit_code": None, "signal": 9},
    "pass_wrong_code": {"exit_code": 1},
    "fail_wrong_code": {"outcome": F, "exit_code": 0},
    "pass_changed_target": {"observed_after_fingerprint": FP_B},
    "error_no_reason": {"outcome": E},
    "inconclusive_other_reason": {"outcome": INC, "exit_code": 2, "reason": CheckReason.TIMEOUT},
    "inconclusive_no_code": {
        "outcome": INC,
        "exit_code": None,
        "signal": 9,
        "reason": CheckReason.DECLARED_INCONCLUSIVE,
    },
    "inconclusive_undeclared_code": {"outcome": INC, "exit_code": 3, "reason": CheckReason.DECLARED_INCONCLUSIVE},
    "inconclusive_changed_target": {
        "outcome": INC,
        "exit_code": 2,
        "reason": CheckReason.DECLARED_INCONCLUSIVE,
        "observed_after_fingerprint": FP_B,
    },
    "error_declared_inconclusive": {"outcome": E, "exit_code": 2, "reason": CheckReason.DECLARED_INCONCLUSIVE},
    "error_pre_start_started": {"outcome": E, "exit_code": None, "reason": CheckReason.SPAWN_FAILED},
    "error_post_start_not_started": {**NOT_STARTED, "outcome": E, "reason": CheckReason.TIMEOUT},
    "target_modified_unchanged": {"outcome": E, "reason": CheckReason.TARGET_MODIFIED},
    "target_modified_may_write": {
        "outcome": E,
        "reason": CheckReason.TARGET_MODIFIED,
        "observed_after_fingerprint": FP_B,
        "writes_target": True,
    },
    "timeout_exit_code": {"outcome": E, "reason": CheckReason.TIMEOUT},
    "signal_missing": {"outcome": E, "exit_code": None, "reason": CheckReason.KILLED_BY_SIGNAL},
    "unmapped_no_code": {"outcome": E, "exit_code": None, "reason": CheckReason.UNMAPPED_EXIT_CODE, "policy": TOTAL},
    "unmapped_mapped_code": {"outcome": E, "exit_code": 1, "reason": CheckReason.UNMAPPED_EXIT_CODE, "policy": TOTAL},
}

ACCEPTED = {
    "fail_255": {"outcome": F, "exit_code": 255},
    "tails_at_cap": {
        "stdout_tail": "x" * 16,
        "stderr_tail": "y" * 16,
        "stdout_total_bytes": 16,
        "stderr_total_bytes": 16,
    },
    "no_cap_no_limit": {"stdout_tail": "x" * 100, "output_cap_bytes": 0},
    "unavailable_escapes": {**UNAVAILABLE, "reason": CheckReason.PATH_ESCAPES_BASE},
    "unavailable_output_unusable": {**UNAVAILABLE, "reason": CheckReason.OUTPUT_UNUSABLE},
    "no_target": {
        "target": None,
        "binding": BindingStatus.UNBOUND,
        "requested_fingerprint": None,
        "observed_fingerprint": None,
        "observed_after_fingerprint": None,
    },
    "writes_target_passes": {"observed_after_fingerprint": FP_B, "writes_target": True},
    "target_modified": {
        "outcome": E,
        "exit_code": 0,
        "reason": CheckReason.TARGET_MODIFIED,
        "observed_after_fingerprint": FP_B,
    },
    "killed": {"outcome": E, "exit_code": None, "signal": 9, "reason": CheckReason.KILLED_BY_SIGNAL},
    "unmapped": {"outcome": E, "exit_code": 7, "reason": CheckReason.UNMAPPED_EXIT_CODE, "policy": TOTAL},
    "timeout": {"outcome": E, "exit_code": None, "reason": CheckReason.TIMEOUT},
    "command_not_found_either_way": {"outcome": E, "exit_code": 127, "reason": CheckReason.COMMAND_NOT_FOUND},
}


def refusal(name: str) -> str | None:
    try:
        CheckResult(**fields(**REFUSED[name]))
    except ValidationError as exc:
        (error,) = exc.errors()
        return str(error["ctx"]["error"])
    return None


REFUSALS: dict[str, str] = {
    "repair": "inconsistent check result for 'c': PASS is repaired by 'accept the work', not 'gather better evidence'",
    "policy_fingerprint": "inconsistent check result for 'c': policy_fingerprint does not match the recorded policy",
    "no_target_fingerprints": "inconsistent check result for 'c': a check without a target has no fingerprints",
    "no_target_after_only": "inconsistent check result for 'c': a check without a target has no fingerprints",
    "bound_other": "inconsistent check result for 'c': bound requires a requested fingerprint equal to the observed "
    "one",
    "bound_unrequested": "inconsistent check result for 'c': bound requires a requested fingerprint equal to the "
    "observed one",
    "unbound_requested": "inconsistent check result for 'c': unbound means no fingerprint was requested",
    "mismatch_unrequested": "inconsistent check result for 'c': mismatch requires a requested and an observed "
    "fingerprint that differ",
    "mismatch_unobserved": "inconsistent check result for 'c': mismatch requires a requested and an observed "
    "fingerprint that differ",
    "mismatch_equal": "inconsistent check result for 'c': mismatch requires a requested and an observed fingerprint "
    "that differ",
    "unavailable_observed": "inconsistent check result for 'c': unavailable means the target could not be observed",
    "unbound_unobserved": "inconsistent check result for 'c': unbound requires an observed fingerprint of the target",
    "mismatch_started": "inconsistent check result for 'c': binding mismatch forbids starting the command: the "
    "outcome is ERROR",
    "mismatch_not_error": "inconsistent check result for 'c': binding mismatch forbids starting the command: the "
    "outcome is ERROR",
    "mismatch_reason": "inconsistent check result for 'c': a binding mismatch is recorded with reason binding_mismatch",
    "unavailable_reason": "inconsistent check result for 'c': an unavailable target is recorded with reason "
    "target_unavailable",
    "exit_and_signal": "inconsistent check result for 'c': a process ends with an exit code or a signal, not both",
    "not_started_signal": "inconsistent check result for 'c': a command that never started has no exit code or signal",
    "not_started_after": "inconsistent check result for 'c': a command that never started has no after-fingerprint",
    "not_started_stdout": "inconsistent check result for 'c': a command that never started produced no output",
    "not_started_stderr": "inconsistent check result for 'c': a command that never started produced no output",
    "not_started_stdout_bytes": "inconsistent check result for 'c': a command that never started produced no output",
    "not_started_stderr_bytes": "inconsistent check result for 'c': a command that never started produced no output",
    "exit_256": "inconsistent check result for 'c': exit code 256 is outside 0..255",
    "exit_negative": "inconsistent check result for 'c': exit code -1 is outside 0..255",
    "stdout_over_cap": "inconsistent check result for 'c': an output tail is longer than the cap allows",
    "stderr_over_cap": "inconsistent check result for 'c': an output tail is longer than the cap allows",
    "pass_reason": "inconsistent check result for 'c': PASS carries no reason",
    "pass_not_started": "inconsistent check result for 'c': PASS needs a command that ran to an exit code",
    "pass_signal": "inconsistent check result for 'c': PASS needs a command that ran to an exit code",
    "pass_wrong_code": "inconsistent check result for 'c': exit code 1 is not PASS under policy 'p'",
    "fail_wrong_code": "inconsistent check result for 'c': exit code 0 is not FAIL under policy 'p'",
    "pass_changed_target": "inconsistent check result for 'c': the command changed its own target: the outcome is "
    "ERROR (target_modified)",
    "error_no_reason": "inconsistent check result for 'c': ERROR must say why (reason)",
    "inconclusive_other_reason": "inconsistent check result for 'c': INCONCLUSIVE comes only from an exit code the "
    "policy declares inconclusive",
    "inconclusive_no_code": "inconsistent check result for 'c': exit code None is not declared inconclusive by policy "
    "'p'",
    "inconclusive_undeclared_code": "inconsistent check result for 'c': exit code 3 is not declared inconclusive by "
    "policy 'p'",
    "inconclusive_changed_target": "inconsistent check result for 'c': the command changed its own target: the "
    "outcome is ERROR (target_modified)",
    "error_declared_inconclusive": "inconsistent check result for 'c': declared_inconclusive is an INCONCLUSIVE "
    "reason, not an ERROR one",
    "error_pre_start_started": "inconsistent check result for 'c': spawn_failed means the command never started",
    "error_post_start_not_started": "inconsistent check result for 'c': timeout needs a command that started",
    "target_modified_unchanged": "inconsistent check result for 'c': target_modified needs an after-fingerprint that "
    "differs, on a check that may not write",
    "target_modified_may_write": "inconsistent check result for 'c': target_modified needs an after-fingerprint that "
    "differs, on a check that may not write",
    "timeout_exit_code": "inconsistent check result for 'c': a timed-out command was killed: it has no exit code",
    "signal_missing": "inconsistent check result for 'c': killed_by_signal needs the signal",
    "unmapped_no_code": "inconsistent check result for 'c': unmapped_exit_code needs an exit code the policy does not "
    "map",
    "unmapped_mapped_code": "inconsistent check result for 'c': unmapped_exit_code needs an exit code the policy does "
    "not map",
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_an_impossible_record_is_refused_saying_why(name: str) -> None:
    assert refusal(name) == REFUSALS[name]


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_a_possible_record_loads(name: str) -> None:
    assert CheckResult(**fields(**ACCEPTED[name])).check_id == "c"


def test_every_refusal_has_its_message() -> None:
    assert set(REFUSED) == set(REFUSALS)


def test_exit_code_sets_take_0_to_255_integers_only() -> None:
    assert ExitCodePolicy(id="x", pass_codes=[255, 0, 0]).pass_codes == (0, 255)
    for codes, message in [
        ([256], "pass_codes: exit code 256 is outside 0..255"),
        ([-1], "pass_codes: exit code -1 is outside 0..255"),
        ([True], "pass_codes: exit codes are integers, got True"),
        ("0", "pass_codes must be a list of exit codes"),
    ]:
        with pytest.raises(ValidationError) as caught:
            ExitCodePolicy(id="x", pass_codes=codes)
        assert str(caught.value.errors()[0]["ctx"]["error"]) == message


def test_a_policy_describes_its_mapping_in_one_line() -> None:
    assert POLICY.describe() == "p pass=[0] inconclusive=[2] fail=other"
    assert TOTAL.describe() == "t pass=[0] inconclusive=[] fail=[1]"


def test_a_result_summarises_itself_in_one_line() -> None:
    assert CheckResult(**fields()).summary() == "c: PASS binding=bound -> accept the work (exit 0)"
    timeout = CheckResult(**fields(outcome=E, exit_code=None, reason=CheckReason.TIMEOUT, detail="after 5 s"))
    assert timeout.summary() == "c: ERROR binding=bound -> repair the measurement (timeout: after 5 s)"
    killed = CheckResult(**fields(outcome=E, exit_code=None, signal=9, reason=CheckReason.KILLED_BY_SIGNAL))
    assert killed.summary() == "c: ERROR binding=bound -> repair the measurement (killed_by_signal)"
    unbound = CheckResult(**fields(**ACCEPTED["no_target"], outcome=F, exit_code=3))
    assert unbound.summary() == "c: FAIL binding=unbound -> investigate the work (exit 3)"


def test_each_outcome_maps_to_its_score_with_the_evidence_it_cites() -> None:
    passed = to_score(CheckResult(**fields()))
    assert (passed.status.value, passed.validity.value, passed.value, passed.evidence) == (
        "scored",
        "valid",
        1.0,
        ("check:c",),
    )
    failed = to_score(CheckResult(**fields(outcome=F, exit_code=1, detail="3 tests failed", example_id="e1")))
    assert (failed.value, failed.evidence) == (0.0, ("check:c:e1",))
    assert [(d.code, d.message, d.detail) for d in failed.diagnostics] == [
        ("check_failed", "check 'c' exited 1: investigate the work", "3 tests failed")
    ]
    error = to_score(CheckResult(**fields(outcome=E, exit_code=None, reason=CheckReason.TIMEOUT, detail="after 5 s")))
    assert (error.status.value, error.validity.value, error.value) == ("error", "not_measured", None)
    assert error.evidence == ("check:c",)
    assert [(d.code, d.message, d.detail) for d in error.diagnostics] == [
        ("timeout", "check 'c' ERROR: repair the measurement (after 5 s)", "after 5 s")
    ]
    unsure = to_score(CheckResult(**fields(outcome=INC, exit_code=2, reason=CheckReason.DECLARED_INCONCLUSIVE)))
    assert (unsure.status.value, unsure.validity.value) == ("non_evaluable", "not_measured")
    assert unsure.evidence == ("check:c",)
    assert [(d.code, d.message, d.detail) for d in unsure.diagnostics] == [
        ("declared_inconclusive", "check 'c' INCONCLUSIVE: gather better evidence", None)
    ]


def test_combining_no_checks_is_refused_and_the_worst_outcome_wins() -> None:
    with pytest.raises(ValueError) as caught:
        combined_outcome([])
    assert str(caught.value) == "no check results to combine: running zero checks establishes nothing"
    assert combined_outcome([P, E, INC, F]) is E
    assert combined_outcome([P, INC, F]) is INC
    assert combined_outcome([P, F, P]) is F
    assert combined_outcome([CheckResult(**fields())]) is P
