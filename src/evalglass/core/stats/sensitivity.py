"""How far missing measurements could move a mean: bounds shown beside the point value, never mixed into it."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.stats._common import as_values
from evalglass.core.stats.model import Direction, ScaleSpec


class ExtremeMeans(BaseModel):
    """The mean if every excluded example had scored at the unfavourable end (``worst``) or favourable end
    (``best``) of the scale; the scorecard shows it as an estimate's ``Sensitivity`` (``low``/``high``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    worst: float
    best: float
    included: int = Field(ge=0)
    excluded: int = Field(ge=0)
    scale_min: float
    scale_max: float
    direction: Direction


def sensitivity_bounds(
    values: npt.ArrayLike, *, excluded: int, scale: ScaleSpec | None, direction: Direction | str
) -> ExtremeMeans | None:
    """Worst- and best-case means counting each of the ``excluded`` examples at one end of the ``scale``.

    ``worst = (sum(values) + excluded * unfavourable_end) / (n + excluded)``, and ``best`` with the favourable end
    (for a binary metric where higher is better: every excluded example failing, or passing). None when the scale
    is unbounded (no finite worst case exists) or when there is nothing at all (no values, nothing excluded).
    With nothing excluded both equal the mean. A value outside the scale is a ValueError: the scale is wrong.
    """
    if isinstance(excluded, bool) or not isinstance(excluded, int) or excluded < 0:
        raise ValueError(f"excluded must be a non-negative count, got {excluded!r}")
    array = as_values(values)
    n = array.shape[0]
    if scale is None or n + excluded == 0:
        return None
    if n and (array.min() < scale.min or array.max() > scale.max):
        raise ValueError(f"values lie outside the declared scale [{scale.min}, {scale.max}]")
    direction = Direction(direction)
    higher = direction is Direction.HIGHER_IS_BETTER
    unfavourable, favourable = (scale.min, scale.max) if higher else (scale.max, scale.min)
    total = float(np.sum(array))
    return ExtremeMeans(
        worst=(total + excluded * unfavourable) / (n + excluded),
        best=(total + excluded * favourable) / (n + excluded),
        included=n,
        excluded=excluded,
        scale_min=scale.min,
        scale_max=scale.max,
        direction=direction,
    )
