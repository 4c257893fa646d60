"""A baseline approved as a source: which run it trusts, and why a run it found cannot be that baseline.

The ledger may approve a baseline either as one run (pinned by the fingerprint of its files) or as a source: "the
newest run of this suite on branch B, signed by the key whose fingerprint is K, at most N days old". The engine
finds candidates newest first (in the run history, or a folder of run folders) and reads what each one's signature
says; these pure functions decide, from those facts alone, whether a candidate may be the baseline
(:func:`identity_reasons`: signed by the approved key, on the approved branch, of this suite) and whether the one
chosen is recent enough (:func:`age_reasons`). The run, ``verify`` and ``preflight`` all ask here.

What is trusted is whoever holds the private key: a run is only as good as the job that signed it. Nothing a
database or a folder says about a run (its branch column, its file name, its position in a listing) is believed;
the branch is the one the signature covers, the suite and the start time are those of the signed run record.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from evalglass.core.authority import BaselineApproval, BlockReason, Reason
from evalglass.core.calendar import day_number, day_of_timestamp
from evalglass.core.fingerprint import short


class SignatureState(StrEnum):
    """What a candidate's ``digests.json`` signature proves about its run record and scores."""

    #: No signature at all.
    UNSIGNED = "unsigned"
    #: A signature that does not verify, or that covers other bytes than the files read (an edit after signing).
    INVALID = "invalid"
    #: A valid signature over digests that match the run record and scores as read.
    VALID = "valid"


@dataclass(frozen=True, slots=True)
class BaselineTrust:
    """What one candidate run's files say about where it comes from; every field as read, never assumed.

    ``signer`` is the fingerprint of the public key whose signature verified (None unless ``VALID``); ``branch`` the
    git branch that signature covers (None: unsigned, or signed without a branch); ``suite`` the dataset name of
    its run record; ``created_at`` its start time (ISO, from the run record)."""

    signature: SignatureState
    signer: str | None = None
    branch: str | None = None
    suite: str | None = None
    created_at: str | None = None
    #: Why the signature is INVALID, in a few words (for the message).
    why_invalid: str | None = None


def identity_reasons(name: str, approval: BaselineApproval, trust: BaselineTrust, suite: str) -> list[Reason]:
    """Why this run is not one the source approves: unsigned, signed by another key (or not verifiably), from
    another branch, of another suite. Empty: it may be the baseline. ``suite`` is this run's dataset name; a
    ``trust.suite`` of None (not read yet) is not judged."""
    assert approval.signed_by is not None and approval.branch is not None
    reasons: list[Reason] = []
    key = short(approval.signed_by)
    if trust.signature is SignatureState.UNSIGNED:
        reasons.append(
            Reason(
                code=BlockReason.BASELINE_UNSIGNED,
                message=f"baseline '{name}' is not signed; the ledger trusts only runs signed by key {key}",
            )
        )
    elif trust.signature is SignatureState.INVALID:
        reasons.append(
            Reason(
                code=BlockReason.BASELINE_UNTRUSTED,
                message=f"baseline '{name}' carries a signature that does not hold ({trust.why_invalid or 'invalid'})",
            )
        )
    elif trust.signer != approval.signed_by:
        reasons.append(
            Reason(
                code=BlockReason.BASELINE_UNTRUSTED,
                message=f"baseline '{name}' is signed by key {short(trust.signer or '')}, not by the key the ledger "
                f"trusts ({key})",
            )
        )
    elif trust.branch != approval.branch:
        where = f"branch '{trust.branch}'" if trust.branch is not None else "no branch"
        reasons.append(
            Reason(
                code=BlockReason.BASELINE_WRONG_BRANCH,
                message=f"baseline '{name}' was signed on {where}; the ledger follows branch '{approval.branch}'",
            )
        )
    if trust.suite is not None and trust.suite != suite:
        reasons.append(
            Reason(
                code=BlockReason.BASELINE_WRONG_SUITE,
                message=f"baseline '{name}' is a run of dataset '{trust.suite}', this run's is '{suite}'",
            )
        )
    return reasons


def age_reasons(name: str, approval: BaselineApproval, trust: BaselineTrust, today: str) -> list[Reason]:
    """Whether the run is older than the source's ``max_age_days`` on ``today`` (YYYY-MM-DD: the run's own day, so
    ``verify`` re-derives the same answer later). A start time that cannot be read counts as too old."""
    assert approval.max_age_days is not None
    try:
        started = day_of_timestamp(trust.created_at or "")
    except ValueError:
        return [
            Reason(
                code=BlockReason.BASELINE_TOO_OLD,
                message=f"baseline '{name}' has no readable start time, so its age is unknown",
            )
        ]
    age = day_number(today) - day_number(started)
    if age <= approval.max_age_days:
        return []
    return [
        Reason(
            code=BlockReason.BASELINE_TOO_OLD,
            message=f"baseline '{name}' started on {started}, {age} days before {today}; the ledger accepts runs "
            f"at most {approval.max_age_days} days old (max_age_days)",
        )
    ]


def source_reasons(
    name: str, approval: BaselineApproval, trust: BaselineTrust, *, suite: str, today: str
) -> list[Reason]:
    """Every reason the run found for a source-style baseline cannot be compared with (identity, then age)."""
    return [*identity_reasons(name, approval, trust, suite), *age_reasons(name, approval, trust, today)]
