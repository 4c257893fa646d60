"""How far missing measurements could move a mean: bounds shown beside the point value, never mixed into it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.stats._common import as_values
from evalglass.core.stats.model import Direction


class Scale(BaseModel):
    """The range a metric's values can take. Both ends known → bounded; otherwise no sensitivity bound exists."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"scale low {self.low} must be below high {self.high}")
        return self

    @classmethod
    def binary(cls) -> Scale:
        return cls(low=0.0, high=1.0)

    @classmethod
    def bounded(cls, low: float, high: float) -> Scale:
        return cls(low=low, high=high)

    @classmethod
    def unbounded(cls) -> Scale:
        return cls()

    @property
    def is_bounded(self) -> bool:
        return self.low is not None and self.high is not None


class SensitivityBounds(BaseModel):
    """The mean if every excluded example had scored at the unfavourable end (``worst``) or favourable end."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    worst: float
    best: float
    included: int = Field(ge=0)
    excluded: int = Field(ge=0)
    scale_low: float
    scale_high: float
    direction: Direction


def sensitivity_bounds(
    values: npt.ArrayLike, *, excluded: int, scale: Scale, direction: Direction | str
) -> SensitivityBounds | None:
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
    if not scale.is_bounded or n + excluded == 0:
        return None
    assert scale.low is not None and scale.high is not None
    if n and (array.min() < scale.low or array.max() > scale.high):
        raise ValueError(f"values lie outside the declared scale [{scale.low}, {scale.high}]")
    direction = Direction(direction)
    higher = direction is Direction.HIGHER_IS_BETTER
    unfavourable, favourable = (scale.low, scale.high) if higher else (scale.high, scale.low)
    total = float(np.sum(array))
    return SensitivityBounds(
        worst=(total + excluded * unfavourable) / (n + excluded),
        best=(total + excluded * favourable) / (n + excluded),
        included=n,
        excluded=excluded,
        scale_low=scale.low,
        scale_high=scale.high,
        direction=direction,
    )
