"""The one assembly of a run's decision: scored columns + config + ledger evidence → the ``Scorecard``, and the
``RunRecord`` that lets anyone re-derive it.

``run`` (``pipeline``) and ``verify`` both come through :func:`decided_scorecard`, so a field added to the scorecard
is added once and ``verify`` re-derives it the same way; :func:`run_record` is what ``run`` writes beside it (and
what ``verify`` reads back its evidence from).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalglass.core.checks import CheckResult
from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import GateInput, MetricInput, RunShape, decide_run
from evalglass.core.runrecord import BaselineRecord, KeptOutputs, RunRecord
from evalglass.core.scorecard import CallTotals, CheckSummary, DatasetSummary, Scorecard
from evalglass.core.usage import TokenUsage

if TYPE_CHECKING:
    from pydantic import BaseModel

    from evalglass.core.authority import JudgeStanding, Ledger
    from evalglass.core.comparative import ComparativeInputs
    from evalglass.core.variants import VariantMetric
    from evalglass.engine.spec.config import Config, LoadedConfig
    from evalglass.engine.spec.ledger import LoadedLedger


@dataclass(frozen=True)
class Evidence:
    """Everything a decision is taken on besides the scores: the run's identity, what the ledger says, and what
    the run found (standalone checks, judges' standings, baselines)."""

    run_id: str
    created_at: str
    tool_version: str
    ledger: Ledger
    gate_fingerprints: dict[str, str]
    check_results: dict[str, CheckResult]
    #: The day the run decided on (approvals expire by it): the date of its ``created_at``.
    today: str
    standings: Mapping[str, JudgeStanding] = field(default_factory=dict)
    comparative: ComparativeInputs | None = None
    ledger_where: Mapping[str, str] | None = None
    #: Per gate, what made its approval stale when that is an evaluator's version (``engine.spec.staleness``).
    stale: Mapping[str, str] | None = None
    #: The earlier run's bound files a reason in ``stale`` was named from (recorded for ``verify``).
    approved_files: tuple[dict[str, dict[str, str]], ...] = ()
    #: Every gate on a judge stands on its calibration; off only to re-derive a run recorded before that.
    every_judged_gate: bool = True
    #: Every non-comparative metric gate stands on the dataset's gold; off only to re-derive a run recorded before.
    examples_bound: bool = True
    #: A ``majority`` tie between samples goes to the unfavourable side of the metric's direction; off (every tie
    #: to the lowest value) only to re-derive a run recorded before that (``core.recordrules``).
    unfavourable_ties: bool = True
    #: A comparative gate on a reducer that depends on the samples per example is not comparable with a baseline
    #: reduced from other counts; off only to re-derive a run recorded before that was looked at.
    counts_compared: bool = True
    #: Per metric that runs checks per example, per check, what its command runs unbound (``RunRecord``'s field).
    unbound_check_code: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)


def decided_scorecard(
    config: Config,
    columns: dict[str, ScoreColumn],
    shape: RunShape,
    dataset: DatasetSummary,
    evidence: Evidence,
    calls: CallTotals | None,
    usage: tuple[TokenUsage, ...] = (),
    judged: Mapping[str, Mapping[str, BaseModel]] | None = None,
) -> Scorecard:
    """Decide (``core.decide.decide_run``) and assemble the scorecard: the same for ``run`` and ``verify``. What a
    metric's judge notes add (``engine.explore.judgedsummaries``: a jury's agreement, pairwise win rates) goes beside
    it."""
    summaries, payload = decide_run(
        metric_inputs(config, columns, unfavourable_ties=evidence.unfavourable_ties),
        gate_inputs(
            config, evidence.gate_fingerprints, evidence.check_results, evidence.stale, evidence.unbound_check_code
        ),
        evidence.ledger,
        config.dataset.name,
        dataset.gold,
        shape,
        evidence.standings,
        evidence.comparative,
        evidence.ledger_where,
        today=evidence.today,
        every_judged_gate=evidence.every_judged_gate,
        examples_bound=evidence.examples_bound,
        counts_compared=evidence.counts_compared,
    )
    variants = None
    if config.variant_names:
        from evalglass.core.variants import variants_summary

        variants = variants_summary(
            config.variant_names,
            variant_metrics(config, unfavourable_ties=evidence.unfavourable_ties),
            columns,
            shape,
            usage=usage_by_variant(config, usage),
        )
    return Scorecard(
        run_id=evidence.run_id,
        created_at=evidence.created_at,
        tool_version=evidence.tool_version,
        dataset=dataset,
        decision=payload,
        metrics=tuple(
            summary.model_copy(update=dict(judged[summary.name])) if judged and summary.name in judged else summary
            for summary in summaries
        ),
        checks=tuple(CheckSummary.of(name, result) for name, result in evidence.check_results.items()),
        calls=calls,
        usage=usage,
        variants=variants,
    )


def variant_metrics(config: Config, *, unfavourable_ties: bool = True) -> list[VariantMetric]:
    """What the side-by-side comparison needs of each declared metric (``unfavourable_ties``: as
    :func:`metric_inputs`)."""
    from evalglass.core.variants import VariantMetric

    compared = config.compared_metrics  # one value over the variants, not one per variant
    return [
        VariantMetric(
            name=name,
            reducer=spec.reducer,
            k=spec.k,
            direction=config.metric_direction(name),
            scale=spec.value_scale(),
            ties=config.tie_side(name, unfavourable=unfavourable_ties),
        )
        for name, spec in config.metrics.items()
        if name not in compared
    ]


def usage_by_variant(config: Config, usage: tuple[TokenUsage, ...]) -> dict[str, tuple[TokenUsage, ...]]:
    """A run with variants records each variant's usage under ``source@variant``: split back per variant."""
    from evalglass.core.variants import split_variant_metric

    found: dict[str, list[TokenUsage]] = {name: [] for name in config.variant_names}
    for item in usage:
        parts = split_variant_metric(item.source)
        if parts is not None and parts[1] in found:
            found[parts[1]].append(item.model_copy(update={"source": parts[0]}))
    return {name: tuple(items) for name, items in found.items()}


def run_record(
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    dataset: DatasetSummary,
    evidence: Evidence,
    baselines: dict[str, BaselineRecord],
    scores_sha256: str,
    usage: tuple[TokenUsage, ...] = (),
    kept: KeptOutputs | None = None,
    untrusted_cache_entries: int = 0,
) -> RunRecord:
    """What a run records so that ``verify`` can re-derive its scorecard from the text it read."""
    from evalglass.core.recordrules import compared_count_gates, count_gates, examples_gates, tie_gates
    from evalglass.engine.spec.config import config_as_recorded

    standings = evidence.standings
    recorded = config_as_recorded(loaded.config)
    return RunRecord(
        run_id=evidence.run_id,
        created_at=evidence.created_at,
        tool_version=evidence.tool_version,
        config_path=str(loaded.path),
        config_fingerprint=loaded.fingerprint,
        config_source=loaded.raw.decode("utf-8"),
        config=recorded,
        ledger_path=str(ledger.path),
        ledger_fingerprint=ledger.fingerprint,
        ledger_source=ledger.raw.decode("utf-8"),
        ledger=ledger.ledger,
        dataset=dataset,
        gate_fingerprints=evidence.gate_fingerprints,
        gate_evaluators=loaded.config.evaluators_by_gate(),
        definition_files=loaded.definition_files,
        approved_files=list(evidence.approved_files),
        check_results=evidence.check_results,
        unbound_check_code={metric: dict(checks) for metric, checks in evidence.unbound_check_code.items()},
        judge_fingerprints={name: standing.fingerprint for name, standing in standings.items()},
        judge_endpoints={
            name: standing.endpoint for name, standing in standings.items() if standing.endpoint is not None
        },
        calibrations={
            name: standing.calibration for name, standing in standings.items() if standing.calibration is not None
        },
        judge_gates="every" if standings else "plain",
        judge_calibrations="approved" if standings else "found",
        gold_gates="every" if examples_gates(recorded) else "reference",
        sample_counts="bound" if count_gates(recorded) else "unbound",
        majority_ties="unfavourable" if tie_gates(recorded) else "low",
        baseline_counts="compared" if compared_count_gates(recorded) else "unchecked",
        baselines=baselines,
        scores_sha256=scores_sha256,
        usage=usage,
        kept_outputs=kept,
        untrusted_cache_entries=untrusted_cache_entries,
    )


def metric_inputs(
    config: Config, columns: dict[str, ScoreColumn], *, unfavourable_ties: bool = True
) -> list[MetricInput]:
    """Every metric the decision measures: each declared metric, or in a run with variants each metric of each
    variant (``metric@variant``, variant by variant), then each judge of the variants side by side
    (``compare_variants``) under its own name, and each difference between two variants a gate decides on. A
    ``majority`` tie goes to the unfavourable side of the metric's direction (``Config.tie_side``), or with
    ``unfavourable_ties`` off (a run recorded before that rule) to the lowest value; every ``metric@variant`` and
    difference keeps its declared metric's side."""
    if config.variant_names:
        from evalglass.core.variants import (
            difference_column,
            difference_interval,
            difference_metric,
            difference_scale,
            variant_metric,
        )

        compared = config.compared_metrics
        declared = {
            item.name: item
            for item in _declared_inputs(
                config, {name: ScoreColumn() for name in config.metrics}, unfavourable_ties=unfavourable_ties
            )
        }
        inputs = [
            dataclasses.replace(item, name=variant_metric(name, variant), column=columns[variant_metric(name, variant)])
            for variant in config.variant_names
            for name, item in declared.items()
            if name not in compared
        ]
        inputs += [dataclasses.replace(declared[name], column=columns[name]) for name in compared]
        differences: dict[str, MetricInput] = {}
        for spec in config.gates.values():
            if spec.compare_to_variant is None or spec.metric is None or spec.variant is None:
                continue
            name = difference_metric(spec.metric, spec.variant, spec.compare_to_variant)
            first = columns[variant_metric(spec.metric, spec.variant)]
            second = columns[variant_metric(spec.metric, spec.compare_to_variant)]
            # A difference is no longer on the metric's scale: its range is ±(max - min) of it, which its interval
            # (and its sensitivity bounds) are clipped to, as a comparative gate's paired difference is; nor is it
            # a proportion, whatever values it happens to take.
            item = declared[spec.metric]
            differences[name] = dataclasses.replace(
                item,
                name=name,
                type="difference",
                column=difference_column(first, second),
                scale=difference_scale(first, second, item.scale),
                interval=difference_interval(item.interval, clustered=config.dataset.cluster_field is not None),
            )
        return [*inputs, *differences.values()]
    return _declared_inputs(config, columns, unfavourable_ties=unfavourable_ties)


def _declared_inputs(config: Config, columns: dict[str, ScoreColumn], *, unfavourable_ties: bool) -> list[MetricInput]:
    return [
        MetricInput(
            name=name,
            type=spec.type,
            description=spec.description,
            uses_reference=spec.uses_reference,
            column=columns[name],
            reducer=spec.reducer,
            k=spec.k,
            interval=spec.interval,
            scale=spec.value_scale(),
            ties=config.tie_side(name, unfavourable=unfavourable_ties),
        )
        for name, spec in config.metrics.items()
    ]


def gate_inputs(
    config: Config,
    fingerprints: dict[str, str],
    check_results: dict[str, CheckResult],
    stale: Mapping[str, str] | None = None,
    unbound_check_code: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None,
) -> list[GateInput]:
    """``stale`` holds, per gate, what made its approval stale when that is an evaluator's version
    (``engine.spec.staleness``); ``unbound_check_code``, per metric that runs checks, what they run unbound."""
    causes = stale or {}
    unbound = unbound_check_code or {}
    return [
        GateInput(
            name=name,
            spec=spec.decided(),
            fingerprint=fingerprints[name],
            check_result=check_results.get(spec.check) if spec.check is not None else None,
            stale_cause=causes.get(name),
            unbound_code=dict(unbound.get(spec.metric, {})) if spec.metric is not None else {},
        )
        for name, spec in config.gates.items()
    ]


__all__ = ["Evidence", "decided_scorecard", "gate_inputs", "metric_inputs", "run_record"]
