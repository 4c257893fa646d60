"""Intervals for a proportion: the mean of a binary (0/1) metric.

Both take the count of successes and n, so a caller that already has counts never builds an array.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import as_values, beta_quantile, normal_quantile, tails
from evalglass.core.stats.model import Interval, Method, Sides


def is_binary(values: npt.ArrayLike) -> bool:
    """Whether every value is exactly 0.0 or 1.0 (vacuously true for no values)."""
    array = as_values(values)
    return bool(np.all((array == 0.0) | (array == 1.0)))


def count_successes(values: npt.ArrayLike) -> tuple[int, int]:
    """``(successes, n)`` of binary values; a ValueError if any value is not 0 or 1."""
    array = as_values(values)
    ones = int(np.count_nonzero(array == 1.0))
    zeros = int(np.count_nonzero(array == 0.0))
    if ones + zeros != array.shape[0]:
        raise ValueError("a proportion interval needs binary values: every value must be exactly 0.0 or 1.0")
    return ones, array.shape[0]


def _check_counts(successes: int, n: int) -> tuple[int, int]:
    """The counts as Python ints (numpy integers accepted), or a ValueError."""
    if isinstance(successes, bool) or isinstance(n, bool):
        raise ValueError("successes and n are counts, not bools")
    if not isinstance(successes, int | np.integer) or not isinstance(n, int | np.integer):
        raise ValueError(f"successes and n must be integers, got {successes!r} and {n!r}")
    successes, n = int(successes), int(n)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    return successes, n


def wilson(successes: int, n: int, *, level: float = 0.95, sides: Sides = Sides.TWO_SIDED) -> Interval | None:
    """Wilson score interval for ``successes`` out of ``n``; None when n is 0.

    The interval is the set of proportions p a score test at this level would not reject: the p with
    ``|p̂ - p| <= z * sqrt(p(1-p)/n)``. Solving that quadratic gives the closed form below. It stays inside [0, 1],
    has a non-zero width at 0/n and n/n, and always contains p̂.
    """
    successes, n = _check_counts(successes, n)
    if n == 0:
        return None
    below, above = tails(level, sides)
    p = successes / n
    low = _wilson_end(p, n, below, -1.0) if below is not None else None
    high = _wilson_end(p, n, above, +1.0) if above is not None else None
    if low is not None:
        low = 0.0 if successes == 0 else min(max(low, 0.0), p)
    if high is not None:
        high = 1.0 if successes == n else max(min(high, 1.0), p)
    return Interval(
        point=p,
        low=low,
        high=high,
        level=level,
        sides=sides,
        method=Method.WILSON,
        n=n,
        params={"successes": successes},
    )


def _wilson_end(p: float, n: int, tail: float, sign: float) -> float:
    z = normal_quantile(1.0 - tail)
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    return centre + sign * half


def clopper_pearson(successes: int, n: int, *, level: float = 0.95, sides: Sides = Sides.TWO_SIDED) -> Interval | None:
    """Clopper–Pearson ("exact") interval for ``successes`` out of ``n``; None when n is 0.

    Each end is the proportion at which the binomial tail probability of the observed count equals the tail the
    interval leaves out, read from Beta quantiles. Coverage is at least the nominal level for every true p, which
    makes it the conservative choice for safety gates and zero-failure suites. Needs scipy.
    """
    successes, n = _check_counts(successes, n)
    if n == 0:
        return None
    below, above = tails(level, sides)
    p = successes / n
    low: float | None = None
    high: float | None = None
    if below is not None:
        low = 0.0 if successes == 0 else min(beta_quantile(below, successes, n - successes + 1), p)
    if above is not None:
        high = 1.0 if successes == n else max(beta_quantile(1.0 - above, successes + 1, n - successes), p)
    return Interval(
        point=p,
        low=low,
        high=high,
        level=level,
        sides=sides,
        method=Method.CLOPPER_PEARSON,
        n=n,
        params={"successes": successes},
    )
