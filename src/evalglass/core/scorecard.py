"""The compact result of a run: the verdict payload plus every metric's estimate and population."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.agreement import JuryAgreement
from evalglass.core.checks import BindingStatus, CheckOutcome, CheckReason, CheckResult, Repair
from evalglass.core.estimate import Estimate
from evalglass.core.example import MALFORMED_SHOWN
from evalglass.core.pairwise import PairwiseSummary
from evalglass.core.population import Population
from evalglass.core.usage import TokenUsage
from evalglass.core.variantsummary import VariantsSummary
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
    agreement: JuryAgreement | None = Field(
        default=None,
        exclude_if=lambda found: found is None,
        description="A jury's inter-judge agreement (Krippendorff's alpha with its interval); absent otherwise.",
    )
    pairwise: PairwiseSummary | None = Field(
        default=None,
        exclude_if=lambda found: found is None,
        description="A pairwise judge's position bias, win rates and strengths; absent otherwise.",
    )


class OutputsSummary(BaseModel):
    """Recorded outputs read from their own file and joined to the dataset by id."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    path: str
    outputs: int = Field(ge=0, description="Outputs in the file.")
    unmatched: int = Field(ge=0, description="Outputs whose id is not in the dataset (not scored).")
    unmatched_ids: tuple[str, ...] = Field(default=(), description="A few of them, by id.")


class DatasetSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    path: str
    fingerprint: str = Field(description="SHA-256 of the dataset file's bytes.")
    gold_fingerprint: str | None = Field(
        default=None,
        description="What `validated_gold` binds: ids and every field except the recorded output field. Taken when "
        "a gate is declared on a metric (every metric gate stands on it, or compares with a baseline on it); None "
        "otherwise.",
    )
    examples: int = Field(ge=0)
    malformed_lines: int = Field(default=0, ge=0)
    outputs: OutputsSummary | None = Field(default=None, description="Set when outputs come from their own file.")

    @property
    def gold(self) -> str:
        """The fingerprint gold is checked against (a run record from before gold fingerprints: the file's)."""
        return self.gold_fingerprint if self.gold_fingerprint is not None else self.fingerprint

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
    def of(cls, name: str, result: CheckResult) -> "CheckSummary":
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


class CallTotals(BaseModel):
    """The calls of a live run that retry (chat lanes, judges): how many, and how many attempts they took. Counted
    from ``outputs.jsonl`` (a cached call counts the attempts it took when it was made), so a resumed run and
    ``evalglass verify`` arrive at the same numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    calls: int = Field(ge=0)
    attempts: int = Field(ge=0)
    retries: int = Field(default=0, ge=0, description="attempts - calls: attempts after a call's first.")

    @model_validator(mode="before")
    @classmethod
    def _derive_retries(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "retries" not in data and {"calls", "attempts"} <= set(data):
            return {**data, "retries": data["attempts"] - data["calls"]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "CallTotals":
        if self.retries != self.attempts - self.calls:
            raise ValueError(f"retries {self.retries} is not attempts {self.attempts} - calls {self.calls}")
        return self


def count_call_attempts(row: Mapping[str, Any]) -> tuple[int, int]:
    """(calls, attempts) recorded in one ``outputs.jsonl`` row: every sample and judge entry with ``attempts`` is
    one call, or ``calls`` of them (an agent's trajectory: one model call per step, ``attempts`` over them all)."""
    calls = attempts = 0
    entries: list[Any] = list(row.get("samples") or ())
    for notes in (row.get("judges") or {}).values():
        entries.extend(notes)
    for entry in entries:
        if isinstance(entry, Mapping) and type(entry.get("attempts")) is int:
            made = entry.get("calls")
            calls += made if type(made) is int else 1
            attempts += entry["attempts"]
    return calls, attempts


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
    usage: tuple[TokenUsage, ...] = Field(default=(), description="Tokens (and cost) per lane and judge (live runs).")
    calls: CallTotals | None = Field(
        default=None, description="Live runs: calls that retry (chat lanes, judges) and the attempts they took."
    )
    variants: VariantsSummary | None = Field(
        default=None,
        exclude_if=lambda found: found is None,
        description="A run with variants: every metric side by side, every pair's paired difference with its "
        "Holm-adjusted interval, and the groups the data cannot separate (metrics are named `metric@variant`).",
    )

    def metric(self, name: str) -> MetricSummary | None:
        return next((item for item in self.metrics if item.name == name), None)
