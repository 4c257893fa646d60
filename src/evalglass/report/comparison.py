"""`evalglass compare` in the terminal. It renders a Comparison; every number was computed before it got here."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from evalglass.core.compare import Comparison
from evalglass.report.fmt import difference_text, excluded_text, ids_text, number, test_text
from evalglass.report.terminal import Grid, print_grid

#: How many flipped ids the terminal shows per metric and direction (JSON carries them all).
TOP_FLIPS = 10
COLUMNS = ("metric", "baseline", "candidate", "difference (interval)", "method", "pairs", "excluded", "test", "flips")


def render_comparison(comparison: Comparison, console: Console, top: int = TOP_FLIPS) -> None:
    base, candidate = comparison.base, comparison.candidate
    console.print(f"baseline:  {base.run_id}  ({base.folder}, {base.examples} examples)  {base.fingerprint}")
    console.print(
        f"candidate: {candidate.run_id}  ({candidate.folder}, {candidate.examples} examples)  {candidate.fingerprint}"
    )
    console.print(
        f"paired by id: {comparison.paired}; only in the baseline: {len(comparison.only_in_base)}; "
        f"only in the candidate: {len(comparison.only_in_candidate)}"
    )
    for label, ids in (
        ("only in the baseline", comparison.only_in_base),
        ("only in the candidate", comparison.only_in_candidate),
    ):
        if ids:
            console.print(f"  {label}: {ids_text(ids, top)}", style="dim")
    for item in comparison.incomparable:
        console.print(f"[yellow]not comparable ({item.code.value}): {item.message}[/yellow]")
    rows: list[tuple[str | Text, ...]] = []
    for metric in comparison.metrics:
        difference = metric.difference
        method = difference.interval.method.value if difference is not None else "—"
        flip_text = (
            f"{len(metric.flips.regressed)} regressed, {len(metric.flips.improved)} improved"
            if metric.flips.pass_rule is not None
            else "no pass/fail"
        )
        rows.append(
            (
                metric.metric,
                number(difference.base if difference is not None else metric.base.point),
                number(difference.candidate if difference is not None else metric.candidate.point),
                difference_text(metric),
                method,
                f"{metric.pairs.included}/{metric.pairs.expected}",
                excluded_text(metric.pairs),
                test_text(metric),
                flip_text,
            )
        )
    print_grid(
        Grid(
            title="Candidate minus baseline",
            columns=COLUMNS,
            rows=rows,
            right=frozenset({"baseline", "candidate", "pairs"}),
        ),
        console,
    )
    for metric in comparison.metrics:
        for item in metric.incomparable:
            console.print(f"[yellow]not comparable ({item.code.value}): {item.message}[/yellow]")
        flips = metric.flips
        if flips.regressed:
            console.print(f"{metric.metric}: regressed ({flips.pass_rule}): {ids_text(flips.regressed, top)}")
        if flips.improved:
            console.print(f"{metric.metric}: improved: {ids_text(flips.improved, top)}", style="dim")
    console.print(
        "baseline/candidate are means over the paired examples scored validly in both runs; an excluded pair "
        "never counts as 0.",
        style="dim",
    )
