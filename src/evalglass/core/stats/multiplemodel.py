"""The values of a comparison of every pair of variants (``multiple.py`` computes them): no numpy, so a scorecard
that holds them loads without the statistics stack."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from pydantic import BaseModel, ConfigDict, Field

#: The most variants a run compares: 28 pairs per metric at 8, 190 at 20.
MAX_VARIANTS = 20

ADJUSTMENT = "holm"


class PairComparison(BaseModel):
    """``first`` minus ``second`` over the examples both measured, with its unadjusted and Holm-adjusted interval.

    Ends are None when the difference has no interval (fewer than two pairs)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    first: str
    second: str
    n: int = Field(ge=0, description="Examples both variants measured (scored and valid).")
    difference: float | None = Field(description="Mean of first minus second over those examples.")
    low: float | None = Field(description="The Holm-adjusted interval's low end.")
    high: float | None
    unadjusted_low: float | None = Field(description="The paired t interval at the run's level, unadjusted.")
    unadjusted_high: float | None
    p_value: float = Field(ge=0, le=1, description="Two-sided paired t test of no difference (1 when undefined).")
    level: float = Field(gt=0, lt=1, description="The level the adjusted interval is computed at.")
    distinguishable: bool = Field(description="Holm's procedure rejects 'no difference' at the run's level.")


class VariantComparison(BaseModel):
    """One metric across the run's variants: every pair, and the groups the data cannot separate."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    metric: str
    level: float = Field(gt=0, lt=1, description="The family-wise confidence level.")
    adjustment: str = ADJUSTMENT
    variants: tuple[str, ...]
    higher_is_better: bool = True
    means: tuple[float | None, ...] = Field(description="Per variant, its mean over its included examples.")
    pairs: tuple[PairComparison, ...]
    groups: tuple[tuple[str, ...], ...] = Field(
        description="Maximal sets of variants no pair of which is distinguishable at this n, best mean first."
    )
