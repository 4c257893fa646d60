"""An interval for a metric's mean stays inside the range its values can take, and is clipped only where it left it."""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.gatespec import GateRule, RuleDecision, rule_decision
from evalglass.core.stats import (
    Direction,
    Interval,
    Method,
    ScaleSpec,
    Sides,
    bootstrap,
    clopper_pearson,
    cluster_bootstrap,
    cluster_t,
    confidence_interval,
    count_successes,
    paired_difference,
    student_t,
    wilson,
)
from evalglass.core.stats.multiplemodel import PairComparison

Unclipped = Callable[[np.ndarray, np.ndarray | None, Sides], Interval | None]

#: Each method a metric's interval can use, computed by the method itself (which knows no scale), and whether it
#: needs cluster ids. Bootstraps at 199 resamples: enough to place their ends, cheap enough for a property test.
METHODS: dict[Method, tuple[bool, Unclipped]] = {
    Method.STUDENT_T: (False, lambda v, ids, s: student_t(v, sides=s)),
    Method.BOOTSTRAP_BCA: (False, lambda v, ids, s: bootstrap(v, seed=3, sides=s, resamples=199)),
    Method.BOOTSTRAP_PERCENTILE: (
        False,
        lambda v, ids, s: bootstrap(v, seed=3, sides=s, resamples=199, method=Method.BOOTSTRAP_PERCENTILE),
    ),
    Method.CLUSTER_T: (True, lambda v, ids, s: cluster_t(v, ids, sides=s)),
    Method.CLUSTER_BOOTSTRAP_BCA: (True, lambda v, ids, s: cluster_bootstrap(v, ids, seed=3, sides=s, resamples=199)),
    Method.CLUSTER_BOOTSTRAP_PERCENTILE: (
        True,
        lambda v, ids, s: cluster_bootstrap(
            v, ids, seed=3, sides=s, resamples=199, method=Method.CLUSTER_BOOTSTRAP_PERCENTILE
        ),
    ),
    Method.WILSON: (False, lambda v, ids, s: wilson(*count_successes(v), sides=s)),
    Method.CLOPPER_PEARSON: (False, lambda v, ids, s: clopper_pearson(*count_successes(v), sides=s)),
}


@st.composite
def scaled_values(draw: st.DrawFn) -> tuple[ScaleSpec, np.ndarray, np.ndarray]:
    """A scale, values on it (often piled at its ends, as ties and graded judges make them) and cluster ids."""
    low = draw(st.sampled_from([0.0, 1.0, -3.0]))
    scale = ScaleSpec(min=low, max=low + draw(st.sampled_from([1.0, 4.0, 0.25])))
    steps = draw(st.sampled_from([1, 2, 4]))  # 1: only the ends; 2: ends and the middle (0/0.5/1)
    n = draw(st.integers(2, 30))
    grid = draw(st.lists(st.integers(0, steps), min_size=n, max_size=n))
    values = scale.min + np.asarray(grid, dtype=np.float64) / steps * (scale.max - scale.min)
    ids = np.asarray(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype=np.int64)
    return scale, values, ids


def floored(raw: Interval, minimum: float, maximum: float) -> tuple[float | None, float | None]:
    """The ends the rule gives an interval computed without a range (written out here, apart from the code): an end
    on the point (no spread on that side) moves to the range floor, ``z**2 / (units + z**2)`` of the way to the
    range's end (Wilson's bound for 0 of n; proportions never sit on their point and are left alone), then every
    end is clipped to the range."""
    miss = 1.0 - raw.level
    below = miss / 2 if raw.sides is Sides.TWO_SIDED else (miss if raw.sides is Sides.LOWER else None)
    above = miss / 2 if raw.sides is Sides.TWO_SIDED else (miss if raw.sides is Sides.UPPER else None)
    units = raw.clusters if raw.clusters is not None else raw.n
    proportion = raw.method in (Method.WILSON, Method.CLOPPER_PEARSON, Method.NEWCOMBE_PAIRED)

    def share(tail: float) -> float:
        z = NormalDist().inv_cdf(1.0 - tail)
        return z * z / (units + z * z)

    low, high, point = raw.low, raw.high, raw.point
    if not proportion and low is not None and below is not None and low >= point:
        low = point - share(below) * (point - minimum)
    if not proportion and high is not None and above is not None and high <= point:
        high = point + share(above) * (maximum - point)
    return (None if low is None else max(low, minimum)), (None if high is None else min(high, maximum))


def applies(method: Method, values: np.ndarray) -> bool:
    return not method.binary_only or bool(np.all((values == 0.0) | (values == 1.0)))


@settings(max_examples=120, deadline=None)
@given(scaled_values(), st.sampled_from(list(METHODS)), st.sampled_from(list(Sides)))
def test_every_method_stays_inside_a_declared_scale_and_only_a_leaving_end_moves(
    case: tuple[ScaleSpec, np.ndarray, np.ndarray], method: Method, sides: Sides
) -> None:
    scale, values, ids = case
    if not applies(method, values):
        return
    clustered, compute = METHODS[method]
    clusters = ids if clustered else None
    interval = confidence_interval(
        values, method=method, clusters=clusters, seed=3, resamples=199, sides=sides, scale=scale
    )
    unclipped = compute(values, clusters, sides)
    assert interval is not None and unclipped is not None
    for end in (interval.low, interval.high):
        assert end is None or scale.min <= end <= scale.max
    expected_low, expected_high = floored(unclipped, scale.min, scale.max)
    for end, expected in ((interval.low, expected_low), (interval.high, expected_high)):
        assert end == (None if expected is None else pytest.approx(expected, rel=1e-12, abs=1e-12))
    if (expected_low, expected_high) == (unclipped.low, unclipped.high):
        assert interval == unclipped  # already inside: the very same interval, no param added
    else:
        added = set(interval.params) - set(unclipped.params)
        assert added and added <= {"range_floor", "clipped_to_unit_range", "clipped_to_scale"}, interval.params
        assert (interval.point, interval.method, interval.notes) == (unclipped.point, unclipped.method, unclipped.notes)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(list(METHODS)),
    st.sampled_from(list(Sides)),
    st.integers(1, 12),
    st.sampled_from([(0.0, 1.0), (1.0, 5.0), (-1.0, 1.0), (-3.0, -2.75)]),
    st.integers(0, 8).map(lambda eighth: eighth / 8),  # on a grid: a point one ulp off the range's end is not one
    st.floats(0.55, 0.99),
)
def test_an_interval_of_a_bounded_mean_has_zero_width_only_where_the_range_forces_it(
    method: Method, sides: Sides, n: int, scale_ends: tuple[float, float], where: float, level: float
) -> None:
    """n equal values (zero spread, the case that decided a gate between variants on 3 examples): every method's
    interval keeps width on each side it has, except a side the range closes (the point at that end of the range; a
    scale has min < max). One value stays undefined (no ends at all)."""
    minimum, maximum = scale_ends
    value = minimum + where * (maximum - minimum)
    if method.binary_only:
        value = round(where)
        minimum, maximum = 0.0, 1.0
    values = np.full(n, value)
    clusters = np.arange(n) if method.clustered else None
    interval = confidence_interval(
        values, method=method, clusters=clusters, seed=3, resamples=199, sides=sides, level=level,
        scale=ScaleSpec(min=minimum, max=maximum),
    )  # fmt: skip
    assert interval is not None
    if interval.low is None and interval.high is None:
        assert n == 1 and interval.notes[0].value == "undefined"
        return
    if interval.low is not None:
        assert interval.low < interval.point or interval.point == minimum
    if interval.high is not None:
        assert interval.high > interval.point or interval.point == maximum


def test_a_pairwise_judge_near_the_top_no_longer_reaches_past_one() -> None:
    # The case that was seen: ties score 0.5, so the values are not binary and the t interval ran to 1.003.
    values = np.array([1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0])
    assert (raw := student_t(values)) is not None and raw.high is not None and raw.high > 1.0
    interval = confidence_interval(values, scale=ScaleSpec(min=0.0, max=1.0))
    assert interval is not None and interval.high == 1.0 and interval.low == raw.low
    assert interval.params["clipped_to_unit_range"] is True


def test_values_outside_the_declared_scale_leave_the_interval_as_computed() -> None:
    values = np.array([1.0, 1.0, 1.0, 0.5, 1.2])  # 1.2 is not on [0, 1]: the scale is not these values'
    assert confidence_interval(values, scale=ScaleSpec(min=0.0, max=1.0)) == student_t(values)


def test_a_statistic_other_than_the_mean_is_not_clipped() -> None:
    # A custom statistic need not stay within the values' range (a sum does not), so the scale says nothing about it.
    values = np.array([0.9, 1.0, 0.8, 1.0, 0.95])
    clipped = confidence_interval(values, statistic=np.sum, seed=1, resamples=199, scale=ScaleSpec(min=0.0, max=1.0))
    assert clipped is not None and clipped.low is not None and clipped.low > 1.0


@settings(max_examples=200, deadline=None)
@given(scaled_values(), st.sampled_from(list(Direction)), st.floats(0.0, 1.0), st.floats(0.55, 0.99))
def test_a_clip_changes_a_gate_only_where_its_threshold_is_the_scale_end_every_mean_meets(
    case: tuple[ScaleSpec, np.ndarray, np.ndarray], direction: Direction, where: float, level: float
) -> None:
    # What a lower_bound gate decides from the interval at 2 * level - 1: a clipped end decides the same for every
    # threshold inside the scale except the scale's unfavourable end (the minimum when higher is better), which
    # every possible mean meets, so a pass there is the truth, not a lucky sample.
    scale, values, _ = case
    raw = student_t(values, level=2 * level - 1)
    interval = confidence_interval(values, level=2 * level - 1, method=Method.STUDENT_T, scale=scale)
    assert raw is not None and interval is not None
    if raw.low is None or raw.high is None:
        return
    higher = direction is Direction.HIGHER_IS_BETTER
    worst_end = scale.min if higher else scale.max
    for threshold in (scale.min + where * (scale.max - scale.min), scale.min, scale.max):

        def decide(it: Interval, threshold: float = threshold) -> RuleDecision:
            compared, favourable = (it.low, it.high) if higher else (it.high, it.low)
            assert compared is not None
            return rule_decision(GateRule.LOWER_BOUND, direction, threshold, compared, favourable)

        if threshold == worst_end:
            assert decide(interval) is RuleDecision.PASS
        elif raw.low == raw.high:  # no spread: the range floor may leave undecided what the point "decided"
            assert decide(interval) in (decide(raw), RuleDecision.UNDECIDED)
        else:
            assert decide(interval) is decide(raw)


@settings(max_examples=120, deadline=None)
@given(scaled_values(), st.sampled_from([None, Method.STUDENT_T, Method.BOOTSTRAP_PERCENTILE]), st.data())
def test_a_paired_difference_stays_within_the_scale_width(
    case: tuple[ScaleSpec, np.ndarray, np.ndarray], method: Method | None, data: st.DataObject
) -> None:
    scale, base, _ = case
    on_scale = sorted({*base.tolist(), scale.min, scale.max})
    candidate = np.asarray(data.draw(st.lists(st.sampled_from(on_scale), min_size=base.size, max_size=base.size)))
    width = scale.max - scale.min
    result = paired_difference(base, candidate, method=method, resamples=199, scale=scale)
    raw = paired_difference(base, candidate, method=method, resamples=199, scale=ScaleSpec(min=-1e9, max=1e9))
    assert result is not None and raw is not None
    low, high = result.interval.low, result.interval.high
    assert low is not None and high is not None and -width <= low <= high <= width
    assert raw.interval.low is not None and raw.interval.high is not None
    difference = candidate - base
    if difference.min() == difference.max() and result.interval.method is not Method.NEWCOMBE_PAIRED:
        # No spread (and the raw interval, computed on a range of ±2e9, took that range's floor): the floor on ±width.
        point = float(difference[0])
        unfloored = result.interval.model_copy(update={"low": point, "high": point})
        assert (low, high) == pytest.approx(floored(unfloored, -width, width), rel=1e-12, abs=1e-12)
        assert (low < point or point == -width) and (high > point or point == width)
    elif -width <= raw.interval.low and raw.interval.high <= width:
        assert result == raw
    else:
        assert (low, high) == (max(raw.interval.low, -width), min(raw.interval.high, width))
        assert result.interval.params.get("clipped_to_scale") is True


def test_binary_differences_forced_through_t_are_clipped_to_plus_minus_one() -> None:
    base = np.array([1.0, 1.0, 0.0])
    candidate = np.array([0.0, 0.0, 1.0])
    raw_low = -1.0 / 3 - float(np.std(candidate - base, ddof=1)) / np.sqrt(3) * 4.302652729749464
    assert raw_low < -1.0
    result = paired_difference(base, candidate, method=Method.STUDENT_T)
    assert result is not None and result.interval.low == pytest.approx(-1.0)


@st.composite
def scaled_variant_tables(draw: st.DrawFn) -> tuple[ScaleSpec, np.ndarray]:
    """A scale and, per variant, values on it (piled at its ends as graded answers make them; NaN: unmeasured)."""
    low = draw(st.sampled_from([0.0, 1.0, -3.0]))
    scale = ScaleSpec(min=low, max=low + draw(st.sampled_from([1.0, 4.0, 0.25])))
    k, n = draw(st.integers(2, 5)), draw(st.integers(2, 12))
    steps = draw(st.sampled_from([1, 2, 4]))
    grid = draw(st.lists(st.sampled_from([*range(steps + 1), -1]), min_size=k * n, max_size=k * n))
    values = np.asarray(grid, dtype=np.float64).reshape(k, n)
    table = np.where(values < 0, np.nan, scale.min + values / steps * (scale.max - scale.min))
    return scale, table


@settings(max_examples=150, deadline=None)
@given(scaled_variant_tables())
def test_every_variant_pairs_interval_lies_within_the_scale_width(case: tuple[ScaleSpec, np.ndarray]) -> None:
    """Holm-adjusted and unadjusted intervals of every pair of variants lie in ±(max - min), clipped by the one
    clip (``_common.clipped_ends``) only where they left it; the decisions (which pairs differ) are unchanged."""
    from evalglass.core.stats.choose import value_range
    from evalglass.core.stats.multiple import compare_variants

    scale, table = case
    names = tuple("abcde")[: table.shape[0]]
    measured = table[~np.isnan(table)]
    bounds = value_range(measured, scale) if measured.size else None
    clipped = compare_variants("m", names, table, value_range=bounds)
    raw = compare_variants("m", names, table)
    width = scale.max - scale.min
    rows = dict(zip(names, table, strict=True))

    def flat(pair: PairComparison) -> bool:
        """Whether the pair's differences are all equal (at least two): no spread."""
        both = rows[pair.first] - rows[pair.second]
        both = both[~np.isnan(both)]
        return bounds is not None and both.size >= 2 and both.min() == both.max()

    for pair, unclipped in zip(clipped.pairs, raw.pairs, strict=True):
        for end in (pair.low, pair.high, pair.unadjusted_low, pair.unadjusted_high):
            assert end is None or -width <= end <= width
        for end, raw_end in (
            (pair.low, unclipped.low),
            (pair.high, unclipped.high),
            (pair.unadjusted_low, unclipped.unadjusted_low),
            (pair.unadjusted_high, unclipped.unadjusted_high),
        ):
            if not flat(pair):
                assert end == (None if raw_end is None else min(max(raw_end, -width), width))
        if flat(pair):  # no spread: the range floor, and the test no more certain than it
            assert pair.difference is not None and pair.low is not None and pair.high is not None
            assert pair.low < pair.difference or pair.difference == -width
            assert pair.high > pair.difference or pair.difference == width
            assert pair.distinguishable == (pair.low > 0.0 or pair.high < 0.0)
            assert pair.p_value >= unclipped.p_value
        else:
            assert pair.distinguishable == unclipped.distinguishable and pair.p_value == unclipped.p_value
    if not any(flat(pair) for pair in clipped.pairs):
        assert clipped.groups == raw.groups


@settings(max_examples=120, deadline=None)
@given(scaled_variant_tables(), st.sampled_from([None, Method.STUDENT_T, Method.BOOTSTRAP_PERCENTILE]))
def test_a_difference_between_two_variants_lies_within_the_scale_width(
    case: tuple[ScaleSpec, np.ndarray], method: Method | None
) -> None:
    """The in-run difference a gate between two variants decides on (``metric@a-vs-b``): its interval, and the
    bound a lower_bound gate compares, lie in ±(max - min), the range ``difference_scale`` gives it."""
    from evalglass.core.columns import ScoreColumn
    from evalglass.core.score import Score
    from evalglass.core.variants import difference_column, difference_scale

    scale, table = case

    def column(row: np.ndarray) -> ScoreColumn:
        out = ScoreColumn()
        for value in row:
            out.append(Score.error("boom", "unmeasured") if np.isnan(value) else float(value))
        return out

    first, second = column(table[0]), column(table[1])
    difference = difference_column(first, second)
    both = ~np.isnan(table[0]) & ~np.isnan(table[1])
    included = difference.values()[both]
    if not (~np.isnan(table[0])).any() and not (~np.isnan(table[1])).any():
        assert difference_scale(first, second, scale) is None
        return
    width = scale.max - scale.min
    found = difference_scale(first, second, scale)
    assert found == ScaleSpec(min=-width, max=width)
    if included.size == 0:
        return
    for sides in Sides:
        interval = confidence_interval(included, method=method, seed=3, resamples=199, sides=sides, scale=found)
        assert interval is not None
        for end in (interval.low, interval.high):
            assert end is None or -width <= end <= width
