"""Variants of one run: the side-by-side summary of every metric (the names their metrics take in the decision are
``core.variantnames``'; imported from here too).

A run with variants (``variants:`` in the config) scores every variant on the same examples. The decision is one
:func:`core.decide.decide_run` over all of them: each variant's metric ``m`` enters it as the metric
``m@variant`` (``@`` is not allowed in a declared name, so these never clash with one), and a gate on variant ``v``
decides on ``m@v``. The summary here adds what no single metric says: every pair's paired difference with its
Holm-adjusted interval and the groups the data cannot separate (``core/stats/multiple.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalglass.core.columns import SCORED_VALID, ScoreColumn
from evalglass.core.decide import RunShape, per_example
from evalglass.core.estimate import IntervalSpec
from evalglass.core.stats._common import difference_range
from evalglass.core.stats.choose import value_range
from evalglass.core.stats.model import Direction, Method, Reducer, ScaleSpec, Ties
from evalglass.core.stats.multiple import compare_variants
from evalglass.core.usage import TokenUsage
from evalglass.core.variantnames import SEPARATOR as SEPARATOR
from evalglass.core.variantnames import difference_metric as difference_metric
from evalglass.core.variantnames import split_variant_metric as split_variant_metric
from evalglass.core.variantnames import variant_metric as variant_metric
from evalglass.core.variantsummary import VariantsSummary, VariantTotals


def difference_column(first: ScoreColumn, second: ScoreColumn) -> ScoreColumn:
    """Per example, ``first`` minus ``second`` where both are scored and valid; elsewhere the side that is not
    (``first``'s when neither is) with its status and diagnostics, so an unmeasured side is excluded, counted and
    explained, never a difference of 0."""
    if len(first) != len(second):
        raise ValueError(f"the two variants' columns differ in length ({len(first)} and {len(second)})")
    result = ScoreColumn()
    left, right = first.states(), second.states()
    left_values, right_values = first.values(), second.values()
    for row in range(len(first)):
        if left[row] == SCORED_VALID and right[row] == SCORED_VALID:
            result.append(float(left_values[row] - right_values[row]))
        else:
            result.append(first.score(row) if left[row] != SCORED_VALID else second.score(row))
    return result


def difference_scale(first: ScoreColumn, second: ScoreColumn, scale: ScaleSpec | None) -> ScaleSpec | None:
    """The range the per-example difference of two variants' values (:func:`difference_column`), and its mean, lie
    in: ``±(max - min)`` of the range both variants' measured values lie in (``stats.choose.value_range``: the
    metric's declared ``scale``, or [0, 1] for binary values); None when they lie in none. It is the scale the
    difference's interval is clipped to, as ``stats.paired.paired_difference`` clips a comparative gate's."""
    values = np.concatenate(
        (first.values()[first.states() == SCORED_VALID], second.values()[second.states() == SCORED_VALID])
    )
    bounds = value_range(values, scale)
    if bounds is None:
        return None
    low, high = difference_range(*bounds)
    return ScaleSpec(min=low, max=high)


def difference_interval(spec: IntervalSpec, *, clustered: bool) -> IntervalSpec:
    """How the interval of an in-run difference between two variants is computed: as the metric's, except that a
    difference is never a proportion. Differences that happen to be all 0 or 1 (one variant never worse) would get
    Wilson's interval automatically, which cannot reach below 0 and so claims the other variant is never better
    (one discordant example in ten would "prove" it); a proportion method (automatic, or a ``wilson`` or
    ``clopper_pearson`` override) becomes ``student_t`` on the differences, as ``stats.paired.paired_difference``
    uses on non-binary pairs. With clusters the automatic choice is ``cluster_t`` already and nothing changes."""
    if clustered or spec.override not in (None, Method.WILSON, Method.CLOPPER_PEARSON):
        return spec
    return spec.model_copy(update={"method": Method.STUDENT_T})


@dataclass(frozen=True, slots=True)
class VariantMetric:
    """What the side-by-side comparison needs of one declared metric: ``scale`` is the range its values can take
    (None: unbounded), which each pair's intervals are clipped by; ``ties`` where a ``majority`` tie goes (the
    unfavourable side of ``direction``, as the decision reduces the metric: ``Config.tie_side``)."""

    name: str
    reducer: Reducer = Reducer.MEAN
    k: int | None = None
    direction: Direction | None = Direction.HIGHER_IS_BETTER
    scale: ScaleSpec | None = None
    ties: Ties = Ties.LOW


def per_example_values(column: ScoreColumn, shape: RunShape, metric: VariantMetric) -> np.ndarray:
    """One value per example (its samples reduced as the metric declares), NaN where it is not scored and valid."""
    reduced = per_example(column, shape, metric.reducer, metric.k, ties=metric.ties)
    values = np.full(shape.examples, np.nan)
    count = min(len(reduced), shape.examples)
    measured = reduced.states()[:count] == SCORED_VALID
    values[:count] = np.where(measured, reduced.values()[:count], np.nan)
    return values


def variants_summary(
    names: Sequence[str],
    metrics: Sequence[VariantMetric],
    columns: Mapping[str, ScoreColumn],
    shape: RunShape,
    *,
    usage: Mapping[str, tuple[TokenUsage, ...]] | None = None,
    level: float = 0.95,
) -> VariantsSummary:
    """Per metric, every pair of variants compared on the same examples (rows paired by position: every variant
    scored the same dataset lines, which the run checks)."""
    variants = tuple(names)
    comparisons = []
    for metric in metrics:
        table = np.vstack(
            [per_example_values(columns[variant_metric(metric.name, name)], shape, metric) for name in variants]
        )
        comparisons.append(
            compare_variants(
                metric.name,
                variants,
                table,
                level=level,
                higher_is_better=metric.direction is not Direction.LOWER_IS_BETTER,
                value_range=value_range(table[~np.isnan(table)], metric.scale),
            )
        )
    spent = usage or {}
    return VariantsSummary(
        names=variants,
        level=level,
        metrics=tuple(comparisons),
        totals=tuple(VariantTotals(name=name, usage=spent.get(name, ())) for name in variants),
    )
