"""The number a metric reports: the point, its interval, and how far excluded examples could move it."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.stats import Interval, Method, Reducer


class IntervalSpec(BaseModel):
    """How a metric's interval is computed. ``auto``: Wilson for 0/1 values, Student-t otherwise (cluster-robust
    t when the dataset declares clusters). Bootstrap methods are seeded so the interval reproduces exactly."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    method: Method | Literal["auto"] = "auto"
    level: float = Field(default=0.95, ge=0.5, le=0.9999, description="Two-sided confidence level.")
    resamples: int = Field(default=2000, ge=100, le=100_000, description="Bootstrap resamples.")
    seed: int = Field(default=0, ge=0, description="Bootstrap seed (recorded with the interval).")

    @property
    def override(self) -> Method | None:
        return None if self.method == "auto" else Method(self.method)


class Sensitivity(BaseModel):
    """The value if every excluded example had scored the scale's minimum (``low``) or maximum (``high``).

    Shown beside the point, never mixed into it: it makes visible how much the unmeasured examples could matter.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    low: float
    high: float
    excluded: int = Field(ge=0)
    scale_min: float
    scale_max: float

    @model_validator(mode="after")
    def _ordered(self) -> "Sensitivity":
        if not self.low <= self.high:
            raise ValueError(f"sensitivity low {self.low} exceeds high {self.high}")
        return self


class Estimate(BaseModel):
    """Point value over the included examples, with the interval and sensitivity bounds that qualify it.

    With several samples per example, the samples were first reduced per example (``reducer``) and ``n`` counts
    examples, ``samples`` the sample scores behind them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    point: float
    n: int = Field(ge=1, description="Included examples (scored and valid after reduction).")
    interval: Interval | None = None
    interval_problem: str | None = Field(
        default=None, description="Why no interval was computed, e.g. a method that does not fit these values."
    )
    sensitivity: Sensitivity | None = None
    reducer: Reducer | None = None
    k: int | None = None
    samples: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> "Estimate":
        if not math.isfinite(self.point):
            raise ValueError(f"estimate point must be finite, got {self.point!r}")
        if self.interval is not None:
            if not math.isclose(self.interval.point, self.point, rel_tol=1e-12, abs_tol=1e-12):
                raise ValueError(f"interval point {self.interval.point} differs from the estimate {self.point}")
            if self.interval.n != self.n:
                raise ValueError(f"interval n {self.interval.n} differs from the estimate's n {self.n}")
        if self.sensitivity is not None and not (
            self.sensitivity.low - 1e-12 <= self.point <= self.sensitivity.high + 1e-12
        ):
            raise ValueError("sensitivity bounds must contain the point")
        return self
