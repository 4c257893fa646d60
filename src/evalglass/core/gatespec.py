"""A gate as declared in evalglass.yaml, and the comparisons its threshold is read with.

Kept apart from ``core.gates`` (outcomes, which need estimates and paired comparisons, hence numpy) so that
reading a config and a ledger (``evalglass preflight``) imports no statistics.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalglass.core.fingerprint import as_set
from evalglass.core.stats.model import Direction
from evalglass.core.variantnames import difference_metric, variant_metric


class GateRule(StrEnum):
    """``point`` is the installed rule. ``lower_bound`` (experimental) decides on the confidence interval at the
    gate's level: pass when its unfavourable end (the lower bound when higher is better) clears the threshold, so a
    lucky small sample cannot pass; fail only when its favourable end misses it too; otherwise undecided."""

    POINT = "point"
    LOWER_BOUND = "lower_bound"


class Tolerable(StrEnum):
    """Exclusions a gate may declare harmless. blocked, error and invalid never are."""

    NON_EVALUABLE = "non_evaluable"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"


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
    variant: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$",
        description="A run with variants: the variant (under `variants:`) whose metric this gate decides on.",
    )
    compare_to_variant: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$",
        description="A run with variants: decide on the paired difference `variant` minus this variant, per example, "
        "as the metric `METRIC@VARIANT-vs-OTHER`; the threshold is the difference you accept (-margin).",
    )
    description: str | None = None

    @model_validator(mode="after")
    def _one_subject(self) -> "GateSpec":
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
        if self.check is not None and self.variant is not None:
            raise ValueError("a check gate decides on a check, which runs once per run: remove variant")
        if self.compare_to_variant is not None:
            if self.variant is None or self.metric is None:
                raise ValueError("compare_to_variant compares a metric of `variant` with another variant: name both")
            if self.compare_to_variant == self.variant:
                raise ValueError("compare_to_variant must name another variant than `variant`")
            if self.compare_to is not None:
                raise ValueError("a gate compares with a baseline run (compare_to) or with a variant, not both")
        return self

    @property
    def subject(self) -> str:
        """The check or the declared metric the gate names (a judge's standing, a metric's definition: by this)."""
        return self.check if self.check is not None else str(self.metric)

    @property
    def decided_subject(self) -> str:
        """What the gate decides on, by the name the scorecard and every report give it: the check, the metric, or
        in a run with variants the variant's metric ``metric@variant`` (between two variants, their per-example
        difference ``metric@variant-vs-other``). :meth:`decided` is the gate on that column."""
        if self.metric is None or self.variant is None:
            return self.subject
        if self.compare_to_variant is not None:
            return difference_metric(self.metric, self.variant, self.compare_to_variant)
        return variant_metric(self.metric, self.variant)

    def decided(self) -> "GateSpec":
        """The gate as the decision reads it: on the column named :attr:`decided_subject`, its variant resolved
        (so the result names the subject the gate decides on, and deciding it again changes nothing)."""
        if self.metric is None or self.variant is None:
            return self
        return self.model_copy(update={"metric": self.decided_subject, "variant": None, "compare_to_variant": None})

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
        if "tolerate" in payload:  # a set: [skipped, non_evaluable] is [non_evaluable, skipped]
            payload["tolerate"] = as_set(payload["tolerate"])
        return payload


def margin_threshold(margin: float, direction: Direction) -> float:
    """The difference (candidate minus baseline) a comparative gate must reach: ``-margin`` when higher is better,
    ``+margin`` when lower is better. A zero margin is 0.0 either way (never -0.0)."""
    return -margin if direction is Direction.HIGHER_IS_BETTER and margin else float(margin)


def meets(value: float, threshold: float, direction: Direction) -> bool:
    """``value`` is on the right side of ``threshold`` or on it, exactly: for ordering two numbers the tool computed
    (an interval's ends). A gate's rule decides with :func:`reaches`, which reads a value equal to the threshold up to
    float rounding as on it."""
    return value >= threshold if direction is Direction.HIGHER_IS_BETTER else value <= threshold


#: Relative distance below which a computed value and an approved threshold are the same number. A mean is computed
#: in binary floating point from values written in decimal: 0, 0 and 0.3 average to 0.09999999999999999, and a gate
#: at 0.1 read that as "0.1 is below the approved threshold (needs >= 0.1)", a false red. The rounding of a mean of
#: any size is far below 1e-12 of its magnitude (about 1e-16 a value, numpy sums pairwise), and no threshold or
#: measurement means anything at the twelfth significant digit, so this never decides a real difference.
THRESHOLD_ROUNDING = 1e-12


def reaches(value: float, threshold: float, direction: Direction, magnitude: float = 0.0) -> bool:
    """The gate rules' comparison: ``value`` meets ``threshold`` (:func:`meets`), or equals it to within float
    rounding.

    The rule: within ``THRESHOLD_ROUNDING × max(|value|, |threshold|, magnitude)``, where ``magnitude`` is the size
    of the numbers ``value`` was computed from (a comparative gate's two means: ``0.0`` for a value compared on its
    own). Why the third term: float rounding is relative to the operands, not to the result. A paired difference of
    two means of about 0.6 carries rounding of about 1e-16 however close to 0 it comes out, so against a margin of
    exactly 0 (threshold ``0.0``) a tolerance relative to the difference and the threshold alone is 0, and an
    unchanged candidate whose per-example means were summed in another order (0.1 + 0.2 + 0.3 against
    0.3 + 0.2 + 0.1) failed by ≈ 3e-17. Scaled to the operands, the tolerance is still a twelfth-digit one: a real
    difference of a part in 10¹² of the values compared is beyond anything a threshold or a measurement means."""
    if meets(value, threshold, direction):
        return True
    return abs(value - threshold) <= THRESHOLD_ROUNDING * max(abs(value), abs(threshold), abs(magnitude))


class RuleDecision(StrEnum):
    """What a gate's rule decides from its numbers alone (authority and measurement reasons aside)."""

    PASS = "pass"
    FAIL = "fail"
    #: Interval rules only: the interval straddles the threshold, so the data show neither (the gate blocks).
    UNDECIDED = "undecided"


def rule_decision(
    rule: GateRule,
    direction: Direction,
    threshold: float,
    compared: float,
    favourable: float | None = None,
    *,
    exact: bool = False,
    magnitude: float = 0.0,
) -> RuleDecision:
    """The one statement of what a gate's rule decides; ``GateResult`` and every renderer that re-derives an
    outcome call it with what the scorecard records (``compared``, ``favourable_bound``, ``threshold``).

    ``point``: ``compared`` is the value; pass when it meets the threshold, else fail. ``lower_bound`` (the three-way
    rule): ``compared`` is the unfavourable end of the interval at the gate's level and ``favourable`` the other end
    (the two one-sided bounds at that level); pass when the unfavourable end meets the threshold, fail only when the
    favourable end misses it too (the whole interval is on the wrong side: the shortfall is shown), otherwise
    undecided. ``favourable`` None under ``lower_bound`` is a result recorded before this rule (``lower_bound@1``,
    which failed whenever the bound missed): decided that way, so an old run still reads as it was decided. It can
    only ever read redder than the three-way rule, never greener (pass needs the same unfavourable bound either way).

    Numbers are compared with :func:`reaches` (equal up to float rounding is on the threshold; ``magnitude``, the
    size of the numbers they were computed from, as it says). ``exact`` compares them exactly, as results recorded
    before that rule were decided: it can only read redder, never greener.
    """

    def on_side(number: float) -> bool:
        return meets(number, threshold, direction) if exact else reaches(number, threshold, direction, magnitude)

    if on_side(compared):
        return RuleDecision.PASS
    if rule is GateRule.POINT or favourable is None or not on_side(favourable):
        return RuleDecision.FAIL
    return RuleDecision.UNDECIDED
