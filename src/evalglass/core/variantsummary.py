"""The scorecard's side-by-side summary of a run with variants (``core/variants.py`` computes it)."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.stats.multiplemodel import ADJUSTMENT, VariantComparison
from evalglass.core.usage import TokenUsage


class VariantTotals(BaseModel):
    """What one variant's calls cost: tokens (and cost) per model, as a run without variants reports them."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    usage: tuple[TokenUsage, ...] = ()


class VariantsSummary(BaseModel):
    """Every metric side by side across the run's variants."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    names: tuple[str, ...] = Field(description="The variants, in the order the config declares them.")
    level: float = Field(gt=0, lt=1, description="The family-wise confidence level of the adjusted intervals.")
    adjustment: str = Field(
        default=ADJUSTMENT,
        description="How intervals are adjusted for the number of pairs: Holm's step-down procedure per metric.",
    )
    metrics: tuple[VariantComparison, ...]
    totals: tuple[VariantTotals, ...] = ()
