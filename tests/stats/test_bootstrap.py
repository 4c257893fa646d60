"""Seeded bootstrap: agreement with scipy.stats.bootstrap, determinism, the BCa fallback, the resampling engines."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from evalglass.core.stats import Method, Note, Sides, Statistic, bootstrap, confidence_interval
from evalglass.core.stats.bootstrapping import _brute_jackknife, _median_jackknife
from evalglass.core.stats.resample import DISTINCT_LIMIT, resampled_statistic, resampled_sums

SKEWED = np.random.default_rng(5).gamma(1.5, 2.0, 400)


def trimmed_mean(data: np.ndarray, *, axis: int) -> np.ndarray:
    return np.asarray(stats.trim_mean(data, 0.1, axis=axis))


@pytest.mark.parametrize(
    ("ours", "theirs"), [(Method.BOOTSTRAP_BCA, "BCa"), (Method.BOOTSTRAP_PERCENTILE, "percentile")]
)
@pytest.mark.parametrize(
    ("statistic", "function"),
    [(Statistic.MEAN, np.mean), (Statistic.MEDIAN, np.median), (trimmed_mean, trimmed_mean)],
)
def test_agrees_with_scipy_within_monte_carlo_error(ours: Method, theirs: str, statistic: Any, function: Any) -> None:
    # Different generators draw different resamples, so the ends agree only up to Monte Carlo error; with 20,000
    # resamples that error is well under 1% of the interval's width.
    reference = stats.bootstrap(
        (SKEWED,), function, n_resamples=20_000, method=theirs, rng=np.random.default_rng(1)
    ).confidence_interval
    interval = bootstrap(SKEWED, seed=2, resamples=20_000, method=ours, statistic=statistic)
    assert interval is not None and interval.method is ours
    width = reference.high - reference.low
    assert interval.low == pytest.approx(reference.low, abs=0.03 * width)
    assert interval.high == pytest.approx(reference.high, abs=0.03 * width)
    assert interval.point == pytest.approx(float(function(SKEWED, axis=-1)), rel=1e-12)


def test_bca_shifts_toward_the_skew() -> None:
    # A right-skewed sample: BCa moves both ends of the mean's interval up relative to the percentile interval.
    bca = bootstrap(SKEWED, seed=4, resamples=20_000)
    percentile = bootstrap(SKEWED, seed=4, resamples=20_000, method=Method.BOOTSTRAP_PERCENTILE)
    assert bca is not None and percentile is not None
    assert bca.low > percentile.low and bca.high > percentile.high  # type: ignore[operator]
    assert float(bca.params["acceleration"]) > 0  # type: ignore[arg-type]


def test_mean_acceleration_matches_scipy_definition() -> None:
    # scipy's BCa acceleration from the jackknife, computed by brute force here.
    n = SKEWED.size
    left_out = (SKEWED.sum() - SKEWED) / (n - 1)
    u = (n - 1) * (left_out.mean() - left_out)
    expected = (u**3).sum() / n**3 / ((u**2).sum() / n**2) ** 1.5 / 6
    interval = bootstrap(SKEWED, seed=1, resamples=500)
    assert interval is not None and interval.params["acceleration"] == pytest.approx(expected, rel=1e-9)


@given(arrays(np.float64, st.integers(2, 60), elements=st.floats(-100, 100, allow_nan=False)))
def test_median_jackknife_equals_brute_force(values: np.ndarray) -> None:
    brute = _brute_jackknife(values, lambda data: np.median(data, axis=-1))
    assert np.sort(_median_jackknife(values)) == pytest.approx(np.sort(brute), abs=1e-9)


@settings(max_examples=30)
@given(
    arrays(np.float64, st.integers(1, 300), elements=st.floats(-10, 10, allow_nan=False)),
    st.integers(0, 2**32),
    st.sampled_from([Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE]),
)
def test_deterministic_for_a_fixed_seed(values: np.ndarray, seed: int, method: Method) -> None:
    first = bootstrap(values, seed=seed, resamples=200, method=method)
    second = bootstrap(values.copy(), seed=seed, resamples=200, method=method)
    assert first == second


def test_records_everything_that_shaped_the_number() -> None:
    interval = bootstrap(SKEWED, seed=11, resamples=300)
    assert interval is not None
    params = interval.params
    assert params["seed"] == 11 and params["resamples"] == 300 and params["statistic"] == "mean"
    assert params["bit_generator"] == "PCG64" and params["numpy"] == np.__version__
    assert params["resampler"] == "blocked_indices(block=4096,group=64,round=4096)"


def test_different_seeds_give_different_intervals() -> None:
    a, b = bootstrap(SKEWED, seed=1, resamples=300), bootstrap(SKEWED, seed=2, resamples=300)
    assert a is not None and b is not None and (a.low, a.high) != (b.low, b.high)


def test_one_sided_bound_is_end_of_wider_two_sided_interval() -> None:
    for method in (Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE):
        two = bootstrap(SKEWED, seed=9, resamples=1000, level=0.9, method=method)
        lower = bootstrap(SKEWED, seed=9, resamples=1000, level=0.95, sides=Sides.LOWER, method=method)
        upper = bootstrap(SKEWED, seed=9, resamples=1000, level=0.95, sides=Sides.UPPER, method=method)
        assert two is not None and lower is not None and upper is not None
        assert lower.low == two.low and lower.high is None
        assert upper.high == two.high and upper.low is None


def test_all_equal_values_fall_back_to_a_zero_width_percentile_interval() -> None:
    interval = bootstrap(np.full(50, 0.1), seed=0)
    assert interval is not None
    assert interval.method is Method.BOOTSTRAP_PERCENTILE
    assert interval.point == interval.low == interval.high == 0.1
    assert Note.BCA_FALLBACK in interval.notes and Note.ZERO_SPREAD in interval.notes
    assert "no spread" in str(interval.params["fallback_reason"])
    assert interval.params["requested"] == "bootstrap_bca"


def test_all_pass_binary_falls_back_and_says_zero_spread() -> None:
    interval = bootstrap(np.ones(20), seed=0)
    assert interval is not None and interval.method is Method.BOOTSTRAP_PERCENTILE
    assert (interval.low, interval.high) == (1.0, 1.0) and Note.ZERO_SPREAD in interval.notes


def distinct_count(data: np.ndarray, *, axis: int) -> np.ndarray:
    ordered = np.sort(data, axis=axis)
    return np.asarray(1 + np.count_nonzero(np.diff(ordered, axis=axis), axis=axis), dtype=np.float64)


def test_every_replicate_on_one_side_falls_back() -> None:
    # Ten distinct values: a resample repeats some and misses others, so it almost never has ten distinct values
    # (chance 10!/10**10 per resample). Every replicate lies below the estimate and BCa's bias correction is infinite.
    interval = bootstrap(np.arange(10.0), seed=3, resamples=50, statistic=distinct_count)
    assert interval is not None and interval.method is Method.BOOTSTRAP_PERCENTILE
    assert interval.point == 10.0 and interval.high is not None and interval.high < 10.0
    assert "one side" in str(interval.params["fallback_reason"])
    assert interval.params["statistic"] == "distinct_count"


def test_edge_cases() -> None:
    assert bootstrap(np.empty(0), seed=0) is None
    single = bootstrap([0.4], seed=0)
    assert single is not None and single.point == 0.4 and single.low is None and single.high is None
    assert Note.UNDEFINED in single.notes
    for bad in (-1, None, 1.5, True):
        with pytest.raises(ValueError, match="seed"):
            bootstrap([0.1, 0.2], seed=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="resamples"):
        bootstrap([0.1, 0.2], seed=0, resamples=0)
    with pytest.raises(ValueError, match="bootstrap"):
        bootstrap([0.1, 0.2], seed=0, method=Method.STUDENT_T)
    with pytest.raises(ValueError, match="one value per row"):
        bootstrap([0.1, 0.2, 0.3], seed=0, statistic=lambda data, *, axis: np.zeros(2))


def test_bootstrap_needs_an_explicit_seed_through_the_dispatcher() -> None:
    with pytest.raises(ValueError, match="seed"):
        confidence_interval(SKEWED, method="bootstrap_bca")
    assert confidence_interval(SKEWED, method="bootstrap_bca", seed=1) == bootstrap(SKEWED, seed=1)
    median = confidence_interval(SKEWED, statistic=Statistic.MEDIAN, seed=1)
    assert median is not None and median.method is Method.BOOTSTRAP_BCA and median.params["statistic"] == "median"


# --- the engines: each must be the ordinary bootstrap, n uniform draws with replacement ---------------------------


@pytest.mark.parametrize("n", [7, 300, 4096, 10_000, 20_481])
def test_sum_engines_have_the_bootstrap_mean_and_variance(n: int) -> None:
    values = np.random.default_rng(n).standard_normal(n) * 3 + 1
    resamples = 4000
    sums, engine = resampled_sums(values[:, np.newaxis], resamples, np.random.default_rng(0))
    assert engine.startswith("distinct_values" if n <= DISTINCT_LIMIT else "blocked_indices")
    means = sums[:, 0] / n
    expected_sd = values.std() / np.sqrt(n)
    # The mean of 4000 replicate means lies within 5 standard errors of the sample mean; the variance within 10%.
    assert abs(means.mean() - values.mean()) < 5 * expected_sd / np.sqrt(resamples)
    assert means.std() == pytest.approx(expected_sd, rel=0.1)


def test_blocked_engine_draws_every_row_uniformly() -> None:
    # Rows are one-hot over 5 groups of row positions straddling block boundaries; each group's share of the draws
    # must match its share of the rows.
    n = 3 * 4096 + 1000
    group = np.minimum(np.arange(n) * 5 // n, 4)
    rows = np.zeros((n, 5))
    rows[np.arange(n), group] = 1.0
    rows = np.column_stack((rows, np.random.default_rng(0).random(n)))  # many distinct rows: blocked engine
    sums, engine = resampled_sums(rows, 400, np.random.default_rng(3))
    assert engine.startswith("blocked_indices")
    assert np.all(sums[:, :5].sum(axis=1) == n)  # every resample draws exactly n rows
    observed = sums[:, :5].sum(axis=0) / (400 * n)
    expected = np.bincount(group) / n
    assert observed == pytest.approx(expected, abs=0.002)


def test_distinct_engine_matches_binary_theory() -> None:
    values = np.array([1.0] * 830 + [0.0] * 170)
    sums, engine = resampled_sums(values[:, np.newaxis], 20_000, np.random.default_rng(1))
    assert engine == "distinct_values"
    means = sums[:, 0] / 1000
    assert means.std() == pytest.approx(np.sqrt(0.83 * 0.17 / 1000), rel=0.03)


def test_index_engine_chunks_without_changing_shape() -> None:
    values = np.arange(10.0)
    replicates = resampled_statistic(values, 37, np.random.default_rng(0), lambda d: d.max(axis=-1))
    assert replicates.shape == (37,) and np.all((replicates >= 0) & (replicates <= 9))


@settings(max_examples=60)
@given(
    arrays(np.float64, st.integers(2, 400), elements=st.floats(-1e3, 1e3, allow_nan=False)),
    st.sampled_from([Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE]),
    st.floats(0.5, 0.99),
)
def test_mean_interval_is_ordered_and_inside_the_data_range(values: np.ndarray, method: Method, level: float) -> None:
    interval = bootstrap(values, seed=0, resamples=300, method=method, level=level)
    assert interval is not None and interval.low is not None and interval.high is not None
    assert values.min() - 1e-9 <= interval.low <= interval.high <= values.max() + 1e-9


def test_statistic_by_name() -> None:
    assert bootstrap(SKEWED, seed=1, resamples=200, statistic="median") == bootstrap(
        SKEWED, seed=1, resamples=200, statistic=Statistic.MEDIAN
    )
    with pytest.raises(ValueError, match="unknown statistic"):
        bootstrap(SKEWED, seed=1, statistic="mode")


def test_many_resamples_run_in_rounds() -> None:
    values = np.random.default_rng(2).standard_normal(300)
    sums, engine = resampled_sums(values[:, np.newaxis], 9000, np.random.default_rng(0))
    assert engine.startswith("blocked_indices") and sums.shape == (9000, 1)
    assert (sums[:, 0] / 300).std() == pytest.approx(values.std() / np.sqrt(300), rel=0.05)
    again, _ = resampled_sums(values[:, np.newaxis], 9000, np.random.default_rng(0))
    assert np.array_equal(sums, again)
