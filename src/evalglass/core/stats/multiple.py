"""Every pair of variants compared on the same examples, with intervals adjusted for the number of comparisons.

A run with ``k`` variants makes ``m = k(k-1)/2`` paired comparisons per metric. Reported at 95% each, one in twenty
"differences" between identical variants would look real; so every pair's interval is widened by Holm's step-down
procedure (Holm 1979, *Scand. J. Statist.* 6:65-70), which keeps the family-wise error rate at ``1 - level``:

- each pair's paired t test (per-example differences, the pairs where both variants have a measured value) gives a
  two-sided p-value; the pairs are ranked by it, smallest first;
- the pair of rank ``r`` (0-based) is tested at ``alpha / (m - r)`` while every pair before it was rejected; from the
  first pair that is not rejected on, every later pair keeps that step's ``alpha`` (the procedure stops there);
- each pair's adjusted interval is its paired t interval at ``1 -`` its step's ``alpha``.

When every pair of a comparison differs by the same amount there is no spread for the t test: its p-value is then
the exact two-sided sign test's, ``2 · 0.5^n``, and its interval the point when that separates the two, else the
span from the point to 0.

When the values' range is known, such a pair's intervals take the range floor every interval of a bounded mean
takes without spread (``_common.range_floor``: the examples not seen may score anywhere in the range, in a share
bounded as a proportion never observed in n), and its p-value is at least the floor's (the ``alpha`` at which the
floor excludes 0). So n pairs that all differ by the same amount are never a certain difference, nor a certain
absence of one.

Both intervals are clipped to the range a difference of two means can take, ``±(max - min)`` of the metric's values'
range (``choose.value_range``: its declared scale, or [0, 1] for binary values), by the clip every interval
producer applies (``_common.clipped_ends``); since 0 lies inside that range, clipping changes no decision.

So an adjusted interval excludes 0 exactly when Holm's procedure rejects "no difference" for that pair, and it
always contains the unadjusted interval. Limit, stated in the output and docs: Holm's guarantee is about the
decisions (which pairs differ); the intervals of the pairs after the first non-rejection are not jointly simultaneous
beyond what Bonferroni's level ``alpha / m`` would give.

"Indistinguishable at this n": two variants whose adjusted interval contains 0. Since that relation is not
transitive (a ≈ b, b ≈ c, yet a ≠ c), the groups are the maximal sets of pairwise indistinguishable variants (the
maximal cliques of the relation): every pair inside a group is indistinguishable, every indistinguishable pair shares
a group, and a variant is placed above another only when their pair is distinguishable. A variant can be in several
groups. The clique search is exponential in the worst case; it is meant for the handful of variants a run compares
(at most :data:`MAX_VARIANTS`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import check_level, clipped_ends, difference_range, floor_p_value, range_floor
from evalglass.core.stats.multiplemodel import ADJUSTMENT, MAX_VARIANTS, PairComparison, VariantComparison

Floats = npt.NDArray[np.float64]

__all__ = [
    "ADJUSTMENT",
    "MAX_VARIANTS",
    "PairComparison",
    "VariantComparison",
    "compare_variants",
    "distinguishable_pairs",
    "holm_alphas",
    "indistinguishable_groups",
    "pair_indices",
]


def pair_indices(k: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The first and second variant of every pair, in the order pairs are reported ((0,1), (0,2), ..., (1,2), ...)."""
    first, second = np.triu_indices(k, 1)
    return first.astype(np.intp), second.astype(np.intp)


def holm_alphas(p_values: Floats, alpha: float) -> tuple[Floats, npt.NDArray[np.bool_]]:
    """Per comparison, the ``alpha`` of its Holm step and whether it is rejected (see the module's docstring).

    Ties in p-values keep their input order (a stable sort), which changes no decision: tied p-values are rejected
    or kept together once the first of them is reached."""
    m = p_values.size
    order = np.argsort(p_values, kind="stable")
    step_alpha = alpha / (m - np.arange(m, dtype=np.float64))
    passed = p_values[order] <= step_alpha
    failed_at = int(np.argmin(passed)) if not passed.all() else m
    used = step_alpha.copy()
    if failed_at < m:
        used[failed_at:] = step_alpha[failed_at]
    rejected_sorted = np.arange(m) < failed_at
    alphas = np.empty(m, dtype=np.float64)
    rejected = np.empty(m, dtype=np.bool_)
    alphas[order] = used
    rejected[order] = rejected_sorted
    return alphas, rejected


def compare_variants(
    metric: str,
    names: tuple[str, ...],
    values: Floats,
    *,
    level: float = 0.95,
    higher_is_better: bool = True,
    value_range: tuple[float, float] | None = None,
) -> VariantComparison:
    """``values`` is one row per variant and one column per example (the same examples in every row, NaN where a
    variant has no measured value): every pair's paired difference with its Holm-adjusted interval, and the groups
    (best first by ``higher_is_better``; the direction orders, it never decides). ``value_range``: the range every
    measured value lies in (None: unbounded); each interval is clipped to the range a difference can take in it."""
    from scipy import stats as scipy_stats

    check_level(level)
    table = np.asarray(values, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != len(names):
        raise ValueError(f"values must be one row per variant: {len(names)} names, shape {table.shape}")
    k = len(names)
    if not 2 <= k <= MAX_VARIANTS:
        raise ValueError(f"between 2 and {MAX_VARIANTS} variants are compared, not {k}")
    alpha = 1.0 - level
    first, second = pair_indices(k)
    differences = table[first] - table[second]  # m x n, NaN where either side is unmeasured
    measured = ~np.isnan(differences)
    n = measured.sum(axis=1)
    filled = np.where(measured, differences, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=1) / n
        squares = np.where(measured, (differences - mean[:, None]) ** 2, 0.0).sum(axis=1)
        sd = np.sqrt(squares / (n - 1))
        se = sd / np.sqrt(n)
        df = np.maximum(n - 1, 1).astype(np.float64)
        statistic = np.abs(mean) / se
    defined = n >= 2
    exact = defined & (se == 0)  # every pair differs by the same amount: no spread to test against
    p_values = np.ones(first.size, dtype=np.float64)
    tested = defined & ~exact
    p_values[tested] = 2.0 * scipy_stats.t.sf(statistic[tested], df[tested])
    # No spread: the t test is undefined. Every one of the n pairs moved the same way, which the two-sided sign test
    # (exact) puts at 2 · 0.5^n under "no difference": two pairs that agree prove nothing, twelve do.
    p_values[exact] = np.where(mean[exact] == 0.0, 1.0, np.minimum(1.0, 2.0 * 0.5 ** n[exact].astype(np.float64)))
    limits = None if value_range is None else difference_range(*value_range)
    if limits is not None:
        # Without spread the intervals take the range floor (``_common.range_floor``), as every interval of a
        # bounded mean does; the test is then never more certain than the floor, so an adjusted interval still
        # excludes 0 exactly when Holm rejects.
        for index in np.flatnonzero(exact):
            found = floor_p_value(float(mean[index]), int(n[index]), *limits)
            p_values[index] = max(float(p_values[index]), found)
    alphas, rejected = holm_alphas(p_values, alpha)
    half = np.where(exact, 0.0, scipy_stats.t.ppf(1.0 - alphas / 2.0, df) * se)
    plain_half = np.where(exact, 0.0, scipy_stats.t.ppf(1.0 - alpha / 2.0, df) * se)
    low, high = mean - half, mean + half
    plain_low, plain_high = mean - plain_half, mean + plain_half
    # Without spread the interval is the point when the sign test separates the two, else it reaches 0: the
    # interval never claims more than the test.
    kept = exact & ~rejected
    low[kept], high[kept] = np.minimum(mean[kept], 0.0), np.maximum(mean[kept], 0.0)
    plain_kept = exact & (p_values > alpha)
    plain_low[plain_kept] = np.minimum(mean[plain_kept], 0.0)
    plain_high[plain_kept] = np.maximum(mean[plain_kept], 0.0)
    if limits is not None:
        low, high = _floored(exact, low, high, mean, n, alphas, limits)
        plain_low, plain_high = _floored(exact, plain_low, plain_high, mean, n, np.full(first.size, alpha), limits)
    pairs = tuple(
        _pair(
            names[int(first[index])],
            names[int(second[index])],
            int(n[index]),
            _finite(mean[index]) if n[index] >= 1 else None,
            (_finite(low[index]), _finite(high[index])) if defined[index] else (None, None),
            (_finite(plain_low[index]), _finite(plain_high[index])) if defined[index] else (None, None),
            float(min(1.0, max(0.0, p_values[index]))),
            float(1.0 - alphas[index]),
            bool(rejected[index] and defined[index]),
            limits,
        )
        for index in range(first.size)
    )
    means = _variant_means(table)
    return VariantComparison(
        metric=metric,
        level=level,
        higher_is_better=higher_is_better,
        variants=names,
        means=means,
        pairs=pairs,
        groups=indistinguishable_groups(names, means, pairs, higher_is_better=higher_is_better),
    )


def _floored(
    exact: npt.NDArray[np.bool_],
    low: Floats,
    high: Floats,
    mean: Floats,
    n: npt.NDArray[np.int64],
    alphas: Floats,
    limits: tuple[float, float],
) -> tuple[Floats, Floats]:
    """The two-sided intervals at ``1 - alphas`` of the pairs without spread (``exact``) widened to at least the
    range floor (``_common.range_floor``, the one rule); the others as they are."""
    low, high = low.copy(), high.copy()
    for index in np.flatnonzero(exact):
        tail = float(alphas[index]) / 2.0
        floor_low, floor_high = range_floor(float(mean[index]), int(n[index]), *limits, tail, tail)
        assert floor_low is not None and floor_high is not None
        low[index], high[index] = min(float(low[index]), floor_low), max(float(high[index]), floor_high)
    return low, high


def _pair(
    first: str,
    second: str,
    n: int,
    difference: float | None,
    adjusted: tuple[float | None, float | None],
    unadjusted: tuple[float | None, float | None],
    p_value: float,
    level: float,
    distinguishable: bool,
    limits: tuple[float, float] | None,
) -> PairComparison:
    """One pair's comparison, both intervals clipped to ``limits`` (the range a difference can take) when known."""
    if limits is not None:
        adjusted = clipped_ends(*adjusted, *limits)
        unadjusted = clipped_ends(*unadjusted, *limits)
    return PairComparison(
        first=first,
        second=second,
        n=n,
        difference=difference,
        low=adjusted[0],
        high=adjusted[1],
        unadjusted_low=unadjusted[0],
        unadjusted_high=unadjusted[1],
        p_value=p_value,
        level=level,
        distinguishable=distinguishable,
    )


def _finite(value: float) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _variant_means(table: Floats) -> tuple[float | None, ...]:
    counts = (~np.isnan(table)).sum(axis=1)
    sums = np.where(np.isnan(table), 0.0, table).sum(axis=1)
    return tuple(float(sums[row] / counts[row]) if counts[row] else None for row in range(table.shape[0]))


def indistinguishable_groups(
    names: tuple[str, ...],
    means: tuple[float | None, ...],
    pairs: tuple[PairComparison, ...],
    *,
    higher_is_better: bool = True,
) -> tuple[tuple[str, ...], ...]:
    """The maximal cliques of "not distinguishable" (Bron–Kerbosch with pivoting), each ordered by mean (best
    first, unmeasured last), the groups ordered by their best member's mean, then by name."""
    index = {name: position for position, name in enumerate(names)}
    near: list[set[int]] = [set() for _ in names]
    for pair in pairs:
        if not pair.distinguishable:
            a, b = index[pair.first], index[pair.second]
            near[a].add(b)
            near[b].add(a)
    cliques: list[frozenset[int]] = []

    def expand(clique: set[int], candidates: set[int], excluded: set[int]) -> None:
        if not candidates and not excluded:
            cliques.append(frozenset(clique))
            return
        pivot = max(candidates | excluded, key=lambda vertex: len(near[vertex] & candidates))
        for vertex in list(candidates - near[pivot]):
            expand(clique | {vertex}, candidates & near[vertex], excluded & near[vertex])
            candidates.discard(vertex)
            excluded.add(vertex)

    expand(set(), set(range(len(names))), set())

    def rank(vertex: int) -> tuple[float, str]:
        mean = means[vertex]
        if mean is None:
            return (math.inf, names[vertex])
        return (-mean if higher_is_better else mean, names[vertex])

    ordered = [tuple(sorted(clique, key=rank)) for clique in cliques]
    ordered.sort(key=lambda members: (rank(members[0]), tuple(names[member] for member in members)))
    return tuple(tuple(names[member] for member in members) for members in ordered)


def distinguishable_pairs(comparison: VariantComparison) -> set[frozenset[str]]:
    """The pairs of variants the data separates (as unordered pairs)."""
    return {frozenset((pair.first, pair.second)) for pair in comparison.pairs if pair.distinguishable}
