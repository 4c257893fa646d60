"""A gate's rule reads a value equal to its threshold up to float rounding as on it (``gatespec.reaches``); a result
recorded before, decided exactly, still reads as it was decided, and only ever redder."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason, Reason
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import THRESHOLD_ROUNDING, GateRule, RuleDecision, reaches, rule_decision
from evalglass.core.stats import Direction

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
