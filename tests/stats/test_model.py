"""The Interval value: validation, direction, serialisation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalglass.core.stats import Direction, Interval, Method, Note, Sides, bootstrap, cluster_t, wilson


def test_round_trips_through_json() -> None:
    for interval in (
        wilson(7, 9),
        bootstrap([0.1, 0.5, 0.9, 0.3], seed=3),
        cluster_t([0.1, 0.5, 0.9, 0.3], [1, 1, 2, 2]),
    ):
        assert interval is not None
        assert Interval.model_validate_json(interval.model_dump_json()) == interval


def test_is_frozen() -> None:
    interval = wilson(1, 2)
    assert interval is not None
    with pytest.raises(ValidationError):
        interval.low = 0.0  # type: ignore[misc]


def test_refuses_inconsistent_intervals() -> None:
    base = {"point": 0.5, "level": 0.95, "method": Method.STUDENT_T, "n": 3}
    with pytest.raises(ValidationError, match="exceeds"):
        Interval(low=0.6, high=0.4, **base)
    with pytest.raises(ValidationError, match="clusters"):
        Interval(low=0.4, high=0.6, clusters=3, **base)
    with pytest.raises(ValidationError, match="needs high"):
        Interval(low=0.4, high=None, **base)
    with pytest.raises(ValidationError, match="no high end"):
        Interval(low=0.4, high=0.6, sides=Sides.LOWER, **base)
    with pytest.raises(ValidationError):
        Interval(low=0.4, high=0.6, **{**base, "n": 0})
    with pytest.raises(ValidationError):
        Interval(low=0.4, high=0.6, **{**base, "level": 1.0})
    assert Interval(low=None, high=None, notes=(Note.UNDEFINED,), **base).defined is False


def test_bound_is_the_unfavourable_end() -> None:
    interval = wilson(8, 10)
    assert interval is not None
    assert interval.bound(Direction.HIGHER_IS_BETTER) == interval.low
    assert interval.bound(Direction.LOWER_IS_BETTER) == interval.high
    assert interval.bound("lower_is_better") == interval.high
    with pytest.raises(ValueError):
        interval.bound("sideways")
