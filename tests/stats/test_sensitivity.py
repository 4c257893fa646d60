"""Sensitivity bounds for excluded examples."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evalglass.core.stats import UNIT_SCALE, Direction, ScaleSpec, sensitivity_bounds


def test_binary_worst_and_best_count_exclusions_as_failing_and_passing() -> None:
    values = np.array([1.0] * 80 + [0.0] * 10)  # 80/90 passed, 10 more examples excluded
    bounds = sensitivity_bounds(values, excluded=10, scale=UNIT_SCALE, direction=Direction.HIGHER_IS_BETTER)
    assert bounds is not None
    assert bounds.worst == pytest.approx(0.80) and bounds.best == pytest.approx(0.90)
    assert (bounds.included, bounds.excluded) == (90, 10)


def test_lower_is_better_flips_the_ends() -> None:
    values = np.array([2.0, 3.0, 4.0])  # e.g. a 1-5 severity score, lower is better
    bounds = sensitivity_bounds(values, excluded=1, scale=ScaleSpec(min=1, max=5), direction="lower_is_better")
    assert bounds is not None
    assert bounds.worst == pytest.approx(14 / 4) and bounds.best == pytest.approx(10 / 4)


def test_unavailable_cases() -> None:
    direction = Direction.HIGHER_IS_BETTER
    assert sensitivity_bounds([1.0, 2.0], excluded=3, scale=None, direction=direction) is None  # unbounded
    assert sensitivity_bounds([], excluded=0, scale=UNIT_SCALE, direction=direction) is None
    nothing_measured = sensitivity_bounds([], excluded=4, scale=UNIT_SCALE, direction=direction)
    assert nothing_measured is not None and (nothing_measured.worst, nothing_measured.best) == (0.0, 1.0)


def test_refuses_wrong_inputs() -> None:
    direction = Direction.HIGHER_IS_BETTER
    with pytest.raises(ValueError, match="outside the declared scale"):
        sensitivity_bounds([0.5, 1.5], excluded=1, scale=UNIT_SCALE, direction=direction)
    with pytest.raises(ValueError, match="non-negative"):
        sensitivity_bounds([0.5], excluded=-1, scale=UNIT_SCALE, direction=direction)
    with pytest.raises(ValueError):
        ScaleSpec(min=1.0, max=1.0)


@given(
    arrays(np.float64, st.integers(0, 50), elements=st.floats(0, 10)),
    st.integers(0, 50),
    st.sampled_from(list(Direction)),
)
def test_bounds_bracket_the_mean_in_the_right_order(values: np.ndarray, excluded: int, direction: Direction) -> None:
    bounds = sensitivity_bounds(values, excluded=excluded, scale=ScaleSpec(min=0, max=10), direction=direction)
    if values.size + excluded == 0:
        assert bounds is None
        return
    assert bounds is not None
    low, high = sorted((bounds.worst, bounds.best))
    if values.size:
        assert low - 1e-9 <= values.mean() <= high + 1e-9
    if excluded == 0:
        assert bounds.worst == pytest.approx(bounds.best)
    better = bounds.best >= bounds.worst if direction is Direction.HIGHER_IS_BETTER else bounds.best <= bounds.worst
    assert better
