"""report.md: the scorecard as a pull-request comment. It renders the payload; it decides nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalglass.core.fingerprint import short
from evalglass.core.scorecard import Scorecard
from evalglass.report.examples import Row, markdown_examples
from evalglass.report.fmt import (
    CHECK_COLUMNS,
    OUTCOME_ICON,
    OUTCOME_LABEL,
    check_row,
    diagnostics_text,
    difference_text,
    estimate_text,
    excluded_text,
    gate_value_text,
    groups_text,
    ids_text,
    interval_text,
    judges_lines,
    malformed_text,
    pair_row,
    samples_text,
    sensitivity_text,
    test_text,
    threshold_text,
    unmatched_outputs_text,
    usage_lines,
    variant_mean_text,
    variants_heading,
    verdict_meaning,
    why_text,
)
from evalglass.report.safetext import markdown_code, markdown_text

#: Examples listed per active gate in report.md.
REPORT_EXAMPLES = 10


def _cell(text: str) -> str:
    """Text as one table cell or list item. Names, reasons and check output can come from a pull request, and
    Markdown viewers (a PR comment, GitHub's step summary) render Markdown and inline HTML: a ``<h2>pass</h2>`` in a
    check's output, or ``\\r\\r## pass`` in an example id, shows as the text it is (``report.safetext``)."""
    return markdown_text(text)


#: Flipped ids report.md lists per gate and direction (scorecard.json carries them all).
TOP_FLIPS = 20


def _comparisons(card: Scorecard) -> list[str]:
    """Per comparative gate: the paired difference and the examples that flipped."""
    lines: list[str] = []
    for gate in card.decision.gates:
        detail = gate.comparison
        if detail is None or detail.metric is None:
            continue
        metric = detail.metric
        lines += [
            "",
            f"### `{_cell(gate.name)}`: this run against baseline `{_cell(detail.baseline)}`",
            "",
            f"Metric `{_cell(metric.metric)}`: difference {_cell(difference_text(metric))}, "
            f"{metric.pairs.included}/{metric.pairs.expected} pairs measured in both runs; {_cell(test_text(metric))}.",
        ]
        flips = metric.flips
        if flips.pass_rule is not None:
            lines += [
                "",
                f"- regressed ({len(flips.regressed)}, passing means {_cell(flips.pass_rule)}): "
                + (_cell(ids_text(flips.regressed, TOP_FLIPS)) if flips.regressed else "none"),
                f"- improved ({len(flips.improved)}): "
                + (_cell(ids_text(flips.improved, TOP_FLIPS)) if flips.improved else "none"),
            ]
    return lines


def _variants(card: Scorecard) -> list[str]:
    """A run with variants: per metric, every pair with its Holm-adjusted interval, the means and the groups."""
    summary = card.variants
    if summary is None:
        return []
    lines = ["", "### Variants", ""]
    for comparison in summary.metrics:
        lines += [
            f"**{_cell(variants_heading(summary, comparison))}**",
            "",
            "| pair | difference | adjusted interval | pairs | the data say |",
            "|---|---|---|---|---|",
            *(
                "| " + " | ".join(_cell(cell) for cell in pair_row(pair, comparison.higher_is_better)) + " |"
                for pair in comparison.pairs
            ),
            "",
            f"Means: {_cell(variant_mean_text(comparison))}. {_cell(groups_text(comparison))}.",
            "",
        ]
    return lines


def render_markdown(card: Scorecard, examples: Mapping[str, Sequence[Row]] | None = None) -> str:
    """``examples``: per active gate, the first examples of its metric that did not pass (a collapsible list)."""
    decision = card.decision
    lines = [
        f"## {OUTCOME_ICON[decision.verdict]} EvalGlass: {OUTCOME_LABEL[decision.verdict]}",
        "",
        f"> {_cell(verdict_meaning(card))}",
        "",
        f"Run `{markdown_code(card.run_id)}` · dataset `{markdown_code(card.dataset.name)}` "
        f"({card.dataset.examples} examples, `{markdown_code(short(card.dataset.fingerprint))}`) · exit code "
        f"{decision.exit_code}",
    ]
    if card.dataset.malformed_lines:
        lines.append(f"\n**{_cell(malformed_text(card.dataset))}**")
    unmatched = unmatched_outputs_text(card.dataset)
    if unmatched is not None:
        lines.append(f"\n**{_cell(unmatched)}.**")
    lines += ["", "### Gates", ""]
    if decision.gates:
        lines += ["| Gate | Outcome | Value | Threshold | Why |", "|---|---|---|---|---|"]
        for gate in decision.gates:
            why = why_text(gate)
            lines.append(
                f"| {_cell(gate.name)} | {OUTCOME_ICON[gate.outcome]} {OUTCOME_LABEL[gate.outcome]} | "
                f"{gate_value_text(gate)} | "
                f"{_cell(threshold_text(gate))} | {_cell(why)} |"
            )
    else:
        lines.append("No gates are declared.")
    lines += _comparisons(card)
    if examples:
        lines += markdown_examples(examples, REPORT_EXAMPLES)
    lines += [
        "",
        "### Metrics",
        "",
        "| Metric | Value | Interval | Included | Excluded | If excluded scored min…max | Diagnostics |",
        "|---|---|---|---|---|---|---|",
    ]
    for metric in card.metrics:
        population = metric.population
        samples = samples_text(metric.estimate)
        lines.append(
            f"| {_cell(metric.name)} | {_cell(estimate_text(metric.estimate))} | "
            f"{_cell(interval_text(metric.estimate))} | "
            f"{population.included}/{population.expected}{' (' + samples + ')' if samples else ''} | "
            f"{_cell(excluded_text(population))} | {_cell(sensitivity_text(metric.estimate))} | "
            f"{_cell(diagnostics_text(population))} |"
        )
    if card.checks:
        lines += ["", "### Checks", "", "| " + " | ".join(CHECK_COLUMNS) + " |", "|" + "---|" * len(CHECK_COLUMNS)]
        lines += ["| " + " | ".join(_cell(cell) for cell in check_row(check)) + " |" for check in card.checks]
    judged = judges_lines(card.metrics)
    if judged:
        lines += ["", "### Judges", "", *(f"- {_cell(line)}" for line in judged)]
    lines += _variants(card)
    tokens = usage_lines(card.usage)
    if tokens:
        lines += ["", "### Tokens", "", *(f"- {_cell(line)}" for line in tokens)]
    lines += [
        "",
        "<sub>Excluded scores (errors, blocked, non-evaluable, missing) never count as 0; "
        "they are left out of the value and counted here.</sub>",
        "",
    ]
    return "\n".join(lines)
