"""Intervals for a mean when examples come in clusters (several questions about one document, one user ...).

Examples in one cluster tend to succeed or fail together, so n examples carry less information than n independent
ones. Both methods treat the cluster, not the example, as the unit of independent information.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import (
    Floats,
    Ints,
    as_ids,
    as_values,
    check_seed,
    symmetric_ends,
    tails,
    undefined_interval,
)
from evalglass.core.stats.bootstrapping import bca_or_percentile, finish, make_rng, rng_params
from evalglass.core.stats.model import FEW_CLUSTERS_BELOW, Interval, Method, Note, Param, Sides
from evalglass.core.stats.resample import resampled_sums


def _clustered(values: npt.ArrayLike, clusters: npt.ArrayLike) -> tuple[Floats, Ints, int, float]:
    """Values, dense cluster codes 0..G-1, G, and the mean (exact when all values are equal)."""
    array = as_values(values)
    ids = as_ids(clusters, array.shape[0], "clusters")
    if array.shape[0] == 0:
        return array, ids, 0, math.nan
    _, codes = np.unique(ids, return_inverse=True)
    codes = codes.astype(np.int64).reshape(-1)
    count = int(codes.max()) + 1
    point = float(array[0]) if array.min() == array.max() else float(array.mean())
    return array, codes, count, point


def _cluster_notes(count: int, few_clusters_below: int) -> tuple[Note, ...]:
    return (Note.FEW_CLUSTERS,) if count < few_clusters_below else ()


def cluster_t(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    level: float = 0.95,
    sides: Sides = Sides.TWO_SIDED,
    few_clusters_below: int = FEW_CLUSTERS_BELOW,
) -> Interval | None:
    """Cluster-robust (CR1) interval for the mean, with t on G - 1 degrees of freedom; None when there are no values.

    With e_i = y_i - mean and E_g the sum of e_i over cluster g, the variance of the mean is estimated as
    ``G / (G - 1) * sum(E_g**2) / n**2``: the sandwich estimator of a regression on a constant with the CR1
    small-sample factor (the regression factor (n - 1)/(n - k) is 1 here). This is what statsmodels'
    ``OLS(y, 1).fit(cov_type="cluster")`` computes, and Stata's ``regress y, vce(cluster g)``.
    One cluster leaves nothing to compare: undefined. As with :func:`~evalglass.core.stats.mean.student_t`, the
    ends are not clipped to the values' range here but by the caller that knows it. Needs scipy (except at zero
    spread).
    """
    array, codes, count, point = _clustered(values, clusters)
    n = array.shape[0]
    if n == 0:
        return None
    params: dict[str, Param] = {"few_clusters_below": few_clusters_below}
    notes = _cluster_notes(count, few_clusters_below)
    if count == 1:
        return undefined_interval(
            point=point,
            n=n,
            method=Method.CLUSTER_T,
            level=level,
            sides=sides,
            clusters=1,
            notes=notes,
            reason="one cluster: no between-cluster spread to estimate",
            params=params,
        )
    residual_sums = np.bincount(codes, weights=array - point, minlength=count)
    std_error = math.sqrt(count / (count - 1) * float(np.sum(residual_sums**2))) / n
    below, above = tails(level, sides)
    low, high = symmetric_ends(point, std_error, below, above, count - 1)
    params.update({"df": count - 1, "std_error": std_error, "correction": "CR1"})
    if std_error == 0.0:
        notes = (*notes, Note.ZERO_SPREAD)
    return Interval(
        point=point,
        low=low,
        high=high,
        level=level,
        sides=sides,
        method=Method.CLUSTER_T,
        n=n,
        clusters=count,
        notes=notes,
        params=params,
    )


def cluster_bootstrap(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    *,
    seed: int,
    level: float = 0.95,
    sides: Sides = Sides.TWO_SIDED,
    resamples: int = 2000,
    method: Method = Method.CLUSTER_BOOTSTRAP_BCA,
    few_clusters_below: int = FEW_CLUSTERS_BELOW,
) -> Interval | None:
    """Bootstrap interval for the mean that resamples whole clusters; None when there are no values.

    Each resample draws G clusters with replacement and takes the mean over all their examples (sum of the drawn
    clusters' totals over the sum of their sizes). BCa uses the leave-one-cluster-out jackknife; when BCa is
    undefined it falls back to percentile as :func:`~evalglass.core.stats.bootstrapping.bootstrap` does.
    """
    method = Method(method)
    if method not in (Method.CLUSTER_BOOTSTRAP_BCA, Method.CLUSTER_BOOTSTRAP_PERCENTILE):
        raise ValueError(f"cluster_bootstrap() computes the cluster bootstrap, not {method.value}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    seed = check_seed(seed)
    rng = make_rng(seed)
    array, codes, count, point = _clustered(values, clusters)
    n = array.shape[0]
    if n == 0:
        return None
    params: dict[str, Param] = {
        **rng_params(seed, resamples),
        "statistic": "mean",
        "few_clusters_below": few_clusters_below,
    }
    notes = _cluster_notes(count, few_clusters_below)
    if count == 1:
        return undefined_interval(
            point=point,
            n=n,
            method=method,
            level=level,
            sides=sides,
            clusters=1,
            notes=notes,
            reason="one cluster: nothing to resample",
            params=params,
        )
    totals = np.bincount(codes, weights=array, minlength=count)
    sizes = np.bincount(codes, minlength=count).astype(np.float64)
    if array.min() == array.max():
        replicates = np.full(resamples, point)
        jackknife = np.zeros(count)
        params["resampler"] = "none: all values are equal"
    else:
        # Rows sorted by (total, size): the resamples depend on the clusters as a multiset, not on their ids'
        # order, as the ordinary bootstrap sorts its values (with singleton clusters the two are the same draws).
        rows: Floats = np.column_stack((totals, sizes)).astype(np.float64)
        rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
        sums, params["resampler"] = resampled_sums(rows, resamples, rng)
        replicates = sums[:, 0] / sums[:, 1]
        left_out = (totals.sum() - totals) / (n - sizes)
        jackknife = left_out.mean() - left_out
    low, high, used, extra = bca_or_percentile(point, replicates, jackknife, level, sides, method)
    return finish(
        point,
        low,
        high,
        used,
        extra,
        replicates,
        n=n,
        level=level,
        sides=sides,
        params=params,
        clusters=count,
        notes=notes,
    )
