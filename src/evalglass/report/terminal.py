"""The terminal summary. Like every renderer, it shows the payload and never recomputes a verdict."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalglass.core.checks import CheckResult
from evalglass.core.gates import GateRule, Outcome
from evalglass.core.scorecard import CheckSummary, Scorecard
from evalglass.report.fmt import (
    CHECK_COLUMNS,
    OUTCOME_LABEL,
    check_row,
    diagnostics_text,
    estimate_text,
    excluded_text,
    gate_value_text,
    interval_text,
    reasons_text,
    rule_text,
    samples_text,
    sensitivity_text,
    threshold_text,
    unmatched_outputs_text,
)

STYLE: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "cyan",
    Outcome.PASS: "bold green",
    Outcome.FAIL: "bold red",
    Outcome.BLOCKED: "bold yellow",
}


def _checks_table(checks: list[CheckSummary]) -> Table:
    table = Table(title="Checks", title_justify="left", expand=False)
    for column in CHECK_COLUMNS:
        table.add_column(column, style="bold" if column == "check" else None)
    for check in checks:
        table.add_row(*check_row(check))
    return table


def render_checks(results: Mapping[str, CheckResult], console: Console) -> None:
    """`evalglass check`: each outcome with its binding, whether the command ran, and the repair it needs."""
    console.print(_checks_table([CheckSummary.of(name, result) for name, result in results.items()]))


def render_terminal(card: Scorecard, console: Console, folder: Path | None = None) -> None:
    decision = card.decision
    metrics = Table(title="Metrics", title_justify="left", expand=False)
    metrics.add_column("metric", style="bold")
    metrics.add_column("value", justify="right")
    metrics.add_column("interval")
    metrics.add_column("included", justify="right")
    metrics.add_column("excluded")
    metrics.add_column("if excluded scored min…max")
    metrics.add_column("diagnostics")
    for metric in card.metrics:
        population = metric.population
        samples = samples_text(metric.estimate)
        metrics.add_row(
            metric.name,
            estimate_text(metric.estimate),
            interval_text(metric.estimate),
            f"{population.included}/{population.expected}" + (f"\n{samples}" if samples else ""),
            excluded_text(population),
            sensitivity_text(metric.estimate),
            diagnostics_text(population),
        )
    console.print(metrics)
    if decision.gates:
        gates = Table(title="Gates", title_justify="left", expand=False)
        gates.add_column("gate", style="bold")
        gates.add_column("outcome")
        gates.add_column("value", justify="right")
        gates.add_column("threshold")
        gates.add_column("why")
        for gate in decision.gates:
            why = reasons_text(gate) if gate.reasons else ("not active in the ledger" if not gate.active else "")
            if gate.rule is not GateRule.POINT:
                why = f"rule: {rule_text(gate)}" + (f"; {why}" if why else "")
            gates.add_row(
                gate.name,
                Text(OUTCOME_LABEL[gate.outcome], style=STYLE[gate.outcome]),
                gate_value_text(gate),
                threshold_text(gate),
                why,
            )
        console.print(gates)
    if card.checks:
        console.print(_checks_table(list(card.checks)))
    if card.dataset.malformed_lines:
        console.print(
            f"[yellow]{card.dataset.malformed_lines} malformed dataset line(s) were scored as errors.[/yellow]"
        )
    unmatched = unmatched_outputs_text(card.dataset)
    if unmatched is not None:
        console.print(Text(unmatched + ".", style="yellow"))
    verdict = Text(f"verdict: {OUTCOME_LABEL[decision.verdict]}", style=STYLE[decision.verdict])
    verdict.append(f"  (exit {decision.exit_code})", style="dim")
    console.print(verdict)
    console.print(decision.meaning)
    if folder is not None:
        console.print(f"artifacts: {folder}", style="dim")
