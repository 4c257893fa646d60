"""Comparative gates: decide on the paired difference between this run and an approved baseline run.

The gate passes when the difference (candidate minus baseline) — or, under ``lower_bound``, its unfavourable
one-sided confidence bound — is no worse than ``-margin``; it fails when validly worse; and it blocks, with every
reason that holds, when it cannot be decided honestly: the baseline is missing or not the one the ledger approved,
the runs do not measure the same thing, paired examples are not measured validly, or nothing is measured. It goes
through :func:`evalglass.core.gates.GateResult`'s rules and the Verdict Engine like every other gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from evalglass.core.authority import Authority, BlockReason, Ledger, Reason
from evalglass.core.columns import ScoreColumn
from evalglass.core.compare import (
    GateComparison,
    GoldOf,
    IdArray,
    Incomparable,
    MetricComparison,
    MetricSide,
    compare_metric,
    gold_difference,
    pair_ids,
)
from evalglass.core.estimate import IntervalSpec
from evalglass.core.gates import GateResult, Outcome, below_threshold_reason, measurement_reasons
from evalglass.core.gatespec import GateRule, GateSpec, margin_threshold, meets
from evalglass.core.stats import POWER, Direction, ScaleSpec, Sides, detectable_drop, pairs_to_detect


@dataclass(frozen=True, slots=True)
class BaselineRun:
    """A baseline run as the engine found it: read and fingerprinted from its files, or why it could not be.

    ``location`` says where it was looked for; ``problem`` (when set) why it could not be read, and then the other
    fields are empty. ``metrics`` holds, per metric of the baseline's config, its per-example column.
    """

    name: str
    location: str
    problem: str | None = None
    fingerprint: str | None = None
    run_id: str | None = None
    dataset_fingerprint: str | None = None
    gold_fingerprint: str | None = None
    ids: IdArray | None = None
    metrics: Mapping[str, MetricSide] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ComparativeInputs:
    """What comparative gates need beyond this run's columns: its example ids, gold and metric definitions, and the
    baselines the ledger names (as the engine read them; a name the ledger does not list is simply absent)."""

    ids: IdArray
    gold_fingerprint: str | None
    definitions: Mapping[str, str]
    baselines: Mapping[str, BaselineRun]
    #: The dataset file's fingerprint (runs reading the very same file are on the same gold); None: not known.
    dataset_fingerprint: str | None = None


def decide_comparative_gate(
    name: str,
    spec: GateSpec,
    fingerprint: str,
    authority: Authority,
    ledger: Ledger,
    column: ScoreColumn,
    interval: IntervalSpec,
    scale: ScaleSpec | None,
    inputs: ComparativeInputs,
    clusters: npt.NDArray[np.int64] | None,
) -> GateResult:
    """Decide one comparative gate; ``column`` is its metric's per-example column in this run."""
    assert spec.compare_to is not None and spec.metric is not None
    baseline_name, metric = spec.compare_to, spec.metric
    approved = ledger.baselines.get(baseline_name)
    found = inputs.baselines.get(baseline_name)
    reasons: list[Reason] = list(authority.reasons)
    reasons += baseline_reasons(baseline_name, approved.fingerprint if approved else None, found, approved is not None)
    comparison: MetricComparison | None = None
    base_side = found.metrics.get(metric) if found is not None and found.problem is None else None
    if found is not None and found.problem is None and base_side is None:
        reasons.append(
            Reason(
                code=BlockReason.NOT_COMPARABLE,
                message=f"{Incomparable.METRIC_MISSING.value}: baseline '{baseline_name}' has no metric '{metric}'",
            )
        )
    lower = spec.rule is GateRule.LOWER_BOUND
    if found is not None and base_side is not None and found.ids is not None:
        pairing = pair_ids(found.ids, inputs.ids)
        candidate = MetricSide(
            values=column.values(), states=column.states(), definition=inputs.definitions[metric], scale=scale
        )
        comparison = compare_metric(
            metric,
            base_side,
            candidate,
            pairing,
            inputs.ids,
            interval=interval,
            clusters=clusters,
            sides=spec.direction.unfavourable_side if lower else Sides.TWO_SIDED,
            level=spec.level if lower else None,
            higher_is_better=spec.direction is Direction.HIGHER_IS_BETTER,
        )
        reasons += _comparability_reasons(
            comparison, found, inputs, pairing.only_base.size, pairing.only_candidate.size
        )
        reasons += _pair_reasons(spec, comparison)
    compared = _compared(spec, comparison)
    if comparison is not None and comparison.difference is not None and compared is None:
        reasons.append(
            Reason(
                code=BlockReason.INTERVAL_UNDEFINED,
                message=f"no {spec.level:.0%} one-sided bound of the difference exists for "
                f"{comparison.difference.n} pair(s) with this method",
            )
        )
    elif comparison is not None and comparison.difference is None and comparison.difference_problem is not None:
        reasons.append(Reason(code=BlockReason.INTERVAL_UNDEFINED, message=comparison.difference_problem))
    detail = GateComparison(
        baseline=baseline_name,
        baseline_run_id=found.run_id if found is not None else None,
        baseline_location=found.location if found is not None else None,
        baseline_fingerprint=found.fingerprint if found is not None else None,
        approved_fingerprint=approved.fingerprint if approved is not None else None,
        margin=authority.margin,
        metric=comparison,
        **_power(spec, comparison, authority.margin if authority.margin is not None else spec.proposed_margin),
    )
    difference = comparison.difference if comparison is not None else None
    common = {
        "name": name,
        "subject": metric,
        "active": authority.active,
        "value": None if difference is None else difference.point,
        "n": None if difference is None else difference.n,
        "direction": spec.direction,
        "rule": spec.rule,
        "level": spec.level if lower else None,
        "bound_method": difference.interval.method.value if lower and difference is not None else None,
        "fingerprint": fingerprint,
        "compare_to": baseline_name,
        "comparison": detail,
        "notes": authority.notes,
    }
    if not authority.active:
        return GateResult(outcome=Outcome.INFORMATIONAL, **common)
    threshold = None if authority.margin is None else margin_threshold(authority.margin, spec.direction)
    if reasons:
        return GateResult(
            outcome=Outcome.BLOCKED, reasons=tuple(reasons), compared=compared, threshold=threshold, **common
        )
    assert compared is not None and threshold is not None  # guaranteed by the reasons above
    if meets(compared, threshold, spec.direction):
        return GateResult(outcome=Outcome.PASS, compared=compared, threshold=threshold, **common)
    what = "the paired difference" if not lower else f"the {spec.level:.0%} bound on the paired difference"
    return GateResult(
        outcome=Outcome.FAIL,
        reasons=(below_threshold_reason(f"{what} {compared:.6g}", threshold, spec.direction),),
        compared=compared,
        threshold=threshold,
        **common,
    )


def baseline_reasons(name: str, approved: str | None, found: BaselineRun | None, listed: bool) -> list[Reason]:
    """Why the baseline ``name`` cannot be compared with: not listed, unreadable, or not the approved run."""
    if not listed:
        return [
            Reason(
                code=BlockReason.BASELINE_MISSING,
                message=f"the ledger names no baseline '{name}' (add `baselines: {{{name}: {{run: FOLDER, "
                "fingerprint: ...}}` to approve one)",
            )
        ]
    if found is None or found.problem is not None:
        where = f" ({found.location})" if found is not None else ""
        why = found.problem if found is not None and found.problem else "it was not read"
        return [Reason(code=BlockReason.BASELINE_MISSING, message=f"baseline '{name}'{where} cannot be read: {why}")]
    if approved is None:
        return [
            Reason(
                code=BlockReason.BASELINE_STALE,
                message=f"the ledger's baseline '{name}' names no fingerprint; approve the run's {found.fingerprint}",
            )
        ]
    if approved != found.fingerprint:
        return [
            Reason(
                code=BlockReason.BASELINE_STALE,
                message=f"baseline '{name}' ({found.location}) is not the run the ledger approved: its files changed "
                f"(approved {approved}, found {found.fingerprint})",
            )
        ]
    return []


def _comparability_reasons(
    comparison: MetricComparison, found: BaselineRun, inputs: ComparativeInputs, only_base: int, only_candidate: int
) -> list[Reason]:
    reasons = [
        Reason(code=BlockReason.NOT_COMPARABLE, message=f"{item.code.value}: {item.message}")
        for item in comparison.incomparable
    ]
    gold = gold_difference(
        GoldOf(found.dataset_fingerprint, found.gold_fingerprint),
        GoldOf(inputs.dataset_fingerprint, inputs.gold_fingerprint),
        base_is="baseline",
        candidate_is="this run",
    )
    if gold is not None:
        reasons.append(Reason(code=BlockReason.NOT_COMPARABLE, message=f"{Incomparable.GOLD.value}: {gold}"))
    if only_base or only_candidate:
        reasons.append(
            Reason(
                code=BlockReason.NOT_COMPARABLE,
                message=f"{Incomparable.EXAMPLE_SET.value}: {only_base} example(s) only in the baseline, "
                f"{only_candidate} only in this run",
            )
        )
    return reasons


def _pair_reasons(spec: GateSpec, comparison: MetricComparison) -> list[Reason]:
    return measurement_reasons(
        spec,
        comparison.pairs,
        nothing="no example was measured validly in both runs",
        unit="pairs",
        incomplete=(BlockReason.INCOMPLETE_PAIRS, "paired examples were not measured validly in both runs"),
    )


def _compared(spec: GateSpec, comparison: MetricComparison | None) -> float | None:
    """The number the rule compares with ``-margin``: the difference, or its unfavourable one-sided bound."""
    if comparison is None or comparison.difference is None:
        return None
    difference = comparison.difference
    if spec.rule is GateRule.LOWER_BOUND:
        return difference.interval.bound(spec.direction.value)
    return difference.point


def _power(spec: GateSpec, comparison: MetricComparison | None, margin: float | None) -> dict[str, float | int | None]:
    """Power statements from the observed paired variance (the method's standard error times sqrt(pairs), which
    carries the design effect of clusters), at the gate's level and 80% power; ``margin`` is the approved one, or
    the proposed one before the host approves any."""
    difference = comparison.difference if comparison is not None else None
    if difference is None:
        return {"power": None, "power_margin": None, "required_pairs": None, "detectable_drop": None}
    std_dev = difference.std_error * float(np.sqrt(difference.n))
    return {
        "power": POWER,
        "power_margin": margin,
        "required_pairs": None if not margin else pairs_to_detect(drop=margin, std_dev=std_dev, level=spec.level),
        "detectable_drop": detectable_drop(pairs=difference.n, std_dev=std_dev, level=spec.level),
    }
