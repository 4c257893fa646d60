"""Input checks and quantile functions shared by the interval methods.

scipy is imported here lazily, inside the quantile functions that need it, so importing the stats package (and the
CLI) stays fast and works without the ``stats`` extra until a t or beta quantile is actually asked for; and then only
its compiled ufuncs are loaded, not the rest of ``scipy.special`` (:mod:`evalglass.core.stats._scipyfuncs`).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._scipyfuncs import scipy_ufuncs
from evalglass.core.stats.model import Interval, Method, Note, Param, Sides

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

_NORMAL = NormalDist()


class StatsDependencyError(RuntimeError):
    """A method needs scipy and it is not installed."""


def as_values(values: npt.ArrayLike, name: str = "values") -> Floats:
    """A 1-D float64 array of finite numbers, or a ValueError saying what is wrong."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite: NaN and infinities are not measurements")
    return array


def as_ids(ids: npt.ArrayLike, length: int, name: str) -> Ints:
    """A 1-D int64 array of ``length`` ids (cluster or example identifiers)."""
    array = np.asarray(ids)
    if array.ndim != 1 or array.shape[0] != length:
        raise ValueError(f"{name} must be one-dimensional with {length} entries, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got {array.dtype}")
    return array.astype(np.int64, copy=False)


def check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must lie strictly between 0 and 1, got {level}")
    return level


def check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"a bootstrap needs an explicit non-negative integer seed, got {seed!r}")
    return int(seed)


def tails(level: float, sides: Sides) -> tuple[float | None, float | None]:
    """The probability the interval leaves out below and above it; None for a side it does not have."""
    miss = 1.0 - check_level(level)
    sides = Sides(sides)
    if sides is Sides.TWO_SIDED:
        return miss / 2.0, miss / 2.0
    if sides is Sides.LOWER:
        return miss, None
    return None, miss


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def normal_cdf(x: float) -> float:
    return _NORMAL.cdf(x)


def _scipy_special() -> Any:
    """SciPy's ufuncs module (``stdtrit``, ``stdtr``, ``betaincinv``), loaded without the rest of ``scipy.special``
    (:mod:`evalglass.core.stats._scipyfuncs`: the same functions, 0.2 s less)."""
    try:
        return scipy_ufuncs()
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise StatsDependencyError(
            "this interval method needs scipy; install it with: pip install 'evalglass[stats]'"
        ) from exc


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(_scipy_special().stdtrit(df, p))


def t_cdf(x: float, df: float) -> float:
    """``P(T <= x)`` for Student's t with ``df`` degrees of freedom."""
    return float(_scipy_special().stdtr(df, x))


def beta_quantile(p: float, a: float, b: float) -> float:
    """The ``p`` quantile of the Beta(a, b) distribution."""
    return float(_scipy_special().betaincinv(a, b, p))


def undefined_interval(
    *,
    point: float,
    n: int,
    method: Method,
    level: float,
    sides: Sides,
    reason: str,
    clusters: int | None = None,
    notes: tuple[Note, ...] = (),
    params: dict[str, Param] | None = None,
) -> Interval:
    """An interval that has a point but no honest bounds, saying why in ``params["undefined_reason"]``."""
    return Interval(
        point=point,
        low=None,
        high=None,
        level=level,
        sides=sides,
        method=method,
        n=n,
        clusters=clusters,
        notes=(Note.UNDEFINED, *notes),
        params={**(params or {}), "undefined_reason": reason},
    )


def unseen_share(n: int, tail: float) -> float:
    """The largest share of a population that ``n`` draws, none of which fell in it, leave plausible: Wilson's
    bound for 0 successes in ``n`` at one tail of ``tail`` (``z**2 / (n + z**2)``, z its one-sided quantile). It
    shrinks as 1/n, where a t interval's half-width shrinks as 1/sqrt(n)."""
    z = normal_quantile(1.0 - tail)
    return z * z / (n + z * z)


def range_floor(
    point: float, n: int, minimum: float, maximum: float, below: float | None, above: float | None
) -> tuple[float | None, float | None]:
    """The ends an interval of a mean of ``n`` values known to lie in [minimum, maximum] takes where its sample shows
    no spread on that side (:func:`clipped_to_range`): an end that would sit on the point itself.

    n values that are all equal have a sample spread of zero, so a t, cluster or bootstrap interval is the point
    alone, and three examples would decide a gate with full certainty. What they do show is that no example seen
    scored otherwise: the share of the population that does is bounded as a proportion never observed in n
    (:func:`unseen_share`, Wilson's bound for 0 of n), and that share may score anywhere in the range. So the lower
    end is ``point - share * (point - minimum)`` and the upper ``point + share * (maximum - point)``. For values at
    an end of [0, 1] this is exactly Wilson's interval of n out of n (or 0 out of n), so a bounded score is never
    held to less than a proportion of the same values is; only a range of zero width (or a point at the range's
    end, on that side) leaves zero width. None for an end not asked for (``below``/``above`` None, as
    :func:`tails` gives them)."""
    low = None if below is None else point - unseen_share(n, below) * (point - minimum)
    high = None if above is None else point + unseen_share(n, above) * (maximum - point)
    return low, high


def floor_p_value(point: float, n: int, minimum: float, maximum: float) -> float:
    """The two-sided p-value of "the mean is 0" that the range floor (:func:`range_floor`, two-sided) of ``n``
    values in [minimum, maximum] with mean ``point`` supports: the smallest ``alpha`` at which the floor at
    ``1 - alpha`` excludes 0. It does when the unseen share ``z**2 / (n + z**2)`` is below the share ``r`` that would
    carry the mean to 0 from the far end of the range, i.e. ``z**2 < n * r / (1 - r)``. 1 for a mean of 0 (or no
    values); a test of values without spread is never more certain than their interval."""
    if point == 0.0 or n < 1:
        return 1.0
    reach = point - minimum if point > 0.0 else maximum - point
    share = abs(point) / reach if reach > 0.0 else 1.0
    if share >= 1.0:
        return 0.0
    return min(1.0, 2.0 * (1.0 - normal_cdf(math.sqrt(n * share / (1.0 - share)))))


def clipped_ends(
    low: float | None, high: float | None, minimum: float, maximum: float
) -> tuple[float | None, float | None]:
    """An interval's ends moved inside [minimum, maximum] (None, an end not asked for, stays None): the one clip
    every interval producer applies (:func:`clipped_to_range` for an :class:`Interval`; the adjusted intervals of
    ``multiple.compare_variants`` end by end)."""
    return (None if low is None else max(low, minimum)), (None if high is None else min(high, maximum))


def floored_ends(
    point: float, low: float | None, high: float | None, floor: tuple[float | None, float | None]
) -> tuple[float | None, float | None]:
    """An interval's ends, each that sits on ``point`` (no spread on that side) replaced by the range floor's
    (:func:`range_floor`); None stays None, and an end beyond the point is kept as computed."""
    floor_low, floor_high = floor
    return (
        floor_low if low is not None and floor_low is not None and low >= point else low,
        floor_high if high is not None and floor_high is not None and high <= point else high,
    )


#: Methods whose interval never sits on its point: Wilson's contains the range floor (its lower end is at most
#: ``p * n / (n + z**2)``, the floor's, for every p), Clopper-Pearson's is exact, and Newcombe's is built from
#: Wilson's. They are left as computed, so the floor never moves a proportion's figures by a rounding error.
_KEEP_FLOOR = frozenset({Method.WILSON, Method.CLOPPER_PEARSON, Method.NEWCOMBE_PAIRED})


def clipped_to_range(interval: Interval, minimum: float, maximum: float) -> Interval:
    """The interval of a mean (or a difference of means) whose values the caller knows lie in [minimum, maximum]:
    an end that sits on the point takes the range floor's (:func:`range_floor`), then the ends move inside the range.

    The floor is the one rule for zero spread: n equal values give a t, cluster or bootstrap interval of zero width,
    which would decide a gate on three examples with full certainty (an unearned pass, or an unearned fail). It is
    recorded as ``params["range_floor"]``. It applies only where the sample shows no spread (an end on the point),
    so an interval with spread keeps its figures; a spread that is tiny but not zero is the method's to answer for
    (a limit, stated in docs/reading-the-numbers.md). Proportion methods never sit on their point (``_KEEP_FLOOR``).
    An interval without ends (undefined: one value, one cluster) stays undefined. With clusters the floor counts
    clusters, not values (the independent units).

    The clip: such a mean, and the truth it estimates, cannot leave the range, whereas a t interval's symmetric ends
    can (0/0.5/1 scores near 1). For a difference of two such means the range is :func:`difference_range`. A clip
    is recorded as ``params["clipped_to_unit_range"]`` for [0, 1] and ``params["clipped_to_scale"]`` for any other
    range. Each end stays on its side of the point, since the point lies in the range.
    """
    params = dict(interval.params)
    low, high = interval.low, interval.high
    if interval.method not in _KEEP_FLOOR and minimum <= interval.point <= maximum:
        below, above = tails(interval.level, interval.sides)
        units = interval.clusters if interval.clusters is not None else interval.n
        floor = range_floor(interval.point, units, minimum, maximum, below, above)
        floored = floored_ends(interval.point, low, high, floor)
        if floored != (low, high):
            low, high = floored
            params["range_floor"] = True
    clipped = clipped_ends(low, high, minimum, maximum)
    if clipped != (low, high):
        low, high = clipped
        params["clipped_to_unit_range" if (minimum, maximum) == (0.0, 1.0) else "clipped_to_scale"] = True
    if (low, high) == (interval.low, interval.high):
        return interval
    return interval.model_copy(update={"low": low, "high": high, "params": params})


def difference_range(minimum: float, maximum: float) -> tuple[float, float]:
    """The range a difference of two means in [minimum, maximum] lies in (and any per-example difference of two
    values in it): ``±(maximum - minimum)``."""
    return minimum - maximum, maximum - minimum


def symmetric_ends(
    point: float, std_error: float, below: float | None, above: float | None, df: float
) -> tuple[float | None, float | None]:
    """``point -/+ t(df) * std_error`` for the tails asked for; no scipy call when the error is zero."""
    if std_error == 0.0:
        return (point if below is not None else None), (point if above is not None else None)
    low = point - t_quantile(1.0 - below, df) * std_error if below is not None else None
    high = point + t_quantile(1.0 - above, df) * std_error if above is not None else None
    return low, high
