"""Input checks and quantile functions shared by the interval methods.

scipy is imported here lazily, inside the quantile functions that need it, so importing the stats package (and the
CLI) stays fast and works without the ``stats`` extra until a t or beta quantile is actually asked for; and then only
its compiled ufuncs are loaded, not the rest of ``scipy.special`` (:mod:`evalglass.core.stats._scipyfuncs`).
"""

from __future__ import annotations

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


def clipped_ends(
    low: float | None, high: float | None, minimum: float, maximum: float
) -> tuple[float | None, float | None]:
    """An interval's ends moved inside [minimum, maximum] (None, an end not asked for, stays None): the one clip
    every interval producer applies (:func:`clipped_to_range` for an :class:`Interval`; the adjusted intervals of
    ``multiple.compare_variants`` end by end)."""
    return (None if low is None else max(low, minimum)), (None if high is None else min(high, maximum))


def clipped_to_range(interval: Interval, minimum: float, maximum: float) -> Interval:
    """The interval with its ends moved inside [minimum, maximum]; the same interval when they are inside already.

    For a mean whose every value the caller knows lies in the range: such a mean, and the truth it estimates, cannot
    leave it, whereas a t interval's symmetric ends can (0/0.5/1 scores near 1). For a difference of two such means
    the range is :func:`difference_range`. A clip is recorded as ``params["clipped_to_unit_range"]`` for [0, 1] and
    ``params["clipped_to_scale"]`` for any other range. Each end stays on its side of the point, since the point
    lies in the range.
    """
    low, high = clipped_ends(interval.low, interval.high, minimum, maximum)
    if (low, high) == (interval.low, interval.high):
        return interval
    key = "clipped_to_unit_range" if (minimum, maximum) == (0.0, 1.0) else "clipped_to_scale"
    return interval.model_copy(update={"low": low, "high": high, "params": {**interval.params, key: True}})


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
