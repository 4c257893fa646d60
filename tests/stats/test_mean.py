"""Student-t interval against scipy, and its edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from evalglass.core.stats import Method, Note, Sides, confidence_interval, student_t


@pytest.mark.parametrize("n", [2, 3, 10, 57, 1000])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_matches_scipy_t_interval(n: int, level: float) -> None:
    values = np.random.default_rng(n).gamma(2.0, 3.0, n)
    interval = student_t(values, level=level)
    assert interval is not None
    low, high = stats.t.interval(level, n - 1, loc=values.mean(), scale=stats.sem(values))
    assert interval.low == pytest.approx(low, rel=1e-12)
    assert interval.high == pytest.approx(high, rel=1e-12)
    assert interval.method is Method.STUDENT_T and interval.n == n
    assert interval.params["df"] == n - 1
    assert interval.params["std_error"] == pytest.approx(stats.sem(values), rel=1e-12)


def test_one_sided_bounds_use_the_one_sided_quantile() -> None:
    values = np.array([0.62, 0.71, 0.55, 0.80, 0.67, 0.74, 0.59])
    lower = student_t(values, level=0.95, sides=Sides.LOWER)
    upper = student_t(values, level=0.95, sides=Sides.UPPER)
    assert lower is not None and upper is not None
    expected = stats.t.ppf(0.95, 6) * stats.sem(values)
    assert lower.low == pytest.approx(values.mean() - expected, rel=1e-12) and lower.high is None
    assert upper.high == pytest.approx(values.mean() + expected, rel=1e-12) and upper.low is None


def test_no_values_means_no_interval() -> None:
    assert student_t(np.empty(0)) is None


def test_one_value_has_a_point_but_no_bounds() -> None:
    interval = student_t([0.7])
    assert interval is not None
    assert interval.point == 0.7 and interval.low is None and interval.high is None
    assert not interval.defined and Note.UNDEFINED in interval.notes
    assert "one value" in str(interval.params["undefined_reason"])


def test_all_equal_values_give_an_exact_zero_width_interval() -> None:
    interval = student_t(np.full(1000, 0.1))
    assert interval is not None
    assert interval.point == interval.low == interval.high == 0.1
    assert interval.notes == (Note.ZERO_SPREAD,)


def test_refuses_non_finite_and_non_flat_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        student_t([1.0, float("nan")])
    with pytest.raises(ValueError, match="one-dimensional"):
        student_t(np.ones((2, 2)))


def test_continuous_values_choose_student_t() -> None:
    interval = confidence_interval([0.2, 0.4, 0.5])
    assert interval is not None and interval.method is Method.STUDENT_T


@given(
    arrays(np.float64, st.integers(2, 200), elements=st.floats(-1e6, 1e6, allow_nan=False)),
    st.floats(0.5, 0.999),
)
def test_contains_point_and_is_ordered(values: np.ndarray, level: float) -> None:
    interval = student_t(values, level=level)
    assert interval is not None and interval.low is not None and interval.high is not None
    assert interval.low <= interval.point <= interval.high


def test_binary_values_forced_through_t_stay_inside_the_unit_range() -> None:
    interval = confidence_interval([1.0, 1.0, 1.0, 0.0], method="student_t")
    assert interval is not None and interval.high == 1.0 and interval.params["clipped_to_unit_range"] is True
    assert interval.low is not None and interval.low < 0.75
