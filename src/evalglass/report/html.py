"""report.html: one self-contained page (no network, no CDN) rendered from a run's artifacts.

Like every renderer it shows the payload and never recomputes it: outcomes, reasons, values and intervals come
from the scorecard; repair hints and ledger entries from :mod:`evalglass.report.explain`; the wording of values,
intervals and exclusions from :mod:`evalglass.report.fmt`. What this module adds is geometry: where on a chart a
recorded number is drawn.

Everything the artifacts contain is attacker-controlled text (outputs, rationales, check output, names). Jinja2
autoescapes every value, and the page carries a Content-Security-Policy that allows no network and only its own
script (by hash), so an injected tag could neither run nor load anything even if escaping were bypassed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalglass.core.authority import BlockReason
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import SubjectKind
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import MetricSummary, Scorecard
from evalglass.core.variantnames import declared_metric
from evalglass.report.comparison_html import gate_comparison_views
from evalglass.report.explain import explain_gate
from evalglass.report.fmt import (
    OUTCOME_LABEL,
    diagnostic_tally,
    estimate_text,
    gate_value_text,
    groups_text,
    interval_text,
    number,
    pair_row,
    rule_text,
    samples_text,
    sensitivity_text,
    threshold_text,
    variant_mean_text,
    variants_heading,
    verdict_meaning,
)
from evalglass.report.htmlpage import csp_hash, template_environment
from evalglass.report.repairs import BLOCK_REASON_FIXES

#: The forest plot's drawing width in SVG units (the SVG scales to the page; text stays legible down to 375 px).
PLOT_WIDTH = 320.0
PLOT_PAD = 10.0

#: What each verdict means for a reader skimming the banner; the full meaning comes from the payload.
HEADLINES: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "Not a pass. Exit 0 here means only that nothing was gated.",
    Outcome.PASS: "Passes CI.",
    Outcome.FAIL: "Fails CI: a quality problem.",
    Outcome.BLOCKED: "Fails CI: a measurement problem, not a quality verdict.",
}


@dataclass(frozen=True)
class Segment:
    label: str
    count: int
    kind: str
    x: float
    width: float


@dataclass(frozen=True)
class Forest:
    """One metric's row of the forest plot, in SVG units."""

    lo: float
    hi: float
    point: float | None
    low: float | None
    high: float | None
    sens_low: float | None
    sens_high: float | None
    thresholds: tuple[tuple[float, str, bool], ...]
    ticks: tuple[tuple[float, str], ...]


def _domain(metric: MetricSummary, thresholds: list[float]) -> tuple[float, float]:
    """The axis range: the metric's scale when the run recorded it, else what the numbers on the row span."""
    estimate = metric.estimate
    values = list(thresholds)
    if estimate is not None:
        values.append(estimate.point)
        interval = estimate.interval
        if interval is not None:
            values += [v for v in (interval.low, interval.high) if v is not None]
        if estimate.sensitivity is not None:
            sens = estimate.sensitivity
            values += [sens.scale_min, sens.scale_max, sens.low, sens.high]
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if lo >= 0 and hi <= 1:
        return 0.0, 1.0
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def forest(metric: MetricSummary, gates: list[GateResult]) -> Forest:
    # Approved thresholds, and proposals (drawn apart: a proposal decides nothing until the ledger approves it).
    thresholds = [
        (value, gate.name, approved)
        for gate in gates
        for value, approved in ((gate.threshold, True), (gate.proposed_threshold, False))
        if value is not None and (approved or gate.threshold is None)
    ]
    lo, hi = _domain(metric, [value for value, _, _ in thresholds])

    def x(value: float | None) -> float | None:
        if value is None or not math.isfinite(value):
            return None
        clamped = min(max(value, lo), hi)
        return round(PLOT_PAD + (clamped - lo) / (hi - lo) * (PLOT_WIDTH - 2 * PLOT_PAD), 2)

    estimate = metric.estimate
    interval = estimate.interval if estimate is not None else None
    sens = estimate.sensitivity if estimate is not None and estimate.sensitivity is not None else None
    sensitive = sens is not None and sens.excluded > 0
    return Forest(
        lo=lo,
        hi=hi,
        point=x(estimate.point) if estimate is not None else None,
        low=x(interval.low) if interval is not None else None,
        high=x(interval.high) if interval is not None else None,
        sens_low=x(sens.low) if sens is not None and sensitive else None,
        sens_high=x(sens.high) if sens is not None and sensitive else None,
        thresholds=tuple((px, name, approved) for value, name, approved in thresholds if (px := x(value)) is not None),
        ticks=tuple((px, number(value)) for value in (lo, (lo + hi) / 2, hi) if (px := x(value)) is not None),
    )


def population_bar(metric: MetricSummary) -> list[Segment]:
    """Included, each excluded state and missing, as consecutive widths in percent of the expected examples."""
    population = metric.population
    parts: list[tuple[str, int, str]] = [("included", population.included, "included")]
    for item in population.excluded:
        label = "invalid" if item.status.value == "scored" else f"{item.status.value}/{item.validity.value}"
        parts.append((label, item.count, item.status.value if item.status.value != "scored" else "invalid"))
    if population.missing:
        parts.append(("missing", population.missing, "missing"))
    total = max(population.expected, 1)
    segments: list[Segment] = []
    x = 0.0
    for label, count, kind in parts:
        if count == 0:
            continue
        width = count / total * 100
        segments.append(Segment(label, count, kind, round(x, 3), round(width, 3)))
        x += width
    return segments


def _gate_view(gate: GateResult, card: Scorecard, record: RunRecord | None) -> dict[str, Any]:
    explanation = explain_gate(gate, card, record) if record is not None else None
    return {
        "gate": gate,
        "label": OUTCOME_LABEL[gate.outcome],
        "value": gate_value_text(gate),
        "threshold": threshold_text(gate),
        "rule": rule_text(gate),
        "reasons": [(reason.code.value, reason.message, BLOCK_REASON_FIXES[reason.code]) for reason in gate.reasons],
        "summary": explanation.summary if explanation is not None else None,
        # explain_gate lists a blocked gate's reasons first; they are shown above with their repairs already.
        "details": explanation.details[len(gate.reasons) :] if explanation is not None else [],
        "ledger_entry": explanation.ledger_entry if explanation is not None else None,
    }


def _metric_view(metric: MetricSummary, card: Scorecard, comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    gates = [
        gate for gate in card.decision.gates if gate.subject_kind is SubjectKind.METRIC and gate.subject == metric.name
    ]
    return {
        # A comparative gate's limit (-margin) is a difference between two runs, not a value of the metric: drawn on
        # the metric's axis it would read as a threshold near 0 and stretch the axis past the scale. Each such gate
        # gets its own row on a difference axis instead (its index links to its card in Comparisons).
        "differences": [
            (index, item)
            for index, item in enumerate(comparisons, start=1)
            if item["gate"].subject == metric.name and item["view"] is not None
        ],
        "metric": metric,
        "value": estimate_text(metric.estimate),
        "interval": interval_text(metric.estimate),
        "sensitivity": sensitivity_text(metric.estimate),
        "samples": samples_text(metric.estimate),
        "forest": forest(metric, [gate for gate in gates if gate.comparison is None]),
        "bar": population_bar(metric),
        "diagnostics": [(item, diagnostic_tally(item)) for item in metric.population.top_diagnostics],
        "gates": [gate.name for gate in gates],
    }


#: The reasons a judge's calibration blocks a gate for, shown under the judge.
_CALIBRATION_BLOCKS = frozenset({BlockReason.JUDGE_UNCALIBRATED, BlockReason.CALIBRATION_UNAPPROVED})


def _judges_view(card: Scorecard, record: RunRecord | None) -> list[dict[str, Any]]:
    """Each llm_judge's calibration as the run recorded it, and the gates it blocked for want of calibration."""
    if record is None:
        return []
    out = []
    for name, fingerprint in record.judge_fingerprints.items():
        calibration = record.calibrations.get(name)
        blocked = [
            (gate.name, reason.message)
            for gate in card.decision.gates
            for reason in gate.reasons
            # A gate on a variant's judge metric (`m@v`) stands on judge `m`'s calibration.
            if reason.code in _CALIBRATION_BLOCKS and declared_metric(gate.subject) == name
        ]
        out.append(
            {
                "name": name,
                "fingerprint": fingerprint,
                "calibration": calibration,
                "bound": calibration is not None and calibration.judge_fingerprint == fingerprint,
                "requirement": record.ledger.judges.get(name),
                # Whether the ledger approves this very record (its `calibration:` fingerprint).
                "approved": calibration is not None
                and (requirement := record.ledger.judges.get(name)) is not None
                and requirement.calibration == calibration.digest,
                "blocked": blocked,
                "repair": BLOCK_REASON_FIXES[BlockReason.JUDGE_UNCALIBRATED],
            }
        )
    return out


def _checks_view(card: Scorecard, record: RunRecord | None) -> list[dict[str, Any]]:
    out = []
    for check in card.checks:
        result = record.check_results.get(check.name) if record is not None else None
        tail = ""
        if result is not None:
            tail = "\n".join(part for part in (result.stdout_tail, result.stderr_tail) if part)[-2000:]
        why = ": ".join(part for part in (check.reason.value if check.reason else None, check.detail) if part)
        out.append({"check": check, "why": why, "tail": tail})
    return out


class ExampleRows(Protocol):
    """What the page shows of a run's examples (``engine.explore.explorer.Explorer`` reads them from the run folder;
    report does not import engine): the rows the template draws, and the counts and notes it states beside them."""

    @property
    def rows(self) -> Sequence[Any]: ...
    @property
    def total(self) -> int: ...
    @property
    def needs_look_total(self) -> int: ...
    @property
    def needs_look_shown(self) -> int: ...
    @property
    def sampled(self) -> int: ...
    @property
    def cap(self) -> int: ...
    @property
    def metrics(self) -> tuple[str, ...]: ...
    @property
    def notes(self) -> list[str]: ...
    @property
    def states(self) -> tuple[str, ...]: ...
    @property
    def regressed_total(self) -> int: ...
    @property
    def field_chars(self) -> int:
        """Characters of a long value shown before the reader expands it."""
        ...


def _card_anchors(rows: Sequence[Any]) -> dict[str, str]:
    """Each embedded example's card anchor, by id: its position, never the id itself (ids are data); the first card
    of an id that has several."""
    anchors: dict[str, str] = {}
    for index, row in enumerate(rows, start=1):
        anchors.setdefault(row.id, f"example-{index}")
    return anchors


def variant_matrices(card: Scorecard) -> list[dict[str, Any]]:
    """Per metric of a run with variants, its pair matrix: row variant minus column variant in each cell above the
    diagonal (the pairs as recorded), with the Holm-adjusted interval and whether the data separate the two."""
    summary = card.variants
    if summary is None:
        return []
    views = []
    for comparison in summary.metrics:
        pairs = {(pair.first, pair.second): pair for pair in comparison.pairs}
        rows = []
        for first in comparison.variants:
            cells: list[dict[str, Any] | None] = []
            for second in comparison.variants:
                pair = pairs.get((first, second))
                if pair is None:
                    cells.append(None)
                    continue
                _, difference, interval, n, verdict = pair_row(pair, comparison.higher_is_better)
                cells.append(
                    {
                        "difference": difference,
                        "interval": interval,
                        "n": n,
                        "verdict": verdict,
                        "apart": pair.distinguishable,
                    }
                )
            rows.append({"name": first, "cells": cells})
        views.append(
            {
                "metric": comparison.metric,
                "heading": variants_heading(summary, comparison),
                "variants": comparison.variants,
                "means": variant_mean_text(comparison),
                "groups": groups_text(comparison),
                "rows": rows,
            }
        )
    return views


def render_html(card: Scorecard, record: RunRecord | None, explorer: ExampleRows, notes: list[str], folder: str) -> str:
    """The whole page. ``notes`` name artifacts that were missing, so the page says what it could not show."""

    environment = template_environment()
    loader = environment.loader
    assert loader is not None
    script = loader.get_source(environment, "report.js")[0]
    style = loader.get_source(environment, "report.css")[0]
    decision = card.decision
    template = environment.get_template("report.html.j2")
    comparisons = gate_comparison_views(card)
    return template.render(
        card=card,
        record=record,
        decision=decision,
        meaning=verdict_meaning(card),
        verdict=decision.verdict.value,
        verdict_label=OUTCOME_LABEL[decision.verdict],
        headline=HEADLINES[decision.verdict],
        counts={outcome.value: decision.count(outcome) for outcome in Outcome},
        gates=[_gate_view(gate, card, record) for gate in decision.gates],
        metrics=[_metric_view(metric, card, comparisons) for metric in card.metrics],
        judges=_judges_view(card, record),
        checks=_checks_view(card, record),
        comparisons=comparisons,
        variants=variant_matrices(card),
        explorer=explorer,
        cards=_card_anchors(explorer.rows),
        notes=notes,
        plot_width=PLOT_WIDTH,
        number=number,
        script=script,
        style=style,
        script_hash=csp_hash(script),
        style_hash=csp_hash(style),
        states=explorer.states,
        folder=folder,
    )
