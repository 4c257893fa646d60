"""The value every interval method returns, and the small vocabularies it is described with."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: A parameter recorded with an interval: plain JSON scalars only, so an artifact can carry it verbatim.
Param = str | int | float | bool | None

#: Below this many clusters a cluster-robust interval is flagged ``few_clusters``. See docs/reading-the-numbers.md.
FEW_CLUSTERS_BELOW = 30


class Method(StrEnum):
    """How an interval was computed. The value is what artifacts record."""

    WILSON = "wilson"
    CLOPPER_PEARSON = "clopper_pearson"
    STUDENT_T = "student_t"
    BOOTSTRAP_BCA = "bootstrap_bca"
    BOOTSTRAP_PERCENTILE = "bootstrap_percentile"
    CLUSTER_T = "cluster_t"
    CLUSTER_BOOTSTRAP_BCA = "cluster_bootstrap_bca"
    CLUSTER_BOOTSTRAP_PERCENTILE = "cluster_bootstrap_percentile"
    #: Paired differences of binary values only (Newcombe 1998, method 10); never a single run's interval.
    NEWCOMBE_PAIRED = "newcombe_paired"

    @property
    def binary_only(self) -> bool:
        return self in (Method.WILSON, Method.CLOPPER_PEARSON)

    @property
    def clustered(self) -> bool:
        return self in (Method.CLUSTER_T, Method.CLUSTER_BOOTSTRAP_BCA, Method.CLUSTER_BOOTSTRAP_PERCENTILE)

    @property
    def resampling(self) -> bool:
        return self in (
            Method.BOOTSTRAP_BCA,
            Method.BOOTSTRAP_PERCENTILE,
            Method.CLUSTER_BOOTSTRAP_BCA,
            Method.CLUSTER_BOOTSTRAP_PERCENTILE,
        )


class Sides(StrEnum):
    """Which ends an interval has.

    ``lower`` is a lower confidence bound (the interval runs from ``low`` upwards, ``high`` is None); ``upper`` is
    the mirror image. ``level`` is the coverage of whatever was asked for: a one-sided 95% bound misses the truth
    on its side 5% of the time, a two-sided 95% interval misses 2.5% on each side.
    """

    TWO_SIDED = "two_sided"
    LOWER = "lower"
    UPPER = "upper"


class Direction(StrEnum):
    # Which way a metric improves: a gate's ``direction``, and what decides which bound is the unfavourable one. The
    # one definition (core.gates uses it too). Functions taking a direction also accept its string value. (A comment,
    # not a docstring: a docstring would become the description in the published JSON Schemas.)

    HIGHER_IS_BETTER = "higher_is_better"
    LOWER_IS_BETTER = "lower_is_better"

    @property
    def unfavourable_side(self) -> Sides:
        return Sides.LOWER if self is Direction.HIGHER_IS_BETTER else Sides.UPPER


class Note(StrEnum):
    """Something a reader must know before trusting the interval."""

    #: Too few observations (or clusters) for this method: ``low``/``high`` are None, there is no honest bound.
    UNDEFINED = "undefined"
    #: The data show no spread, so the interval has zero width. True of the sample, not proof about the population.
    ZERO_SPREAD = "zero_spread"
    #: Fewer clusters than :data:`FEW_CLUSTERS_BELOW`: the cluster-robust interval is likely too narrow.
    FEW_CLUSTERS = "few_clusters"
    #: BCa was asked for but is undefined on this data; the percentile interval was computed instead.
    BCA_FALLBACK = "bca_fallback"


class Interval(BaseModel):
    """A point value with its confidence interval and everything that shaped it.

    ``low``/``high`` are None on a side the interval does not have (``sides``) and on both sides when the method is
    undefined for this data (note ``undefined``). ``params`` records every input beyond the data that affects the
    numbers (seed, resamples, statistic, fallback reason ...), so the same data and params reproduce them exactly.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    point: float
    low: float | None
    high: float | None
    level: float = Field(gt=0.0, lt=1.0)
    sides: Sides = Sides.TWO_SIDED
    method: Method
    n: int = Field(ge=1)
    clusters: int | None = Field(default=None, ge=1)
    notes: tuple[Note, ...] = ()
    params: dict[str, Param] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "Interval":
        if self.low is not None and self.high is not None and not self.low <= self.high:
            raise ValueError(f"interval low {self.low} exceeds high {self.high}")
        if self.method.clustered != (self.clusters is not None):
            raise ValueError("clusters is recorded exactly when the method is cluster-aware")
        if Note.UNDEFINED not in self.notes:
            if self.sides is not Sides.UPPER and self.low is None:
                raise ValueError("a defined interval with a lower side needs low")
            if self.sides is not Sides.LOWER and self.high is None:
                raise ValueError("a defined interval with an upper side needs high")
        if self.sides is Sides.LOWER and self.high is not None:
            raise ValueError("a lower bound has no high end")
        if self.sides is Sides.UPPER and self.low is not None:
            raise ValueError("an upper bound has no low end")
        return self

    @property
    def defined(self) -> bool:
        return Note.UNDEFINED not in self.notes

    @property
    def few_clusters(self) -> bool:
        return Note.FEW_CLUSTERS in self.notes

    def bound(self, direction: Direction | str) -> float | None:
        """The unfavourable end for ``direction``: ``low`` when higher is better, ``high`` when lower is better."""
        return self.low if Direction(direction) is Direction.HIGHER_IS_BETTER else self.high


class Reducer(StrEnum):
    MEAN = "mean"
    MAJORITY = "majority"
    MAX = "max"
    MIN = "min"
    PASS_AT_K = "pass_at_k"
    AT_LEAST_K = "at_least_k"

    @property
    def needs_k(self) -> bool:
        return self in (Reducer.PASS_AT_K, Reducer.AT_LEAST_K)

    @property
    def depends_on_count(self) -> bool:
        """Whether the expected per-example value moves with the number of samples reduced, so that how many
        samples each example has is part of what the number means (a gate's approval binds it).

        ``max`` rises and ``min`` falls with more samples; ``majority`` drifts towards 0 or 1 (and an even count
        adds ties, which go to the unfavourable side: ``Ties.against``); ``at_least_k`` is P(Binomial(n, p) >= k),
        rising in n. ``mean`` and ``pass_at_k`` (the unbiased estimator ``1 - C(n - c, k) / C(n, k)``, whose
        expectation is ``1 - (1 - p)^k`` for every n >= k) do not: more samples only make them more precise, which
        is evidence, not a different measurement."""
        return self in (Reducer.MAX, Reducer.MIN, Reducer.MAJORITY, Reducer.AT_LEAST_K)


class Ties(StrEnum):
    """How ``majority`` breaks a tie between equally frequent values: take the lowest or the highest of them."""

    LOW = "low"
    HIGH = "high"

    @classmethod
    def against(cls, direction: Direction | None) -> "Ties":
        """The unfavourable side for ``direction``, which a tie goes to so that a split vote never reads as a win:
        ``low`` when higher is better, ``high`` when lower is better. ``None`` (gates that disagree on the
        direction; a config refuses that for a ``majority`` metric with samples, ``engine.spec.config``, so only a
        run record's config from before that rule has it) reads as ``low``, the rule such runs were decided by."""
        return cls.HIGH if direction is Direction.LOWER_IS_BETTER else cls.LOW


class ScaleSpec(BaseModel):
    """The range a metric's values can take; needed for sensitivity bounds."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> "ScaleSpec":
        if not (math.isfinite(self.min) and math.isfinite(self.max) and self.min < self.max):
            raise ValueError(f"scale needs finite min < max, got [{self.min}, {self.max}]")
        return self


UNIT_SCALE = ScaleSpec(min=0.0, max=1.0)
