"""The pure half of bound checks: exit-code policy, the result record's own consistency, and its mappings."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.checks import (
    CHECK_EXIT_CODES,
    CHECK_REPAIRS,
    BindingStatus,
    CheckOutcome,
    CheckReason,
    CheckResult,
    ExitCodePolicy,
    Repair,
    check_exit_code,
    combined_outcome,
    policy_id_conflicts,
    to_score,
)
from evalglass.core.exitcodes import ExitCode
from evalglass.core.score import Status, Validity

FP_A = "sha256:" + "a" * 64
FP_B = "sha256:" + "b" * 64

# --- policy -----------------------------------------------------------------------------------------------------


def test_default_policy_passes_zero_and_fails_everything_else() -> None:
    policy = ExitCodePolicy()
    assert policy.id == "default"
    assert not policy.total
    assert policy.outcome_for(0) is CheckOutcome.PASS
    assert [policy.outcome_for(code) for code in (1, 2, 127, 255)] == [CheckOutcome.FAIL] * 4


def test_declared_inconclusive_code_is_a_statement_about_this_command_only() -> None:
    policy = ExitCodePolicy(id="prose-v1", inconclusive_codes=[2])
    assert policy.outcome_for(2) is CheckOutcome.INCONCLUSIVE
    assert policy.outcome_for(3) is CheckOutcome.FAIL
    assert ExitCodePolicy().outcome_for(2) is CheckOutcome.FAIL


def test_total_policy_maps_unknown_codes_to_none_which_means_error() -> None:
    policy = ExitCodePolicy(id="pytest-v1", pass_codes=[0], fail_codes=[1], inconclusive_codes=[5])
    assert policy.total
    assert policy.outcome_for(1) is CheckOutcome.FAIL
    assert policy.outcome_for(5) is CheckOutcome.INCONCLUSIVE
    assert policy.outcome_for(2) is None
    assert policy.outcome_for(4) is None
    # An empty fail set is still a declaration: every code outside pass/inconclusive is unmapped.
    assert ExitCodePolicy(id="strict", fail_codes=[]).outcome_for(1) is None


@pytest.mark.parametrize(
    "fields",
    [
        {"pass_codes": [0, 1], "fail_codes": [1]},
        {"pass_codes": [0], "inconclusive_codes": [0]},
        {"inconclusive_codes": [2, 3], "fail_codes": [3, 4]},
    ],
)
def test_overlapping_code_sets_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="appear in both"):
        ExitCodePolicy(id="overlap", **fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pass_codes": []}, "at least one"),
        ({"pass_codes": [256]}, "outside 0..255"),
        ({"pass_codes": [-1]}, "outside 0..255"),
        ({"pass_codes": [True]}, "integers"),
        ({"fail_codes": "1"}, "list"),
        ({"unknown": 1}, "Extra inputs"),
        ({"id": "has space"}, "pattern"),
    ],
)
def test_malformed_policies_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ExitCodePolicy.model_validate({"id": "p", **fields})


def test_the_default_id_cannot_name_another_mapping() -> None:
    with pytest.raises(ValidationError, match="reserved"):
        ExitCodePolicy(inconclusive_codes=[2])
    assert ExitCodePolicy(id="default", pass_codes=[0]).fingerprint == ExitCodePolicy().fingerprint


def test_policy_fingerprint_covers_the_mapping_canonically() -> None:
    one = ExitCodePolicy(id="x", pass_codes=[0, 3], inconclusive_codes=[2])
    same = ExitCodePolicy(id="x", pass_codes=[3, 0, 3], inconclusive_codes=[2])
    renamed = ExitCodePolicy(id="y", pass_codes=[0, 3], inconclusive_codes=[2])
    assert one.fingerprint == same.fingerprint == renamed.fingerprint
    assert one.fingerprint.startswith("sha256:") and len(one.fingerprint) == 71
    different = {
        ExitCodePolicy(id="x", pass_codes=[0], inconclusive_codes=[2]).fingerprint,
        ExitCodePolicy(id="x", pass_codes=[0, 3], inconclusive_codes=[2], fail_codes=[1]).fingerprint,
        ExitCodePolicy(id="x", pass_codes=[0, 3], inconclusive_codes=[2], fail_codes=[]).fingerprint,
        ExitCodePolicy(id="x", pass_codes=[0, 3], inconclusive_codes=[4]).fingerprint,
    }
    assert one.fingerprint not in different and len(different) == 4


def test_one_id_for_two_mappings_is_reported() -> None:
    a = ExitCodePolicy(id="lint-v1", inconclusive_codes=[2])
    b = ExitCodePolicy(id="lint-v1", inconclusive_codes=[3])
    assert policy_id_conflicts([a, a, ExitCodePolicy()]) == []
    problems = policy_id_conflicts([a, b, b])
    assert len(problems) == 1 and "lint-v1" in problems[0]


# --- result record ----------------------------------------------------------------------------------------------


def _result(**overrides: Any) -> CheckResult:
    policy = overrides.pop("policy", ExitCodePolicy(id="p", inconclusive_codes=[2]))
    fields: dict[str, Any] = {
        "check_id": "c",
        "outcome": CheckOutcome.PASS,
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
        "started_at": "2025-01-02T03:04:05.123456+00:00",
        "duration_s": 0.5,
        "output_cap_bytes": 1024,
    }
    fields.update(overrides)
    fields.setdefault("repair", CHECK_REPAIRS[fields["outcome"]])
    return CheckResult(**fields)


def test_a_consistent_result_round_trips_through_json_losslessly() -> None:
    results = [
        _result(),
        _result(outcome=CheckOutcome.FAIL, exit_code=7, detail="exit code 7", stdout_tail="\ufffd\x00é"),
        _result(outcome=CheckOutcome.INCONCLUSIVE, exit_code=2, reason=CheckReason.DECLARED_INCONCLUSIVE),
        _result(
            outcome=CheckOutcome.ERROR,
            binding=BindingStatus.MISMATCH,
            requested_fingerprint=FP_B,
            observed_after_fingerprint=None,
            command_started=False,
            exit_code=None,
            reason=CheckReason.BINDING_MISMATCH,
            env={"API_KEY": "<redacted>", "HOME": "/root"},
        ),
    ]
    for result in results:
        again = CheckResult.model_validate_json(result.model_dump_json())
        assert again == result
        assert again.model_dump_json() == result.model_dump_json()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"command_started": False}, "never started has no exit code"),
        ({"exit_code": 1}, "is not PASS"),
        ({"repair": Repair.INVESTIGATE_WORK}, "repaired by"),
        ({"policy_fingerprint": FP_B}, "policy_fingerprint"),
        ({"binding": BindingStatus.MISMATCH, "requested_fingerprint": FP_B}, "forbids starting"),
        ({"requested_fingerprint": FP_B}, "bound requires"),
        ({"binding": BindingStatus.UNBOUND}, "unbound means no fingerprint"),
        ({"observed_after_fingerprint": FP_B}, "changed its own target"),
        ({"reason": CheckReason.TIMEOUT}, "carries no reason"),
        ({"outcome": CheckOutcome.ERROR}, "must say why"),
        ({"outcome": CheckOutcome.INCONCLUSIVE, "reason": CheckReason.DECLARED_INCONCLUSIVE}, "not declared"),
        ({"outcome": CheckOutcome.ERROR, "reason": CheckReason.TIMEOUT}, "no exit code"),
        ({"outcome": CheckOutcome.ERROR, "reason": CheckReason.BINDING_MISMATCH}, "binding_mismatch"),
        ({"outcome": CheckOutcome.ERROR, "reason": CheckReason.UNMAPPED_EXIT_CODE}, "does not map"),
        ({"outcome": CheckOutcome.ERROR, "reason": CheckReason.CWD_UNAVAILABLE}, "never started"),
        ({"exit_code": None, "signal": 9}, "needs a command that ran"),
        ({"exit_code": 0, "signal": 9}, "not both"),
        ({"started_at": "2025-01-02 03:04:05"}, "ISO-8601 UTC"),
        ({"started_at": "2025-01-02T03:04:05+02:00"}, "ISO-8601 UTC"),
        ({"duration_s": float("inf")}, "finite"),
        ({"target": None}, "without a target"),
        ({"requested_fingerprint": "sha256:xyz", "observed_fingerprint": "sha256:xyz"}, "pattern"),
    ],
)
def test_results_refuse_facts_that_cannot_be_true_together(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _result(**overrides)


def test_a_check_allowed_to_write_its_target_may_pass_after_changing_it() -> None:
    result = _result(writes_target=True, observed_after_fingerprint=FP_B)
    assert result.outcome is CheckOutcome.PASS


# --- mappings ---------------------------------------------------------------------------------------------------


def test_repairs_are_the_four_distinct_next_steps() -> None:
    assert {o: r.value for o, r in CHECK_REPAIRS.items()} == {
        CheckOutcome.PASS: "accept the work",
        CheckOutcome.FAIL: "investigate the work",
        CheckOutcome.INCONCLUSIVE: "gather better evidence",
        CheckOutcome.ERROR: "repair the measurement",
    }


def test_to_score_keeps_inconclusive_and_error_out_of_the_numbers() -> None:
    passed = to_score(_result())
    assert (passed.status, passed.validity, passed.value) == (Status.SCORED, Validity.VALID, 1.0)
    assert passed.evidence == ("check:c",)

    failed = to_score(_result(outcome=CheckOutcome.FAIL, exit_code=1, example_id="ex-7"))
    assert (failed.status, failed.validity, failed.value) == (Status.SCORED, Validity.VALID, 0.0)
    assert failed.included and failed.evidence == ("check:c:ex-7",)
    assert failed.diagnostics[0].code == "check_failed"

    unsure = to_score(
        _result(
            outcome=CheckOutcome.INCONCLUSIVE,
            exit_code=2,
            reason=CheckReason.DECLARED_INCONCLUSIVE,
            detail="binary content",
        )
    )
    assert unsure.status is Status.NON_EVALUABLE and unsure.value is None and not unsure.included
    assert unsure.diagnostics[0].code == "declared_inconclusive"
    assert unsure.diagnostics[0].detail == "binary content"
    assert "gather better evidence" in unsure.diagnostics[0].message

    broken = to_score(
        _result(
            outcome=CheckOutcome.ERROR,
            binding=BindingStatus.UNAVAILABLE,
            observed_fingerprint=None,
            observed_after_fingerprint=None,
            command_started=False,
            exit_code=None,
            reason=CheckReason.TARGET_UNAVAILABLE,
        )
    )
    assert broken.status is Status.ERROR and broken.value is None and not broken.included
    assert broken.diagnostics[0].code == "target_unavailable"
    assert "repair the measurement" in broken.diagnostics[0].message


def test_standalone_exit_codes_and_the_worst_outcome_wins() -> None:
    assert dict(CHECK_EXIT_CODES) == {
        CheckOutcome.PASS: 0,
        CheckOutcome.FAIL: 1,
        CheckOutcome.INCONCLUSIVE: 3,
        CheckOutcome.ERROR: 4,
    }
    assert ExitCode.SETUP == 2 and ExitCode.SETUP not in CHECK_EXIT_CODES.values()
    assert check_exit_code([CheckOutcome.PASS, CheckOutcome.PASS]) == 0
    assert check_exit_code([CheckOutcome.PASS, CheckOutcome.FAIL]) == 1
    assert check_exit_code([CheckOutcome.FAIL, CheckOutcome.INCONCLUSIVE]) == 3
    assert check_exit_code([CheckOutcome.INCONCLUSIVE, CheckOutcome.ERROR, CheckOutcome.FAIL]) == 4
    assert combined_outcome([_result()]) is CheckOutcome.PASS
    with pytest.raises(ValueError, match="zero checks"):
        combined_outcome([])
