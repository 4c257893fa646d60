"""Decidability advice: roughly how many examples a one-sided bound would need to clear a threshold."""

from __future__ import annotations

import math

from evalglass.core.stats._common import check_level, normal_quantile
from evalglass.core.stats.model import Direction


def required_n(
    *,
    point: float,
    threshold: float,
    direction: Direction | str,
    level: float = 0.95,
    variance: float | None = None,
    binary: bool = False,
) -> int | None:
    """The smallest n at which the one-sided bound at ``level`` would clear ``threshold``, if the point stayed put.

    None when the point is not strictly on the good side of the threshold (no number of examples helps then), or
    when the margin is so thin that the count overflows a float.

    Binary (``binary=True``; ``variance`` ignored): the Wilson bound clears T exactly when
    ``n > z**2 * T * (1 - T) / (p - T)**2``, the score test's variance taken at the threshold. This is exact for the
    Wilson interval at a fixed observed proportion p, and stays finite at p = 1.

    Continuous: ``variance`` is the per-example variance (the sample variance for a Student-t interval; for a
    clustered interval pass ``n * std_error**2``, which carries the design effect, assuming new examples arrive in
    clusters like the present ones). Then ``n > (z * sigma / (point - T))**2``. This uses the normal quantile z
    where the interval uses t(n - 1), so for small answers the real need is somewhat larger (about 10% at n = 20);
    the answer is never below 2, the fewest values with a t interval.
    """
    margin = point - threshold if Direction(direction) is Direction.HIGHER_IS_BETTER else threshold - point
    if not math.isfinite(margin) or margin <= 0.0:
        return None
    z = normal_quantile(check_level(level))
    if binary:
        if not (0.0 <= point <= 1.0 and 0.0 <= threshold <= 1.0):
            raise ValueError("a binary metric's point and threshold are proportions in [0, 1]")
        return _count(z, margin, threshold * (1.0 - threshold), 1)
    if variance is None or not math.isfinite(variance) or variance < 0.0:
        raise ValueError("a continuous metric needs its per-example variance (finite, non-negative)")
    return _count(z, margin, variance, 2)


def _count(z: float, margin: float, variance: float, fewest: int) -> int | None:
    """The smallest integer n above ``z**2 * variance / margin**2``, at least ``fewest``; None past float range."""
    try:
        ratio = z / margin
    except OverflowError:
        return None
    needed = ratio * ratio * variance  # float multiplication saturates to inf instead of raising
    if not math.isfinite(needed):
        return None
    return max(fewest, math.floor(needed) + 1)


#: The power the comparative gates' statements are made at: the conventional 80%.
POWER = 0.8


def pairs_to_detect(*, drop: float, std_dev: float, level: float = 0.95, power: float = POWER) -> int | None:
    """About how many paired examples it takes to tell a true drop of ``drop`` from no change at all.

    The one-sided test at ``level`` on the mean paired difference, with ``std_dev`` the per-example standard
    deviation of the differences (for clustered data pass ``sqrt(n) * std_error``, which carries the design
    effect), rejects "no change" with probability ``power`` when ``n >= ((z_level + z_power) * std_dev / drop)**2``
    (the normal approximation; small answers need somewhat more). None when ``drop`` is not positive, when the
    differences show no spread (then nothing can be said from this data) or past float range.
    """
    if not (math.isfinite(drop) and drop > 0.0) or not (math.isfinite(std_dev) and std_dev > 0.0):
        return None
    z = normal_quantile(check_level(level)) + normal_quantile(check_level(power))
    return _count(z, drop, std_dev * std_dev, 2)


def detectable_drop(*, pairs: int, std_dev: float, level: float = 0.95, power: float = POWER) -> float | None:
    """The smallest true drop that ``pairs`` paired examples detect with probability ``power`` (one-sided at
    ``level``): ``(z_level + z_power) * std_dev / sqrt(pairs)``. None without pairs or without spread."""
    if pairs < 1 or not (math.isfinite(std_dev) and std_dev > 0.0):
        return None
    z = normal_quantile(check_level(level)) + normal_quantile(check_level(power))
    return z * std_dev / math.sqrt(pairs)
