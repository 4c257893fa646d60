"""From recorded scores to a decision: reduction, aggregation, intervals, authority, gates and the verdict.

``evalglass run`` and ``evalglass verify`` both call :func:`decide_run`, so a verified run is re-derived by exactly
the code that produced it, not by a second implementation that could drift. Every random draw (bootstrap) comes
from a recorded seed, so the re-derivation is bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from evalglass.core.authority import (
    JudgeStanding,
    Ledger,
    decided_judge,
    declared_gate_authority,
)
from evalglass.core.checks import CheckResult
from evalglass.core.columns import SCORED_VALID, ScoreColumn
from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.estimate import Estimate, IntervalSpec, Sensitivity
from evalglass.core.gates import Advice, GateResult, evaluate_check_gate, evaluate_gate, undeclared_results
from evalglass.core.gatespec import GateRule, GateSpec
from evalglass.core.population import Population, population_of
from evalglass.core.reduce import reduce_column, within_of
from evalglass.core.scorecard import MetricSummary
from evalglass.core.stats import (
    Direction,
    Interval,
    Reducer,
    ScaleSpec,
    Ties,
    WithinSpread,
    confidence_interval,
    epochs_to_decide,
    examples_to_decide,
    sensitivity_bounds,
)
from evalglass.core.stats.choose import value_range
from evalglass.core.verdict import VerdictPayload

if TYPE_CHECKING:  # a run without comparative gates loads no baselines' rules (core.comparative, baselinesource)
    from evalglass.core.comparative import ComparativeInputs

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MetricInput:
    name: str
    type: str
    description: str | None
    uses_reference: bool
    column: ScoreColumn
    reducer: Reducer = Reducer.MEAN
    k: int | None = None
    interval: IntervalSpec = field(default_factory=IntervalSpec)
    scale: ScaleSpec | None = None
    #: Where a ``majority`` tie between samples goes: the unfavourable side of its gates' direction
    #: (``Ties.against``); ``low`` for a run recorded before that rule (``core.recordrules``).
    ties: Ties = Ties.LOW


@dataclass(frozen=True, slots=True)
class RunShape:
    """How sample rows map to examples, and examples to clusters.

    ``example_of_row`` is None when every example has exactly one row (the common case: no reduction needed).
    ``clusters`` holds one integer cluster id per example, or None when the dataset declares no clusters.
    """

    examples: int
    example_of_row: IntArray | None = None
    clusters: IntArray | None = None

    def sample_counts(self) -> IntArray | None:
        """Per example, how many sample rows it has (None: one each), which a reducer that depends on the count
        makes part of what its value means (``core.compare.sample_count_difference``)."""
        if self.example_of_row is None:
            return None
        return np.bincount(self.example_of_row, minlength=self.examples).astype(np.int64)


@dataclass(frozen=True, slots=True)
class GateInput:
    name: str
    spec: GateSpec
    fingerprint: str
    check_result: CheckResult | None = None
    #: Why the ledger's approval of this gate is stale, when the engine could tell (an evaluator's new version).
    stale_cause: str | None = None
    #: A gate on a metric that runs checks per example: per check, what its command runs that no input binds.
    unbound_code: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Measured:
    """One metric after reduction: its summary plus the included values the gates need."""

    summary: MetricSummary
    values: FloatArray
    clusters: IntArray | None
    spec: MetricInput
    column: ScoreColumn  # one row per example, for comparative gates
    #: The sample rows' example indices (None: one row per example), for the epochs advice of interval rules.
    example_of_row: IntArray | None = None

    def within(self) -> WithinSpread | None:
        """How much each example's samples vary (samples per example and the mean reducer); None otherwise.
        Computed only for the gates that say what more samples would buy (comparative gates, interval rules)."""
        return within_of(self.spec.column, self.example_of_row, len(self.column), self.spec.reducer)


def per_example(column: ScoreColumn, shape: RunShape, reducer: Reducer, k: int | None, *, ties: Ties) -> ScoreColumn:
    """One row per example: the column itself, or its sample rows reduced per example (a ``majority`` tie to
    ``ties``)."""
    if shape.example_of_row is None:
        return column
    return reduce_column(column, shape.example_of_row, shape.examples, reducer, k, ties=ties)


def measure(metric: MetricInput, shape: RunShape) -> Measured:
    rows = len(metric.column)
    column = per_example(metric.column, shape, metric.reducer, metric.k, ties=metric.ties)
    population = population_of(column, shape.examples)
    included = column.states() == SCORED_VALID
    values = column.values()[included]
    clusters = None if shape.clusters is None else shape.clusters[: len(column)][included]
    estimate = estimate_of(metric, values, clusters, population, rows if shape.example_of_row is not None else None)
    summary = MetricSummary(
        name=metric.name,
        type=metric.type,
        description=metric.description,
        uses_reference=metric.uses_reference,
        estimate=estimate,
        population=population,
    )
    return Measured(
        summary=summary,
        values=values,
        clusters=clusters,
        spec=metric,
        column=column,
        example_of_row=shape.example_of_row,
    )


def estimate_of(
    metric: MetricInput,
    values: FloatArray,
    clusters: IntArray | None,
    population: Population,
    samples: int | None,
) -> Estimate | None:
    """The point, its interval and its sensitivity bounds; None when nothing was measured."""
    if values.size == 0:
        return None
    spec = metric.interval
    interval: Interval | None
    problem: str | None = None
    try:
        interval = confidence_interval(
            values,
            level=spec.level,
            method=spec.override,
            clusters=clusters,
            seed=spec.seed,
            resamples=spec.resamples,
            scale=metric.scale,
        )
    except ValueError as exc:
        interval, problem = None, str(exc)
    return Estimate(
        point=float(values.mean()),
        n=int(values.size),
        interval=interval,
        interval_problem=problem,
        sensitivity=_sensitivity(values, population, metric.scale),
        reducer=metric.reducer if samples is not None else None,
        k=metric.k if samples is not None else None,
        samples=samples,
    )


def _sensitivity(values: FloatArray, population: Population, scale: ScaleSpec | None) -> Sensitivity | None:
    if scale is None:
        return None
    try:
        bounds = sensitivity_bounds(
            values,
            excluded=population.excluded_total,
            scale=scale,
            direction=Direction.HIGHER_IS_BETTER,
        )
    except ValueError:  # values outside the declared scale: no honest bound to show
        return None
    if bounds is None:
        return None
    return Sensitivity(
        low=bounds.worst, high=bounds.best, excluded=bounds.excluded, scale_min=scale.min, scale_max=scale.max
    )


def decide_run(
    metrics: list[MetricInput],
    gates: list[GateInput],
    ledger: Ledger,
    dataset_name: str,
    dataset_fingerprint: str,
    shape: RunShape,
    judges: Mapping[str, JudgeStanding] | None = None,
    comparative: ComparativeInputs | None = None,
    ledger_where: Mapping[str, str] | None = None,
    *,
    today: str,
    every_judged_gate: bool = True,
    examples_bound: bool = True,
    counts_compared: bool = True,
) -> tuple[tuple[MetricSummary, ...], VerdictPayload]:
    """``today`` (YYYY-MM-DD) is the day approvals are checked for expiry on: the run's own date, so ``verify``
    re-derives the same decision later. ``judges`` holds, per llm_judge metric, its fingerprint and calibration
    record as the run found them (the engine reads the files; a run record snapshots them so ``verify`` decides on
    exactly the same evidence). ``comparative`` is needed when any gate compares with a baseline (``compare_to``).
    ``ledger_where`` names, per gate the ledger lists, its ``file:line``, for the messages that point at it.
    ``every_judged_gate`` off re-derives a run recorded before every gate on a judge stood on its calibration
    (:func:`evalglass.core.authority.decided_judge`); ``examples_bound`` off, one recorded before every metric gate
    stood on the dataset's gold (:func:`evalglass.core.authority.stands_on_gold`); ``counts_compared`` off, one
    recorded before a comparative gate looked at the baseline's samples per example
    (:func:`evalglass.core.compare.sample_count_difference`)."""
    measured = {metric.name: measure(metric, shape) for metric in metrics}
    standings = judges or {}
    results: list[GateResult] = []
    for gate in gates:
        if gate.spec.check is not None:
            results.append(_decide_check_gate(gate, ledger, dataset_name, dataset_fingerprint, today))
        elif gate.spec.compare_to is not None:
            if comparative is None:
                raise ValueError(f"gate '{gate.name}' compares with a baseline, but no comparative inputs were given")
            from evalglass.core.comparative import decide_comparative_gate

            item = measured[gate.spec.subject]
            judge, served = decided_judge(standings, gate.spec.subject, comparative=True, every=every_judged_gate)
            results.append(
                decide_comparative_gate(
                    gate.name,
                    gate.spec,
                    gate.fingerprint,
                    declared_gate_authority(
                        ledger,
                        today=today,
                        name=gate.name,
                        fingerprint=gate.fingerprint,
                        check=False,
                        dataset=dataset_name,
                        dataset_fingerprint=dataset_fingerprint,
                        uses_reference=item.summary.uses_reference,
                        comparative=True,
                        baseline=gate.spec.compare_to,
                        stale_cause=gate.stale_cause,
                        judge=judge,
                        judge_endpoint=served,
                        unbound_code=gate.unbound_code,
                    ),
                    ledger,
                    item.column,
                    item.spec.interval,
                    item.spec.scale,
                    comparative,
                    shape.clusters,
                    within=item.within(),
                    reducer=item.spec.reducer,
                    counts=shape.sample_counts(),
                    compare_counts=counts_compared,
                )
            )
        else:
            results.append(
                _decide_metric_gate(
                    gate,
                    measured,
                    ledger,
                    dataset_name,
                    dataset_fingerprint,
                    today,
                    *decided_judge(standings, gate.spec.subject, comparative=False, every=every_judged_gate),
                    examples_bound=examples_bound,
                )
            )
    results.extend(undeclared_results(ledger, [gate.name for gate in gates], ledger_where or {}))
    return tuple(item.summary for item in measured.values()), VerdictPayload.decide(results)


def _decide_metric_gate(
    gate: GateInput,
    measured: Mapping[str, Measured],
    ledger: Ledger,
    dataset_name: str,
    dataset_fingerprint: str,
    today: str,
    judge: JudgeStanding | None = None,
    judge_endpoint: JudgeEndpoint | None = None,
    *,
    examples_bound: bool = True,
) -> GateResult:
    item = measured[gate.spec.subject]
    summary = item.summary
    authority = declared_gate_authority(
        ledger,
        today=today,
        name=gate.name,
        fingerprint=gate.fingerprint,
        check=False,
        dataset=dataset_name,
        dataset_fingerprint=dataset_fingerprint,
        uses_reference=summary.uses_reference,
        judge=judge,
        stale_cause=gate.stale_cause,
        judge_endpoint=judge_endpoint,
        unbound_code=gate.unbound_code,
        examples_bound=examples_bound,
    )
    bound: Interval | None = None
    advice: Advice | None = None
    if gate.spec.rule is GateRule.LOWER_BOUND and item.values.size:
        bound = _bound(gate.spec, item)
        if authority.threshold is not None:
            advice = _advice(gate.spec, item, bound, authority.threshold)
    return evaluate_gate(
        gate.name,
        gate.spec,
        gate.fingerprint,
        authority,
        summary.estimate,
        summary.population,
        bound=bound,
        advice=advice,
    )


def _bound(spec: GateSpec, item: Measured) -> Interval | None:
    """The interval the three-way rule decides on: two-sided at ``2 * level - 1``, whose ends are the one-sided
    bounds at the gate's level (the unfavourable one is the number the rule has always compared)."""
    interval = item.spec.interval
    try:
        return confidence_interval(
            item.values,
            level=2.0 * spec.level - 1.0,
            method=interval.override,
            clusters=item.clusters,
            seed=interval.seed,
            resamples=interval.resamples,
            scale=item.spec.scale,
        )
    except ValueError:
        return None


def _advice(spec: GateSpec, item: Measured, bound: Interval | None, threshold: float) -> Advice:
    """About how many examples, or samples per example, would decide the gate at the current point and spread."""
    values = item.values
    variance: float | None = None
    std_error = bound.params.get("std_error") if bound is not None else None
    if isinstance(std_error, float):
        variance = values.size * std_error**2  # carries the design effect of clusters
    elif values.size > 1:
        variance = float(values.var(ddof=1))
    # Wilson's count only where the interval is a proportion's: values that are all 0 or 1 are not one when the
    # interval is a t (a difference between variants, whose threshold may be negative: that crashed the run).
    binary = bound is not None and bound.method.binary_only
    if not binary and variance is None:
        return Advice()
    point = float(values.mean())
    examples = examples_to_decide(
        point=point,
        threshold=threshold,
        level=spec.level,
        variance=variance,
        binary=binary,
        value_range=value_range(values, item.spec.scale),
    )
    epochs = None
    within = item.within()
    if within is not None and variance is not None:
        epochs = epochs_to_decide(
            point=point,
            threshold=threshold,
            n=int(values.size),
            variance=variance,
            within=within,
            level=spec.level,
        )
    return Advice(examples=examples, epochs=epochs)


def _decide_check_gate(
    gate: GateInput, ledger: Ledger, dataset_name: str, dataset_fingerprint: str, today: str
) -> GateResult:
    if gate.check_result is None:
        raise ValueError(f"gate '{gate.name}' decides on check '{gate.spec.check}', but no result was recorded")
    authority = declared_gate_authority(
        ledger,
        today=today,
        name=gate.name,
        fingerprint=gate.fingerprint,
        check=True,
        dataset=dataset_name,
        dataset_fingerprint=dataset_fingerprint,
        uses_reference=False,
        stale_cause=gate.stale_cause,
    )
    return evaluate_check_gate(gate.name, gate.spec, gate.fingerprint, authority, gate.check_result)
