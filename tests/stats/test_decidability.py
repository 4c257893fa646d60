"""Decidability advice: the n at which a one-sided bound would clear the threshold."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.stats import Direction, required_n
from evalglass.core.stats._common import normal_quantile
from evalglass.core.stats.proportion import _wilson_end

HIGHER, LOWER = Direction.HIGHER_IS_BETTER, Direction.LOWER_IS_BETTER


def test_point_on_the_wrong_side_gets_no_advice() -> None:
    assert required_n(point=0.7, threshold=0.8, direction=HIGHER, binary=True) is None
    assert required_n(point=0.8, threshold=0.8, direction=HIGHER, binary=True) is None
    assert required_n(point=0.9, threshold=0.8, direction=LOWER, variance=1.0) is None


def test_binary_worked_example() -> None:
    # p = 0.9 against T = 0.8 at 95% one-sided: n > 1.6449**2 * 0.16 / 0.01 = 43.29, so 44.
    assert required_n(point=0.9, threshold=0.8, direction=HIGHER, binary=True) == 44
    assert required_n(point=1.0, threshold=0.95, direction=HIGHER, binary=True) == 52
    assert required_n(point=0.5, threshold=0.0, direction=HIGHER, binary=True) == 1


@given(
    st.floats(0.01, 0.99),
    st.floats(0.01, 0.99),
    st.floats(0.6, 0.999),
    st.sampled_from(list(Direction)),
)
def test_binary_advice_is_exact_for_the_wilson_bound_at_a_fixed_proportion(
    p: float, t: float, level: float, direction: Direction
) -> None:
    n = required_n(point=p, threshold=t, direction=direction, level=level, binary=True)
    good_side = p > t if direction is HIGHER else p < t
    if not good_side:
        assert n is None
        return
    assert n is not None

    def clears(size: int) -> bool:
        if direction is HIGHER:
            return _wilson_end(p, size, 1 - level, -1.0) > t
        return _wilson_end(p, size, 1 - level, +1.0) < t

    needed = normal_quantile(level) ** 2 * t * (1 - t) / (p - t) ** 2
    if needed < 1e9 and abs(needed - round(needed)) > 1e-6:  # away from an exact boundary
        assert clears(n)
        assert n == 1 or not clears(n - 1)


@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.01, 4), st.floats(0.6, 0.999))
def test_continuous_advice_matches_the_normal_approximation(
    point: float, threshold: float, variance: float, level: float
) -> None:
    n = required_n(point=point, threshold=threshold, direction=HIGHER, level=level, variance=variance)
    if point <= threshold:
        assert n is None
        return
    z = normal_quantile(level)
    if n is None:  # only when the margin is so thin that the count overflows a float
        assert math.log(z) - math.log(point - threshold) + 0.5 * math.log(variance) > 150
        return
    assert n >= 2

    def bound(size: int) -> float:
        return point - z * math.sqrt(variance / size)

    needed = z * z * variance / (point - threshold) ** 2
    # Check exactness where float arithmetic can: a moderate count, away from an exact integer boundary.
    if needed < 1e9 and abs(needed - round(needed)) > 1e-6:
        assert bound(n) > threshold
        assert n == 2 or bound(n - 1) <= threshold


def test_continuous_needs_a_variance_and_binary_needs_proportions() -> None:
    with pytest.raises(ValueError, match="variance"):
        required_n(point=1.0, threshold=0.5, direction=HIGHER)
    with pytest.raises(ValueError, match="proportions"):
        required_n(point=1.5, threshold=0.5, direction=HIGHER, binary=True)
    assert required_n(point=1.0, threshold=0.5, direction=HIGHER, variance=0.0) == 2
