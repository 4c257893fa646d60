"""From recorded scores to a decision: aggregation, authority, gates and the verdict, in one pure function.

``evalglass run`` and ``evalglass verify`` both call :func:`decide_run`, so a verified run is re-derived by exactly
the code that produced it, not by a second implementation that could drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalglass.core.authority import GateIdentity, Ledger, resolve_authority
from evalglass.core.columns import ScoreColumn
from evalglass.core.estimate import Estimate
from evalglass.core.gates import GateResult, GateSpec, evaluate_gate
from evalglass.core.population import population_of
from evalglass.core.scorecard import MetricSummary
from evalglass.core.verdict import VerdictPayload


@dataclass(frozen=True, slots=True)
class MetricInput:
    name: str
    type: str
    description: str | None
    uses_reference: bool
    column: ScoreColumn


@dataclass(frozen=True, slots=True)
class GateInput:
    name: str
    spec: GateSpec
    fingerprint: str


def estimate_of(column: ScoreColumn) -> Estimate | None:
    """The point estimate over included scores, or None when nothing was measured."""
    included = column.included_values()
    if included.size == 0:
        return None
    return Estimate(point=float(included.mean()), n=int(included.size), method="mean")


def decide_run(
    metrics: list[MetricInput],
    gates: list[GateInput],
    ledger: Ledger,
    dataset_name: str,
    dataset_fingerprint: str,
    expected: int,
) -> tuple[tuple[MetricSummary, ...], VerdictPayload]:
    summaries = tuple(
        MetricSummary(
            name=metric.name,
            type=metric.type,
            description=metric.description,
            uses_reference=metric.uses_reference,
            estimate=estimate_of(metric.column),
            population=population_of(metric.column, expected),
        )
        for metric in metrics
    )
    by_name: Mapping[str, MetricSummary] = {summary.name: summary for summary in summaries}
    results: list[GateResult] = []
    for gate in gates:
        summary = by_name[gate.spec.metric]
        authority = resolve_authority(
            GateIdentity(
                name=gate.name,
                fingerprint=gate.fingerprint,
                dataset=dataset_name,
                dataset_fingerprint=dataset_fingerprint,
                needs_gold=summary.uses_reference,
            ),
            ledger,
        )
        results.append(
            evaluate_gate(gate.name, gate.spec, gate.fingerprint, authority, summary.estimate, summary.population)
        )
    return summaries, VerdictPayload.decide(results)
