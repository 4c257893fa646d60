"""Student-t interval for the mean of continuous scores."""

from __future__ import annotations

import math

import numpy.typing as npt

from evalglass.core.stats._common import as_values, symmetric_ends, tails, undefined_interval
from evalglass.core.stats.model import Interval, Method, Note, Param, Sides


def student_t(values: npt.ArrayLike, *, level: float = 0.95, sides: Sides = Sides.TWO_SIDED) -> Interval | None:
    """``mean -/+ t(n-1) * s / sqrt(n)``; None when there are no values.

    One value has a mean but no spread to estimate, so the interval is undefined (``low``/``high`` None, note
    ``undefined``) rather than a zero-width interval that would look certain. Values that are all equal give a
    zero-width interval with note ``zero_spread``. The ends can leave the range the values can take (0/0.5/1 scores
    near 1): :func:`~evalglass.core.stats.choose.confidence_interval` clips them to a metric's range. Needs scipy for
    the t quantile (except at zero spread).
    """
    array = as_values(values)
    n = array.shape[0]
    if n == 0:
        return None
    constant = bool(array.min() == array.max())
    # Summation rounding would turn identical values into a mean a hair off and a tiny non-zero spread.
    point = float(array[0]) if constant else float(array.mean())
    if n == 1:
        return undefined_interval(
            point=point,
            n=1,
            method=Method.STUDENT_T,
            level=level,
            sides=sides,
            reason="one value: no spread to estimate",
        )
    below, above = tails(level, sides)
    std_error = 0.0 if constant else float(array.std(ddof=1)) / math.sqrt(n)
    low, high = symmetric_ends(point, std_error, below, above, n - 1)
    params: dict[str, Param] = {"df": n - 1, "std_error": std_error}
    return Interval(
        point=point,
        low=low,
        high=high,
        level=level,
        sides=sides,
        method=Method.STUDENT_T,
        n=n,
        notes=(Note.ZERO_SPREAD,) if std_error == 0.0 else (),
        params=params,
    )
