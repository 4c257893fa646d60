"""Seeded bootstrap intervals: BCa, falling back to percentile when BCa is undefined on the data."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Protocol

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import (
    Floats,
    as_values,
    check_seed,
    normal_cdf,
    normal_quantile,
    tails,
    undefined_interval,
)
from evalglass.core.stats.model import Interval, Method, Note, Param, Sides
from evalglass.core.stats.resample import resampled_statistic, resampled_sums

#: A caller-supplied statistic with no closed-form jackknife is jackknifed by brute force (n evaluations on n - 1
#: values). Above this many values that is too slow, and BCa falls back to percentile, saying so.
JACKKNIFE_LIMIT = 20_000

BIT_GENERATOR = "PCG64"


class Statistic(StrEnum):
    """Statistics with a fast bootstrap path and a closed-form jackknife."""

    MEAN = "mean"
    MEDIAN = "median"


class VectorStatistic(Protocol):
    """A caller's statistic: given a (k x n) array it returns the k row statistics, like ``np.mean(a, axis=-1)``."""

    __name__: str

    def __call__(self, data: Floats, /, *, axis: int) -> npt.ArrayLike: ...


def as_statistic(statistic: Statistic | str | VectorStatistic) -> Statistic | VectorStatistic:
    """A named statistic as its enum member (a ValueError for an unknown name); a callable as it is."""
    if isinstance(statistic, str):
        try:
            return Statistic(statistic)
        except ValueError:
            known = ", ".join(s.value for s in Statistic)
            raise ValueError(f"unknown statistic {statistic!r}; named statistics: {known}") from None
    if not callable(statistic):
        raise ValueError(f"a statistic is a name or a function, got {statistic!r}")
    return statistic


def make_rng(seed: int) -> np.random.Generator:
    """The one generator every bootstrap draws from: PCG64 seeded with ``seed``."""
    return np.random.Generator(np.random.PCG64(check_seed(seed)))


def rng_params(seed: int, resamples: int) -> dict[str, Param]:
    return {"seed": seed, "resamples": resamples, "bit_generator": BIT_GENERATOR, "numpy": np.__version__}


def bootstrap(
    values: npt.ArrayLike,
    *,
    seed: int,
    level: float = 0.95,
    sides: Sides = Sides.TWO_SIDED,
    resamples: int = 2000,
    statistic: Statistic | str | VectorStatistic = Statistic.MEAN,
    method: Method = Method.BOOTSTRAP_BCA,
) -> Interval | None:
    """A seeded bootstrap interval for ``statistic`` of ``values``; None when there are no values.

    ``method`` is ``bootstrap_bca`` (default) or ``bootstrap_percentile``. When BCa is undefined on the data (all
    values equal, the jackknife shows no spread, every replicate on one side of the estimate) the percentile
    interval is returned instead, with method ``bootstrap_percentile``, note ``bca_fallback`` and the reason in
    ``params["fallback_reason"]``. One value has nothing to resample: the interval is undefined.
    """
    method = Method(method)
    if method not in (Method.BOOTSTRAP_BCA, Method.BOOTSTRAP_PERCENTILE):
        raise ValueError(f"bootstrap() computes bootstrap_bca or bootstrap_percentile, not {method.value}")
    statistic = as_statistic(statistic)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    seed = check_seed(seed)
    rng = make_rng(seed)
    # Sorted: the resamples then depend on the values as a multiset, not on their order, so the same data in
    # another order (a reordered dataset, which the gold fingerprint does not count) gives the same interval and no
    # order can be searched for a luckier draw. (Version 3 of both bootstraps; version 2 drew in the given order.)
    array = np.sort(as_values(values))
    n = array.shape[0]
    if n == 0:
        return None
    name = statistic.value if isinstance(statistic, Statistic) else getattr(statistic, "__name__", "custom")
    params: dict[str, Param] = {**rng_params(seed, resamples), "statistic": name}
    point, replicates, jackknife, resampler = _replicate(array, statistic, resamples, rng)
    params["resampler"] = resampler
    if n == 1:
        return undefined_interval(
            point=point,
            n=1,
            method=method,
            level=level,
            sides=sides,
            reason="one value: nothing to resample",
            params=params,
        )
    low, high, used, extra = bca_or_percentile(point, replicates, jackknife, level, sides, method)
    return finish(point, low, high, used, extra, replicates, n=n, level=level, sides=sides, params=params)


def _replicate(
    array: Floats, statistic: Statistic | VectorStatistic, resamples: int, rng: np.random.Generator
) -> tuple[float, Floats, Floats | str, str]:
    """The point value, the bootstrap replicates, the jackknife deviations (or why there are none), the engine."""
    n = array.shape[0]
    if array.min() == array.max():
        # Every resample is the data itself: no draw can change the statistic, so none is made.
        point = float(array[0]) if statistic is Statistic.MEAN else float(_evaluate(statistic, array[np.newaxis])[0])
        return point, np.full(resamples, point), np.zeros(n), "none: all values are equal"
    if statistic is Statistic.MEAN:
        point = float(array.mean())
        sums, engine = resampled_sums(array[:, np.newaxis], resamples, rng)
        # Jackknife deviations of the mean are proportional to the values' deviations; scale cancels in BCa.
        return point, sums[:, 0] / n, array - point, engine
    if statistic is Statistic.MEDIAN:
        replicates = resampled_statistic(array, resamples, rng, lambda data: _evaluate(Statistic.MEDIAN, data))
        return float(np.median(array)), replicates, _median_jackknife(array), "indices"
    function = statistic

    def vectorised(data: Floats) -> Floats:
        return _evaluate(function, data)

    point = float(vectorised(array[np.newaxis, :])[0])
    replicates = resampled_statistic(array, resamples, rng, vectorised)
    if n > JACKKNIFE_LIMIT:
        return point, replicates, f"jackknife of a custom statistic over more than {JACKKNIFE_LIMIT} values", "indices"
    return point, replicates, _brute_jackknife(array, vectorised), "indices"


def _evaluate(statistic: Statistic | VectorStatistic, data: Floats) -> Floats:
    """Row statistics of a (k x n) array as k float64 values."""
    if statistic is Statistic.MEAN:
        return np.asarray(data.mean(axis=-1), dtype=np.float64)
    if statistic is Statistic.MEDIAN:
        return np.asarray(np.median(data, axis=-1), dtype=np.float64)
    assert not isinstance(statistic, Statistic)
    result = np.asarray(statistic(data, axis=-1), dtype=np.float64)
    if result.shape != (data.shape[0],):
        raise ValueError(f"the statistic must return one value per row: got shape {result.shape} for {data.shape}")
    return result


def _median_jackknife(array: Floats) -> Floats:
    """Leave-one-out medians, one per sorted position (their order does not matter to BCa)."""
    ordered = np.sort(array)
    n = ordered.shape[0]
    if n < 2:
        return np.zeros(n)
    left_out = np.arange(n)
    remaining = n - 1

    def kth(k: int) -> Floats:
        # The k-th smallest of the n - 1 values left when the value at sorted position `left_out` is removed.
        return np.asarray(np.where(left_out > k, ordered[k], ordered[min(k + 1, n - 1)]), dtype=np.float64)

    middle = remaining // 2
    medians = kth(middle) if remaining % 2 else (kth(middle - 1) + kth(middle)) / 2.0
    return np.asarray(medians.mean() - medians, dtype=np.float64)


def _brute_jackknife(array: Floats, statistic: Callable[[Floats], Floats]) -> Floats:
    n = array.shape[0]
    if n < 2:
        return np.zeros(n)
    positions = np.arange(n - 1)
    results = np.empty(n, dtype=np.float64)
    chunk = max(1, (1 << 22) // n)
    for start in range(0, n, chunk):
        left_out = np.arange(start, min(n, start + chunk))
        index = positions[np.newaxis, :] + (positions[np.newaxis, :] >= left_out[:, np.newaxis])
        results[start : start + left_out.shape[0]] = statistic(array[index])
    return np.asarray(results.mean() - results, dtype=np.float64)


def bca_or_percentile(
    point: float,
    replicates: Floats,
    jackknife: Floats | str,
    level: float,
    sides: Sides,
    method: Method,
) -> tuple[float | None, float | None, bool, dict[str, Param]]:
    """Interval ends from replicates: BCa when asked for and defined, else percentile.

    ``jackknife`` holds the jackknife deviations (mean of leave-one-out values minus each one, any positive scale)
    or a string saying why there are none. Returns ``(low, high, bca_used, params)``; ``params`` carries the
    fallback reason or BCa's bias correction and acceleration.
    """
    below, above = tails(level, sides)
    if method in (Method.BOOTSTRAP_BCA, Method.CLUSTER_BOOTSTRAP_BCA):
        adjusted = _bca_tails(point, replicates, jackknife, below, above)
        if isinstance(adjusted, str):
            extra: dict[str, Param] = {"fallback_reason": adjusted}
        else:
            lower_p, upper_p, z0, acceleration = adjusted
            low = _quantile(replicates, lower_p)
            high = _quantile(replicates, upper_p)
            return low, high, True, {"bias_correction": z0, "acceleration": acceleration}
    else:
        extra = {}
    low = _quantile(replicates, below)
    high = _quantile(replicates, None if above is None else 1.0 - above)
    return low, high, False, extra


def _quantile(replicates: Floats, p: float | None) -> float | None:
    return None if p is None else float(np.quantile(replicates, p, method="linear"))


def _bca_tails(
    point: float, replicates: Floats, jackknife: Floats | str, below: float | None, above: float | None
) -> tuple[float | None, float | None, float, float] | str:
    """The BCa-adjusted quantile levels, or why BCa is undefined (Efron & Tibshirani 1993, §14.3)."""
    if isinstance(jackknife, str):
        return jackknife
    share = (np.count_nonzero(replicates < point) + np.count_nonzero(replicates <= point)) / (2 * replicates.size)
    if share <= 0.0 or share >= 1.0:
        return "every bootstrap replicate lies on one side of the estimate"
    z0 = normal_quantile(float(share))
    largest = float(np.max(np.abs(jackknife))) if jackknife.size else 0.0
    if largest == 0.0 or not np.isfinite(largest):
        return "the jackknife shows no spread (for example, all values are equal)"
    scaled = jackknife / largest  # the acceleration is scale-free; scaling keeps tiny deviations from underflowing
    acceleration = float(np.sum(scaled**3)) / (6.0 * float(np.sum(scaled**2)) ** 1.5)

    def adjust(tail: float) -> float | None:
        shifted = z0 + normal_quantile(tail)
        denominator = 1.0 - acceleration * shifted
        if denominator <= 0.0:
            return None
        return normal_cdf(z0 + shifted / denominator)

    lower_p = adjust(below) if below is not None else None
    upper_p = adjust(1.0 - above) if above is not None else None
    if (below is not None and lower_p is None) or (above is not None and upper_p is None):
        return "the acceleration is too large for the BCa correction at this level"
    return lower_p, upper_p, z0, acceleration


def finish(
    point: float,
    low: float | None,
    high: float | None,
    bca_used: bool,
    extra: dict[str, Param],
    replicates: Floats,
    *,
    n: int,
    level: float,
    sides: Sides,
    params: dict[str, Param],
    clusters: int | None = None,
    notes: tuple[Note, ...] = (),
) -> Interval:
    """Assemble a bootstrap Interval, recording a BCa fallback and zero spread."""
    clustered = clusters is not None
    if bca_used:
        method = Method.CLUSTER_BOOTSTRAP_BCA if clustered else Method.BOOTSTRAP_BCA
    else:
        method = Method.CLUSTER_BOOTSTRAP_PERCENTILE if clustered else Method.BOOTSTRAP_PERCENTILE
    if "fallback_reason" in extra:
        notes = (*notes, Note.BCA_FALLBACK)
        extra = {**extra, "requested": Method.CLUSTER_BOOTSTRAP_BCA.value if clustered else Method.BOOTSTRAP_BCA.value}
    if replicates.min() == replicates.max():
        notes = (*notes, Note.ZERO_SPREAD)
    return Interval(
        point=point,
        low=low,
        high=high,
        level=level,
        sides=sides,
        method=method,
        n=n,
        clusters=clusters,
        notes=notes,
        params={**params, **extra},
    )
