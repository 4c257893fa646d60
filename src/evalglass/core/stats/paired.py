"""Paired differences: the same examples scored by a baseline and a candidate, candidate minus baseline.

Pairing removes the between-example spread (an example that is hard for one run is hard for the other), so a paired
interval is much narrower than the difference of two independent intervals. Which method applies:

- binary 0/1 values, no clusters: Newcombe's hybrid score interval for paired proportions (method 10 of Newcombe
  1998, *Statistics in Medicine* 17:2635-2650), with McNemar's exact test for "any change";
- continuous values, no clusters: Student's t on the per-example differences (the paired t), or a seeded paired
  bootstrap of the differences (BCa, falling back to percentile with the reason recorded) when the metric asks for
  one;
- clusters declared: the cluster-robust (CR1) t on the differences, or the cluster bootstrap of the differences.

Every function takes numpy arrays (one value per pair) and returns one small model: nothing per example.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.stats._common import (
    Floats,
    as_ids,
    as_values,
    clipped_to_range,
    difference_range,
    floor_p_value,
    t_cdf,
    tails,
)
from evalglass.core.stats.bootstrapping import bootstrap
from evalglass.core.stats.choose import value_range
from evalglass.core.stats.cluster import cluster_bootstrap, cluster_t
from evalglass.core.stats.decidability import examples_to_decide
from evalglass.core.stats.mean import student_t
from evalglass.core.stats.model import FEW_CLUSTERS_BELOW, Direction, Interval, Method, Param, ScaleSpec, Sides
from evalglass.core.stats.proportion import is_binary, wilson


class PairedTest(StrEnum):
    """The test of "no change at all" reported beside the interval."""

    MCNEMAR_EXACT = "mcnemar_exact"
    PAIRED_T = "paired_t"
    CLUSTER_PAIRED_T = "cluster_paired_t"


class PairedTable(BaseModel):
    """The 2x2 table of paired binary outcomes. ``base_only``: passed in the baseline only (a regression)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    both: int = Field(ge=0)
    base_only: int = Field(ge=0)
    candidate_only: int = Field(ge=0)
    neither: int = Field(ge=0)

    @property
    def n(self) -> int:
        return self.both + self.base_only + self.candidate_only + self.neither


class PairedDifference(BaseModel):
    """Candidate minus baseline over the paired examples, with its interval and a test of no change.

    ``std_error`` is the standard error of the mean difference the method implies (for a clustered run, the
    cluster-robust one, so it carries the design effect); power statements are computed from it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    base: float = Field(description="The baseline's mean over the paired examples.")
    candidate: float = Field(description="The candidate's mean over the paired examples.")
    interval: Interval = Field(description="The interval of the mean difference, candidate minus baseline.")
    std_error: float = Field(ge=0)
    test: PairedTest
    p_value: float | None = Field(default=None, ge=0, le=1, description="Two-sided; None when it is undefined.")
    table: PairedTable | None = Field(default=None, description="Binary metrics: the paired 2x2 table.")

    @property
    def magnitude(self) -> float:
        """The size of the numbers the difference was computed from, which its float rounding is relative to
        (``core.gatespec.reaches``): the larger of the two means."""
        return max(abs(self.base), abs(self.candidate))

    @model_validator(mode="after")
    def _consistent(self) -> "PairedDifference":
        if not math.isclose(self.interval.point, self.candidate - self.base, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"the difference {self.interval.point} is not candidate minus baseline")
        if self.table is not None and self.table.n != self.interval.n:
            raise ValueError("the paired table must count every pair")
        return self

    @property
    def point(self) -> float:
        return self.interval.point

    @property
    def n(self) -> int:
        return self.interval.n


def paired_table(base: npt.ArrayLike, candidate: npt.ArrayLike) -> PairedTable:
    """Count the four paired outcomes of two binary arrays (a ValueError if either is not 0/1)."""
    left, right = _pair(base, candidate)
    if not (is_binary(left) and is_binary(right)):
        raise ValueError("a paired table needs binary values: every value must be exactly 0.0 or 1.0")
    left_pass, right_pass = left == 1.0, right == 1.0
    both = int(np.count_nonzero(left_pass & right_pass))
    base_only = int(np.count_nonzero(left_pass)) - both
    candidate_only = int(np.count_nonzero(right_pass)) - both
    neither = left.size - both - base_only - candidate_only
    return PairedTable(both=both, base_only=base_only, candidate_only=candidate_only, neither=neither)


def mcnemar_exact(table: PairedTable) -> float:
    """McNemar's exact two-sided p-value: the discordant pairs as a fair coin, ``min(1, 2 * P(X <= min(b, c)))``.

    This is what ``statsmodels.stats.contingency_tables.mcnemar(exact=True)`` computes. No discordant pair: 1.
    """
    discordant = table.base_only + table.candidate_only
    if discordant == 0:
        return 1.0
    return min(1.0, 2.0 * _fair_coin_cdf(min(table.base_only, table.candidate_only), discordant))


def _fair_coin_cdf(k: int, n: int) -> float:
    """``P(X <= k)`` for X ~ Binomial(n, 1/2), from log binomial coefficients accumulated in one numpy pass.

    Written out rather than taken from scipy so that comparing binary metrics does not import scipy (about a
    quarter of a second); ``log C(n, i + 1) = log C(n, i) + log(n - i) - log(i + 1)``, summed in log space.
    """
    steps = np.arange(k, dtype=np.float64)
    logs = np.concatenate(([0.0], np.cumsum(np.log(n - steps) - np.log(steps + 1.0))))
    top = float(logs.max())
    return math.exp(top + math.log(float(np.exp(logs - top).sum())) - n * math.log(2.0))


def newcombe_paired(table: PairedTable, *, level: float = 0.95, sides: Sides = Sides.TWO_SIDED) -> Interval | None:
    """Newcombe's hybrid score interval (method 10) for candidate minus baseline; None with no pairs.

    Each marginal proportion gets its Wilson interval (l, u); the ends of the difference d = p_c - p_b are
    ``d - sqrt((p_c - l_c)**2 - 2 phi (p_c - l_c)(u_b - p_b) + (u_b - p_b)**2)`` and the mirror image above, where
    phi is the correlation of the paired outcomes with Newcombe's correction (0 when a margin is empty; for
    ``AD > BC``, ``max(AD - BC - N/2, 0)`` replaces ``AD - BC``). A one-sided bound at ``level`` is the matching end
    of the two-sided interval at ``2 * level - 1``, as everywhere in EvalGlass. The interval stays inside [-1, 1].
    """
    n = table.n
    if n == 0:
        return None
    below, above = tails(level, sides)
    tail = below if below is not None else above
    assert tail is not None
    marginal_level = 1.0 - 2.0 * tail
    base_hits = table.both + table.base_only
    candidate_hits = table.both + table.candidate_only
    base_interval = wilson(base_hits, n, level=marginal_level)
    candidate_interval = wilson(candidate_hits, n, level=marginal_level)
    assert base_interval is not None and candidate_interval is not None
    p_b, p_c = base_hits / n, candidate_hits / n
    l_b, u_b = _ends(base_interval)
    l_c, u_c = _ends(candidate_interval)
    phi = _phi(table)
    point = (table.candidate_only - table.base_only) / n
    low = high = None
    if below is not None:
        low = point - _root((p_c - l_c) ** 2 - 2.0 * phi * (p_c - l_c) * (u_b - p_b) + (u_b - p_b) ** 2)
        low = max(-1.0, min(low, point))
    if above is not None:
        high = point + _root((p_b - l_b) ** 2 - 2.0 * phi * (p_b - l_b) * (u_c - p_c) + (u_c - p_c) ** 2)
        high = min(1.0, max(high, point))
    params: dict[str, Param] = {
        "phi": phi,
        "both": table.both,
        "base_only": table.base_only,
        "candidate_only": table.candidate_only,
        "neither": table.neither,
    }
    return Interval(
        point=point, low=low, high=high, level=level, sides=sides, method=Method.NEWCOMBE_PAIRED, n=n, params=params
    )


def _ends(interval: Interval) -> tuple[float, float]:
    assert interval.low is not None and interval.high is not None
    return interval.low, interval.high


def _root(value: float) -> float:
    return math.sqrt(max(value, 0.0))  # |phi| <= 1 keeps it non-negative; rounding can leave -1e-17


def _phi(table: PairedTable) -> float:
    a, b, c, d = table.both, table.base_only, table.candidate_only, table.neither
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    cross = float(a * d - b * c)
    if cross > 0:
        cross = max(cross - table.n / 2.0, 0.0)
    return cross / math.sqrt(margins)


def paired_difference(
    base: npt.ArrayLike,
    candidate: npt.ArrayLike,
    *,
    level: float = 0.95,
    sides: Sides = Sides.TWO_SIDED,
    method: Method | str | None = None,
    clusters: npt.ArrayLike | None = None,
    seed: int = 0,
    resamples: int = 2000,
    few_clusters_below: int = FEW_CLUSTERS_BELOW,
    scale: ScaleSpec | None = None,
) -> PairedDifference | None:
    """The paired difference candidate minus baseline, its interval and its test; None when there are no pairs.

    ``method`` is the metric's own interval override (None: automatic). Automatic: clusters → ``cluster_t`` on the
    differences; binary values → ``newcombe_paired`` (a proportion override, wilson or clopper_pearson, maps to it
    too: they are the single-run counterparts); otherwise ``student_t`` on the differences. ``student_t``,
    ``bootstrap_bca``/``bootstrap_percentile`` and the cluster methods apply to the differences as asked. An
    override that cannot honestly apply (a non-cluster method when clusters are declared, or the reverse) is a
    ValueError, as for a single run's interval. ``scale`` is the range the metric's values can take: the interval is
    clipped to ``±(max - min)`` when every value of both runs lies in it (with no scale, ``±1`` for binary values),
    the range a difference of two means in it can take.
    """
    left, right = _pair(base, candidate)
    n = left.size
    if n == 0:
        return None
    chosen = None if method is None else Method(method)
    difference = right - left
    binary = is_binary(left) and is_binary(right)
    table = paired_table(left, right) if binary else None
    test, p_value = PairedTest.PAIRED_T, None
    if clusters is not None:
        ids = as_ids(clusters, n, "clusters")
        if chosen is not None and not chosen.clustered:
            raise ValueError(
                f"clusters are declared, and {chosen.value} would ignore them; use cluster_t or a cluster bootstrap"
            )
        if chosen in (Method.CLUSTER_BOOTSTRAP_BCA, Method.CLUSTER_BOOTSTRAP_PERCENTILE):
            interval = cluster_bootstrap(
                difference, ids, seed=seed, level=level, sides=sides, resamples=resamples, method=chosen,
                few_clusters_below=few_clusters_below,
            )  # fmt: skip
        else:
            interval = cluster_t(difference, ids, level=level, sides=sides, few_clusters_below=few_clusters_below)
        std_error = _cluster_std_error(difference, ids)
        test, p_value = PairedTest.CLUSTER_PAIRED_T, _t_p_value(difference, std_error, _cluster_count(ids) - 1)
    else:
        if chosen is not None and chosen.clustered:
            raise ValueError(f"{chosen.value} needs cluster ids")
        std_error = float(difference.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
        if table is not None and chosen in (None, Method.WILSON, Method.CLOPPER_PEARSON, Method.NEWCOMBE_PAIRED):
            interval = newcombe_paired(table, level=level, sides=sides)
            test, p_value = PairedTest.MCNEMAR_EXACT, mcnemar_exact(table)
        elif chosen in (None, Method.STUDENT_T):
            interval = student_t(difference, level=level, sides=sides)
        elif chosen in (Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE):
            interval = bootstrap(difference, seed=seed, level=level, sides=sides, resamples=resamples, method=chosen)
        else:
            raise ValueError(f"{chosen.value} is for binary metrics: every value must be exactly 0.0 or 1.0")
        if test is PairedTest.PAIRED_T:
            p_value = _t_p_value(difference, std_error, n - 1)
    assert interval is not None
    bounds = value_range(np.concatenate((left, right)), scale)
    if bounds is not None:
        limits = difference_range(*bounds)
        interval = clipped_to_range(interval, *limits)
        if std_error == 0.0 and p_value is not None and test is not PairedTest.MCNEMAR_EXACT:
            # No spread: the t test's p of 0 would claim the certainty the range floor refuses the interval.
            units = interval.clusters if interval.clusters is not None else n
            p_value = max(p_value, floor_p_value(float(difference.mean()), units, *limits))
    base_mean, candidate_mean = _mean(left), _mean(right)
    return PairedDifference(
        base=base_mean,
        candidate=candidate_mean,
        interval=_recentred(interval, candidate_mean - base_mean),
        std_error=std_error,
        test=test,
        p_value=p_value,
        table=table,
    )


def _pair(base: npt.ArrayLike, candidate: npt.ArrayLike) -> tuple[Floats, Floats]:
    left, right = as_values(base, "base"), as_values(candidate, "candidate")
    if left.shape != right.shape:
        raise ValueError(
            f"paired values need one baseline and one candidate value per pair: {left.size} vs {right.size}"
        )
    return left, right


def _mean(values: Floats) -> float:
    if values.size and values.min() == values.max():
        return float(values[0])  # summation rounding would move identical values a hair
    return float(values.mean())


def _recentred(interval: Interval, point: float) -> Interval:
    """The same interval with its point set to candidate mean minus baseline mean computed once, so the payload's
    three numbers agree exactly (the mean of differences can differ from the difference of means in the last bit)."""
    if interval.point == point:
        return interval
    low = None if interval.low is None else min(interval.low, point)
    high = None if interval.high is None else max(interval.high, point)
    return interval.model_copy(update={"point": point, "low": low, "high": high})


def _cluster_count(ids: npt.NDArray[np.int64]) -> int:
    return int(np.unique(ids).size)


def _cluster_std_error(difference: Floats, ids: npt.NDArray[np.int64]) -> float:
    """CR1 standard error of the mean difference (as :func:`cluster_t` computes it)."""
    _, codes = np.unique(ids, return_inverse=True)
    count = int(codes.max()) + 1
    if count < 2:
        return 0.0
    sums = np.bincount(codes.reshape(-1), weights=difference - difference.mean(), minlength=count)
    return math.sqrt(count / (count - 1) * float(np.sum(sums**2))) / difference.size


def _t_p_value(difference: Floats, std_error: float, df: int) -> float | None:
    """Two-sided p-value of the t test of a zero mean difference; None without degrees of freedom."""
    if df < 1:
        return None
    mean = float(difference.mean())
    if std_error == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    return min(1.0, 2.0 * t_cdf(-abs(mean) / std_error, df))


#: Most interval evaluations :func:`pairs_to_decide` spends checking its answer against Newcombe's interval.
_SEARCH_STEPS = 80


def pairs_to_decide(
    difference: PairedDifference, *, threshold: float, direction: Direction | str, level: float
) -> int | None:
    """About how many pairs would let the three-way rule decide at the observed difference and spread: the interval
    at ``level`` (two one-sided bounds) wholly on one side of ``threshold``. None when the difference sits on the
    threshold, or the pairs show no spread (then more of the same pairs change nothing), or past float range.

    From the per-pair spread of the differences (``std_error * sqrt(n)``: for a binary metric the discordant-pair
    rate, ``sqrt(q - d**2)``; with clusters it carries the design effect). For a binary metric compared with
    Newcombe's interval the normal answer is then checked against that interval on the 2x2 table scaled to that
    many pairs (the same proportions) and moved to the smallest count that decides, so the number holds for the
    method the gate uses; other methods keep the normal approximation (a t interval needs a little more at small n).
    """
    point, n = difference.point, difference.n
    spread = difference.std_error * math.sqrt(n)
    if point == threshold or not spread > 0.0:
        return None
    guess = examples_to_decide(point=point, threshold=threshold, level=level, variance=spread * spread)
    table = difference.table
    if guess is None or table is None or difference.interval.method is not Method.NEWCOMBE_PAIRED:
        return guess
    higher = Direction(direction) is Direction.HIGHER_IS_BETTER

    def decides(size: int) -> bool:
        interval = newcombe_paired(_scaled(table, size), level=2.0 * level - 1.0)
        assert interval is not None and interval.low is not None and interval.high is not None
        if higher:
            return interval.low >= threshold or interval.high < threshold
        return interval.high <= threshold or interval.low > threshold

    if decides(1):
        return 1
    low, high, steps = 1, max(guess, 2), 0
    while not decides(high):  # the normal answer can fall short of the interval's own: go up until it decides
        low, high = high, math.ceil(high * 1.25)
        steps += 1
        if steps > _SEARCH_STEPS or high > 10**12:
            return None
    while high - low > 1 and steps < 2 * _SEARCH_STEPS:  # the smallest count that decides, between low and high
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
        steps += 1
    return high


def _scaled(table: PairedTable, size: int) -> PairedTable:
    """The paired table with the same proportions over ``size`` pairs (counts rounded, the rest in ``neither``)."""
    factor = size / table.n
    base_only = min(round(table.base_only * factor), size)
    candidate_only = min(round(table.candidate_only * factor), size - base_only)
    both = min(round(table.both * factor), size - base_only - candidate_only)
    return PairedTable(
        both=both, base_only=base_only, candidate_only=candidate_only, neither=size - both - base_only - candidate_only
    )
