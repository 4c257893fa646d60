"""``ScoreColumn.extend_measured``: the batch form of ``append`` takes a batch only when every result is a finite
float, and then holds exactly what appending them one by one would hold; otherwise it takes nothing."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalglass.core.columns import ScoreColumn
from evalglass.core.score import Diagnostic, Score, ScoreContractError

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


class _Subscore(Score):
    """A Score subclass: equal fields, another type (``extend_scored`` leaves it to ``append``)."""


def _built(**fields: Any) -> Score:
    """A Score built without validation (``model_construct``): the column must not trust it."""
    return Score.model_construct(**fields)


#: A scored+valid Score whose note cannot be hashed (its detail a list): interning it raises TypeError.
_UNHASHABLE = _built(
    status=Score.measured(1.0).status,
    validity=Score.measured(1.0).validity,
    value=1.0,
    diagnostics=(Score.noted(1.0, "unhashable", "x").diagnostics[0].model_construct(code="c", detail=[1]),),
)

SCORE_RESULTS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 0.0, math.nan, math.inf, 1e308]),
    st.builds(
        Score.noted,
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(["tool_calls_counted", "tool_calls_mismatch"]),
        st.sampled_from(["a", "b", "2 of 3"]),
        st.none() | st.just("detail"),
    ),
    st.just(Score.measured(0.25)),
    st.just(Score.measured(0.5, evidence=("seen",))),
    st.just(Score.untrusted(0.5, "off_scale", "off the scale")),
    st.just(Score.error("boom", "it broke")),
    st.just(Score.non_evaluable("no_calls_expected", "nothing")),
    st.just(_Subscore.measured(1.0)),
    st.just(_built(status="scored", validity="valid", value=1.0)),  # text states, not the members
    st.just(_built(status=Score.measured(1.0).status, validity=Score.measured(1.0).validity, value=1)),  # an int
    st.just(_built(status=Score.measured(1.0).status, validity=Score.measured(1.0).validity, value=math.nan)),
    st.just(_UNHASHABLE),
    st.integers(-2, 2),
    st.booleans(),
    st.none(),
)


def _full_snapshot(column: ScoreColumn) -> tuple[Any, ...]:
    """Everything the column holds: rows, their scores, and its table of interned notes (the order they came in)."""
    return (
        *_snapshot(column),
        [score.model_dump() for score in column],
        list(column._diag_table),
        len(column._diag_ids),
    )


def _taken(result: Any) -> bool:
    """What ``extend_scored`` takes: a finite float, or the Score type itself, scored+valid with a finite float."""
    if type(result) is float:
        return math.isfinite(result)
    if type(result) is not Score:
        return False
    fields = result.__dict__
    return (
        fields.get("status") is Score.measured(1.0).status
        and fields.get("validity") is Score.measured(1.0).validity
        and type(fields.get("value")) is float
        and math.isfinite(fields["value"])
        and all(type(note.__dict__.get("detail")) is not list for note in fields.get("diagnostics", ()))
    )


@given(first=st.lists(SCORE_RESULTS, max_size=4), batch=st.lists(SCORE_RESULTS, max_size=8))
@example(first=[], batch=[Score.noted(0.5, "tool_calls_counted", "a"), Score.noted(0.5, "tool_calls_counted", "a")])
@example(first=[Score.noted(0.5, "tool_calls_counted", "a")], batch=[1.0, Score.noted(0.5, "tool_calls_counted", "a")])
@example(first=[], batch=[Score.noted(0.5, "tool_calls_counted", "new"), _UNHASHABLE])  # interned, then undone
def test_extend_scored_is_all_or_nothing_and_equals_appending(first: list[Any], batch: list[Any]) -> None:
    """A batch of floats and plain scored+valid Scores (a replay's notes) is taken at once and then holds exactly what
    appending one by one holds (values, states, notes interned alike, evidence); anything else leaves the column as it
    was, for ``append`` to decide."""
    column, one_by_one = ScoreColumn(), ScoreColumn()
    for result in first:
        for target in (column, one_by_one):
            with contextlib.suppress(Exception):  # what append refuses (or fails on), it refuses alike in both
                target.append(result)
    before = _full_snapshot(column)
    assert before == _full_snapshot(one_by_one)
    taken = column.extend_scored(batch)
    if not all(map(_taken, batch)):
        assert taken is None
        assert _full_snapshot(column) == before
        return
    assert taken == [index for index, result in enumerate(batch) if type(result) is Score]
    for result in batch:
        one_by_one.append(result)
    assert _full_snapshot(column) == _full_snapshot(one_by_one)


def _note(code: str, message: str, detail: str | None = None) -> Diagnostic:
    return Diagnostic(code=code, message=message, detail=detail)


def _odd_note(kind: str, message: str) -> Diagnostic:
    """A note as only a hand-made model can be: extra keys in its ``__dict__``, a field missing, a private or extra
    attribute set, or another type."""
    note = _note("c", message)
    if kind == "extra_key":
        odd = Diagnostic.model_construct(code="c", message=message)
        object.__setattr__(odd, "__dict__", {**note.__dict__, "other": 1})
        return odd
    if kind == "missing":
        odd = Diagnostic.model_construct(code="c", message=message)
        object.__setattr__(odd, "__dict__", {"code": "c", "message": message})
        return odd
    if kind == "private":
        odd = Diagnostic.model_construct(code="c", message=message)
        object.__setattr__(odd, "__pydantic_private__", {"x": 1})
        return odd
    if kind == "extra":
        odd = Diagnostic.model_construct(code="c", message=message)
        object.__setattr__(odd, "__pydantic_extra__", {})  # pydantic compares {} equal to None
        return odd
    return _SubNote(code="c", message=message)


class _SubNote(Diagnostic):
    """Another type of note: never equal to a Diagnostic."""


NOTES = st.lists(
    st.one_of(
        st.builds(_note, st.sampled_from(["c", "d"]), st.sampled_from(["a", "b"]), st.none() | st.just("x")),
        st.builds(
            _odd_note, st.sampled_from(["extra_key", "missing", "private", "extra", "sub"]), st.sampled_from(["a", "b"])
        ),
    ),
    min_size=1,
    max_size=2,
).map(tuple)


@given(st.lists(NOTES, max_size=12))
def test_notes_are_interned_as_pydantic_compares_them(rows: list[tuple[Diagnostic, ...]]) -> None:
    """The column interns each row's notes by ``note_key``, which must group them exactly as interning the tuples
    themselves (pydantic's ``==`` and hash) does: the same table, in the same order, the same entry for each row."""
    column = ScoreColumn()
    for notes in rows:
        column.append(Score.noted(0.5, "x", "m").model_copy(update={"diagnostics": notes}))
    table: list[tuple[Diagnostic, ...]] = []
    by_tuple: dict[tuple[Diagnostic, ...], int] = {}
    for notes in rows:
        if notes not in by_tuple:
            by_tuple[notes] = len(table)
            table.append(notes)
    assert len(column._diag_table) == len(table)
    assert all(a is b for a, b in zip(column._diag_table, table, strict=True))
    assert [column.diagnostics(row) for row in range(len(rows))] == [table[by_tuple[notes]] for notes in rows]
    assert all(column.diagnostics(row) is table[by_tuple[notes]] for row, notes in enumerate(rows))
