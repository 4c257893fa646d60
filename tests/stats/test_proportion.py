"""Wilson and Clopper–Pearson against statsmodels, published values and exact binomial coverage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from evalglass.core.stats import Method, Sides, clopper_pearson, confidence_interval, wilson

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in Medicine 17, Table II:
# (successes, n) -> Wilson score interval, Clopper–Pearson interval, both 95% and rounded to 4 places.
NEWCOMBE = [
    (81, 263, (0.2553, 0.3662), (0.2527, 0.3676)),
    (15, 148, (0.0624, 0.1605), (0.0578, 0.1617)),
    (0, 20, (0.0, 0.1611), (0.0, 0.1684)),
    (1, 29, (0.0061, 0.1718), (0.0009, 0.1776)),
    (0, 10, (0.0, 0.2775), (0.0, 0.3085)),
    (10, 10, (0.7225, 1.0), (0.6915, 1.0)),
]

GRID = [(x, n) for n in (1, 2, 5, 17, 100, 1000) for x in sorted({0, 1, n // 3, n // 2, n - 1, n}) if 0 <= x <= n]


@pytest.mark.parametrize(("successes", "n", "wilson_ends", "exact_ends"), NEWCOMBE)
def test_published_worked_examples(
    successes: int, n: int, wilson_ends: tuple[float, float], exact_ends: tuple[float, float]
) -> None:
    w = wilson(successes, n)
    cp = clopper_pearson(successes, n)
    assert w is not None and cp is not None
    assert (w.low, w.high) == pytest.approx(wilson_ends, abs=5e-5)
    assert (cp.low, cp.high) == pytest.approx(exact_ends, abs=5e-5)


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
@pytest.mark.parametrize(("successes", "n"), GRID)
def test_matches_statsmodels(successes: int, n: int, level: float) -> None:
    for ours, sm_method in ((wilson, "wilson"), (clopper_pearson, "beta")):
        interval = ours(successes, n, level=level)
        assert interval is not None
        low, high = proportion_confint(successes, n, alpha=1 - level, method=sm_method)
        assert interval.low == pytest.approx(low, rel=1e-9, abs=1e-12)
        assert interval.high == pytest.approx(high, rel=1e-9, abs=1e-12)
        assert interval.point == successes / n
        assert interval.n == n


@pytest.mark.parametrize("method", [wilson, clopper_pearson])
def test_edge_cases(method: object) -> None:
    assert callable(method)
    assert method(0, 0) is None
    single_fail, single_pass = method(0, 1), method(1, 1)
    assert single_fail.low == 0.0 and 0.0 < single_fail.high < 1.0
    assert single_pass.high == 1.0 and 0.0 < single_pass.low < 1.0
    all_fail, all_pass = method(0, 50), method(50, 50)
    assert all_fail.point == 0.0 and all_fail.low == 0.0 and all_fail.high > 0.0
    assert all_pass.point == 1.0 and all_pass.high == 1.0 and all_pass.low < 1.0
    with pytest.raises(ValueError, match="successes"):
        method(3, 2)
    with pytest.raises(ValueError, match="successes"):
        method(-1, 2)


def test_values_dispatch_to_counts() -> None:
    values = np.array([1.0] * 7 + [0.0] * 3)
    assert confidence_interval(values) == wilson(7, 10)
    assert confidence_interval(values, method="clopper_pearson") == clopper_pearson(7, 10)
    assert confidence_interval(np.empty(0)) is None


@pytest.mark.parametrize("method", [wilson, clopper_pearson])
@pytest.mark.parametrize(("successes", "n"), [(0, 12), (5, 12), (12, 12), (330, 1000)])
def test_one_sided_bound_is_end_of_wider_two_sided_interval(method: object, successes: int, n: int) -> None:
    assert callable(method)
    two_sided = method(successes, n, level=0.90)
    lower = method(successes, n, level=0.95, sides=Sides.LOWER)
    upper = method(successes, n, level=0.95, sides=Sides.UPPER)
    assert lower.high is None and upper.low is None
    assert lower.low == pytest.approx(two_sided.low, abs=1e-15)
    assert upper.high == pytest.approx(two_sided.high, abs=1e-15)


def test_clopper_pearson_one_sided_zero_failure_bound() -> None:
    # The "rule of three" family: with n passes and no failure, the one-sided exact lower bound is alpha**(1/n).
    interval = clopper_pearson(300, 300, level=0.95, sides=Sides.LOWER)
    assert interval is not None and interval.low == pytest.approx(0.05 ** (1 / 300), rel=1e-12)
    assert 1 - interval.low == pytest.approx(3 / 300, rel=0.01)


def _coverage(method: object, n: int, p: float, level: float) -> float:
    assert callable(method)
    pmf = stats.binom.pmf(np.arange(n + 1), n, p)
    intervals = [method(x, n, level=level) for x in range(n + 1)]
    covered = np.array([i.low <= p <= i.high for i in intervals])
    return float(np.sum(pmf[covered]))


def test_clopper_pearson_coverage_never_below_nominal() -> None:
    # Exact coverage (a sum over every possible outcome, no simulation) on a grid of true proportions.
    for n in (5, 20, 60):
        for p in np.linspace(0.005, 0.995, 67):
            assert _coverage(clopper_pearson, n, float(p), 0.95) >= 0.95 - 1e-12


def test_wilson_average_coverage_is_near_nominal() -> None:
    n = 40
    coverages = [_coverage(wilson, n, float(p), 0.95) for p in np.linspace(0.01, 0.99, 99)]
    assert 0.94 <= float(np.mean(coverages)) <= 0.96
    assert min(coverages) > 0.80  # Wilson dips near 0 and 1 but never collapses like the Wald interval


counts = st.integers(min_value=1, max_value=5000).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))
)
levels = st.floats(min_value=0.5, max_value=0.999)


@given(counts, levels)
def test_interval_contains_point_within_unit_range(pair: tuple[int, int], level: float) -> None:
    successes, n = pair
    for interval in (wilson(successes, n, level=level), clopper_pearson(successes, n, level=level)):
        assert interval is not None
        assert interval.low is not None and interval.high is not None
        assert 0.0 <= interval.low <= interval.point <= interval.high <= 1.0
        assert interval.high > interval.low


@given(counts, levels)
def test_wilson_symmetric_under_relabelling(pair: tuple[int, int], level: float) -> None:
    successes, n = pair
    a, b = wilson(successes, n, level=level), wilson(n - successes, n, level=level)
    assert a is not None and b is not None and a.low is not None and b.high is not None
    assert a.low == pytest.approx(1.0 - b.high, abs=1e-12)
    assert a.high == pytest.approx(1.0 - b.low, abs=1e-12)


@given(
    st.integers(min_value=1, max_value=50).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.integers(min_value=2, max_value=20),
)
def test_narrows_as_n_grows_for_a_fixed_proportion(pair: tuple[int, int], factor: int) -> None:
    successes, n = pair
    for method in (wilson, clopper_pearson):
        small, large = method(successes, n), method(successes * factor, n * factor)
        assert small is not None and large is not None
        assert small.low is not None and small.high is not None
        assert large.low is not None and large.high is not None
        assert large.high - large.low < small.high - small.low


def test_higher_level_is_wider() -> None:
    narrow, wide = wilson(30, 40, level=0.8), wilson(30, 40, level=0.99)
    assert narrow is not None and wide is not None
    assert wide.low < narrow.low and wide.high > narrow.high  # type: ignore[operator]
    assert narrow.method is Method.WILSON
