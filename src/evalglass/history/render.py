"""``evalglass history`` on a terminal: a table of runs, and a metric's trend as a sparkline of its points with
the range its intervals cover (so a move inside the noise is seen as such)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from evalglass.history.query import HistoryEntry, MetricPoint
from evalglass.report.numbers import number
from evalglass.report.terminal import Grid, print_grid
from evalglass.report.wrap import fold

BARS = "▁▂▃▄▅▆▇█"


def sparkline(points: Sequence[float | None], low: float, high: float) -> str:
    """One bar per point between ``low`` and ``high`` (a gap for a run without a value)."""
    span = high - low
    bars = []
    for point in points:
        if point is None:
            bars.append(" ")
        elif span <= 0:
            bars.append(BARS[len(BARS) // 2])
        else:
            index = round((min(max(point, low), high) - low) / span * (len(BARS) - 1))
            bars.append(BARS[index])
    return "".join(bars)


def _commit(entry: HistoryEntry) -> str:
    if entry.commit is None:
        return "—"
    return entry.commit[:10] + ("+dirty" if entry.dirty else "")


def _interval(point: MetricPoint) -> str:
    if point.low is None or point.high is None:
        return "—"
    text = f"[{number(point.low)}, {number(point.high)}]"
    if point.level is not None:
        text += f" {point.level:.0%} {point.method or ''}".rstrip()
    return text


def render_history(
    entries: Sequence[HistoryEntry], console: Console, metric: str | None, gate: str | None, filtered: bool = False
) -> None:
    """The runs as a table when it fits the console, else one block per run (``report.terminal.print_grid``: no
    cell is cut at 80 columns); then, per suite, the metric's trend."""
    if not entries:
        console.print("No recorded runs match." if metric or gate or filtered else "No recorded runs yet.")
        return
    columns = ["run", "started (UTC)", "suite", "branch", "commit", "verdict", "examples"]
    if metric is not None:
        columns += [metric, "interval", "n"]
    if gate is not None:
        columns += [f"gate {gate}", "value / threshold"]
    rows: list[tuple[str | Text, ...]] = []
    for entry in entries:
        cells = [
            entry.run_id,
            entry.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            entry.dataset,
            entry.branch or "—",
            _commit(entry),
            entry.verdict,
            str(entry.examples),
        ]
        if entry.metric is not None:
            cells += [number(entry.metric.point), _interval(entry.metric), str(entry.metric.included)]
        if entry.gate is not None:
            reasons = f" ({', '.join(entry.gate.reasons)})" if entry.gate.reasons else ""
            cells += [entry.gate.outcome + reasons, f"{number(entry.gate.value)} / {number(entry.gate.threshold)}"]
        rows.append(tuple(cells))
    right = frozenset({"examples", "n"} | ({metric} if metric is not None else set()))
    print_grid(Grid(title="Recorded runs, newest first", columns=tuple(columns), rows=rows, right=right), console)
    for entry in entries:
        if entry.refused is not None:  # what `view` would say of it: its stored verdict is not shown
            for part in fold(f"refused: run {entry.run_id}: {entry.refused}", console.width):
                console.print(Text(part), overflow="fold")
    if metric is not None:
        for line in trend_lines(entries, metric):
            for part in fold(line, console.width):
                console.print(Text(part), overflow="fold")


def trend_lines(entries: Sequence[HistoryEntry], metric: str) -> list[str]:
    """One trend per suite (dataset name), oldest to newest: runs of two suites are two populations, and one
    sparkline across both would show their difference as a change."""
    by_suite: dict[str, list[MetricPoint]] = {}
    for entry in reversed(entries):
        if entry.metric is not None:
            by_suite.setdefault(entry.dataset, []).append(entry.metric)
    lines = []
    for suite, oldest_first in by_suite.items():
        values = [v for m in oldest_first for v in (m.point, m.low, m.high) if v is not None]
        if not values:
            continue
        low, high = min(values), max(values)
        line = sparkline([m.point for m in oldest_first], low, high)
        lines.append(
            f"{metric} in suite '{suite}', oldest to newest: {line}  "
            f"(scale {number(low)} to {number(high)}, intervals included)"
        )
    return lines
