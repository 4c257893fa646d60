"""Gate outcomes: the rule that turns a measured metric or a check into pass, fail or blocked (the declaration,
``GateSpec``, is in ``core.gatespec``)."""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.authority import (
    Authority,
    BlockReason,
    Ledger,
    Reason,
    check_inputs_unbound_reason,
    check_unbound_reason,
    unbound_inputs_text,
    undeclared_gates,
)
from evalglass.core.checks import BindingStatus, CheckOutcome, CheckResult
from evalglass.core.compare import GateComparison
from evalglass.core.estimate import Estimate
from evalglass.core.gatespec import (
    CHECK_THRESHOLD,
    GateRule,
    GateSpec,
    RuleDecision,
    SubjectKind,
    Tolerable,
    margin_threshold,
    meets,
    reaches,
    rule_decision,
)
from evalglass.core.population import Population
from evalglass.core.score import Status, Validity
from evalglass.core.stats import Direction, Interval


class Outcome(StrEnum):
    """A gate's outcome, and (by precedence) the run's verdict."""

    INFORMATIONAL = "informational"
    PASS = "pass"
    FAIL = "fail"
    BLOCKED = "blocked"


ALWAYS_INCOMPLETE_STATUSES = frozenset({Status.BLOCKED, Status.ERROR})


class GateResult(BaseModel):
    """One gate's outcome with everything needed to see why. Refuses an outcome its own fields contradict."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    subject: str = Field(description="The metric or check the gate decides on.")
    subject_kind: SubjectKind = SubjectKind.METRIC
    active: bool
    outcome: Outcome
    reasons: tuple[Reason, ...] = ()
    notes: tuple[str, ...] = Field(
        default=(), description="What a reader must know about a pass or fail that is not a reason to block it."
    )
    value: float | None = Field(default=None, description="The metric's point value, when one exists.")
    compared: float | None = Field(
        default=None,
        description="The number the rule compared with the threshold: the value (point rule), or the unfavourable "
        "one-sided bound at the gate's level (lower_bound).",
    )
    favourable_bound: float | None = Field(
        default=None,
        description="lower_bound only: the favourable one-sided bound at the gate's level (the upper bound when higher "
        "is better). With `compared` it is the interval the three-way rule decides on: fail needs this end on the "
        "wrong side of the threshold too. None in results recorded before the three-way rule (lower_bound@1).",
    )
    threshold: float | None = Field(default=None, description="The approved threshold, from the ledger.")
    proposed_threshold: float | None = None
    direction: Direction = Direction.HIGHER_IS_BETTER
    rule: GateRule = GateRule.POINT
    level: float | None = Field(default=None, description="lower_bound only: one-sided level of the bound.")
    bound_method: str | None = Field(default=None, description="lower_bound only: how the bound was computed.")
    n: int | None = Field(default=None, description="Included examples behind the value.")
    required_n: int | None = Field(
        default=None,
        description="lower_bound only: about how many examples (a comparative gate: pairs) would decide at the "
        "observed effect and spread: the interval wholly on one side of the threshold.",
    )
    required_epochs: int | None = Field(
        default=None,
        description="lower_bound only, with samples per example: about how many samples per example would decide "
        "over the same examples at the observed within-example variance (None: no number would).",
    )
    fingerprint: str
    compare_to: str | None = Field(default=None, description="Comparative gates: the baseline's name.")
    comparison: GateComparison | None = Field(
        default=None, description="Comparative gates: the baseline, the margin, the paired difference and the flips."
    )

    @model_validator(mode="after")
    def _outcome_follows(self) -> "GateResult":
        if (self.compare_to is None) != (self.comparison is None):
            raise ValueError(f"gate {self.name}: a comparative gate records its comparison, and only it does")
        if not self.active:
            if self.outcome is not Outcome.INFORMATIONAL or self.reasons:
                raise ValueError(f"gate {self.name}: an inactive gate is informational and has no reasons")
            return self
        self._bounds_ordered()
        undecided = any(reason.code is BlockReason.UNDECIDED for reason in self.reasons)
        blocking = [reason for reason in self.reasons if reason.code.blocks]
        if blocking and not undecided:
            if self.outcome is not Outcome.BLOCKED or len(blocking) != len(self.reasons):
                raise ValueError(f"gate {self.name}: a gate with blocking reasons is blocked, with no other reason")
            return self
        if undecided and (self.outcome is not Outcome.BLOCKED or len(self.reasons) != 1):
            raise ValueError(f"gate {self.name}: an undecided gate is blocked, with that one reason")
        if undecided and self.rule is not GateRule.LOWER_BOUND:
            raise ValueError(f"gate {self.name}: only an interval rule (lower_bound) is ever undecided")
        if not undecided and self.reasons and (self.outcome is not Outcome.FAIL or len(self.reasons) != 1):
            raise ValueError(f"gate {self.name}: only a failing gate says below_threshold, once")
        if not undecided and self.outcome not in (Outcome.PASS, Outcome.FAIL):
            raise ValueError(f"gate {self.name}: an active, unblocked gate must pass or fail")
        if self.compared is None or self.threshold is None:
            raise ValueError(f"gate {self.name}: a decided rule needs a compared value and an approved threshold")
        if self.comparison is not None:
            margin = self.comparison.margin
            if margin is None or self.threshold != margin_threshold(margin, self.direction):
                raise ValueError(f"gate {self.name}: a comparative gate's threshold is minus its approved margin")
        if undecided and self.favourable_bound is None:
            raise ValueError(f"gate {self.name}: undecided needs both ends of the interval (favourable_bound)")
        expected = rule_decision(
            self.rule, self.direction, self.threshold, self.compared, self.favourable_bound, magnitude=self.magnitude
        )
        found = RuleDecision.UNDECIDED if undecided else RuleDecision(self.outcome.value)
        # A result recorded before float rounding was read as on the threshold was decided exactly: redder, never
        # greener, so it still reads as it was decided.
        if found is not expected and found is not rule_decision(
            self.rule, self.direction, self.threshold, self.compared, self.favourable_bound, exact=True
        ):
            interval = "" if self.favourable_bound is None else f" (favourable bound {self.favourable_bound})"
            raise ValueError(
                f"gate {self.name}: {self.compared}{interval} against threshold {self.threshold} "
                f"({self.direction.value}, rule {self.rule.value}) is {expected.value}, not {found.value}"
            )
        return self

    @property
    def magnitude(self) -> float:
        """The size of the numbers the compared value was computed from (``core.gatespec.reaches``): a comparative
        gate's two means over the pairs; 0.0 for a value compared on its own."""
        metric = self.comparison.metric if self.comparison is not None else None
        difference = metric.difference if metric is not None else None
        return 0.0 if difference is None else difference.magnitude

    def _bounds_ordered(self) -> None:
        """The favourable bound belongs to lower_bound and lies on the favourable side of the unfavourable one."""
        if self.favourable_bound is None:
            return
        if self.rule is not GateRule.LOWER_BOUND or self.compared is None:
            raise ValueError(f"gate {self.name}: only a lower_bound gate with a compared bound has a favourable bound")
        if not meets(self.favourable_bound, self.compared, self.direction):
            raise ValueError(
                f"gate {self.name}: the favourable bound {self.favourable_bound} is on the unfavourable side of "
                f"the compared bound {self.compared}"
            )


def incompleteness(population: Population, tolerate: tuple[Tolerable, ...]) -> int:
    """How many expected examples are missing from the math in a way the gate does not tolerate."""
    return sum(incomplete_kinds(population, tolerate).values())


def incomplete_kinds(population: Population, tolerate: tuple[Tolerable, ...]) -> dict[str, int]:
    """:func:`incompleteness` by kind, in the population's order: a status (``error``, ``blocked``...), ``invalid``
    for a value that cannot be trusted, ``missing`` for a score that should exist and does not."""
    tolerated = {item.value for item in tolerate}
    kinds: dict[str, int] = {}
    for item in population.excluded:
        if (
            item.status in ALWAYS_INCOMPLETE_STATUSES
            or item.validity is Validity.INVALID
            or (item.status.value not in tolerated and item.validity.value not in tolerated)
        ):
            kind = "invalid" if item.validity is Validity.INVALID else item.status.value
            kinds[kind] = kinds.get(kind, 0) + item.count
    if population.missing:
        kinds["missing"] = population.missing
    return kinds


def incomplete_reach(estimate: Estimate, unmeasured: int, threshold: float, direction: Direction) -> str | None:
    """What measuring ``unmeasured`` more examples would decide under the ``point`` rule: the value's range if they
    scored anywhere on the metric's scale, and whether it meets ``threshold`` at both ends, at neither, or only at
    one. None without a declared scale (no range to state). Exact for a mean over examples, which the point is."""
    sensitivity = estimate.sensitivity
    if sensitivity is None or estimate.n <= 0 or unmeasured <= 0:
        return None
    total = estimate.n + unmeasured
    ends = [
        (estimate.point * estimate.n + bound * unmeasured) / total
        for bound in (sensitivity.scale_min, sensitivity.scale_max)
    ]
    low, high = min(ends), max(ends)
    span = (
        f"whatever they score ({sensitivity.scale_min:g} to {sensitivity.scale_max:g}), the value would be "
        f"{low:.3g} to {high:.3g}"
    )
    met = {reaches(low, threshold, direction), reaches(high, threshold, direction)}
    if met == {True}:
        return f"{span}, which meets the threshold {threshold:g} either way: measuring them decides a pass"
    if met == {False}:
        return f"{span}, which misses the threshold {threshold:g} either way: measuring them decides a fail"
    return f"{span}, either side of the threshold {threshold:g}: only measuring them decides"


def measurement_reasons(
    spec: GateSpec, population: Population, *, nothing: str, unit: str, incomplete: tuple[BlockReason, str]
) -> list[Reason]:
    """Why a gate cannot decide on what was measured: nothing included, fewer than ``min_n``, untolerated
    exclusions. ``population`` counts examples (or, for a comparative gate, pairs); the texts name them."""
    reasons: list[Reason] = []
    if population.included == 0:
        reasons.append(Reason(code=BlockReason.NO_MEASURED_VALUE, message=nothing))
    elif spec.min_n is not None and population.included < spec.min_n:
        reasons.append(
            Reason(
                code=BlockReason.BELOW_MIN_N,
                message=f"{population.included} {unit} were measured; the gate needs at least {spec.min_n}",
            )
        )
    kinds = incomplete_kinds(population, spec.tolerate)
    if kinds:
        code, text = incomplete
        which = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
        reasons.append(Reason(code=code, message=f"{sum(kinds.values())} of {population.expected} {text} ({which})"))
    return reasons


def evaluate_gate(
    name: str,
    spec: GateSpec,
    fingerprint: str,
    authority: Authority,
    estimate: Estimate | None,
    population: Population,
    bound: Interval | None = None,
    advice: "Advice | None" = None,
) -> GateResult:
    """Decide one gate. An active gate blocks (with every reason that holds) rather than guess.

    ``bound`` is the ``lower_bound`` rule's interval (computed by the caller from the included values): two-sided
    at ``2 * level - 1``, so each end is a one-sided bound at the gate's level. ``advice`` is the decidability
    advice recorded with a ``lower_bound`` gate (examples, or samples per example, that would decide).
    """
    lower = spec.rule is GateRule.LOWER_BOUND
    advice = advice if lower and advice is not None else Advice()
    common: dict[str, Any] = {
        "name": name,
        "subject": spec.subject,
        "active": authority.active,
        "value": None if estimate is None else estimate.point,
        "n": None if estimate is None else estimate.n,
        "proposed_threshold": spec.proposed_threshold,
        "direction": spec.direction,
        "rule": spec.rule,
        "level": spec.level if lower else None,
        "bound_method": bound.method.value if lower and bound is not None else None,
        "required_n": advice.examples,
        "required_epochs": advice.epochs,
        "fingerprint": fingerprint,
        "notes": authority.notes,
    }
    if not authority.active:
        return GateResult(outcome=Outcome.INFORMATIONAL, **common)
    reasons = list(authority.reasons)
    reasons += measurement_reasons(
        spec,
        population,
        nothing="no score was measured (scored and valid) to compare: one example measured validly would give a "
        "value (the metric's diagnostics say why each was excluded)",
        unit="examples",
        incomplete=(BlockReason.INCOMPLETE_MEASUREMENT, "examples were not measured validly"),
    )
    if not lower and estimate is not None and authority.threshold is not None:
        reasons = [_with_reach(reason, estimate, population, spec, authority.threshold) for reason in reasons]
    compared: float | None
    favourable: float | None = None
    if lower:
        compared, favourable = interval_ends(bound, spec.direction)
        if estimate is not None and compared is None:
            reasons.append(
                Reason(
                    code=BlockReason.INTERVAL_UNDEFINED,
                    message=undefined_bound(f"{spec.level:.0%} one-sided bound", bound, estimate.n, "examples"),
                )
            )
    else:
        compared = None if estimate is None else estimate.point
    common["favourable_bound"] = favourable
    if reasons:
        return GateResult(
            outcome=Outcome.BLOCKED, reasons=tuple(reasons), threshold=authority.threshold, compared=compared, **common
        )
    threshold = authority.threshold
    assert compared is not None and threshold is not None  # guaranteed by the reasons above
    what = "the value" if not lower else f"the {spec.level:.0%} {_side(spec.direction)} confidence bound"
    observed = f"the observed value {common['value']:.6g}"
    evidence = Evidence("the value", int(common["n"] or 0), advice, "examples", observed)
    return decided(
        spec,
        compared=compared,
        favourable=favourable,
        threshold=threshold,
        failing=f"{what} {compared:.6g}",
        evidence=evidence,
        common=common,
    )


def _with_reach(reason: Reason, estimate: Estimate, population: Population, spec: GateSpec, threshold: float) -> Reason:
    """An ``incomplete_measurement`` reason with what measuring the rest would decide (:func:`incomplete_reach`)."""
    if reason.code is not BlockReason.INCOMPLETE_MEASUREMENT:
        return reason
    reach = incomplete_reach(estimate, incompleteness(population, spec.tolerate), threshold, spec.direction)
    return reason if reach is None else Reason(code=reason.code, message=f"{reason.message}; {reach}")


@dataclass(frozen=True, slots=True)
class Advice:
    """What would decide an undecided ``lower_bound`` gate at the observed effect: about this many examples (pairs)
    with the samples per example unchanged, or this many samples per example over the same examples."""

    examples: int | None = None
    epochs: int | None = None


def interval_ends(interval: Interval | None, direction: Direction) -> tuple[float | None, float | None]:
    """(unfavourable, favourable) ends of a ``lower_bound`` gate's interval; None where it has none."""
    if interval is None:
        return None, None
    if direction is Direction.HIGHER_IS_BETTER:
        return interval.low, interval.high
    return interval.high, interval.low


def undefined_bound(what: str, interval: Interval | None, n: int, unit: str) -> str:
    """An ``interval_undefined`` reason: why the interval has no bound, and the evidence that would give it one.
    The methods that can leave one undefined need a spread to estimate: two values (``student_t``, the
    bootstraps), or two clusters (the cluster-aware methods); Wilson and Clopper-Pearson are defined from one."""
    method = f"with {interval.method.value}" if interval is not None else "with this method"
    why = interval.params.get("undefined_reason") if interval is not None else None
    text = f"no {what} exists for {n} measured {unit} {method}" + (f" ({why})" if why else "")
    if interval is not None and interval.clusters is not None and interval.clusters < 2:
        decide = f"{unit} measured in at least 2 clusters would decide it (the cluster field has one value)"
    elif n < 2:
        decide = f"at least 2 measured {unit} are needed to decide it ({n} now)"
    else:
        decide = "an interval method defined on these values (the metric's `interval: {method: ...}`) would decide it"
    return f"{text}: {decide}"


def interval_label(level: float | None) -> str:
    """``90%`` for a gate at 95%: the two-sided interval whose ends are the two one-sided bounds at the level."""
    return f"{2.0 * (level if level is not None else 0.95) - 1.0:.0%}"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What an ``undecided`` reason says the interval was of (``the value``, ``the paired difference``), over how
    many ``unit`` (examples, pairs), the advice that would decide, and the observed effect it is advice at."""

    what: str
    n: int
    advice: Advice
    unit: str
    observed: str


def decided(
    spec: GateSpec,
    *,
    compared: float,
    favourable: float | None,
    threshold: float,
    failing: str,
    evidence: Evidence,
    common: dict[str, Any],
    magnitude: float = 0.0,
) -> GateResult:
    """The gate's outcome once nothing blocks it: what :func:`rule_decision` says of its numbers. ``failing`` names
    the compared number in the ``below_threshold`` reason; ``evidence`` fills the ``undecided`` one."""
    decision = rule_decision(spec.rule, spec.direction, threshold, compared, favourable, magnitude=magnitude)
    numbers = {"compared": compared, "threshold": threshold}
    if decision is RuleDecision.PASS:
        return GateResult(outcome=Outcome.PASS, **numbers, **common)
    if decision is RuleDecision.FAIL:
        reason = below_threshold_reason(failing, threshold, spec.direction)
        return GateResult(outcome=Outcome.FAIL, reasons=(reason,), **numbers, **common)
    reason = undecided_reason(evidence, compared, favourable, threshold, spec)
    return GateResult(outcome=Outcome.BLOCKED, reasons=(reason,), **numbers, **common)


def undecided_reason(
    evidence: Evidence, compared: float, favourable: float | None, threshold: float, spec: GateSpec
) -> Reason:
    """The ``undecided`` reason: the interval, the threshold, and the evidence that would decide at the observed
    effect (examples, or samples per example), so the repair is to gather it, not to change the system."""
    low, high = sorted((compared, favourable if favourable is not None else compared))
    sides = f"each end a {spec.level:.0%} one-sided bound"
    text = (
        f"the {interval_label(spec.level)} interval of {evidence.what} [{low:.6g}, {high:.6g}] ({sides}) straddles "
        f"the approved threshold {threshold:.6g}: the data show neither that the gate is met nor that it is missed"
    )
    unit, advice = evidence.unit, evidence.advice
    if advice.examples is not None:
        text += f"; about {advice.examples:,} {unit} (now {evidence.n:,}) would decide at {evidence.observed}"
    else:
        text += f"; no number of {unit} decides at {evidence.observed}, which sits on the threshold"
    if advice.epochs is not None:
        text += f", or about {advice.epochs} samples per example over the same {unit}"
    return Reason(code=BlockReason.UNDECIDED, message=text)


def _side(direction: Direction) -> str:
    return "lower" if direction is Direction.HIGHER_IS_BETTER else "upper"


def below_threshold_reason(what: str, threshold: float, direction: Direction) -> Reason:
    """The reason of a failing gate: what was compared, and the approved threshold it misses."""
    relation = "below" if direction is Direction.HIGHER_IS_BETTER else "above"
    sign = "≥" if direction is Direction.HIGHER_IS_BETTER else "≤"
    return Reason(
        code=BlockReason.BELOW_THRESHOLD,
        message=f"{what} is {relation} the approved threshold (needs {sign} {threshold:.6g})",
    )


def evaluate_check_gate(
    name: str, spec: GateSpec, fingerprint: str, authority: Authority, result: CheckResult
) -> GateResult:
    """Decide a gate on a standalone check: PASS → pass, FAIL → fail, INCONCLUSIVE or ERROR → blocked."""
    common: dict[str, Any] = {
        "name": name,
        "subject": spec.subject,
        "subject_kind": SubjectKind.CHECK,
        "active": authority.active,
        "fingerprint": fingerprint,
    }
    if not authority.active:
        return GateResult(outcome=Outcome.INFORMATIONAL, **common)
    reasons = list(authority.reasons)
    measured: float | None = None
    if result.outcome in (CheckOutcome.PASS, CheckOutcome.FAIL):
        measured = 1.0 if result.outcome is CheckOutcome.PASS else 0.0
    else:
        why = f" ({result.reason.value})" if result.reason is not None else ""
        reasons.append(
            Reason(
                code=BlockReason.CHECK_NOT_PASSED,
                message=f"check '{spec.subject}' ended {result.outcome.value}{why}: {result.repair.value}",
            )
        )
    notes: tuple[str, ...] = authority.notes
    if result.binding is BindingStatus.UNBOUND and measured is not None:
        if authority.require_binding:
            reasons.append(check_unbound_reason(spec.subject))
        else:
            notes = (*notes, UNBOUND_NOTE.format(check=spec.subject, outcome=result.outcome.value))
    if result.unbound_inputs and measured is not None:
        # Code the check runs that no input binds: blocked unless the ledger accepts it (``with_unbound_code``).
        if authority.accept_unbound_code:
            notes = (*notes, unbound_inputs_text(spec.subject, result.unbound_inputs))
        else:
            reasons.append(check_inputs_unbound_reason(spec.subject, result.unbound_inputs))
    if reasons:
        return GateResult(
            outcome=Outcome.BLOCKED, reasons=tuple(reasons), notes=notes, value=measured, compared=measured, **common
        )
    assert measured is not None
    if measured >= CHECK_THRESHOLD:
        return GateResult(
            outcome=Outcome.PASS, notes=notes, value=measured, compared=measured, threshold=CHECK_THRESHOLD, **common
        )
    return GateResult(
        outcome=Outcome.FAIL,
        reasons=(below_threshold_reason(f"check '{spec.subject}' ended FAIL (0.0)", CHECK_THRESHOLD, spec.direction),),
        notes=notes,
        value=measured,
        compared=measured,
        threshold=CHECK_THRESHOLD,
        **common,
    )


#: An unbound check says only that the checker accepted whatever its target held when it ran.
UNBOUND_NOTE = (
    "unbound: check '{check}' ended {outcome} against whatever state its target had; no expect_state ties this "
    "result to an approved state"
)


def undeclared_results(ledger: Ledger, declared: list[str], where: Mapping[str, str]) -> list[GateResult]:
    """A blocked gate for every gate the ledger activates and the config does not declare (``gate_undeclared``)."""
    return [
        GateResult(
            name=gate.name,
            subject=gate.name,
            active=True,
            outcome=Outcome.BLOCKED,
            reasons=(gate.reason,),
            threshold=gate.threshold,
            fingerprint=gate.fingerprint,
        )
        for gate in undeclared_gates(ledger, declared, where)
    ]


def rederived_gate(
    recorded: GateResult, spec: GateSpec, authority: Authority, estimate: Estimate | None, population: Population
) -> GateResult:
    """The gate :func:`evaluate_gate` decides from what a scorecard records of it, so a reader of a finished run
    (``engine.decide.consistency``) re-derives an outcome with the rule that made it, never with a copy of that rule.

    Under ``lower_bound`` the interval is computed from the included values, which a scorecard does not hold. A
    method whose interval is a function of the count of ones and ``n`` alone (Wilson, Clopper–Pearson) is computed
    again from the recorded value and ``n``, by the function the run used; any other method's ends are taken as the
    gate records them (:func:`bound_problem` checks they hold the value where the method's interval always does;
    ``evalglass verify`` recomputes them from the scores).
    """
    bound = None
    if spec.rule is GateRule.LOWER_BOUND and estimate is not None:
        bound = counted_interval(recorded, spec, estimate) or recorded_interval(recorded, spec, estimate)
    return evaluate_gate(recorded.name, spec, recorded.fingerprint, authority, estimate, population, bound=bound)


#: Interval methods that depend on the values only through the count of ones and ``n`` (binary values).
COUNT_METHODS = frozenset({"wilson", "clopper_pearson"})
#: Interval methods whose interval always holds the point: the score-test inversions, and the t intervals (student
#: and cluster-robust), which are symmetric about the mean. Bootstrap intervals need not.
POINT_INSIDE_METHODS = frozenset({*COUNT_METHODS, "student_t", "cluster_t"})


def counted_interval(gate: GateResult, spec: GateSpec, estimate: Estimate) -> Interval | None:
    """A ``lower_bound`` gate's interval computed again, when its method needs only the count of ones and ``n``
    (:data:`COUNT_METHODS`): the values are rebuilt as that many ones and zeros, which gives the method the same
    numbers the run's values gave it. None for any other method, or when the value is not a count over ``n``.
    Both ends, always: a result without its favourable end is not read as one made before the three-way rule (that
    would let an edit of one field turn an undecided gate into a failed one); :func:`bound_problem` names it."""
    if gate.bound_method not in COUNT_METHODS or estimate.n < 1:
        return None
    ones = round(estimate.point * estimate.n)
    if not 0 <= ones <= estimate.n or abs(ones - estimate.point * estimate.n) > 1e-6:
        return None
    import numpy as np

    from evalglass.core.stats import Method, confidence_interval

    values = np.zeros(estimate.n)
    values[:ones] = 1.0
    try:
        interval = confidence_interval(values, level=2.0 * spec.level - 1.0, method=Method(gate.bound_method))
    except ValueError:
        return None
    return interval


def bound_problem(gate: GateResult) -> str | None:
    """What is wrong with a ``lower_bound`` gate's recorded interval ends, as far as its own value tells: under a
    method whose interval always holds the point (:data:`POINT_INSIDE_METHODS`), the compared (unfavourable) end
    cannot be on the favourable side of the value, nor the favourable end on the unfavourable side; under any method
    a compared end comes with its favourable end, since the three-way rule reads both."""
    if gate.rule is not GateRule.LOWER_BOUND:
        return None
    if gate.compared is not None and gate.favourable_bound is None:
        return (
            f"it records its compared bound {gate.compared} without the interval's favourable end: a lower_bound gate "
            "is decided on both ends (pass, fail only when the whole interval misses, else undecided)"
        )
    if gate.bound_method not in POINT_INSIDE_METHODS or gate.value is None:
        return None
    slack = 1e-9 * max(1.0, abs(gate.value))  # rounding in the interval's arithmetic, never a real difference
    a_bit_better, a_bit_worse = gate.value + slack, gate.value - slack
    if gate.direction is Direction.LOWER_IS_BETTER:
        a_bit_better, a_bit_worse = a_bit_worse, a_bit_better
    if gate.compared is not None and not meets(a_bit_better, gate.compared, gate.direction):
        return f"its compared bound {gate.compared} is on the favourable side of its value {gate.value}"
    if gate.favourable_bound is not None and not meets(gate.favourable_bound, a_bit_worse, gate.direction):
        return f"its favourable bound {gate.favourable_bound} is on the unfavourable side of its value {gate.value}"
    return None


def recorded_interval(gate: GateResult, spec: GateSpec, estimate: Estimate) -> Interval | None:
    """A ``lower_bound`` gate's interval as far as its result records it: the compared (unfavourable) end, the
    other end when the result carries it, the level and the method. Built without validation: it holds only what
    :func:`evaluate_gate` reads of an interval, and undefined ends stay None as they were recorded."""
    from evalglass.core.stats import Method, Note, Sides

    if gate.bound_method is None:
        return None
    unfavourable, favourable = gate.compared, gate.favourable_bound
    higher = spec.direction is Direction.HIGHER_IS_BETTER
    return Interval.model_construct(
        point=estimate.point,
        low=unfavourable if higher else favourable,
        high=favourable if higher else unfavourable,
        level=spec.level,
        sides=Sides.TWO_SIDED if favourable is not None else spec.direction.unfavourable_side,
        method=Method(gate.bound_method),
        n=estimate.n,
        notes=() if unfavourable is not None else (Note.UNDEFINED,),
        params={},
    )
