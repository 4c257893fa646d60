"""``evalglass history`` on a terminal: a table of runs, and a metric's trend as a sparkline of its points with
the range its intervals cover (so a move inside the noise is seen as such)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from evalglass.history.query import HistoryEntry
from evalglass.report.numbers import number

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


def render_history(entries: Sequence[HistoryEntry], console: Console, metric: str | None, gate: str | None) -> None:
    if not entries:
        console.print("No recorded runs match." if metric or gate else "No recorded runs yet.")
        return
    table = Table(show_header=True, header_style="bold")
    for title in ("run", "started (UTC)", "branch", "commit", "verdict", "examples"):
        table.add_column(title, no_wrap=title in ("run", "started (UTC)"))
    if metric is not None:
        table.add_column(metric, justify="right")
        table.add_column("interval")
        table.add_column("n", justify="right")
    if gate is not None:
        table.add_column(f"gate {gate}")
        table.add_column("value / threshold")
    for entry in entries:
        cells = [
            entry.run_id,
            entry.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            entry.branch or "—",
            _commit(entry),
            entry.verdict,
            str(entry.examples),
        ]
        if entry.metric is not None:
            point = entry.metric
            interval = "—"
            if point.low is not None and point.high is not None:
                interval = f"[{number(point.low)}, {number(point.high)}]"
                if point.level is not None:
                    interval += f" {point.level:.0%} {point.method or ''}".rstrip()
            cells += [number(point.point), interval, str(point.included)]
        if entry.gate is not None:
            reasons = f" ({', '.join(entry.gate.reasons)})" if entry.gate.reasons else ""
            cells += [entry.gate.outcome + reasons, f"{number(entry.gate.value)} / {number(entry.gate.threshold)}"]
        table.add_row(*cells)
    console.print(table)
    if metric is not None:
        oldest_first = [entry.metric for entry in reversed(entries) if entry.metric is not None]
        values = [v for m in oldest_first for v in (m.point, m.low, m.high) if v is not None]
        if values:
            low, high = min(values), max(values)
            points = [m.point for m in oldest_first]
            line = sparkline(points, low, high)
            console.print(
                f"{metric}, oldest to newest: {line}  (scale {number(low)} to {number(high)}, intervals included)"
            )
