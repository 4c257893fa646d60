"""Pick an interval method for a metric's values and compute it: the one entry point the pipeline needs."""

from __future__ import annotations

import numpy.typing as npt

from evalglass.core.stats._common import Floats, as_ids, as_values, clipped_to_range
from evalglass.core.stats.bootstrapping import Statistic, VectorStatistic, as_statistic, bootstrap
from evalglass.core.stats.cluster import cluster_bootstrap, cluster_t
from evalglass.core.stats.mean import student_t
from evalglass.core.stats.model import FEW_CLUSTERS_BELOW, Direction, Interval, Method, ScaleSpec, Sides
from evalglass.core.stats.proportion import clopper_pearson, count_successes, is_binary, wilson


def choose_method(
    values: npt.ArrayLike,
    *,
    clustered: bool = False,
    statistic: Statistic | str | VectorStatistic = Statistic.MEAN,
    override: Method | str | None = None,
) -> Method:
    """The method for these values: an explicit ``override`` (checked), else the automatic choice.

    Automatic: clusters declared → ``cluster_t``; a statistic other than the mean → ``bootstrap_bca``;
    binary 0/1 values → ``wilson``; anything else → ``student_t``. An override that cannot honestly apply is a
    ValueError: a proportion method on non-binary values, a non-cluster method when clusters are declared (it would
    ignore them), a cluster method without clusters, a method other than the bootstrap for a non-mean statistic.
    """
    mean = as_statistic(statistic) is Statistic.MEAN
    if override is None:
        if clustered:
            if not mean:
                raise ValueError("with clusters declared only the mean has an interval (cluster_t, cluster_bootstrap)")
            return Method.CLUSTER_T
        if not mean:
            return Method.BOOTSTRAP_BCA
        return Method.WILSON if is_binary(values) else Method.STUDENT_T
    try:
        method = Method(override)
    except ValueError:
        known = ", ".join(m.value for m in Method)
        raise ValueError(f"unknown interval method {override!r}; known methods: {known}") from None
    if method is Method.NEWCOMBE_PAIRED:
        raise ValueError(
            "newcombe_paired is for paired differences between two runs (evalglass compare, comparative gates); "
            "a single run's binary metric uses wilson or clopper_pearson"
        )
    if method.binary_only and not is_binary(values):
        raise ValueError(f"{method.value} is for binary metrics: every value must be exactly 0.0 or 1.0")
    if clustered and not method.clustered:
        raise ValueError(
            f"clusters are declared, and {method.value} would ignore them; use cluster_t or a cluster bootstrap"
        )
    if method.clustered and not clustered:
        raise ValueError(f"{method.value} needs cluster ids")
    if not mean and method not in (Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE):
        raise ValueError(
            f"{method.value} estimates a mean; other statistics need bootstrap_bca or bootstrap_percentile"
        )
    return method


def confidence_interval(
    values: npt.ArrayLike,
    *,
    level: float = 0.95,
    sides: Sides = Sides.TWO_SIDED,
    method: Method | str | None = None,
    clusters: npt.ArrayLike | None = None,
    seed: int | None = None,
    resamples: int = 2000,
    statistic: Statistic | str | VectorStatistic = Statistic.MEAN,
    few_clusters_below: int = FEW_CLUSTERS_BELOW,
    scale: ScaleSpec | None = None,
) -> Interval | None:
    """The interval for a metric's included values; None when there are none (the gate has no measured value).

    ``method`` overrides the automatic choice (see :func:`choose_method`). ``clusters`` (one id per value) switches
    to cluster-aware methods. Bootstrap methods need an explicit ``seed``. ``scale`` is the range the metric's values
    can take (None: unbounded); an interval for the mean is clipped to it, or to [0, 1] on binary values, as
    :func:`value_range` says.
    """
    array = as_values(values)
    interval = _interval(array, level, sides, method, clusters, seed, resamples, statistic, few_clusters_below)
    bounds = value_range(array, scale, statistic)
    if interval is None or bounds is None:
        return interval
    return clipped_to_range(interval, *bounds)


def value_range(
    values: Floats, scale: ScaleSpec | None, statistic: Statistic | str | VectorStatistic = Statistic.MEAN
) -> tuple[float, float] | None:
    """The range the mean of ``values`` lies in, which its interval is clipped to: the declared ``scale`` when every
    value lies in it; with no scale declared, [0, 1] for binary values (a proportion). None otherwise, and for any
    statistic but the mean (a custom statistic need not stay within the values' range). Values outside a declared
    scale leave the interval as computed: the scale is then not theirs (sensitivity bounds refuse it the same way)."""
    if values.size == 0 or as_statistic(statistic) is not Statistic.MEAN:
        return None
    if scale is not None:
        inside = scale.min <= float(values.min()) and float(values.max()) <= scale.max
        return (scale.min, scale.max) if inside else None
    return (0.0, 1.0) if is_binary(values) else None


def _interval(
    array: Floats,
    level: float,
    sides: Sides,
    method: Method | str | None,
    clusters: npt.ArrayLike | None,
    seed: int | None,
    resamples: int,
    statistic: Statistic | str | VectorStatistic,
    few_clusters_below: int,
) -> Interval | None:
    chosen = choose_method(array, clustered=clusters is not None, statistic=statistic, override=method)
    if chosen.resampling and seed is None:
        raise ValueError(f"{chosen.value} needs an explicit seed so the interval can be reproduced")
    if clusters is not None:
        ids = as_ids(clusters, array.shape[0], "clusters")
        if chosen is Method.CLUSTER_T:
            return cluster_t(array, ids, level=level, sides=sides, few_clusters_below=few_clusters_below)
        assert seed is not None
        return cluster_bootstrap(
            array,
            ids,
            seed=seed,
            level=level,
            sides=sides,
            resamples=resamples,
            method=chosen,
            few_clusters_below=few_clusters_below,
        )
    if chosen is Method.WILSON:
        return wilson(*count_successes(array), level=level, sides=sides)
    if chosen is Method.CLOPPER_PEARSON:
        return clopper_pearson(*count_successes(array), level=level, sides=sides)
    if chosen is Method.STUDENT_T:
        return student_t(array, level=level, sides=sides)
    assert seed is not None
    return bootstrap(
        array, seed=seed, level=level, sides=sides, resamples=resamples, statistic=statistic, method=chosen
    )


def one_sided_bound(
    values: npt.ArrayLike,
    *,
    direction: Direction | str,
    level: float = 0.95,
    method: Method | str | None = None,
    clusters: npt.ArrayLike | None = None,
    seed: int | None = None,
    resamples: int = 2000,
    statistic: Statistic | str | VectorStatistic = Statistic.MEAN,
    few_clusters_below: int = FEW_CLUSTERS_BELOW,
    scale: ScaleSpec | None = None,
) -> Interval | None:
    """The unfavourable one-sided bound at ``level`` for the experimental ``lower_bound`` gate rule.

    Higher is better → a lower bound (``sides=lower``, the number is ``.low``); lower is better → an upper bound.
    ``result.bound(direction)`` is the number to compare with the threshold; it is None when the method is
    undefined on this data (one value, one cluster), and the whole result is None when there are no values.
    A one-sided bound at 95% equals the matching end of the two-sided 90% interval.
    """
    return confidence_interval(
        values,
        level=level,
        sides=Direction(direction).unfavourable_side,
        method=method,
        clusters=clusters,
        seed=seed,
        resamples=resamples,
        statistic=statistic,
        few_clusters_below=few_clusters_below,
        scale=scale,
    )
