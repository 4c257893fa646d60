"""Calendar days without datetime in core/, and when an approval expires or warns."""

from __future__ import annotations

import datetime

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
)
from evalglass.core.calendar import day_number, day_of_timestamp, day_problem, day_text
from evalglass.core.expiry import Dated, standing
from evalglass.core.fingerprint import fingerprint_of

GATE_FP = fingerprint_of({"gate": 1})
DATA_FP = fingerprint_of({"data": 1})


@given(st.dates(min_value=datetime.date(1, 1, 1), max_value=datetime.date(9999, 12, 31)))
def test_day_numbers_are_the_ordinals_datetime_uses(day):
    assert day_number(day.isoformat()) == day.toordinal()
    assert day_text(day.toordinal()) == day.isoformat()


@given(st.text(max_size=12))
def test_only_real_dates_parse(text):
    try:
        expected = datetime.date.fromisoformat(text).isoformat() == text
    except ValueError:
        expected = False
    assert (day_problem(text) is None) == expected


@pytest.mark.parametrize("text", ["2026-02-29", "2026-13-01", "2026-1-01", "26-01-01", "2026-04-31", "0000-01-01"])
def test_impossible_dates_are_refused_with_a_reason(text):
    assert day_problem(text) is not None
    with pytest.raises(ValueError):
        day_number(text)


def test_a_timestamp_gives_its_day_and_garbage_is_refused():
    assert day_of_timestamp("2026-12-01T23:59:59.9Z") == "2026-12-01"
    with pytest.raises(ValueError):
        day_of_timestamp("2026-12-01X")


def dated(expires_on=None, made_on=None):
    return Dated("the approval", expires_on, made_on, "approved_on")


@given(
    st.integers(min_value=day_number("2000-01-01"), max_value=day_number("2100-01-01")),
    st.integers(min_value=-40, max_value=40),
    st.integers(min_value=0, max_value=30),
)
def test_expires_on_is_the_last_day_that_counts(last, offset, warning_days):
    today = day_text(last + offset)
    found = standing(dated(expires_on=day_text(last)), today=today, max_age_days=None, warning_days=warning_days)
    assert (found.expired is not None) == (offset > 0)
    assert (found.warning is not None) == (offset <= 0 and -offset < warning_days)


def test_max_age_counts_from_the_day_of_approval_and_the_earlier_deadline_wins():
    found = standing(dated(made_on="2026-01-01"), today="2026-01-31", max_age_days=30, warning_days=0)
    assert found.expired is None
    found = standing(dated(made_on="2026-01-01"), today="2026-02-01", max_age_days=30, warning_days=0)
    assert found.expired is not None and "2026-01-31" in found.expired and "max_age_days 30" in found.expired
    found = standing(
        dated(expires_on="2026-01-10", made_on="2026-01-01"), today="2026-01-11", max_age_days=30, warning_days=0
    )
    assert found.expired is not None and "expires_on 2026-01-10" in found.expired


@pytest.mark.parametrize("made_on", [None, "last tuesday"])
def test_an_undated_approval_under_max_age_is_expired_not_fresh(made_on):
    found = standing(dated(made_on=made_on), today="2026-01-01", max_age_days=365, warning_days=14)
    assert found.expired is not None and "approved_on" in found.expired


def identity(**overrides):
    return GateIdentity(
        **{
            "name": "g",
            "fingerprint": GATE_FP,
            "dataset": "d",
            "dataset_fingerprint": DATA_FP,
            "needs_gold": False,
            **overrides,
        }
    )


def test_each_expiry_blocks_with_its_own_reason_and_warnings_become_notes():
    ledger = Ledger(
        gates={"g": GateApproval(active=True, threshold=0.5, fingerprint=GATE_FP, expires_on="2026-11-30")},
        datasets={"d": DatasetValidation(validated_gold=True, fingerprint=DATA_FP, expires_on="2026-12-05")},
    )
    authority = resolve_authority(identity(needs_gold=True), ledger, today="2026-12-01")
    assert [reason.code.value for reason in authority.reasons] == ["approval_expired"]
    assert len(authority.notes) == 1 and "dataset 'd'" in authority.notes[0] and "4 days left" in authority.notes[0]
    later = resolve_authority(identity(needs_gold=True), ledger, today="2026-12-06")
    assert [reason.code.value for reason in later.reasons] == ["approval_expired", "gold_expired"]
    # An inactive gate relies on no approval: nothing expires.
    inactive = Ledger(gates={"g": GateApproval(active=False, expires_on="2000-01-01")})
    assert resolve_authority(identity(), inactive, today="2026-12-01").notes == ()


def test_the_warning_window_comes_from_the_policy():
    def notes(days: int) -> tuple[str, ...]:
        ledger = Ledger(
            policy=Policy(expiry_warning_days=days),
            gates={"g": GateApproval(active=True, threshold=0.5, fingerprint=GATE_FP, expires_on="2026-12-31")},
        )
        return resolve_authority(identity(), ledger, today="2026-12-01").notes

    assert notes(14) == ()
    assert notes(31) and "30 days left" in notes(31)[0]
