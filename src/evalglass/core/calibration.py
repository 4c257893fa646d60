"""How far a judge agrees with humans: agreement with its interval, Cohen's kappa (plain and weighted), confusion.

Pure functions over paired labels. A pair whose judge label is missing (the judge errored or answered off its
scale) is excluded and counted, never scored as a disagreement and never as a 0: it is the absence of a judgement.

* **agreement**: share of pairs where judge and human chose the same category, with a Wilson score interval.
* **Cohen's kappa**: agreement corrected for the agreement expected by chance from the two marginal distributions;
  1 is perfect, 0 is chance level, below 0 is worse than chance. Undefined (None) when chance agreement is 1
  (both raters used a single, identical category throughout).
* **weighted kappa** (ordinal scales only): partial credit for near misses, with agreement weights
  ``1 - |i-j|/(k-1)`` (linear) or ``1 - ((i-j)/(k-1))**2`` (quadratic) over category positions ``i, j``.
* **confusion matrix**: rows are the human label, columns the judge label, both in category order.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

Label = Hashable
Weighting = Literal["linear", "quadratic"]


class CalibrationError(ValueError):
    """The labels cannot be compared (nothing to compare, a label outside the scale, lengths differ ...)."""


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float
    confidence: float
    method: str = "wilson"


@dataclass(frozen=True, slots=True)
class Calibration:
    """The agreement report of one judge against human labels, bound to the judge's fingerprint."""

    n: int
    excluded: int
    categories: tuple[Label, ...]
    confusion: tuple[tuple[int, ...], ...]
    agreed: int
    agreement: float
    agreement_interval: Interval
    kappa: float | None
    weighted_kappa_linear: float | None
    weighted_kappa_quadratic: float | None
    ordinal: bool
    judge_fingerprint: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "judge_fingerprint": self.judge_fingerprint,
            "n": self.n,
            "excluded": self.excluded,
            "categories": list(self.categories),
            "confusion": [list(row) for row in self.confusion],
            "confusion_axes": {"rows": "human", "columns": "judge"},
            "agreed": self.agreed,
            "agreement": self.agreement,
            "agreement_interval": {
                "low": self.agreement_interval.low,
                "high": self.agreement_interval.high,
                "confidence": self.agreement_interval.confidence,
                "method": self.agreement_interval.method,
            },
            "kappa": self.kappa,
            "weighted_kappa_linear": self.weighted_kappa_linear,
            "weighted_kappa_quadratic": self.weighted_kappa_quadratic,
            "ordinal": self.ordinal,
        }


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a proportion ``successes / n``."""
    if n <= 0:
        raise CalibrationError("a proportion over zero pairs has no interval")
    if not 0 <= successes <= n:
        raise CalibrationError(f"successes must be within 0..{n}, got {successes}")
    if not 0 < confidence < 1:
        raise CalibrationError(f"confidence must be strictly between 0 and 1, got {confidence}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high, confidence)


def confusion_matrix(
    human: Sequence[Label], judge: Sequence[Label], categories: Sequence[Label]
) -> tuple[tuple[int, ...], ...]:
    """Counts with rows = human label, columns = judge label, in ``categories`` order."""
    if len(human) != len(judge):
        raise CalibrationError(f"{len(human)} human labels but {len(judge)} judge labels")
    position = {category: index for index, category in enumerate(categories)}
    if len(position) != len(categories):
        raise CalibrationError("categories must be distinct")
    counts = [[0] * len(categories) for _ in categories]
    for index, (h, j) in enumerate(zip(human, judge, strict=True)):
        if h not in position:
            raise CalibrationError(f"pair {index + 1}: human label {h!r} is not on the scale {list(categories)}")
        if j not in position:
            raise CalibrationError(f"pair {index + 1}: judge label {j!r} is not on the scale {list(categories)}")
        counts[position[h]][position[j]] += 1
    return tuple(tuple(row) for row in counts)


def _weighted(matrix: Sequence[Sequence[int]], weights: Sequence[Sequence[float]]) -> float | None:
    k = len(matrix)
    total = sum(sum(row) for row in matrix)
    if total == 0:
        return None
    rows = [sum(matrix[i]) / total for i in range(k)]
    cols = [sum(matrix[i][j] for i in range(k)) / total for j in range(k)]
    observed = sum(weights[i][j] * matrix[i][j] / total for i in range(k) for j in range(k))
    expected = sum(weights[i][j] * rows[i] * cols[j] for i in range(k) for j in range(k))
    if math.isclose(expected, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return None
    return (observed - expected) / (1 - expected)


def cohens_kappa(matrix: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of a square confusion matrix; None when undefined (chance agreement is 1)."""
    k = len(matrix)
    identity = [[1.0 if i == j else 0.0 for j in range(k)] for i in range(k)]
    return _weighted(matrix, identity)


def weighted_kappa(matrix: Sequence[Sequence[int]], weighting: Weighting = "linear") -> float | None:
    """Weighted kappa for ordered categories; None when undefined (fewer than 2 categories, or chance is 1)."""
    k = len(matrix)
    if k < 2:
        return None
    if weighting == "linear":
        weights = [[1 - abs(i - j) / (k - 1) for j in range(k)] for i in range(k)]
    elif weighting == "quadratic":
        weights = [[1 - ((i - j) / (k - 1)) ** 2 for j in range(k)] for i in range(k)]
    else:
        raise CalibrationError(f"weighting must be 'linear' or 'quadratic', got {weighting!r}")
    return _weighted(matrix, weights)


def _default_categories(labels: Sequence[Label]) -> tuple[Label, ...]:
    unique = list(dict.fromkeys(labels))
    try:
        return tuple(sorted(unique))  # type: ignore[type-var]
    except TypeError:
        return tuple(sorted(unique, key=lambda label: (type(label).__name__, repr(label))))


def calibrate(
    human: Sequence[Label],
    judge: Sequence[Label | None],
    *,
    categories: Sequence[Label] | None = None,
    ordinal: bool = False,
    confidence: float = 0.95,
    judge_fingerprint: str | None = None,
) -> Calibration:
    """Compare paired labels. ``judge[i] is None`` means no usable judgement for pair i: excluded and counted.

    ``categories`` is the scale in order (required for a meaningful weighted kappa; by default the sorted set of
    labels seen). ``ordinal`` turns on the weighted kappas.
    """
    if len(human) != len(judge):
        raise CalibrationError(f"{len(human)} human labels but {len(judge)} judge labels")
    for index, label in enumerate(human):
        if label is None:
            raise CalibrationError(f"pair {index + 1} has no human label")
    kept = [(h, j) for h, j in zip(human, judge, strict=True) if j is not None]
    excluded = len(human) - len(kept)
    if not kept:
        raise CalibrationError(
            "no pair has both a human and a judge label" + (f" ({excluded} judge answers missing)" if excluded else "")
        )
    human_kept = [h for h, _ in kept]
    judge_kept: list[Label] = [j for _, j in kept]
    scale = tuple(categories) if categories is not None else _default_categories(human_kept + judge_kept)
    matrix = confusion_matrix(human_kept, judge_kept, scale)
    n = len(kept)
    agreed = sum(matrix[i][i] for i in range(len(scale)))
    return Calibration(
        n=n,
        excluded=excluded,
        categories=scale,
        confusion=matrix,
        agreed=agreed,
        agreement=agreed / n,
        agreement_interval=wilson_interval(agreed, n, confidence),
        kappa=cohens_kappa(matrix),
        weighted_kappa_linear=weighted_kappa(matrix, "linear") if ordinal else None,
        weighted_kappa_quadratic=weighted_kappa(matrix, "quadratic") if ordinal else None,
        ordinal=ordinal,
        judge_fingerprint=judge_fingerprint,
    )


__all__ = [
    "Calibration",
    "CalibrationError",
    "Interval",
    "Label",
    "calibrate",
    "cohens_kappa",
    "confusion_matrix",
    "weighted_kappa",
    "wilson_interval",
]
