"""The number a metric reports, with how it was obtained."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Estimate(BaseModel):
    """Point value over the included population, with its interval when one was computed.

    ``method`` and ``params`` record everything that shaped the number (estimator, resamples, seed), so a verdict
    can be reproduced exactly from the recorded scores.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    point: float
    n: int = Field(ge=1, description="Included scores (scored+valid) the point was computed from.")
    method: str = "mean"
    low: float | None = None
    high: float | None = None
    level: float | None = Field(default=None, gt=0, lt=1)
    clusters: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Estimate:
        for name in ("point", "low", "high"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"estimate {name} must be finite, got {value!r}")
        if (self.low is None) != (self.high is None):
            raise ValueError("an interval needs both bounds")
        if self.low is not None and self.high is not None:
            if self.level is None:
                raise ValueError("an interval needs its confidence level")
            if not self.low <= self.point <= self.high:
                raise ValueError(f"interval [{self.low}, {self.high}] does not contain the point {self.point}")
        return self
