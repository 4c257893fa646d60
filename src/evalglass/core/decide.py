"""From recorded scores to a decision: aggregation, authority, gates and the verdict, in one pure function.

``evalglass run`` and ``evalglass verify`` both call :func:`decide_run`, so a verified run is re-derived by exactly
the code that produced it, not by a second implementation that could drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalglass.core.authority import GateIdentity, Ledger, resolve_authority
from evalglass.core.checks import CheckResult
from evalglass.core.columns import ScoreColumn
from evalglass.core.estimate import Estimate
from evalglass.core.gates import GateResult, GateSpec, evaluate_check_gate, evaluate_gate
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
    check_result: CheckResult | None = None


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
        if gate.spec.check is not None:
            results.append(_decide_check_gate(gate, ledger, dataset_name, dataset_fingerprint))
            continue
        summary = by_name[gate.spec.subject]
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


def _decide_check_gate(gate: GateInput, ledger: Ledger, dataset_name: str, dataset_fingerprint: str) -> GateResult:
    if gate.check_result is None:
        raise ValueError(f"gate '{gate.name}' decides on check '{gate.spec.check}', but no result was recorded")
    authority = resolve_authority(
        GateIdentity(
            name=gate.name,
            fingerprint=gate.fingerprint,
            dataset=dataset_name,
            dataset_fingerprint=dataset_fingerprint,
            needs_gold=False,
            needs_threshold=False,
        ),
        ledger,
    )
    return evaluate_check_gate(gate.name, gate.spec, gate.fingerprint, authority, gate.check_result)
