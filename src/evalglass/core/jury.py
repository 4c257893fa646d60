"""How a jury's judges become one verdict on one example: the declared rule, the quorum, ties.

Only a judge's usable answer (scored and valid, a category of the scale) is a vote. A judge that timed out, failed,
answered off the scale or could not be read casts no vote: it is not a wrong answer, and it is never counted as the
scale's worst value. When fewer judges voted than the quorum, there is no verdict (``jury_quorum``).

``majority``   the category most votes name; two or more categories tied for most: no verdict (``jury_tie``)
``mean``       the mean of the votes' values; its category (for calibration) is the one whose value is nearest,
               the lower one when two are equally near
``unanimous``  the category every vote names; any disagreement: no verdict (``jury_disagree``)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

Label = int | str


class JuryRule(StrEnum):
    MAJORITY = "majority"
    MEAN = "mean"
    UNANIMOUS = "unanimous"


class Measurement(StrEnum):
    """Alpha's level of measurement: how far apart two different answers are."""

    NOMINAL = "nominal"
    ORDINAL = "ordinal"
    INTERVAL = "interval"


class NoVerdict(StrEnum):
    """Why a jury gave no verdict (a diagnostic code)."""

    QUORUM = "jury_quorum"
    TIE = "jury_tie"
    DISAGREE = "jury_disagree"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The jury's value and category, or why there is none."""

    value: float | None
    label: Label | None
    missing: NoVerdict | None = None
    voters: int = 0


def nearest_label(value: float, values: Mapping[Label, float]) -> Label:
    """The category whose value is nearest ``value`` (the lower-valued one on a tie)."""
    return min(values, key=lambda label: (abs(values[label] - value), values[label]))


def agreeing_share(cast: Sequence[Label]) -> float | None:
    """The share of pairs of votes that are the same; None with fewer than two votes (nothing to agree on)."""
    pairs = len(cast) * (len(cast) - 1) // 2
    if not pairs:
        return None
    return sum(count * (count - 1) // 2 for count in Counter(cast).values()) / pairs


def jury_verdict(votes: Sequence[Label | None], values: Mapping[Label, float], rule: JuryRule, quorum: int) -> Verdict:
    """The verdict of ``votes`` (None: that judge cast no vote) under ``rule`` (see the module docstring)."""
    cast = [vote for vote in votes if vote is not None]
    if not cast or len(cast) < quorum:
        return Verdict(None, None, NoVerdict.QUORUM, len(cast))
    if rule is JuryRule.MEAN:
        mean = sum(values[vote] for vote in cast) / len(cast)
        return Verdict(mean, nearest_label(mean, values), None, len(cast))
    tally = Counter(cast).most_common()
    top, count = tally[0]
    if rule is JuryRule.UNANIMOUS and len(tally) > 1:
        return Verdict(None, None, NoVerdict.DISAGREE, len(cast))
    if len(tally) > 1 and tally[1][1] == count:
        return Verdict(None, None, NoVerdict.TIE, len(cast))
    return Verdict(values[top], top, None, len(cast))


__all__ = [
    "JuryRule",
    "Label",
    "Measurement",
    "NoVerdict",
    "Verdict",
    "agreeing_share",
    "jury_verdict",
    "nearest_label",
]
