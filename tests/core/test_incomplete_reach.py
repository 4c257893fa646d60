"""What an ``incomplete_measurement`` reason says measuring the rest would decide is what the point rule decides once
they are measured, whatever they score: a claimed pass is a pass for every completion, a claimed fail a fail."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from evalglass.core.estimate import Estimate, Sensitivity
from evalglass.core.gates import incomplete_reach
from evalglass.core.gatespec import meets
from evalglass.core.stats import Direction

_UNIT = st.floats(0, 1, allow_nan=False)


@given(
    measured=st.lists(_UNIT, min_size=1, max_size=30),
    completions=st.lists(st.lists(_UNIT, min_size=1, max_size=5), min_size=1, max_size=5),
    threshold=_UNIT,
    direction=st.sampled_from(list(Direction)),
)
def test_a_claimed_pass_or_fail_holds_for_every_completion(
    measured: list[float], completions: list[list[float]], threshold: float, direction: Direction
) -> None:
    unmeasured = len(completions[0])
    point = sum(measured) / len(measured)
    low = (sum(measured) + 0.0 * unmeasured) / (len(measured) + unmeasured)
    high = (sum(measured) + 1.0 * unmeasured) / (len(measured) + unmeasured)
    sensitivity = Sensitivity(low=min(low, point), high=max(high, point), excluded=unmeasured, scale_min=0, scale_max=1)
    reach = incomplete_reach(
        Estimate(point=point, n=len(measured), sensitivity=sensitivity), unmeasured, threshold, direction
    )
    assert reach is not None
    assume(min(abs(low - threshold), abs(high - threshold)) > 1e-9)  # rounding of the mean decides a tie, not the rule
    outcomes = set()
    for completion in completions:
        scores = (completion * unmeasured)[:unmeasured]
        value = (sum(measured) + sum(scores)) / (len(measured) + unmeasured)
        assume(abs(value - threshold) > 1e-9)
        outcomes.add(meets(value, threshold, direction))
    if reach.endswith("decides a pass"):
        assert outcomes == {True}
    elif reach.endswith("decides a fail"):
        assert outcomes == {False}
    else:
        assert reach.endswith("only measuring them decides")


def test_no_scale_no_claim() -> None:
    assert incomplete_reach(Estimate(point=0.5, n=4), 1, 0.7, Direction.HIGHER_IS_BETTER) is None
