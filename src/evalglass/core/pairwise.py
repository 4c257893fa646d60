"""Pairwise judging: two outputs for the same example, asked in both orders, and what the two answers mean.

A pairwise judge is shown outputs ``a`` and ``b`` once as (first=a, second=b) and once as (first=b, second=a). Each
answer names a *position* (``first``, ``second``) or ``tie``; read back in the outputs' own frame, the two answers
agree (a verdict) or flip with the order (the judge preferred a position, not an output). A flipped pair is never a
silent win: it is the declared ``inconsistent`` outcome, a ``tie`` or ``excluded`` (no verdict). A pair with an
answer missing (the call failed, the answer could not be read) has no verdict at all: it is a fault, not a tie.

Position bias over a run is the share of pairs answered in both orders whose verdict flipped. The numbers (win
rates with Wilson intervals, a Bradley–Terry fit for more than two outputs) are in ``core.stats.bradleyterry``; this
module holds the outcome rules, the values a scorecard reports and the tally the outcomes are counted into.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.tables import total


class Position(StrEnum):
    """What one answer preferred, by position in that prompt."""

    FIRST = "first"
    SECOND = "second"
    TIE = "tie"


class Inconsistent(StrEnum):
    """What an answer that flips with the order counts as: a ``tie``, or ``excluded`` (no verdict)."""

    TIE = "tie"
    EXCLUDED = "excluded"


class Outcome(StrEnum):
    """A compared pair's outcome in the outputs' own frame."""

    A = "a"
    B = "b"
    TIE = "tie"
    EXCLUDED = "excluded"


def in_frame(answer: Position, a_first: bool) -> Outcome:
    """One answer read as which output it preferred (``a_first``: output ``a`` was shown first)."""
    if answer is Position.TIE:
        return Outcome.TIE
    return Outcome.A if (answer is Position.FIRST) == a_first else Outcome.B


def flipped(a_first: Position, b_first: Position) -> bool:
    """Whether the two answers (``a`` shown first, then ``b`` shown first) disagree about the outputs."""
    return in_frame(a_first, True) is not in_frame(b_first, False)


def pair_outcome(a_first: Position, b_first: Position, inconsistent: Inconsistent) -> Outcome:
    """The verdict of both answers: theirs when they agree, the declared ``inconsistent`` outcome when they flip."""
    if flipped(a_first, b_first):
        return Outcome.TIE if inconsistent is Inconsistent.TIE else Outcome.EXCLUDED
    return in_frame(a_first, True)


def mirrored(outcome: Outcome) -> Outcome:
    """The outcome with the roles of ``a`` and ``b`` swapped."""
    return {Outcome.A: Outcome.B, Outcome.B: Outcome.A}.get(outcome, outcome)


#: An outcome as the value of ``a`` against ``b``: a win 1, a tie a half, a loss 0; an excluded outcome has none
#: (it is left out of the example's value, never scored as a loss). Total over ``Outcome`` (tests/test_enum_tables).
OUTCOME_VALUE: Mapping[Outcome, float | None] = total(
    Outcome, {Outcome.A: 1.0, Outcome.TIE: 0.5, Outcome.B: 0.0, Outcome.EXCLUDED: None}
)


class PairSummary(BaseModel):
    """One pair of named outputs over a run: how often each won, tied, flipped, and ``a``'s win rate."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    a: str
    b: str
    a_wins: int = Field(ge=0)
    b_wins: int = Field(ge=0)
    ties: int = Field(ge=0)
    excluded: int = Field(ge=0, description="Order-inconsistent verdicts declared `excluded`.")
    missing: int = Field(ge=0, description="Pairs with an answer missing (a failed or unreadable call).")
    flipped: int = Field(ge=0, description="Pairs answered in both orders whose verdict flipped with the order.")
    position_bias: float | None = Field(description="flipped / pairs answered in both orders; None when none was.")
    win_rate: float | None = Field(description="a_wins / (a_wins + b_wins): ties and excluded pairs left out.")
    win_rate_low: float | None
    win_rate_high: float | None


class Strength(BaseModel):
    """One output's Bradley–Terry log-strength (mean zero over the outputs) and its Wald interval."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    strength: float
    low: float
    high: float


class PairwiseSummary(BaseModel):
    """What a pairwise judge found over a run: per pair, and for more than two outputs a Bradley–Terry fit with
    the orderings its intervals support (``a`` above ``b`` only where the difference's interval excludes zero)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    outputs: tuple[str, ...]
    inconsistent: Inconsistent
    confidence: float
    position_bias: float | None = Field(description="Over every pair answered in both orders.")
    pairs: tuple[PairSummary, ...]
    strengths: tuple[Strength, ...] = ()
    separated: tuple[tuple[str, str], ...] = Field(
        default=(), description="(better, worse) pairs whose strength difference's interval excludes zero."
    )


class PairTally:
    """The run's pair outcomes as they are read (``outputs.jsonl``), counted per pair of outputs."""

    def __init__(self, outputs: Sequence[str], inconsistent: Inconsistent, confidence: float) -> None:
        self.outputs = tuple(outputs)
        self.inconsistent = inconsistent
        self.confidence = confidence
        self.counts: dict[tuple[str, str], dict[str, int]] = {}

    def add(self, example_id: str, note: Mapping[str, Any]) -> None:
        """One sample's judge note (``outputs.jsonl``): its compared ``pairs``."""
        for pair in note.get("pairs") or ():
            if isinstance(pair, Mapping):
                self.add_pair(pair)

    def add_pair(self, note: Mapping[str, Any]) -> None:
        """One compared pair as a judge note records it: ``a``, ``b``, ``outcome`` (None: missing), ``flipped``."""
        a, b = str(note.get("a")), str(note.get("b"))
        if a not in self.outputs or b not in self.outputs or a == b:
            return
        if self.outputs.index(a) > self.outputs.index(b):  # one count per unordered pair, in declared order
            a, b = b, a
            note = {**note, "outcome": _mirror_name(note.get("outcome"))}
        found = self.counts.setdefault(
            (a, b), dict.fromkeys(("a", "b", "tie", "excluded", "missing", "flipped", "both"), 0)
        )
        outcome = note.get("outcome")
        found[outcome if outcome in ("a", "b", "tie", "excluded") else "missing"] += 1
        if note.get("flipped") is not None:
            found["both"] += 1
            found["flipped"] += bool(note["flipped"])

    def summary_fields(self) -> dict[str, BaseModel]:
        return {"pairwise": self.summary()}

    def summary(self) -> PairwiseSummary:
        """Per pair, the counts, position bias and ``a``'s win rate (Wilson, ties left out); for more than two
        outputs, the Bradley–Terry strengths and the orderings their intervals support."""
        import numpy as np

        from evalglass.core.stats.bradleyterry import fitted_strengths
        from evalglass.core.stats.proportion import wilson

        outputs, confidence = self.outputs, self.confidence
        size = len(outputs)
        wins = np.zeros((size, size))
        pairs: list[PairSummary] = []
        flips = both = 0
        for (a, b), found in sorted(
            self.counts.items(), key=lambda item: (outputs.index(item[0][0]), outputs.index(item[0][1]))
        ):
            decided = found["a"] + found["b"]
            interval = wilson(found["a"], decided, level=confidence) if decided else None
            flips += found["flipped"]
            both += found["both"]
            pairs.append(
                PairSummary(
                    a=a,
                    b=b,
                    a_wins=found["a"],
                    b_wins=found["b"],
                    ties=found["tie"],
                    excluded=found["excluded"],
                    missing=found["missing"],
                    flipped=found["flipped"],
                    position_bias=found["flipped"] / found["both"] if found["both"] else None,
                    win_rate=found["a"] / decided if decided else None,
                    win_rate_low=interval.low if interval is not None else None,
                    win_rate_high=interval.high if interval is not None else None,
                )
            )
            i, j = outputs.index(a), outputs.index(b)
            wins[i, j] += found["a"] + found["tie"] / 2
            wins[j, i] += found["b"] + found["tie"] / 2
        strengths, separated = fitted_strengths(outputs, wins, confidence) if size > 2 else ([], [])
        return PairwiseSummary(
            outputs=outputs,
            inconsistent=self.inconsistent,
            confidence=confidence,
            position_bias=flips / both if both else None,
            pairs=tuple(pairs),
            strengths=tuple(Strength(name=n, strength=s, low=lo, high=hi) for n, s, lo, hi in strengths),
            separated=tuple(separated),
        )


def _mirror_name(outcome: Any) -> Any:
    return {"a": "b", "b": "a"}.get(outcome, outcome) if isinstance(outcome, str) else outcome


__all__ = [
    "OUTCOME_VALUE",
    "Inconsistent",
    "Outcome",
    "PairSummary",
    "PairTally",
    "PairwiseSummary",
    "Position",
    "Strength",
    "flipped",
    "in_frame",
    "mirrored",
    "pair_outcome",
]
