"""The terminal summary. Like every renderer, it shows the payload and never recomputes a verdict."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from evalglass.core.authority import unbound_inputs_text
from evalglass.core.checks import CheckResult
from evalglass.core.gates import Outcome
from evalglass.core.scorecard import CheckSummary, Scorecard
from evalglass.core.variantsummary import VariantsSummary
from evalglass.report.fmt import (
    CHECK_COLUMNS,
    OUTCOME_LABEL,
    check_row,
    diagnostics_text,
    estimate_text,
    excluded_text,
    gate_value_text,
    groups_text,
    interval_text,
    malformed_text,
    metrics_to_show,
    pair_row,
    samples_text,
    sensitivity_text,
    threshold_text,
    unmatched_outputs_text,
    usage_lines,
    variant_mean_text,
    variants_heading,
    verdict_meaning,
    why_text,
)
from evalglass.report.safetext import visible
from evalglass.report.wrap import fold

if TYPE_CHECKING:
    from rich.table import Table

STYLE: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "cyan",
    Outcome.PASS: "bold green",
    Outcome.FAIL: "bold red",
    Outcome.BLOCKED: "bold yellow",
}


METRIC_COLUMNS = ("metric", "value", "interval", "included", "excluded", "if excluded scored min…max", "diagnostics")


@dataclass(frozen=True)
class Grid:
    """A titled table as plain data: shown as a table when it fits the console whole, else one block per row."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str | Text, ...]]
    right: frozenset[str] = frozenset()


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _cells(grid: Grid, index: int) -> list[str]:
    """Column ``index``'s header and cells, as plain text."""
    return [grid.columns[index], *(_plain(row[index]) for row in grid.rows)]


def _needs(grid: Grid) -> list[int]:
    """Per column, the width that shows every cell without cutting a word: the first column (names) whole, the
    others their longest word (rich wraps between words; a word longer than its column would be cut)."""
    widths = [_longest_line(grid, 0)]
    for index in range(1, len(grid.columns)):
        widths.append(max((len(word) for cell in _cells(grid, index) for word in cell.split()), default=0))
    return widths


def _longest_line(grid: Grid, index: int) -> int:
    return max(len(line) for cell in _cells(grid, index) for line in cell.splitlines() or [""])


def _fitted(grid: Grid, width: int) -> list[int] | None:
    """Column widths that fit ``width``: each column's longest line, the widest narrowed first, never below what
    :func:`_needs` says it needs; None when even those do not fit. (Left to rich, a table whose longest lines do not
    fit could come out wider than the console and lose its right edge.)"""
    needs = _needs(grid)
    widths = [_longest_line(grid, index) for index in range(len(grid.columns))]
    # Each column also takes 3 characters of border and padding, plus 1 for the table's last border.
    budget = width - 3 * len(widths) - 1
    while sum(widths) > budget:
        narrowable = [index for index, found in enumerate(widths) if found > needs[index]]
        if not narrowable:
            return None
        widest = max(narrowable, key=lambda index: widths[index])
        widths[widest] -= 1
    return widths


def _table(grid: Grid, widths: list[int]) -> Table:
    # Imported here: a CI log's 80 columns print most grids as blocks of lines, which need no table (~13 M
    # instructions of a short run's ~2 G).
    from rich.table import Table

    table = Table(title=grid.title, title_justify="left", expand=False)
    for index, column in enumerate(grid.columns):
        table.add_column(
            column,
            style="bold" if index == 0 else None,
            justify="right" if column in grid.right else "left",
            no_wrap=index == 0,
            width=widths[index],
            overflow="fold",  # never an ellipsis: a cell too long for its column breaks onto the next line
        )
    for row in grid.rows:
        table.add_row(*row)
    return table


def print_grid(grid: Grid, console: Console) -> None:
    """A table when it fits; otherwise (a narrow terminal, or a CI log at its default 80 columns) one block per row:
    the row's name on a line of its own, then each non-empty cell as ``column: value``. No name is ever cut.

    Every text cell is shown as :func:`~evalglass.report.safetext.visible` text (names, reasons and command
    output come from data; an escape sequence or a carriage return in them must not act on the terminal)."""
    grid = dataclasses.replace(
        grid, rows=[tuple(cell if isinstance(cell, Text) else visible(cell) for cell in row) for row in grid.rows]
    )
    widths = _fitted(grid, console.width)
    if widths is not None:
        console.print(_table(grid, widths))
        return
    console.print(Text(grid.title, style="italic"))
    for row in grid.rows:
        name, *cells = row
        console.print(Text.assemble("  ", Text(str(name), style="bold")), overflow="fold")
        for column, cell in zip(grid.columns[1:], cells, strict=True):
            text = cell if isinstance(cell, Text) else Text(str(cell))
            if not text.plain:
                continue
            line = Text.assemble(f"    {column}: ", text)
            flat = Text(line.plain.replace("\n", " "), style=line.style, spans=line.spans)
            if flat.cell_len <= console.width:
                console.print(flat)
                continue
            for part in fold(flat.plain, console.width):  # continued under the value, never from column 0
                console.print(Text(part), overflow="fold")


def _checks_grid(checks: list[CheckSummary]) -> Grid:
    return Grid(title="Checks", columns=CHECK_COLUMNS, rows=[check_row(check) for check in checks])


def render_checks(results: Mapping[str, CheckResult], console: Console) -> None:
    """`evalglass check`: each outcome with its binding, whether the command ran, and the repair it needs; then
    what a check's command runs that no `inputs:` binds."""
    print_grid(_checks_grid([CheckSummary.of(name, result) for name, result in results.items()]), console)
    for name, result in results.items():
        if result.unbound_inputs:
            console.print(Text("note: " + visible(unbound_inputs_text(name, result.unbound_inputs))), overflow="fold")


def render_terminal(card: Scorecard, console: Console, folder: Path | None = None) -> None:
    decision = card.decision
    metric_rows: list[tuple[str | Text, ...]] = []
    shown, hidden = metrics_to_show(card)
    for metric in shown:
        population = metric.population
        samples = samples_text(metric.estimate)
        metric_rows.append(
            (
                metric.name,
                estimate_text(metric.estimate),
                interval_text(metric.estimate),
                f"{population.included}/{population.expected}" + (f"\n{samples}" if samples else ""),
                excluded_text(population),
                sensitivity_text(metric.estimate),
                diagnostics_text(population),
            )
        )
    print_grid(
        Grid(
            title="Metrics",
            columns=(
                "metric",
                "value",
                "interval",
                "included",
                "excluded",
                "if excluded scored min…max",
                "diagnostics",
            ),
            rows=metric_rows,
            right=frozenset({"value", "included"}),
        ),
        console,
    )
    if hidden:
        console.print(f"… and {hidden} more metrics: report.md in the run folder and --format json list every one.")
    if decision.gates:
        gate_rows: list[tuple[str | Text, ...]] = []
        for gate in decision.gates:
            why = why_text(gate)
            gate_rows.append(
                (
                    gate.name,
                    Text(OUTCOME_LABEL[gate.outcome], style=STYLE[gate.outcome]),
                    gate_value_text(gate),
                    threshold_text(gate),
                    why,
                )
            )
        print_grid(
            Grid(
                title="Gates",
                columns=("gate", "outcome", "value", "threshold", "why"),
                rows=gate_rows,
                right=frozenset({"value"}),
            ),
            console,
        )
    if card.variants is not None:
        render_variants(card.variants, console)
    if card.checks:
        print_grid(_checks_grid(list(card.checks)), console)
    if card.dataset.malformed_lines:
        console.print(Text(visible(malformed_text(card.dataset)), style="yellow"))
    for line in usage_lines(card.usage):
        console.print(Text("tokens · " + visible(line)), overflow="fold")
    unmatched = unmatched_outputs_text(card.dataset)
    if unmatched is not None:
        console.print(Text(visible(unmatched) + ".", style="yellow"))
    verdict = Text(f"verdict: {OUTCOME_LABEL[decision.verdict]}", style=STYLE[decision.verdict])
    verdict.append(f"  (exit {decision.exit_code})", style="dim")
    console.print(verdict)
    console.print(Text(visible(verdict_meaning(card))))
    if folder is not None:
        console.print(Text(f"artifacts: {visible(str(folder))}", style="dim"))


def render_variants(summary: VariantsSummary, console: Console) -> None:
    """Per metric, every pair of variants with its Holm-adjusted paired interval, and the groups."""
    for comparison in summary.metrics:
        print_grid(
            Grid(
                title=variants_heading(summary, comparison),
                columns=("pair", "difference", "adjusted interval", "pairs", "the data say"),
                rows=[pair_row(pair, comparison.higher_is_better) for pair in comparison.pairs],
                right=frozenset({"difference", "pairs"}),
            ),
            console,
        )
        console.print(Text(visible("means: " + variant_mean_text(comparison))), overflow="fold")
        console.print(Text(visible(groups_text(comparison))), overflow="fold")


def next_steps(card: Scorecard) -> list[str]:
    """What a bundled example's run ends with: the command to run next (a gate's explanation, which says what the
    ledger needs; `explain` reads the last run), then how to start a suite of one's own."""
    gate = next(iter(card.decision.gates), None)
    lines = [""]
    if gate is not None:
        why = "why the gate does not decide yet, and the ledger entry it needs" if not gate.active else "how it decided"
        lines += [f"Next ({why}):", f"  evalglass explain {gate.name}", "Then start your own suite in evals/:"]
    else:
        lines.append("Next, start your own suite in evals/:")
    lines.append("  evalglass init")
    return lines
