"""A gate's rule reads a value equal to its threshold up to float rounding as on it (``gatespec.reaches``); a result
recorded before, decided exactly, still reads as it was decided, and only ever redder."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason, Reason
from evalglass.core.comparative import compared_ends
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import (
    THRESHOLD_ROUNDING,
    GateRule,
    GateSpec,
    RuleDecision,
    margin_threshold,
    reaches,
    rule_decision,
)
from evalglass.core.stats import Direction
from evalglass.core.stats.model import ScaleSpec
from evalglass.core.stats.paired import paired_difference

FP = "sha256:" + "0" * 64
HIGHER, LOWER = Direction.HIGHER_IS_BETTER, Direction.LOWER_IS_BETTER
REDNESS = {RuleDecision.PASS: 0, RuleDecision.UNDECIDED: 1, RuleDecision.FAIL: 2}


def test_a_mean_off_by_rounding_reaches_its_threshold_and_a_real_difference_does_not() -> None:
    assert (0.0 + 0.0 + 0.3) / 3 < 0.1 and reaches((0.0 + 0.0 + 0.3) / 3, 0.1, HIGHER)
    assert (0.1 + 0.2) / 2 > 0.15 and reaches((0.1 + 0.2) / 2, 0.15, LOWER)
    assert not reaches(0.1 - 1e-10, 0.1, HIGHER)
    assert not reaches(0.15 + 1e-10, 0.15, LOWER)
    assert not reaches(-1e-17, 0.0, HIGHER)  # the stated limit: relative, so 0 is compared exactly


def gate(outcome: Outcome, compared: float, threshold: float) -> GateResult:
    reasons = (Reason(code=BlockReason.BELOW_THRESHOLD, message="m"),) if outcome is Outcome.FAIL else ()
    return GateResult(
        name="g",
        subject="m",
        active=True,
        outcome=outcome,
        reasons=reasons,
        value=compared,
        compared=compared,
        threshold=threshold,
        fingerprint=FP,
    )


def test_a_result_decided_exactly_before_the_rule_still_loads_and_a_greener_one_is_refused() -> None:
    value = (0.0 + 0.0 + 0.3) / 3
    assert gate(Outcome.PASS, value, 0.1).outcome is Outcome.PASS  # decided now
    assert gate(Outcome.FAIL, value, 0.1).outcome is Outcome.FAIL  # recorded before: exactly short
    with pytest.raises(ValueError, match="is fail, not pass"):
        gate(Outcome.PASS, 0.1 - 1e-9, 0.1)


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(
    threshold=finite,
    compared=finite,
    favourable=st.none() | finite,
    relative=st.floats(min_value=-2 * THRESHOLD_ROUNDING, max_value=2 * THRESHOLD_ROUNDING),
    rule=st.sampled_from(GateRule),
    direction=st.sampled_from(Direction),
)
def test_the_exact_decision_is_never_greener_and_rounding_moves_only_ties(
    threshold: float, compared: float, favourable: float | None, relative: float, rule: GateRule, direction: Direction
) -> None:
    if favourable is not None and not (favourable >= compared if direction is HIGHER else favourable <= compared):
        favourable = compared
    rounded = rule_decision(rule, direction, threshold, compared, favourable)
    exact = rule_decision(rule, direction, threshold, compared, favourable, exact=True)
    assert REDNESS[exact] >= REDNESS[rounded]
    if rounded is not exact:  # only a number within rounding of the threshold moves
        ends = [compared] if favourable is None else [compared, favourable]
        assert any(math.isclose(end, threshold, rel_tol=THRESHOLD_ROUNDING) for end in ends)
    near = threshold * (1 + relative)
    if abs(relative) <= THRESHOLD_ROUNDING / 2:
        assert reaches(near, threshold, direction)
    elif abs(relative) >= 1.5 * THRESHOLD_ROUNDING and threshold != 0:
        wrong_side = near < threshold if direction is HIGHER else near > threshold
        assert reaches(near, threshold, direction) is not wrong_side


def test_a_margin_of_zero_reads_operands_rounding_as_on_it_and_a_real_difference_not() -> None:
    """Against a threshold of exactly 0 the tolerance is scaled to the numbers the difference came from."""
    noise = (0.1 + 0.2 + 0.3) / 3 - (0.3 + 0.2 + 0.1) / 3  # one unchanged example, summed in two orders
    assert noise != 0 and not reaches(-abs(noise), 0.0, HIGHER)  # a value compared on its own: exact at 0
    assert reaches(-abs(noise), 0.0, HIGHER, magnitude=0.2) and reaches(abs(noise), 0.0, LOWER, magnitude=0.2)
    assert not reaches(-1e-9, 0.0, HIGHER, magnitude=0.2)  # a real drop, however small in decimal terms


unit = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(
    samples=st.lists(st.lists(unit, min_size=2, max_size=6), min_size=1, max_size=30),
    order=st.randoms(use_true_random=False),
    direction=st.sampled_from(Direction),
    rule=st.sampled_from(GateRule),
)
def test_a_mean_summed_in_another_order_never_flips_the_decision_at_margin_zero(
    samples: list[list[float]], order: Any, direction: Direction, rule: GateRule
) -> None:
    """An unchanged candidate: each example's value is the mean of the same samples, summed in another order. Its
    paired difference with the baseline is float noise, and the gate at margin 0 passes it under either rule."""
    base = [sum(values) / len(values) for values in samples]
    candidate = []
    for values in samples:
        shuffled = list(values)
        order.shuffle(shuffled)
        candidate.append(sum(shuffled) / len(shuffled))
    difference = paired_difference(base, candidate, scale=ScaleSpec(min=0.0, max=1.0))
    assert difference is not None
    spec = GateSpec.model_validate(
        {"metric": "m", "compare_to": "main", "direction": direction.value, "rule": rule.value}
    )
    compared, favourable = compared_ends(spec.decided(), difference)
    if compared is None:  # an interval undefined on these values (no spread): nothing to decide
        return
    threshold = margin_threshold(0.0, direction)
    decision = rule_decision(rule, direction, threshold, compared, favourable, magnitude=difference.magnitude)
    if rule is GateRule.POINT:
        assert decision is RuleDecision.PASS, (compared, difference.magnitude)
    else:  # the interval of pure noise is the range floor around it: never a fail
        assert decision is not RuleDecision.FAIL
