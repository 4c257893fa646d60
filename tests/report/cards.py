"""Scorecards built from the core models (each validates itself as it would on load), for renderer tests."""

from __future__ import annotations

from collections.abc import Sequence

from evalglass.core.authority import BlockReason, Reason
from evalglass.core.checks import BindingStatus, CheckOutcome, Repair
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import SubjectKind
from evalglass.core.scorecard import CheckSummary, DatasetSummary, Scorecard
from evalglass.core.verdict import VerdictPayload

FP = "sha256:" + "0" * 64
REPAIRS = {
    CheckOutcome.PASS: Repair.ACCEPT_WORK,
    CheckOutcome.FAIL: Repair.INVESTIGATE_WORK,
    CheckOutcome.INCONCLUSIVE: Repair.GATHER_EVIDENCE,
    CheckOutcome.ERROR: Repair.REPAIR_MEASUREMENT,
}


def gate(
    name: str,
    outcome: Outcome,
    *,
    reasons: Sequence[tuple[BlockReason, str]] = ((BlockReason.NO_MEASURED_VALUE, "no score was measured"),),
    value: float | None = None,
    threshold: float = 0.8,
    check: str | None = None,
) -> GateResult:
    kind = {"subject": check, "subject_kind": SubjectKind.CHECK} if check is not None else {"subject": "exact"}
    if outcome is Outcome.INFORMATIONAL:
        return GateResult(name=name, active=False, outcome=outcome, fingerprint=FP, proposed_threshold=0.7, **kind)
    if outcome is Outcome.BLOCKED:
        listed = tuple(Reason(code=code, message=message) for code, message in reasons)
        return GateResult(name=name, active=True, outcome=outcome, reasons=listed, fingerprint=FP, **kind)
    if check is not None:
        value, threshold = (1.0 if outcome is Outcome.PASS else 0.0), 1.0
    elif value is None:
        value = 0.9 if outcome is Outcome.PASS else 0.75
    return GateResult(
        name=name,
        active=True,
        outcome=outcome,
        value=value,
        compared=value,
        threshold=threshold,
        n=8,
        fingerprint=FP,
        **kind,
    )


def check(name: str, outcome: CheckOutcome, detail: str | None = None) -> CheckSummary:
    return CheckSummary(
        name=name,
        outcome=outcome,
        repair=REPAIRS[outcome],
        detail=detail,
        binding=BindingStatus.UNBOUND,
        command_started=True,
        exit_code=0 if outcome is CheckOutcome.PASS else 1,
        policy_id="default",
        policy_fingerprint=FP,
        duration_s=0.01,
    )


def card(gates: Sequence[GateResult], checks: Sequence[CheckSummary] = (), *, run_id: str = "run-1") -> Scorecard:
    return Scorecard(
        run_id=run_id,
        created_at="2026-01-02T03:04:05.678901Z",
        tool_version="0.1.0",
        dataset=DatasetSummary(name="suite", path="data.jsonl", fingerprint=FP, examples=8),
        decision=VerdictPayload.decide(list(gates)),
        metrics=(),
        checks=tuple(checks),
    )
