"""The compact result of a run: the verdict payload plus every metric's estimate and population."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.estimate import Estimate
from evalglass.core.population import Population
from evalglass.core.verdict import VerdictPayload

SCORECARD_SCHEMA: Final = "evalglass.scorecard/1"


class MetricSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: str
    description: str | None = None
    uses_reference: bool
    estimate: Estimate | None = Field(description="None when no score was measured (nothing included).")
    population: Population


class DatasetSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    path: str
    fingerprint: str
    examples: int = Field(ge=0)
    malformed_lines: int = Field(default=0, ge=0)


class Scorecard(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal["evalglass.scorecard/1"] = SCORECARD_SCHEMA
    run_id: str
    created_at: str
    tool_version: str
    dataset: DatasetSummary
    decision: VerdictPayload
    metrics: tuple[MetricSummary, ...]

    def metric(self, name: str) -> MetricSummary | None:
        return next((item for item in self.metrics if item.name == name), None)
