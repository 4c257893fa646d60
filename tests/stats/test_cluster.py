"""Cluster-robust intervals: CR1 against statsmodels, the cluster bootstrap, few-cluster warnings."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from evalglass.core.stats import (
    FEW_CLUSTERS_BELOW,
    Method,
    Note,
    Sides,
    bootstrap,
    cluster_bootstrap,
    cluster_t,
    confidence_interval,
    student_t,
)


def clustered_sample(clusters: int, seed: int, binary: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Examples grouped into clusters of unequal size that share a cluster effect."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, clusters)
    ids = np.repeat(rng.permutation(10 * clusters)[:clusters] - 3 * clusters, sizes)  # arbitrary, negative ids too
    effect = np.repeat(rng.normal(0, 0.15, clusters), sizes)
    latent = 0.7 + effect + rng.normal(0, 0.2, sizes.sum())
    values = (rng.random(sizes.sum()) < np.clip(latent, 0, 1)).astype(float) if binary else latent
    order = rng.permutation(values.size)  # clusters need not be contiguous
    return values[order], ids[order]


@pytest.mark.parametrize(("clusters", "seed", "binary"), [(2, 0, False), (7, 1, False), (40, 2, True), (300, 3, False)])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_cr1_matches_statsmodels_cluster_ols(clusters: int, seed: int, binary: bool, level: float) -> None:
    values, ids = clustered_sample(clusters, seed, binary)
    groups = np.unique(ids, return_inverse=True)[1]  # statsmodels wants non-negative group codes
    fit = sm.OLS(values, np.ones(values.size)).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    interval = cluster_t(values, ids, level=level)
    assert interval is not None and interval.method is Method.CLUSTER_T
    # statsmodels applies G/(G-1) * (N-1)/(N-K); with one regressor the second factor is 1, which is our CR1.
    assert interval.params["std_error"] == pytest.approx(fit.bse[0], rel=1e-10)
    assert fit.df_resid_inference == clusters - 1 == interval.params["df"]
    low, high = fit.conf_int(alpha=1 - level)[0]
    assert (interval.low, interval.high) == pytest.approx((low, high), rel=1e-10)
    assert interval.clusters == clusters and interval.n == values.size
    assert interval.point == pytest.approx(values.mean(), rel=1e-12)


def test_one_sided_cluster_bound_uses_t_on_clusters_minus_one() -> None:
    values, ids = clustered_sample(12, 4)
    lower = cluster_t(values, ids, sides=Sides.LOWER)
    assert lower is not None and lower.high is None and lower.low is not None
    se = float(lower.params["std_error"])  # type: ignore[arg-type]
    assert lower.low == pytest.approx(values.mean() - stats.t.ppf(0.95, 11) * se, rel=1e-12)


def test_correlated_clusters_widen_the_interval() -> None:
    values, ids = clustered_sample(60, 5)
    naive, robust = student_t(values), cluster_t(values, ids)
    assert naive is not None and robust is not None
    assert robust.high - robust.low > 1.3 * (naive.high - naive.low)  # type: ignore[operator]


def test_few_clusters_flag_and_threshold() -> None:
    values = np.random.default_rng(0).random(200)
    few = cluster_t(values, np.arange(200) % (FEW_CLUSTERS_BELOW - 1))
    enough = cluster_t(values, np.arange(200) % FEW_CLUSTERS_BELOW)
    assert few is not None and enough is not None
    assert few.few_clusters and Note.FEW_CLUSTERS in few.notes and few.clusters == FEW_CLUSTERS_BELOW - 1
    assert not enough.few_clusters and enough.clusters == FEW_CLUSTERS_BELOW
    custom = cluster_t(values, np.arange(200) % 40, few_clusters_below=50)
    assert custom is not None and custom.few_clusters and custom.params["few_clusters_below"] == 50


def test_edge_cases() -> None:
    assert cluster_t(np.empty(0), np.empty(0, np.int64)) is None
    assert cluster_bootstrap(np.empty(0), np.empty(0, np.int64), seed=0) is None
    for interval in (cluster_t([0.2, 0.4, 0.9], [5, 5, 5]), cluster_bootstrap([0.2, 0.4, 0.9], [5, 5, 5], seed=0)):
        assert interval is not None and interval.clusters == 1 and interval.low is None and interval.high is None
        assert Note.UNDEFINED in interval.notes and Note.FEW_CLUSTERS in interval.notes
        assert interval.point == pytest.approx(0.5)
    constant = cluster_t(np.full(10, 0.3), np.arange(10) % 3)
    assert constant is not None and constant.low == constant.high == constant.point == 0.3
    assert Note.ZERO_SPREAD in constant.notes
    with pytest.raises(ValueError, match="clusters"):
        cluster_t([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="integers"):
        cluster_t([0.1, 0.2], [1.5, 2.5])


def test_cluster_bootstrap_with_singleton_clusters_is_the_ordinary_bootstrap() -> None:
    for n in (100, 5000):  # the distinct-values engine and the blocked engine
        values = np.random.default_rng(n).gamma(2.0, 1.0, n)
        ordinary = bootstrap(values, seed=8, resamples=500)
        clustered = cluster_bootstrap(values, np.arange(n), seed=8, resamples=500)
        assert ordinary is not None and clustered is not None
        assert clustered.method is Method.CLUSTER_BOOTSTRAP_BCA and clustered.clusters == n
        assert clustered.low == pytest.approx(ordinary.low, rel=1e-12)
        assert clustered.high == pytest.approx(ordinary.high, rel=1e-12)


def test_cluster_bootstrap_matches_scipy_paired_bootstrap_of_cluster_totals() -> None:
    values, ids = clustered_sample(80, 6)
    _, codes = np.unique(ids, return_inverse=True)
    totals, sizes = np.bincount(codes, weights=values), np.bincount(codes).astype(float)

    def ratio(t: np.ndarray, s: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(t.sum(axis=axis) / s.sum(axis=axis))

    for ours, theirs in ((Method.CLUSTER_BOOTSTRAP_BCA, "BCa"), (Method.CLUSTER_BOOTSTRAP_PERCENTILE, "percentile")):
        reference = stats.bootstrap(
            (totals, sizes), ratio, paired=True, n_resamples=20_000, method=theirs, rng=np.random.default_rng(0)
        ).confidence_interval
        interval = cluster_bootstrap(values, ids, seed=1, resamples=20_000, method=ours)
        assert interval is not None and interval.method is ours
        width = reference.high - reference.low
        assert interval.low == pytest.approx(reference.low, abs=0.03 * width)
        assert interval.high == pytest.approx(reference.high, abs=0.03 * width)


def test_cluster_bootstrap_is_deterministic_and_close_to_cr1_with_many_clusters() -> None:
    values, ids = clustered_sample(400, 7)
    first = cluster_bootstrap(values, ids, seed=5, resamples=4000)
    assert first == cluster_bootstrap(values, ids, seed=5, resamples=4000)
    robust = cluster_t(values, ids)
    assert first is not None and robust is not None
    width = robust.high - robust.low  # type: ignore[operator]
    assert first.low == pytest.approx(robust.low, abs=0.1 * width)
    assert first.high == pytest.approx(robust.high, abs=0.1 * width)
    assert first.params["seed"] == 5 and first.params["statistic"] == "mean"


def test_dispatcher_uses_cluster_methods_when_clusters_are_declared() -> None:
    values, ids = clustered_sample(35, 8, binary=True)
    chosen = confidence_interval(values, clusters=ids)
    assert chosen == cluster_t(values, ids)
    boot = confidence_interval(values, clusters=ids, method="cluster_bootstrap_percentile", seed=2)
    assert boot == cluster_bootstrap(values, ids, seed=2, method=Method.CLUSTER_BOOTSTRAP_PERCENTILE)


def test_binary_cluster_interval_is_clipped_to_the_unit_range() -> None:
    values = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1], dtype=float)
    ids = np.repeat(np.arange(6), 4)
    assert (unclipped := cluster_t(values, ids)) is not None and unclipped.high is not None and unclipped.high > 1.0
    interval = confidence_interval(values, clusters=ids)
    assert interval is not None and interval.high == 1.0 and interval.params["clipped_to_unit_range"] is True
    se = float(interval.params["std_error"])  # type: ignore[arg-type]
    assert interval.low == pytest.approx(0.75 - stats.t.ppf(0.975, 5) * se, rel=1e-12)  # the low end is untouched
    continuous = confidence_interval(values * 0.9 + 0.05, clusters=ids)
    assert continuous is not None and "clipped_to_unit_range" not in continuous.params
