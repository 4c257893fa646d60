"""Two runs on the same examples, compared per metric: the comparison payload and the one function that builds it.

``evalglass compare`` and the comparative gates both build their numbers here, from per-example arrays (values and
state bytes, one row per example after samples were reduced), paired by example id. Renderers (terminal, JSON,
report.md; HTML and history later) consume :class:`Comparison` / :class:`MetricComparison` and recompute nothing.

**Passing, per example** (what a flip is): a binary metric's example passes when its value is 1 and fails when it is
0; a continuous metric's example passes when its value is at least the midpoint of the metric's declared scale (0.5
for the builtins' [0, 1]) and fails below it; a metric without a bounded scale has no pass/fail, hence no flips.
Higher is better for flips, except under a comparative gate whose direction is ``lower_is_better`` (then 0 passes,
and values at or below the midpoint). Only examples scored and valid in both runs can flip: an example that stopped
being measured is counted under the pairs' exclusions, never as a flip.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.changes import definition_changes
from evalglass.core.columns import SCORED_VALID
from evalglass.core.estimate import IntervalSpec
from evalglass.core.population import Population, population_of_states
from evalglass.core.stats import (
    PairedDifference,
    Reducer,
    ScaleSpec,
    Sides,
    WithinSpread,
    is_binary,
    paired_difference,
)

COMPARISON_SCHEMA: Final = "evalglass.comparison/1"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
StateArray = npt.NDArray[np.uint8]
IdArray = npt.NDArray[np.str_]


class Incomparable(StrEnum):
    """Why two runs' numbers for a metric do not measure the same thing."""

    METRIC_MISSING = "metric_missing"
    METRIC_DEFINITION = "metric_definition"
    GOLD = "gold"
    EXAMPLE_SET = "example_set"
    #: Under a reducer whose value moves with the samples per example (max, min, majority, at_least_k), the two
    #: runs reduced paired examples from different numbers of samples.
    SAMPLE_COUNT = "sample_count"


class Difference(BaseModel):
    """One reason two runs are not comparable, saying which side holds what."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    code: Incomparable
    message: str


class SideEstimate(BaseModel):
    """One run's own mean for the metric over all its included examples (not only the paired ones)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    point: float | None
    n: int = Field(ge=0)


class Flips(BaseModel):
    """Examples scored and valid in both runs whose pass/fail changed, by id in candidate order."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    pass_rule: str | None = Field(description="What passing means for one example; None: no pass/fail, no flips.")
    regressed: tuple[str, ...] = Field(default=(), description="Passing in the baseline, failing in the candidate.")
    improved: tuple[str, ...] = Field(default=(), description="Failing in the baseline, passing in the candidate.")


class MetricComparison(BaseModel):
    """One metric across the two runs: both estimates, the paired difference and the flips."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    metric: str
    kind: Literal["binary", "continuous"]
    base: SideEstimate
    candidate: SideEstimate
    pairs: Population = Field(
        description="The examples present in both runs: included when scored and valid in both; otherwise excluded "
        "with the candidate's state, or the baseline's when the candidate's was valid."
    )
    difference: PairedDifference | None = Field(description="Candidate minus baseline; None with no included pair.")
    difference_problem: str | None = None
    flips: Flips
    incomparable: tuple[Difference, ...] = ()


@dataclass(frozen=True, slots=True)
class GoldOf:
    """What one run says about the gold it was scored against: its dataset file's fingerprint, and its gold
    fingerprint (ids and every field but the recorded output). None: not known, never equal to anything."""

    dataset_fingerprint: str | None
    gold_fingerprint: str | None


#: Why two runs of one gold can still differ in it: a run recorded before scheme 2 (``engine.datasets.gold``) hashed
#: the records in file order, which no fingerprint taken since matches. Its run cannot be told from the fingerprint
#: alone (nothing in it names the scheme), so every "gold differs" says it; a baseline approved then blocks its
#: comparative gates (``not_comparable``), never passes, until a run of today's EvalGlass is approved in its place.
OLD_GOLD_SCHEME = (
    "; a run recorded before 2026-12-05 took its gold fingerprint in file order (scheme 1), which no run since "
    "matches: run it again (and approve that run as the baseline) if its gold is the same"
)


def gold_difference(base: GoldOf, candidate: GoldOf, *, base_is: str, candidate_is: str) -> str | None:
    """Why the two runs are not shown to be scored against the same gold; None when they are.

    The same gold: the same dataset file (byte for byte; which field each run read its outputs from does not matter,
    the examples and references are the same), or equal gold fingerprints (recorded outputs may differ, nothing else
    does). A run that took no gold fingerprint can only be shown the same by its file: never assumed.
    """
    if base.dataset_fingerprint is not None and base.dataset_fingerprint == candidate.dataset_fingerprint:
        return None
    if base.gold_fingerprint is not None and candidate.gold_fingerprint is not None:
        if base.gold_fingerprint == candidate.gold_fingerprint:
            return None
        return (
            f"the dataset's gold differs ({base_is} {base.gold_fingerprint}, "
            f"{candidate_is} {candidate.gold_fingerprint}){OLD_GOLD_SCHEME}"
        )
    missing = " and ".join(
        side for side, gold in ((base_is, base), (candidate_is, candidate)) if gold.gold_fingerprint is None
    )
    return (
        f"the dataset files differ ({base_is} {base.dataset_fingerprint}, {candidate_is} "
        f"{candidate.dataset_fingerprint}) and no gold fingerprint shows the gold is the same (none recorded by: "
        f"{missing}; a run takes one when a gate compares with a reference or a baseline)"
    )


class RunRef(BaseModel):
    """Which run a side of the comparison is."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run_id: str
    folder: str
    fingerprint: str = Field(description="The fingerprint a ledger's `baselines:` entry binds this run by.")
    dataset: str
    dataset_fingerprint: str = Field(description="SHA-256 of the dataset file's bytes.")
    gold_fingerprint: str | None = Field(
        description="Ids and every field but the recorded output (None: the run took none; see docs/config.md)."
    )
    examples: int = Field(ge=0)

    @property
    def gold(self) -> GoldOf:
        return GoldOf(self.dataset_fingerprint, self.gold_fingerprint)


class Comparison(BaseModel):
    """`evalglass compare BASE CAND`: every compared metric, plus what is on one side only."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.comparison/1"] = COMPARISON_SCHEMA
    base: RunRef
    candidate: RunRef
    paired: int = Field(ge=0, description="Examples present in both runs (matched by id).")
    only_in_base: tuple[str, ...] = ()
    only_in_candidate: tuple[str, ...] = ()
    incomparable: tuple[Difference, ...] = Field(default=(), description="Run-level: gold or example set differ.")
    metrics: tuple[MetricComparison, ...]


class SpreadSource(StrEnum):
    """Where the per-pair spread behind a forecast comes from."""

    #: The observed paired differences of this comparison (a binary metric's discordant-pair rate).
    PAIRED = "paired"
    #: How much each example's samples (epochs) vary in the run the forecast is made from: an estimate of the
    #: differences two runs of an unchanged system would show.
    SAMPLES = "samples"
    #: One sample per example shows no re-sampling noise; twice the variance of the values bounds it from above (a
    #: system whose every answer is redrawn). The forecast is then an upper bound.
    BOUND = "bound"


class UnchangedForecast(BaseModel):
    """How often a candidate that did not change at all would come out undecided against the margin (the
    three-way rule, normal approximation), and the pairs or margin that bring that under 5%. Made before a team
    approves a margin (from the baseline-to-be's own spread) and in every comparison (from the observed one)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    source: SpreadSource
    std_dev: float = Field(ge=0, description="The per-pair spread of the differences assumed.")
    pairs: int = Field(ge=1)
    margin: float = Field(ge=0)
    level: float = Field(gt=0.5, lt=1.0, description="The gate's one-sided level.")
    undecided: float = Field(ge=0, le=1, description="Probability an unchanged candidate is undecided (blocked).")
    fail: float = Field(ge=0, le=1, description="Probability an unchanged candidate fails.")
    target: float = Field(gt=0, lt=1, description="The undecided rate the advice below aims under.")
    pairs_for_target: int | None = Field(default=None, description="Pairs that bring undecided under the target.")
    margin_for_target: float | None = Field(default=None, description="The margin that brings it under the target.")
    power: float = Field(gt=0, lt=1, description="The power the two statements below are made at.")
    detectable_drop: float | None = Field(
        default=None,
        description="Minimum detectable effect over these pairs: how far from -margin a true difference "
        "must lie to be decided with `power`.",
    )
    required_pairs: int | None = Field(
        default=None, description="Pairs at which an unchanged candidate passes with `power` at this margin."
    )


class GateComparison(BaseModel):
    """What a comparative gate decided on: the baseline it was bound to, the margin, the comparison, and how much
    the suite can detect (power statements from the observed paired variance, at the gate's level and 80% power)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    baseline: str = Field(description="The baseline's name in the ledger.")
    baseline_run_id: str | None = None
    baseline_location: str | None = Field(default=None, description="Where the baseline run was read from.")
    baseline_fingerprint: str | None = Field(default=None, description="The baseline's fingerprint as found.")
    approved_fingerprint: str | None = Field(default=None, description="The fingerprint the ledger approved.")
    margin: float | None = Field(default=None, description="The approved margin (the largest drop accepted).")
    metric: MetricComparison | None = Field(default=None, description="None when the baseline could not be read.")
    power: float | None = Field(default=None, description="The power the statements below are made at.")
    power_margin: float | None = Field(
        default=None, description="The drop the power statement is about: the approved margin, else the proposed one."
    )
    required_pairs: int | None = Field(
        default=None,
        description="Pairs at which an unchanged candidate is decided (passes) with the stated power against "
        "power_margin at the gate's level: what it takes to tell a drop of power_margin from no change.",
    )
    detectable_drop: float | None = Field(
        default=None,
        description="The minimum detectable effect: how far from -margin a true difference must lie for the current "
        "pairs to decide it (pass or fail) with the stated power at the gate's level.",
    )
    samples: int | None = Field(default=None, description="Samples (epochs) behind each per-example mean.")
    epochs_to_halve: int | None = Field(
        default=None,
        description="Samples per example that would halve the interval at the observed within-example variance (None: "
        "no number would; the spread between examples dominates, only more examples help).",
    )
    unchanged: UnchangedForecast | None = Field(
        default=None, description="How often an unchanged candidate would come out undecided at this margin."
    )


@dataclass(frozen=True, slots=True)
class Pairing:
    """Positions of the examples present in both runs, in candidate order, and of those on one side only."""

    base: IntArray
    candidate: IntArray
    only_base: IntArray
    only_candidate: IntArray

    @property
    def complete(self) -> bool:
        return not (self.only_base.size or self.only_candidate.size)


def pair_ids(base: IdArray, candidate: IdArray) -> Pairing:
    """Match examples by id (ids are unique within a run). Runs of one dataset share the order: no sort then."""
    if base.shape == candidate.shape and np.array_equal(base, candidate):
        every = np.arange(base.size, dtype=np.int64)
        empty = np.empty(0, dtype=np.int64)
        return Pairing(base=every, candidate=every, only_base=empty, only_candidate=empty)
    _, in_base, in_candidate = np.intersect1d(base, candidate, assume_unique=True, return_indices=True)
    order = np.argsort(in_candidate, kind="stable")
    only_base = np.ones(base.size, dtype=bool)
    only_base[in_base] = False
    only_candidate = np.ones(candidate.size, dtype=bool)
    only_candidate[in_candidate] = False
    return Pairing(
        base=in_base[order].astype(np.int64),
        candidate=in_candidate[order].astype(np.int64),
        only_base=np.flatnonzero(only_base).astype(np.int64),
        only_candidate=np.flatnonzero(only_candidate).astype(np.int64),
    )


@dataclass(frozen=True, slots=True)
class MetricSide:
    """One run's metric, one row per example (samples already reduced): values (NaN where none) and state bytes."""

    values: FloatArray
    states: StateArray
    definition: str
    scale: ScaleSpec | None
    #: How much each example's samples vary (a run with samples and the mean reducer); None otherwise.
    within: WithinSpread | None = None
    #: What ``definition`` fingerprints, when the caller has it: a difference then names what changed.
    definition_payload: Mapping[str, Any] | None = None
    #: The reducer the rows were reduced by, and per example (row) how many samples it reduced (None: one each).
    #: Under a reducer that depends on the count, pairs reduced from other counts are not comparable.
    reducer: Reducer = Reducer.MEAN
    counts: IntArray | None = None


def side_estimate(side: MetricSide) -> SideEstimate:
    included = side.values[side.states == SCORED_VALID]
    return SideEstimate(point=float(included.mean()) if included.size else None, n=int(included.size))


def compare_metric(
    name: str,
    base: MetricSide,
    candidate: MetricSide,
    pairing: Pairing,
    candidate_ids: IdArray,
    *,
    interval: IntervalSpec,
    clusters: IntArray | None = None,
    sides: Sides = Sides.TWO_SIDED,
    level: float | None = None,
    higher_is_better: bool = True,
    compare_counts: bool = True,
) -> MetricComparison:
    """Compare one metric over the paired examples.

    ``interval`` is the candidate's interval settings for the metric (method override, level, seed, resamples);
    ``level`` overrides its level (a comparative gate's one-sided level). ``clusters`` holds one cluster id per
    candidate example when the dataset declares clusters. ``higher_is_better`` (a gate's direction; `evalglass
    compare` has none and takes higher as better) decides which side of the pass point passes. ``compare_counts``
    off (only to re-derive a run recorded before it was looked at) leaves :func:`sample_count_difference` out.
    """
    base_states = base.states[pairing.base]
    candidate_states = candidate.states[pairing.candidate]
    combined = np.where(candidate_states != SCORED_VALID, candidate_states, base_states).astype(np.uint8)
    pairs = population_of_states(combined, int(combined.size))
    valid = combined == SCORED_VALID
    base_values = base.values[pairing.base][valid]
    candidate_values = candidate.values[pairing.candidate][valid]
    binary = is_binary(base_values) and is_binary(candidate_values)
    difference: PairedDifference | None = None
    problem: str | None = None
    try:
        difference = paired_difference(
            base_values,
            candidate_values,
            level=interval.level if level is None else level,
            sides=sides,
            method=interval.override,
            clusters=None if clusters is None else clusters[pairing.candidate][valid],
            seed=interval.seed,
            resamples=interval.resamples,
            scale=candidate.scale if base.scale == candidate.scale else None,
        )
    except ValueError as exc:
        problem = str(exc)
    definition = definition_difference(
        name, base.definition, candidate.definition, base.definition_payload, candidate.definition_payload
    )
    counted = sample_count_difference(name, base, candidate, pairing) if compare_counts else None
    incomparable = tuple(found for found in (definition, counted) if found is not None)
    return MetricComparison(
        metric=name,
        kind="binary" if binary else "continuous",
        base=side_estimate(base),
        candidate=side_estimate(candidate),
        pairs=pairs,
        difference=difference,
        difference_problem=problem,
        flips=_flips(
            base_values,
            candidate_values,
            candidate_ids[pairing.candidate][valid],
            binary,
            candidate.scale,
            higher_is_better,
        ),
        incomparable=incomparable,
    )


def sample_count_difference(
    name: str,
    base: MetricSide,
    candidate: MetricSide,
    pairing: Pairing,
    *,
    base_is: str = "the baseline",
    candidate_is: str = "the candidate",
) -> Difference | None:
    """Under a reducer whose expected value moves with the samples each example is reduced from (``max`` over 8
    samples is not ``max`` over 1: ``Reducer.depends_on_count``), paired examples reduced from different numbers
    of samples measure different things; None when the reducer does not depend on the count or every pair was
    reduced from the same number. The message gives both counts (a range where a run's examples differ)."""
    reducer = candidate.reducer if candidate.reducer.depends_on_count else base.reducer
    if not reducer.depends_on_count or pairing.candidate.size == 0:
        return None
    base_counts = _counts(base, pairing.base)
    candidate_counts = _counts(candidate, pairing.candidate)
    differ = int(np.count_nonzero(base_counts != candidate_counts))
    if differ == 0:
        return None
    return Difference(
        code=Incomparable.SAMPLE_COUNT,
        message=f"metric '{name}' is reduced by {reducer.value}, whose value moves with the samples each example is "
        f"reduced from, from {_said(base_counts)} sample(s) per example in {base_is} and "
        f"{_said(candidate_counts)} in {candidate_is} ({differ} of {base_counts.size} paired example(s) "
        "differ): compare runs with the same samples per example (epochs)",
    )


def _counts(side: MetricSide, rows: IntArray) -> IntArray:
    return np.ones(rows.size, dtype=np.int64) if side.counts is None else side.counts[rows]


def _said(counts: IntArray) -> str:
    low, high = int(counts.min()), int(counts.max())
    return str(low) if low == high else f"{low} to {high}"


def definition_difference(
    name: str,
    base: str,
    candidate: str,
    base_payload: Mapping[str, Any] | None = None,
    candidate_payload: Mapping[str, Any] | None = None,
) -> Difference | None:
    """Whether the metric ``name`` is defined differently in the two runs (by its definition fingerprints); with
    both definitions given, the message names what changed, field by field (a checker's file by its path)."""
    if base == candidate:
        return None
    changes = (
        definition_changes(base_payload, candidate_payload)
        if base_payload is not None and candidate_payload is not None
        else []
    )
    said = f"; changed since the baseline: {'; '.join(changes)}" if changes else ""
    return Difference(
        code=Incomparable.METRIC_DEFINITION,
        message=f"metric '{name}' is defined differently in the two runs (baseline {base}, candidate {candidate})"
        + said,
    )


def _flips(
    base: FloatArray, candidate: FloatArray, ids: IdArray, binary: bool, scale: ScaleSpec | None, higher: bool
) -> Flips:
    if binary:
        pass_at, rule = (1.0, "value = 1") if higher else (0.0, "value = 0")
    elif scale is not None:
        pass_at = (scale.min + scale.max) / 2.0
        sign = ">=" if higher else "<="
        rule = f"value {sign} {pass_at:g} (the midpoint of the scale [{scale.min:g}, {scale.max:g}])"
    else:
        return Flips(pass_rule=None)
    if higher:
        base_pass, candidate_pass = base >= pass_at, candidate >= pass_at
    else:
        base_pass, candidate_pass = base <= pass_at, candidate <= pass_at
    return Flips(
        pass_rule=rule,
        regressed=tuple(ids[base_pass & ~candidate_pass].tolist()),
        improved=tuple(ids[~base_pass & candidate_pass].tolist()),
    )


def run_differences(base: RunRef, candidate: RunRef, pairing: Pairing) -> tuple[Difference, ...]:
    """Run-level reasons the two runs do not measure the same examples against the same gold."""
    out: list[Difference] = []
    gold = gold_difference(base.gold, candidate.gold, base_is="baseline", candidate_is="candidate")
    if gold is not None:
        out.append(Difference(code=Incomparable.GOLD, message=gold))
    if not pairing.complete:
        out.append(
            Difference(
                code=Incomparable.EXAMPLE_SET,
                message=f"the example sets differ: {pairing.only_base.size} example(s) only in the baseline, "
                f"{pairing.only_candidate.size} only in the candidate",
            )
        )
    return tuple(out)
