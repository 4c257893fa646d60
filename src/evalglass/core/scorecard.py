"""The compact result of a run: the verdict payload plus every metric's estimate and population."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.checks import BindingStatus, CheckOutcome, CheckReason, CheckResult, Repair
from evalglass.core.estimate import Estimate
from evalglass.core.population import Population
from evalglass.core.verdict import VerdictPayload

SCORECARD_SCHEMA: Final = "evalglass.scorecard/1"


class MetricSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    type: str
    description: str | None = None
    uses_reference: bool
    estimate: Estimate | None = Field(description="None when no score was measured (nothing included).")
    population: Population


#: How many malformed dataset lines a summary names by line (the rest are counted, and each is in scores.jsonl).
MALFORMED_SHOWN = 5


class DatasetSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    path: str
    fingerprint: str
    examples: int = Field(ge=0)
    malformed_lines: int = Field(default=0, ge=0)
    first_malformed: tuple[int, ...] = Field(
        default=(),
        max_length=MALFORMED_SHOWN,
        description=f"Line numbers of the first (at most {MALFORMED_SHOWN}) malformed lines, for the summary.",
    )


class CheckSummary(BaseModel):
    """One standalone check's result as reports show it; the full record is in the run record."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    outcome: CheckOutcome
    repair: Repair
    reason: CheckReason | None = None
    detail: str | None = None
    binding: BindingStatus
    command_started: bool
    exit_code: int | None = None
    requested_fingerprint: str | None = None
    observed_fingerprint: str | None = None
    policy_id: str
    policy_fingerprint: str
    duration_s: float

    @classmethod
    def of(cls, name: str, result: CheckResult) -> CheckSummary:
        return cls(
            name=name,
            outcome=result.outcome,
            repair=result.repair,
            reason=result.reason,
            detail=result.detail,
            binding=result.binding,
            command_started=result.command_started,
            exit_code=result.exit_code,
            requested_fingerprint=result.requested_fingerprint,
            observed_fingerprint=result.observed_fingerprint,
            policy_id=result.policy.id,
            policy_fingerprint=result.policy_fingerprint,
            duration_s=result.duration_s,
        )


class Scorecard(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.scorecard/1"] = SCORECARD_SCHEMA
    run_id: str
    created_at: str
    tool_version: str
    dataset: DatasetSummary
    decision: VerdictPayload
    metrics: tuple[MetricSummary, ...]
    checks: tuple[CheckSummary, ...] = Field(default=(), description="Standalone checks run with this run.")

    def metric(self, name: str) -> MetricSummary | None:
        return next((item for item in self.metrics if item.name == name), None)
