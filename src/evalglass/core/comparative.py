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
from typing import Any

import numpy as np
import numpy.typing as npt

from evalglass.core.authority import Authority, BaselineApproval, BlockReason, Ledger, Reason
from evalglass.core.baselinesource import BaselineTrust, source_reasons
from evalglass.core.changes import definition_changes
from evalglass.core.columns import ScoreColumn
from evalglass.core.compare import (
    GateComparison,
    GoldOf,
    IdArray,
    Incomparable,
    MetricComparison,
    MetricSide,
    Pairing,
    compare_metric,
    definition_difference,
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

    ``location`` says where it was looked for; ``problem`` (when set) why it could not be read (or, for a baseline
    approved as a source, why no run qualified: ``problem_code``), and then the other fields are empty. ``metrics``
    holds, per metric of the baseline's config, its per-example column. ``trust`` (source-style approvals only) is
    what the run's signature says about it; ``skipped`` names the newer runs passed over, and why.
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
    problem_code: BlockReason = BlockReason.BASELINE_MISSING
    trust: BaselineTrust | None = None
    skipped: tuple[str, ...] = ()
    #: Per metric, the definition its ``MetricSide.definition`` fingerprints (to say what differs, field by field).
    definitions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


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
    #: This run's suite (its dataset name) and day (YYYY-MM-DD): what a baseline approved as a source is judged by.
    suite: str | None = None
    today: str | None = None
    #: Per compared metric, the definition ``definitions`` fingerprints (to say what differs, field by field).
    definition_payloads: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


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
    base_side = found.metrics.get(metric) if found is not None and found.problem is None else None
    pairing = (
        pair_ids(found.ids, inputs.ids)
        if found is not None and found.ids is not None and base_side is not None
        else None
    )
    reasons: list[Reason] = [
        *authority.reasons,
        *baseline_standing_reasons(baseline_name, metric, ledger, inputs, pairing),
    ]
    comparison: MetricComparison | None = None
    lower = spec.rule is GateRule.LOWER_BOUND
    if base_side is not None and pairing is not None:
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
        "notes": (*authority.notes, *skipped_note(baseline_name, found)),
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


def baseline_standing_reasons(
    name: str, metric: str, ledger: Ledger, inputs: ComparativeInputs, pairing: Pairing | None = None
) -> list[Reason]:
    """Every reason a comparative gate blocks on before its pairs are measured: the baseline (listed, readable, the
    approved run or one the source trusts, recent enough) and whether it measures what this run measures. The run
    decides on these, and ``preflight`` asks exactly this before anything runs."""
    found = inputs.baselines.get(name)
    return [
        *baseline_reasons(name, ledger.baselines.get(name), found, suite=inputs.suite, today=inputs.today),
        *comparability_reasons(name, metric, found, inputs, pairing),
    ]


def baseline_reasons(
    name: str,
    approval: BaselineApproval | None,
    found: BaselineRun | None,
    *,
    suite: str | None = None,
    today: str | None = None,
) -> list[Reason]:
    """Why the baseline ``name`` cannot be compared with: not listed, unreadable (or, for a source, no run
    qualified), not the approved run (pinned), or not a run the source trusts (unsigned, another key, branch or
    suite, too old: ``core.baselinesource``, judged for this run's ``suite`` on its day ``today``)."""
    if approval is None:
        return [
            Reason(
                code=BlockReason.BASELINE_MISSING,
                message=f"the ledger names no baseline '{name}' (add `baselines: {{{name}: {{run: FOLDER, "
                "fingerprint: ...}}` to pin one run, or `{branch: main, signed_by: KEY, max_age_days: N}` to follow "
                "a branch)",
            )
        ]
    if found is None or found.problem is not None:
        where = f" ({found.location})" if found is not None else ""
        why = found.problem if found is not None and found.problem else "it was not read"
        code = found.problem_code if found is not None else BlockReason.BASELINE_MISSING
        if approval.is_source:
            return [Reason(code=code, message=f"baseline '{name}'{where}: {why}")]
        return [Reason(code=code, message=f"baseline '{name}'{where} cannot be read: {why}")]
    if approval.is_source:
        if found.trust is None or suite is None or today is None:
            raise ValueError(f"baseline '{name}' follows a branch, but what its signature says was not read")
        return source_reasons(name, approval, found.trust, suite=suite, today=today)
    if approval.fingerprint is None:
        return [
            Reason(
                code=BlockReason.BASELINE_STALE,
                message=f"the ledger's baseline '{name}' names no fingerprint; approve the run's {found.fingerprint}",
            )
        ]
    if approval.fingerprint != found.fingerprint:
        return [
            Reason(
                code=BlockReason.BASELINE_STALE,
                message=f"baseline '{name}' ({found.location}) is not the run the ledger approved: its files changed "
                f"(approved {approval.fingerprint}, found {found.fingerprint})",
            )
        ]
    return []


def comparability_reasons(
    name: str, metric: str, found: BaselineRun | None, inputs: ComparativeInputs, pairing: Pairing | None = None
) -> list[Reason]:
    """Why the baseline's numbers for ``metric`` do not measure what this run's do: the metric is missing from it or
    defined differently, the gold differs, or the example sets differ. The run decides on these, and ``preflight``
    asks the same before anything is run (with this run's ids, definitions and gold read from the config and the
    dataset). ``pairing``: the ids already paired, when the caller has them."""
    if found is None or found.problem is not None:
        return []
    side = found.metrics.get(metric)
    if side is None:
        return [
            Reason(
                code=BlockReason.NOT_COMPARABLE,
                message=f"{Incomparable.METRIC_MISSING.value}: baseline '{name}' has no metric '{metric}'",
            )
        ]
    reasons: list[Reason] = []
    definition = definition_difference(metric, side.definition, inputs.definitions[metric])
    if definition is not None:
        before, after = found.definitions.get(metric), inputs.definition_payloads.get(metric)
        changes = definition_changes(before, after) if before is not None and after is not None else []
        said = f"; changed since the baseline: {'; '.join(changes)}" if changes else ""
        reasons.append(
            Reason(code=BlockReason.NOT_COMPARABLE, message=f"{definition.code.value}: {definition.message}{said}")
        )
    gold = gold_difference(
        GoldOf(found.dataset_fingerprint, found.gold_fingerprint),
        GoldOf(inputs.dataset_fingerprint, inputs.gold_fingerprint),
        base_is="baseline",
        candidate_is="this run",
    )
    if gold is not None:
        reasons.append(Reason(code=BlockReason.NOT_COMPARABLE, message=f"{Incomparable.GOLD.value}: {gold}"))
    if pairing is None and found.ids is not None:
        pairing = pair_ids(found.ids, inputs.ids)
    if pairing is not None and not pairing.complete:
        reasons.append(
            Reason(
                code=BlockReason.NOT_COMPARABLE,
                message=f"{Incomparable.EXAMPLE_SET.value}: {pairing.only_base.size} example(s) only in the baseline, "
                f"{pairing.only_candidate.size} only in this run",
            )
        )
    return reasons


def skipped_note(name: str, found: BaselineRun | None) -> tuple[str, ...]:
    """A baseline that follows a branch passed over newer runs (unsigned, another key, edited in the history): not a
    block, since the run compared with is one the ledger trusts, but never silent either."""
    if found is None or not found.skipped:
        return ()
    shown = "; ".join(found.skipped[:5]) + (f"; … ({len(found.skipped) - 5} more)" if len(found.skipped) > 5 else "")
    return (f"baseline '{name}' passed over {len(found.skipped)} newer run(s) it does not trust: {shown}",)


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
