"""Shared formatting for every renderer, so the terminal, Markdown and explain texts say the same thing."""

from __future__ import annotations

from evalglass.core.estimate import Estimate
from evalglass.core.gates import Direction, GateResult, Outcome
from evalglass.core.population import Population

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


def reasons_text(gate: GateResult) -> str:
    return "; ".join(f"{reason.code.value}: {reason.message}" for reason in gate.reasons)
