"""The HTML comparison view: paired differences drawn with their intervals, and the flips, by example id.

Two pages use it: the run report (``evalglass report``, ``run --html``) shows each comparative gate's comparison as
the scorecard recorded it, and ``evalglass compare BASE CAND --html PATH`` renders the comparison payload as a page
of its own. Like every renderer it computes no statistic: points, bounds, methods, pair counts, tests and flipped
ids all come from :class:`~evalglass.core.compare.MetricComparison`; the wording from :mod:`evalglass.report.fmt`.
What this module adds is geometry (where on a symmetric axis around "no change" a recorded number is drawn) and how
many ids a page lists (all of them are in the JSON).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalglass.core.scorecard import Scorecard
from evalglass.core.stats import Direction, Sides
from evalglass.core.tables import total
from evalglass.report.explain import power_story
from evalglass.report.fmt import (
    OUTCOME_LABEL,
    difference_text,
    excluded_text,
    notes_text,
    number,
    signed,
    test_text,
)
from evalglass.report.htmlpage import csp_hash, template_environment

if TYPE_CHECKING:  # annotations only
    from evalglass.core.compare import Comparison, GateComparison, MetricComparison

#: The difference plot's drawing width in SVG units (it scales to the page, as the forest plot does).
PLOT_WIDTH = 320.0
PLOT_PAD = 12.0
SIDES_TEXT: Mapping[Sides, str] = total(
    Sides, {Sides.TWO_SIDED: "two-sided", Sides.LOWER: "one-sided lower bound", Sides.UPPER: "one-sided upper bound"}
)
#: Ids a page lists per list (flips each way, each side's own examples). The JSON payload carries every one.
TOP_IDS = 200


@dataclass(frozen=True)
class DifferencePlot:
    """One paired difference on an axis symmetric around 0, in SVG units. A side the interval does not have (a
    one-sided bound) or cannot draw runs to the axis's edge and is marked open."""

    zero: float
    width: float
    point: float | None
    low: float | None
    high: float | None
    open_low: bool
    open_high: bool
    #: A comparative gate's limit: (x, text) where the difference must not fall past it.
    limit: tuple[float, str] | None
    ticks: tuple[tuple[float, str], ...]


def difference_plot(metric: MetricComparison, limit: float | None = None) -> DifferencePlot | None:
    """Where the recorded difference, its interval and the gate's limit (``-margin`` or ``+margin``) fall; None
    when no difference was recorded."""
    difference = metric.difference
    if difference is None:
        return None
    interval = difference.interval
    ends = [v for v in (interval.low, interval.high) if v is not None and math.isfinite(v)] if interval.defined else []
    values = [abs(v) for v in (difference.point, *ends, limit) if v is not None and math.isfinite(v)]
    reach = max(values, default=0.0) * 1.15
    reach = reach if reach > 1e-9 else 0.05  # no change and no spread: a small axis still shows where 0 is

    def x(value: float) -> float:
        clamped = min(max(value, -reach), reach)
        return round(PLOT_PAD + (clamped + reach) / (2 * reach) * (PLOT_WIDTH - 2 * PLOT_PAD), 2)

    left, right = x(-reach), x(reach)
    low = x(interval.low) if interval.defined and interval.low is not None else None
    high = x(interval.high) if interval.defined and interval.high is not None else None
    open_low = interval.defined and low is None
    open_high = interval.defined and high is None
    return DifferencePlot(
        zero=x(0.0),
        width=PLOT_WIDTH,
        point=x(difference.point) if math.isfinite(difference.point) else None,
        low=left if open_low else low,
        high=right if open_high else high,
        open_low=open_low,
        open_high=open_high,
        limit=(x(limit), signed(limit)) if limit is not None else None,
        ticks=((left, signed(-reach)), (x(0.0), "0"), (right, signed(reach))),
    )


def _ids(ids: tuple[str, ...]) -> dict[str, Any]:
    return {"shown": ids[:TOP_IDS], "total": len(ids), "more": max(len(ids) - TOP_IDS, 0)}


def metric_view(metric: MetricComparison, limit: float | None = None) -> dict[str, Any]:
    """What the template shows for one metric's comparison (every number read from the payload)."""
    difference = metric.difference
    interval = difference.interval if difference is not None else None
    flips = metric.flips
    return {
        "metric": metric,
        "plot": difference_plot(metric, limit),
        "difference": difference_text(metric),
        "method": interval.method.value if interval is not None else None,
        "level": f"{interval.level:.0%} {SIDES_TEXT[interval.sides]}" if interval is not None else None,
        "notes": notes_text(interval).strip(" ()") if interval is not None else "",
        "test": test_text(metric),
        "base": number(difference.base if difference is not None else metric.base.point),
        "candidate": number(difference.candidate if difference is not None else metric.candidate.point),
        "base_all": f"{number(metric.base.point)} over {metric.base.n:,}",
        "candidate_all": f"{number(metric.candidate.point)} over {metric.candidate.n:,}",
        "pairs": metric.pairs,
        "excluded": excluded_text(metric.pairs),
        "table": difference.table if difference is not None else None,
        "pass_rule": flips.pass_rule,
        "regressed": _ids(flips.regressed),
        "improved": _ids(flips.improved),
        "incomparable": [(item.code.value, item.message) for item in metric.incomparable],
    }


def gate_comparison_views(card: Scorecard) -> list[dict[str, Any]]:
    """Per comparative gate of the run: the baseline it was bound to and the metric comparison it decided on. The
    limit drawn is the gate's approved threshold, which the gate's own model checks is ``-margin`` (higher is
    better) or ``+margin``; the power statement is explain's, so every renderer words it the same."""
    views = []
    for gate in card.decision.gates:
        detail: GateComparison | None = gate.comparison
        if detail is None:
            continue
        metric = detail.metric
        views.append(
            {
                "gate": gate,
                "label": OUTCOME_LABEL[gate.outcome],
                "detail": detail,
                "direction": "higher is better" if gate.direction is Direction.HIGHER_IS_BETTER else "lower is better",
                "margin": number(detail.margin) if detail.margin is not None else None,
                "view": metric_view(metric, gate.threshold) if metric is not None else None,
                "power": power_story(gate) if metric is not None and metric.difference is not None else None,
                "reasons": [(reason.code.value, reason.message) for reason in gate.reasons],
            }
        )
    return views


def render_comparison_html(comparison: Comparison) -> str:
    """The page of ``evalglass compare BASE CAND --html PATH``: the payload, drawn; no script at all."""
    environment = template_environment()
    loader = environment.loader
    assert loader is not None
    style = loader.get_source(environment, "report.css")[0]
    return environment.get_template("comparison.html.j2").render(
        comparison=comparison,
        metrics=[metric_view(metric) for metric in comparison.metrics],
        only_base=_ids(comparison.only_in_base),
        only_candidate=_ids(comparison.only_in_candidate),
        incomparable=[(item.code.value, item.message) for item in comparison.incomparable],
        style=style,
        style_hash=csp_hash(style),
        top_ids=TOP_IDS,
    )


__all__ = ["DifferencePlot", "difference_plot", "gate_comparison_views", "metric_view", "render_comparison_html"]
