"""A baseline approved as a source: the ledger's two forms, and which runs a source trusts (core/baselinesource.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.authority import BaselineApproval, BlockReason, Ledger
from evalglass.core.baselinesource import BaselineTrust, SignatureState, age_reasons, identity_reasons, source_reasons
from evalglass.core.calendar import day_text

KEY = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64
SOURCE = BaselineApproval(branch="main", signed_by=KEY, max_age_days=7)


def trusted(**changes: object) -> BaselineTrust:
    facts: dict[str, object] = {
        "signature": SignatureState.VALID,
        "signer": KEY,
        "branch": "main",
        "suite": "support",
        "created_at": "2026-12-01T10:00:00Z",
    }
    facts.update(changes)
    return BaselineTrust(**facts)  # type: ignore[arg-type]


def codes(reasons: list) -> list[BlockReason]:
    return [reason.code for reason in reasons]


def test_a_run_signed_by_the_key_on_the_branch_of_the_suite_is_trusted() -> None:
    assert identity_reasons("main", SOURCE, trusted(), "support") == []
    assert source_reasons("main", SOURCE, trusted(), suite="support", today="2026-12-08") == []


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"signature": SignatureState.UNSIGNED, "signer": None, "branch": None}, BlockReason.BASELINE_UNSIGNED),
        (
            {"signature": SignatureState.INVALID, "signer": None, "why_invalid": "edited"},
            BlockReason.BASELINE_UNTRUSTED,
        ),
        ({"signer": OTHER}, BlockReason.BASELINE_UNTRUSTED),
        ({"branch": "feature"}, BlockReason.BASELINE_WRONG_BRANCH),
        ({"branch": None}, BlockReason.BASELINE_WRONG_BRANCH),
        ({"suite": "other-suite"}, BlockReason.BASELINE_WRONG_SUITE),
    ],
)
def test_each_way_a_run_is_not_the_approved_source_has_its_own_reason(changes: dict, code: BlockReason) -> None:
    reasons = identity_reasons("main", SOURCE, trusted(**changes), "support")
    assert codes(reasons) == [code]
    assert "main" in reasons[0].message


def test_an_unsigned_run_is_not_also_called_off_branch_and_its_branch_claim_is_never_read() -> None:
    """Unsigned, the branch is nobody's word: the one reason is that it is unsigned."""
    unsigned = trusted(signature=SignatureState.UNSIGNED, signer=None, branch="main")
    assert codes(identity_reasons("main", SOURCE, unsigned, "support")) == [BlockReason.BASELINE_UNSIGNED]


def test_a_suite_not_read_yet_is_not_judged() -> None:
    assert identity_reasons("main", SOURCE, trusted(suite=None), "support") == []


@given(age=st.integers(min_value=-3, max_value=60), limit=st.integers(min_value=1, max_value=30))
def test_too_old_exactly_when_older_than_max_age_days(age: int, limit: int) -> None:
    approval = BaselineApproval(branch="main", signed_by=KEY, max_age_days=limit)
    today_number = 740_000
    started = day_text(today_number - age)
    reasons = age_reasons("main", approval, trusted(created_at=f"{started}T23:59:59Z"), day_text(today_number))
    assert (codes(reasons) == [BlockReason.BASELINE_TOO_OLD]) == (age > limit)
    if reasons:
        assert started in reasons[0].message and str(limit) in reasons[0].message


def test_an_unreadable_start_time_counts_as_too_old_never_as_fresh() -> None:
    reasons = age_reasons("main", SOURCE, trusted(created_at="yesterday"), "2026-12-08")
    assert codes(reasons) == [BlockReason.BASELINE_TOO_OLD]


def test_the_ledger_takes_a_pinned_run_or_a_source_and_nothing_in_between() -> None:
    pinned = BaselineApproval(run="../runs/base", fingerprint=KEY)
    assert not pinned.is_source and SOURCE.is_source
    with pytest.raises(ValidationError, match="not both"):
        BaselineApproval(run="main@latest", branch="main", signed_by=KEY, max_age_days=3)
    with pytest.raises(ValidationError, match="`signed_by`, `max_age_days`"):
        BaselineApproval(branch="main")
    with pytest.raises(ValidationError, match="name the baseline"):
        BaselineApproval()
    with pytest.raises(ValidationError, match="pins one run"):
        BaselineApproval(fingerprint=KEY)
    with pytest.raises(ValidationError):
        BaselineApproval(branch="main", signed_by="not a fingerprint", max_age_days=3)
    with pytest.raises(ValidationError):
        BaselineApproval(branch="main", signed_by=KEY, max_age_days=0)


def test_a_section_written_with_nothing_under_it_holds_no_entries() -> None:
    """`evalglass init` writes `gates:` alone so that `explain`'s entries paste beneath it."""
    ledger = Ledger.model_validate({"gates": None, "datasets": None, "baselines": None, "judges": None})
    assert ledger.gates == {} and ledger.datasets == {} and ledger.baselines == {} and ledger.judges == {}
