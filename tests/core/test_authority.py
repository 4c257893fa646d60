"""Authority resolution: activation, fingerprint-bound approvals, gold validation, policy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import (
    DatasetValidation,
    GateApproval,
    GateIdentity,
    Ledger,
    Policy,
    resolve_authority,
    undeclared_active_gates,
    undeclared_reason,
)
from evalglass.core.fingerprint import fingerprint_of

GATE_FP = fingerprint_of({"gate": "g", "metric": "exact"})
DATA_FP = fingerprint_of({"data": 1})
TODAY = "2026-12-01"


def identity(needs_gold: bool = False) -> GateIdentity:
    return GateIdentity(name="g", fingerprint=GATE_FP, dataset="d", dataset_fingerprint=DATA_FP, needs_gold=needs_gold)


def approved(**overrides) -> GateApproval:
    return GateApproval(**{"active": True, "threshold": 0.8, "fingerprint": GATE_FP, **overrides})


def codes(ledger: Ledger, needs_gold: bool = False) -> set[str]:
    return {reason.code.value for reason in resolve_authority(identity(needs_gold), ledger, today=TODAY).reasons}


def test_no_entry_or_inactive_entry_means_informational():
    assert not resolve_authority(identity(), Ledger(), today=TODAY).active
    assert not resolve_authority(identity(), Ledger(gates={"g": approved(active=False)}), today=TODAY).active


def test_current_approval_activates_with_its_threshold():
    authority = resolve_authority(identity(), Ledger(gates={"g": approved()}), today=TODAY)
    assert authority.active and authority.threshold == 0.8 and not authority.reasons


@pytest.mark.parametrize(
    ("ledger", "needs_gold", "expected"),
    [
        (Ledger(gates={"g": approved(fingerprint=fingerprint_of("old"))}), False, {"approval_stale"}),
        (Ledger(gates={"g": approved(fingerprint=None)}), False, {"approval_unbound"}),
        (Ledger(gates={"g": approved(threshold=None)}), False, {"no_approved_threshold"}),
        (Ledger(gates={"g": approved()}, policy=Policy(forbid_all_gating=True)), False, {"policy_forbidden"}),
        (Ledger(gates={"g": approved()}, policy=Policy(forbid_gates=("g",))), False, {"policy_forbidden"}),
        (Ledger(gates={"g": approved()}), True, {"gold_not_validated"}),
        (
            Ledger(
                gates={"g": approved()},
                datasets={"d": DatasetValidation(validated_gold=False, fingerprint=DATA_FP)},
            ),
            True,
            {"gold_not_validated"},
        ),
        (
            Ledger(
                gates={"g": approved()},
                datasets={"d": DatasetValidation(validated_gold=True, fingerprint=fingerprint_of("an older dataset"))},
            ),
            True,
            {"gold_stale"},
        ),
        (
            Ledger(
                gates={"g": approved()},
                datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA_FP)},
            ),
            True,
            set(),
        ),
        (
            Ledger(
                gates={"g": approved(fingerprint=fingerprint_of("old"), threshold=None)},
                policy=Policy(forbid_all_gating=True),
            ),
            True,
            {"policy_forbidden", "approval_stale", "gold_not_validated", "no_approved_threshold"},
        ),
    ],
)
def test_every_authority_reason_that_holds_is_recorded(ledger, needs_gold, expected):
    assert codes(ledger, needs_gold) == expected


def test_fingerprints_ignore_key_order_but_not_values():
    assert fingerprint_of({"a": 1, "b": [1, 2]}) == fingerprint_of({"b": [1, 2], "a": 1})
    assert fingerprint_of({"a": 1}) != fingerprint_of({"a": 2})


# Issue 10: an active approval of a gate the config does not declare blocks; thresholds are strictly typed.

NAMES = st.text(alphabet="abcdefgh_", min_size=1, max_size=6)


@given(ledger_gates=st.dictionaries(NAMES, st.booleans(), max_size=6), declared=st.lists(NAMES, max_size=6))
def test_every_active_undeclared_entry_and_only_those_are_found(ledger_gates, declared):
    ledger = Ledger(gates={name: approved(active=active) for name, active in ledger_gates.items()})
    found = undeclared_active_gates(ledger, declared)
    assert set(found) == {name for name, active in ledger_gates.items() if active and name not in declared}


def test_the_undeclared_reason_names_the_line_and_the_gate_probably_meant():
    reason = undeclared_reason("accuracy", ["accuracy_v2", "latency"], "evals/authority.yaml:4")
    assert reason.code.value == "gate_undeclared"
    assert "evals/authority.yaml:4" in reason.message and "did you mean 'accuracy_v2'" in reason.message
    assert "did you mean" not in undeclared_reason("zzz", ["accuracy"], None).message


@pytest.mark.parametrize("threshold", ["0.6", True, float("nan"), float("inf"), float("-inf")])
def test_a_threshold_is_never_coerced(threshold):
    with pytest.raises(ValueError):
        approved(threshold=threshold)


@pytest.mark.parametrize("flag", ["yes", "true", 1])
def test_active_is_a_real_boolean(flag):
    with pytest.raises(ValueError):
        approved(active=flag)
