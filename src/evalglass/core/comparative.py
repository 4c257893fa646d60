"""Comparative gates: decide on the paired difference between this run and an approved baseline run.

Under ``point`` the gate passes when the difference (candidate minus baseline) is no worse than ``-margin`` and
fails otherwise. Under ``lower_bound`` it decides three ways on the interval of the difference at the gate's level:
pass when its unfavourable end is no worse than ``-margin``, fail only when its favourable end is worse too (the
shortfall is shown), otherwise blocked as ``undecided`` with the pairs (or samples per example) that would decide.
It blocks, with every reason that holds, when it cannot be decided honestly: the baseline is missing or not the one
the ledger approved, the runs do not measure the same thing, paired examples are not measured validly, or nothing
is measured. It goes through :func:`evalglass.core.gates.GateResult`'s rules and the Verdict Engine like every
other gate.

Power statements come from what was observed: the per-pair spread of the differences (a binary metric's
discordant-pair rate; with clusters, the cluster-robust standard error, which carries the design effect). A run
with no baseline to compare with (the baseline-to-be itself) forecasts from its own spread what an unchanged
candidate would meet: from how its samples vary, or, with one sample per example, an upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from evalglass.core.authority import Authority, BaselineApproval, BlockReason, Ledger, Reason
from evalglass.core.baselinesource import BaselineTrust, source_reasons
from evalglass.core.columns import SCORED_VALID, ScoreColumn
from evalglass.core.compare import (
    GateComparison,
    GoldOf,
    IdArray,
    Incomparable,
    MetricComparison,
    MetricSide,
    Pairing,
    SpreadSource,
    UnchangedForecast,
    compare_metric,
    definition_difference,
    gold_difference,
    pair_ids,
    sample_count_difference,
)
from evalglass.core.estimate import IntervalSpec
from evalglass.core.gates import (
    Advice,
    Evidence,
    GateResult,
    Outcome,
    decided,
    interval_ends,
    measurement_reasons,
    undefined_bound,
)
from evalglass.core.gatespec import GateRule, GateSpec, margin_threshold
from evalglass.core.stats import (
    POWER,
    UNDECIDED_TARGET,
    Direction,
    PairedDifference,
    Reducer,
    ScaleSpec,
    Sides,
    WithinSpread,
    detectable_drop,
    epochs_to_decide,
    epochs_to_halve,
    pairs_to_decide,
    pairs_to_detect,
    unchanged_odds,
)
from evalglass.core.variantnames import split_variant_metric


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
    #: The baseline run's variants (empty: a run without): which of its columns a gate can pair with
    #: (``core.variantnames.baseline_column``), and what a gate it has none for is told.
    variants: tuple[str, ...] = ()


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
    #: ``preflight`` only (before anything is scored): per compared metric, the samples per example the config
    #: declares this run reduces each example from. A run compares the counts its rows have instead
    #: (``decide_comparative_gate``), so it leaves this empty.
    samples_per_example: Mapping[str, int] = field(default_factory=dict)


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
    *,
    within: WithinSpread | None = None,
    reducer: Reducer = Reducer.MEAN,
    counts: npt.NDArray[np.int64] | None = None,
    compare_counts: bool = True,
) -> GateResult:
    """Decide one comparative gate; ``column`` is its metric's per-example column in this run, ``within`` how much
    this run's samples of one example vary (samples per example and the mean reducer), ``reducer`` and ``counts``
    what it was reduced by and from how many samples per example (None: one each). Under a reducer whose value
    moves with that count, a baseline reduced from other counts is ``not_comparable`` (``compare_counts`` off only
    to re-derive a run recorded before that was looked at)."""
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
    candidate = MetricSide(
        values=column.values(),
        states=column.states(),
        definition=inputs.definitions[metric],
        scale=scale,
        within=within,
        reducer=reducer,
        counts=counts,
    )
    if base_side is not None and pairing is not None:
        comparison = compare_metric(
            metric,
            base_side,
            candidate,
            pairing,
            inputs.ids,
            interval=interval,
            clusters=clusters,
            sides=Sides.TWO_SIDED,
            level=2.0 * spec.level - 1.0 if lower else None,
            higher_is_better=spec.direction is Direction.HIGHER_IS_BETTER,
            compare_counts=compare_counts,
        )
        reasons += [
            Reason(code=BlockReason.NOT_COMPARABLE, message=f"{found.code.value}: {found.message}")
            for found in comparison.incomparable
            if found.code is Incomparable.SAMPLE_COUNT
        ]
        reasons += _pair_reasons(spec, comparison)
    difference = comparison.difference if comparison is not None else None
    compared, favourable = compared_ends(spec, difference)
    if difference is not None and compared is None:
        reasons.append(
            Reason(
                code=BlockReason.INTERVAL_UNDEFINED,
                message=undefined_bound(
                    f"{spec.level:.0%} one-sided bound of the difference", difference.interval, difference.n, "pairs"
                ),
            )
        )
    elif comparison is not None and difference is None and comparison.difference_problem is not None:
        reasons.append(Reason(code=BlockReason.INTERVAL_UNDEFINED, message=comparison.difference_problem))
    margin = authority.margin if authority.margin is not None else spec.proposed_margin
    threshold = None if authority.margin is None else margin_threshold(authority.margin, spec.direction)
    pair_within = _paired_within(within, base_side)
    advice = (
        _advice(spec, difference, threshold, pair_within)
        if lower and difference is not None and threshold is not None
        else Advice()
    )
    detail = GateComparison(
        baseline=baseline_name,
        baseline_run_id=found.run_id if found is not None else None,
        baseline_location=found.location if found is not None else None,
        baseline_fingerprint=found.fingerprint if found is not None else None,
        approved_fingerprint=approved.fingerprint if approved is not None else None,
        margin=authority.margin,
        metric=comparison,
        **_power(spec, difference, margin),
        samples=pair_within.samples if pair_within is not None else None,
        epochs_to_halve=(
            epochs_to_halve(variance=_pair_variance(difference), within=pair_within)
            if difference is not None and pair_within is not None
            else None
        ),
        unchanged=(
            unchanged_forecast(spec, difference, base_side if base_side is not None else candidate, margin)
            if lower
            else None
        ),
    )
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
        "required_n": advice.examples,
        "required_epochs": advice.epochs,
        "fingerprint": fingerprint,
        "compare_to": baseline_name,
        "comparison": detail,
        "notes": (*authority.notes, *skipped_note(baseline_name, found)),
        "favourable_bound": favourable,
    }
    if not authority.active:
        return GateResult(outcome=Outcome.INFORMATIONAL, **common)
    if reasons:
        return GateResult(
            outcome=Outcome.BLOCKED, reasons=tuple(reasons), compared=compared, threshold=threshold, **common
        )
    assert compared is not None and threshold is not None and difference is not None  # the reasons above
    what = "the paired difference" if not lower else f"the {spec.level:.0%} bound on the paired difference"
    observed = f"the observed difference {difference.point:+.6g}"
    return decided(
        spec,
        compared=compared,
        favourable=favourable,
        threshold=threshold,
        failing=f"{what} {compared:.6g}",
        evidence=Evidence("the paired difference", difference.n, advice, "pairs", observed),
        common=common,
        magnitude=difference.magnitude,
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
                message=f"{Incomparable.METRIC_MISSING.value}: {_missing_column(name, metric, found.variants)}",
            )
        ]
    reasons: list[Reason] = []
    definition = definition_difference(
        metric,
        side.definition,
        inputs.definitions[metric],
        found.definitions.get(metric),
        inputs.definition_payloads.get(metric),
    )
    if definition is not None:
        reasons.append(
            Reason(code=BlockReason.NOT_COMPARABLE, message=f"{definition.code.value}: {definition.message}")
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
    declared = inputs.samples_per_example.get(metric)
    if declared is not None and pairing is not None:
        planned = MetricSide(
            values=np.empty(0),
            states=np.empty(0, dtype=np.uint8),
            definition="",
            scale=None,
            reducer=side.reducer,
            counts=np.full(inputs.ids.size, declared, dtype=np.int64),
        )
        counted = sample_count_difference(metric, side, planned, pairing, candidate_is="this run")
        if counted is not None:
            reasons.append(Reason(code=BlockReason.NOT_COMPARABLE, message=f"{counted.code.value}: {counted.message}"))
    if pairing is not None and not pairing.complete:
        reasons.append(
            Reason(
                code=BlockReason.NOT_COMPARABLE,
                message=f"{Incomparable.EXAMPLE_SET.value}: {pairing.only_base.size} example(s) only in the baseline, "
                f"{pairing.only_candidate.size} only in this run",
            )
        )
    return reasons


def _missing_column(name: str, metric: str, variants: tuple[str, ...]) -> str:
    """Why baseline ``name`` (with ``variants``) offers no column for ``metric`` (as this run's decision names it)."""
    parts = split_variant_metric(metric)
    if not variants:
        return f"baseline '{name}' has no metric '{parts[0] if parts is not None else metric}'"
    listed = ", ".join(variants)
    if parts is None:
        return (
            f"baseline '{name}' is a run with variants ({listed}), which measures '{metric}' once per variant; a run "
            "without variants has no variant to be compared with: approve a baseline run without variants, or "
            "declare the variants here and gate one of them"
        )
    if parts[1] not in variants:
        return (
            f"baseline '{name}' has no variant '{parts[1]}' (its variants: {listed}); a variant is compared with the "
            "baseline's variant of the same name, or with a baseline run without variants"
        )
    return f"baseline '{name}' has no metric '{parts[0]}' in its variant '{parts[1]}'"


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
        nothing="no example was measured validly in both runs: one example measured validly in both would give a "
        "difference (the metric's diagnostics in each run say why each was excluded)",
        unit="pairs",
        incomplete=(BlockReason.INCOMPLETE_PAIRS, "paired examples were not measured validly in both runs"),
    )


def compared_ends(spec: GateSpec, difference: PairedDifference | None) -> tuple[float | None, float | None]:
    """The number the rule compares with ``-margin`` (the difference, or the unfavourable end of its interval) and,
    under ``lower_bound``, the favourable end the three-way rule needs to fail. A reader of a finished run
    (``engine.decide.consistency``) asks it of the recorded difference, so the two numbers a gate records are the ones
    this gives."""
    if difference is None:
        return None, None
    if spec.rule is GateRule.LOWER_BOUND:
        return interval_ends(difference.interval, spec.direction)
    return difference.point, None


def _pair_variance(difference: PairedDifference) -> float:
    """The per-pair variance of the differences the method implies (with clusters it carries the design effect)."""
    return difference.std_error**2 * difference.n


def _paired_within(candidate: WithinSpread | None, base: MetricSide | None) -> WithinSpread | None:
    """How much a paired difference of per-example means varies from re-sampling alone: the two runs' within-example
    variances added, at the candidate's samples per example. Both runs must have samples (with one, the baseline's
    re-sampling noise is unknown, and nothing is said)."""
    if candidate is None or base is None or base.within is None:
        return None
    return WithinSpread(samples=candidate.samples, variance=candidate.variance + base.within.variance)


def _advice(spec: GateSpec, difference: PairedDifference, threshold: float, within: WithinSpread | None) -> Advice:
    """The pairs, or samples per example, that would decide at the observed difference and spread."""
    pairs = pairs_to_decide(difference, threshold=threshold, direction=spec.direction, level=spec.level)
    epochs = None
    if within is not None:
        epochs = epochs_to_decide(
            point=difference.point,
            threshold=threshold,
            n=difference.n,
            variance=_pair_variance(difference),
            within=within,
            level=spec.level,
        )
    return Advice(examples=pairs, epochs=epochs)


def _power(spec: GateSpec, difference: PairedDifference | None, margin: float | None) -> dict[str, float | int | None]:
    """Power statements from the observed paired variance (the method's standard error times sqrt(pairs), which
    carries the design effect of clusters), at the gate's level and 80% power; ``margin`` is the approved one, or
    the proposed one before the host approves any."""
    if difference is None:
        return {"power": None, "power_margin": None, "required_pairs": None, "detectable_drop": None}
    std_dev = math.sqrt(_pair_variance(difference))
    return {
        "power": POWER,
        "power_margin": margin,
        "required_pairs": None if not margin else pairs_to_detect(drop=margin, std_dev=std_dev, level=spec.level),
        "detectable_drop": detectable_drop(pairs=difference.n, std_dev=std_dev, level=spec.level),
    }


def unchanged_forecast(
    spec: GateSpec, difference: PairedDifference | None, prospective: MetricSide, margin: float | None
) -> UnchangedForecast | None:
    """How often a candidate that did not change would come out undecided at ``margin``: from the observed paired
    spread when there is a comparison; otherwise from ``prospective``, the baseline-to-be (this run, or the baseline
    ``preflight`` reads), over its measured examples: from its samples' spread when it has samples (two runs of k
    samples differ per example by ``2 W / k``), else an upper bound (twice the variance of its values: every answer
    redrawn). Said of the three-way rule (``lower_bound``): under ``point`` nothing is ever undecided."""
    if margin is None or spec.rule is not GateRule.LOWER_BOUND:
        return None
    if difference is not None:
        source, pairs, spread = SpreadSource.PAIRED, difference.n, math.sqrt(_pair_variance(difference))
    else:
        included = prospective.values[prospective.states == SCORED_VALID]
        pairs = int(included.size)
        within = prospective.within
        if within is not None:
            source, spread = SpreadSource.SAMPLES, math.sqrt(2.0 * within.variance / within.samples)
        elif pairs > 1:
            source, spread = SpreadSource.BOUND, math.sqrt(2.0 * float(included.var(ddof=1)))
        else:
            return None
    odds = unchanged_odds(std_dev=spread, pairs=pairs, margin=margin, level=spec.level)
    if odds is None:
        return None
    return UnchangedForecast(
        source=source,
        std_dev=spread,
        pairs=pairs,
        margin=margin,
        level=spec.level,
        undecided=odds.undecided,
        fail=odds.fail,
        target=UNDECIDED_TARGET,
        pairs_for_target=odds.pairs_for_target,
        margin_for_target=odds.margin_for_target,
        power=POWER,
        detectable_drop=detectable_drop(pairs=pairs, std_dev=spread, level=spec.level),
        required_pairs=pairs_to_detect(drop=margin, std_dev=spread, level=spec.level) if margin else None,
    )
