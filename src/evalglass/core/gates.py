"""Gates: a metric bound to a direction and a threshold, and the rule that turns one into an outcome."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.authority import (
    Authority,
    BlockReason,
    Ledger,
    Reason,
    undeclared_active_gates,
    undeclared_reason,
)
from evalglass.core.checks import BindingStatus, CheckOutcome, CheckResult
from evalglass.core.compare import GateComparison
from evalglass.core.estimate import Estimate
from evalglass.core.population import Population
from evalglass.core.score import Status, Validity
from evalglass.core.stats import Direction, Interval


class Outcome(StrEnum):
    """A gate's outcome, and (by precedence) the run's verdict."""

    INFORMATIONAL = "informational"
    PASS = "pass"
    FAIL = "fail"
    BLOCKED = "blocked"


class GateRule(StrEnum):
    """``point`` is the installed rule. ``lower_bound`` (experimental) compares the unfavourable one-sided
    confidence bound (the lower bound when higher is better), so a lucky small sample cannot pass."""

    POINT = "point"
    LOWER_BOUND = "lower_bound"


class Tolerable(StrEnum):
    """Exclusions a gate may declare harmless. blocked, error and invalid never are."""

    NON_EVALUABLE = "non_evaluable"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"


ALWAYS_INCOMPLETE_STATUSES = frozenset({Status.BLOCKED, Status.ERROR})


class SubjectKind(StrEnum):
    METRIC = "metric"
    CHECK = "check"


#: A check gate compares 1.0 (PASS) or 0.0 (FAIL) with this fixed threshold: the approval is "it must pass".
CHECK_THRESHOLD = 1.0


class GateSpec(BaseModel):
    """A gate as declared in evalglass.yaml. Its threshold there is only a proposal: the ledger approves one.

    A gate decides on a metric (a number over the dataset) or on a standalone check (PASS/FAIL of one command
    against a bound target). Exactly one of ``metric`` and ``check`` is given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    metric: str | None = Field(default=None, description="Name of the metric (under `metrics:`) to decide on.")
    check: str | None = Field(default=None, description="Name of a standalone check (under `checks:`) to decide on.")
    expect_state: str | None = Field(
        default=None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="Check gates only: the target state the check must be bound to; any other state is ERROR.",
    )
    direction: Direction = Direction.HIGHER_IS_BETTER
    proposed_threshold: float | None = Field(
        default=None,
        description="The threshold you intend to approve. It has no effect until the ledger approves a threshold.",
    )
    tolerate: tuple[Tolerable, ...] = Field(
        default=(),
        description="Exclusions that do not make the measurement incomplete: non_evaluable, skipped, not_applicable.",
    )
    rule: GateRule = Field(
        default=GateRule.POINT,
        description="point (installed) or lower_bound (EXPERIMENTAL: compares the unfavourable confidence bound).",
    )
    level: float = Field(
        default=0.95, gt=0.5, lt=1.0, description="lower_bound only: the one-sided confidence level of the bound."
    )
    min_n: int | None = Field(
        default=None, ge=1, description="Below this many included examples the gate blocks (below_min_n)."
    )
    compare_to: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$",
        description="Comparative gate: the name of a baseline run in the ledger's `baselines:`. The gate then decides "
        "on the paired difference (this run minus the baseline) against the margin the ledger approves.",
    )
    proposed_margin: float | None = Field(
        default=None,
        ge=0,
        description="Comparative gates: the margin you intend to approve. No effect until the ledger approves one.",
    )
    description: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> GateSpec:
        if (self.metric is None) == (self.check is None):
            raise ValueError("a gate names exactly one of 'metric' or 'check'")
        if self.compare_to is not None:
            if self.check is not None:
                raise ValueError("a comparative gate (compare_to) decides on a metric, not on a check")
            if self.proposed_threshold is not None:
                raise ValueError(
                    "a comparative gate decides on the difference from its baseline: "
                    "use proposed_margin (the largest drop you accept), not proposed_threshold"
                )
        elif self.proposed_margin is not None:
            raise ValueError("proposed_margin applies to comparative gates only (those with compare_to)")
        if self.check is not None:
            extras = [name for name in ("proposed_threshold", "tolerate") if getattr(self, name) not in (None, ())]
            if self.direction is not Direction.HIGHER_IS_BETTER:
                extras.append("direction")
            if extras:
                raise ValueError(f"a check gate passes on PASS and fails on FAIL; remove {', '.join(extras)}")
        elif self.expect_state is not None:
            raise ValueError("expect_state applies to check gates only")
        return self

    @property
    def subject(self) -> str:
        return self.check if self.check is not None else str(self.metric)

    @property
    def comparative(self) -> bool:
        return self.compare_to is not None

    @property
    def subject_kind(self) -> SubjectKind:
        return SubjectKind.CHECK if self.check is not None else SubjectKind.METRIC

    def fingerprint_payload(self) -> dict[str, Any]:
        """The semantics an approval covers; prose and the proposal are not part of it. Unset optional fields
        are left out, so adding an optional field to EvalGlass does not make existing approvals stale."""
        payload = self.model_dump(
            mode="json", exclude={"description", "proposed_threshold", "proposed_margin"}, exclude_none=True
        )
        if self.rule is GateRule.POINT:
            payload.pop("level")
        return payload


def margin_threshold(margin: float, direction: Direction) -> float:
    """The difference (candidate minus baseline) a comparative gate must reach: ``-margin`` when higher is better,
    ``+margin`` when lower is better. A zero margin is 0.0 either way (never -0.0)."""
    return -margin if direction is Direction.HIGHER_IS_BETTER and margin else float(margin)


def meets(value: float, threshold: float, direction: Direction) -> bool:
    return value >= threshold if direction is Direction.HIGHER_IS_BETTER else value <= threshold


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
    compared: float | None = Field(default=None, description="The number the rule compared with the threshold.")
    threshold: float | None = Field(default=None, description="The approved threshold, from the ledger.")
    proposed_threshold: float | None = None
    direction: Direction = Direction.HIGHER_IS_BETTER
    rule: GateRule = GateRule.POINT
    level: float | None = Field(default=None, description="lower_bound only: one-sided level of the bound.")
    bound_method: str | None = Field(default=None, description="lower_bound only: how the bound was computed.")
    n: int | None = Field(default=None, description="Included examples behind the value.")
    required_n: int | None = Field(
        default=None,
        description="lower_bound only: about how many examples the bound would need to clear the threshold.",
    )
    fingerprint: str
    compare_to: str | None = Field(default=None, description="Comparative gates: the baseline's name.")
    comparison: GateComparison | None = Field(
        default=None, description="Comparative gates: the baseline, the margin, the paired difference and the flips."
    )

    @model_validator(mode="after")
    def _outcome_follows(self) -> GateResult:
        if (self.compare_to is None) != (self.comparison is None):
            raise ValueError(f"gate {self.name}: a comparative gate records its comparison, and only it does")
        if not self.active:
            if self.outcome is not Outcome.INFORMATIONAL or self.reasons:
                raise ValueError(f"gate {self.name}: an inactive gate is informational and has no reasons")
            return self
        blocking = [reason for reason in self.reasons if reason.code.blocks]
        if blocking:
            if self.outcome is not Outcome.BLOCKED or len(blocking) != len(self.reasons):
                raise ValueError(f"gate {self.name}: a gate with blocking reasons is blocked, with no other reason")
            return self
        if self.reasons and (self.outcome is not Outcome.FAIL or len(self.reasons) != 1):
            raise ValueError(f"gate {self.name}: only a failing gate says below_threshold, once")
        if self.outcome not in (Outcome.PASS, Outcome.FAIL):
            raise ValueError(f"gate {self.name}: an active, unblocked gate must pass or fail")
        if self.compared is None or self.threshold is None:
            raise ValueError(f"gate {self.name}: pass/fail needs a compared value and an approved threshold")
        if self.comparison is not None:
            margin = self.comparison.margin
            if margin is None or self.threshold != margin_threshold(margin, self.direction):
                raise ValueError(f"gate {self.name}: a comparative gate's threshold is minus its approved margin")
        expected = Outcome.PASS if meets(self.compared, self.threshold, self.direction) else Outcome.FAIL
        if self.outcome is not expected:
            raise ValueError(
                f"gate {self.name}: {self.compared} against threshold {self.threshold} "
                f"({self.direction.value}) is {expected.value}, not {self.outcome.value}"
            )
        return self


def incompleteness(population: Population, tolerate: tuple[Tolerable, ...]) -> int:
    """How many expected examples are missing from the math in a way the gate does not tolerate."""
    tolerated = {item.value for item in tolerate}
    count = population.missing
    for item in population.excluded:
        if (
            item.status in ALWAYS_INCOMPLETE_STATUSES
            or item.validity is Validity.INVALID
            or (item.status.value not in tolerated and item.validity.value not in tolerated)
        ):
            count += item.count
    return count


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
    count = incompleteness(population, spec.tolerate)
    if count:
        code, text = incomplete
        reasons.append(Reason(code=code, message=f"{count} of {population.expected} {text}"))
    return reasons


def evaluate_gate(
    name: str,
    spec: GateSpec,
    fingerprint: str,
    authority: Authority,
    estimate: Estimate | None,
    population: Population,
    bound: Interval | None = None,
    required_n: int | None = None,
) -> GateResult:
    """Decide one gate. An active gate blocks (with every reason that holds) rather than guess.

    ``bound`` is the one-sided interval for the ``lower_bound`` rule (computed by the caller from the included
    values); ``required_n`` is the decidability advice recorded with a ``lower_bound`` gate.
    """
    lower = spec.rule is GateRule.LOWER_BOUND
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
        "required_n": required_n if lower else None,
        "fingerprint": fingerprint,
        "notes": authority.notes,
    }
    if not authority.active:
        return GateResult(outcome=Outcome.INFORMATIONAL, **common)
    reasons = list(authority.reasons)
    reasons += measurement_reasons(
        spec,
        population,
        nothing="no score was measured (scored and valid) to compare",
        unit="examples",
        incomplete=(BlockReason.INCOMPLETE_MEASUREMENT, "examples were not measured validly"),
    )
    compared: float | None
    if lower:
        compared = None if bound is None else bound.bound(spec.direction.value)
        if estimate is not None and compared is None:
            reasons.append(
                Reason(
                    code=BlockReason.INTERVAL_UNDEFINED,
                    message=f"no {spec.level:.0%} one-sided bound exists for {estimate.n} value(s) with this method",
                )
            )
    else:
        compared = None if estimate is None else estimate.point
    if reasons:
        return GateResult(
            outcome=Outcome.BLOCKED, reasons=tuple(reasons), threshold=authority.threshold, compared=compared, **common
        )
    assert compared is not None and authority.threshold is not None  # guaranteed by the reasons above
    if meets(compared, authority.threshold, spec.direction):
        return GateResult(outcome=Outcome.PASS, threshold=authority.threshold, compared=compared, **common)
    what = "the value" if not lower else f"the {spec.level:.0%} {_side(spec.direction)} confidence bound"
    return GateResult(
        outcome=Outcome.FAIL,
        reasons=(below_threshold_reason(f"{what} {compared:.6g}", authority.threshold, spec.direction),),
        threshold=authority.threshold,
        compared=compared,
        **common,
    )


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


def check_unbound_reason(check: str) -> Reason:
    """A check gate whose ledger entry requires a binding, on a check that runs unbound (no ``expect_state``)."""
    return Reason(
        code=BlockReason.CHECK_UNBOUND,
        message=(
            f"check '{check}' ran unbound (the gate names no expect_state) and the ledger requires "
            "a binding; add `expect_state:` to the gate with the state `evalglass check` prints"
        ),
    )


#: An unbound check says only that the checker accepted whatever its target held when it ran.
UNBOUND_NOTE = (
    "unbound: check '{check}' ended {outcome} against whatever state its target had; no expect_state ties this "
    "result to an approved state"
)


def undeclared_results(ledger: Ledger, declared: list[str], where: Mapping[str, str]) -> list[GateResult]:
    """A blocked gate for every gate the ledger activates and the config does not declare (``gate_undeclared``)."""
    results: list[GateResult] = []
    for name in undeclared_active_gates(ledger, declared):
        approval = ledger.gates[name]
        results.append(
            GateResult(
                name=name,
                subject=name,
                active=True,
                outcome=Outcome.BLOCKED,
                reasons=(undeclared_reason(name, declared, where.get(name)),),
                threshold=approval.threshold,
                fingerprint=approval.fingerprint or "",
            )
        )
    return results
