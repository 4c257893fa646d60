"""Shared formatting for every renderer, so the terminal, Markdown and explain texts say the same thing."""

from __future__ import annotations

from evalglass.core.estimate import Estimate
from evalglass.core.gates import Direction, GateResult, Outcome, SubjectKind
from evalglass.core.population import Population
from evalglass.core.scorecard import CheckSummary

OUTCOME_LABEL: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "informational",
    Outcome.PASS: "pass",
    Outcome.FAIL: "fail",
    Outcome.BLOCKED: "blocked",
}
OUTCOME_ICON: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "ℹ️",
    Outcome.PASS: "✅",
    Outcome.FAIL: "❌",
    Outcome.BLOCKED: "⛔",
}


def number(value: float | None) -> str:
    if value is None:
        return "—"
    if value == int(value) and abs(value) < 1e9:
        return f"{value:.1f}" if abs(value) < 10 else f"{int(value)}"
    return f"{value:.4g}" if abs(value) >= 1e-3 else f"{value:.3e}"


def estimate_text(estimate: Estimate | None) -> str:
    if estimate is None:
        return "no measured value"
    text = number(estimate.point)
    if estimate.low is not None and estimate.high is not None and estimate.level is not None:
        text += f" [{number(estimate.low)}, {number(estimate.high)}] {estimate.level:.0%}"
    return text


def comparison(direction: Direction) -> str:
    return "≥" if direction is Direction.HIGHER_IS_BETTER else "≤"


def threshold_text(gate: GateResult) -> str:
    if gate.subject_kind is SubjectKind.CHECK:
        return "check must PASS"
    if gate.threshold is not None:
        return f"{comparison(gate.direction)} {number(gate.threshold)}"
    if gate.proposed_threshold is not None:
        return f"{comparison(gate.direction)} {number(gate.proposed_threshold)} (proposed, not approved)"
    return "—"


def excluded_text(population: Population) -> str:
    if population.excluded_total == 0:
        return "none"
    parts = [f"{count} {status}" for status, count in population.excluded_by_status.items()]
    return ", ".join(parts)


def diagnostics_text(population: Population, limit: int = 3) -> str:
    if not population.top_diagnostics:
        return ""
    return ", ".join(f"{item.code} ×{item.count}" for item in population.top_diagnostics[:limit])


def gate_value_text(gate: GateResult) -> str:
    if gate.subject_kind is SubjectKind.CHECK:
        return {1.0: "PASS", 0.0: "FAIL"}.get(gate.compared, "—") if gate.compared is not None else "—"
    return number(gate.compared if gate.compared is not None else gate.value)


DETAIL_CHARS = 90
CHECK_COLUMNS = ("check", "outcome", "binding", "ran", "exit", "repair", "why")


def check_row(check: CheckSummary) -> tuple[str, ...]:
    """One row of the checks table: the outcome, how it was bound, whether the command ran, and the repair."""
    why = check.reason.value if check.reason is not None else ""
    if check.detail:
        detail = check.detail if len(check.detail) <= DETAIL_CHARS else check.detail[: DETAIL_CHARS - 1] + "…"
        why = f"{why}: {detail}" if why else detail
    return (
        check.name,
        check.outcome.value,
        check.binding.value,
        "yes" if check.command_started else "no",
        "—" if check.exit_code is None else str(check.exit_code),
        check.repair.value,
        why,
    )


def reasons_text(gate: GateResult) -> str:
    return "; ".join(f"{reason.code.value}: {reason.message}" for reason in gate.reasons)
