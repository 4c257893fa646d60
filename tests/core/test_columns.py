"""``ScoreColumn.extend_measured``: the batch form of ``append`` takes a batch only when every result is a finite
float, and then holds exactly what appending them one by one would hold; otherwise it takes nothing."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalglass.core.columns import ScoreColumn
from evalglass.core.score import Score, ScoreContractError

RESULTS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 0.0, -0.0, 0.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.just(Score.error("boom", "it broke")),
    st.just(Score.measured(0.25)),
    st.just(np.float64(0.5)),
)


def _snapshot(column: ScoreColumn) -> tuple[Any, ...]:
    return (column.values().tobytes(), column.states().tobytes(), list(column.diagnostic_rows()), len(column))


BATCHES = st.lists(RESULTS, max_size=8) | st.lists(st.floats(), max_size=8)


@given(first=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=4), batch=BATCHES)
@example(first=[], batch=[1.0, math.nan])
@example(first=[0.5], batch=[math.inf, 0.0])
@example(first=[], batch=[1e308, 1e308])  # finite terms whose sum overflows
@example(first=[], batch=[math.inf, -math.inf])
@example(first=[], batch=[1.0, True])
@example(first=[], batch=[1.0, 1])
@example(first=[], batch=[0.0, Score.measured(1.0)])
def test_extend_measured_is_all_or_nothing_and_equals_appending(first: list[float], batch: list[Any]) -> None:
    column = ScoreColumn()
    for value in first:
        column.append(value)
    before = _snapshot(column)
    plain = all(type(result) is float and math.isfinite(result) for result in batch)
    assert column.extend_measured(batch) is plain
    if not plain:
        assert _snapshot(column) == before
        return
    one_by_one = ScoreColumn()
    for value in [*first, *batch]:
        one_by_one.append(value)
    assert _snapshot(column) == _snapshot(one_by_one)


def test_an_empty_batch_is_taken() -> None:
    column = ScoreColumn()
    assert column.extend_measured([]) is True
    assert len(column) == 0


def test_an_integer_too_large_for_a_float_is_refused_not_a_crash() -> None:
    column = ScoreColumn()
    with pytest.raises(ScoreContractError, match="too large"):
        column.append(10**400)
    assert len(column) == 0
    column.append(10**300)
    assert column.values().tolist() == [1e300]
