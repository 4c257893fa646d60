"""Compact storage for one metric's scores over a whole population.

A million examples must not become a million Score objects at rest. A column keeps a float array of values (NaN
where no value exists), one byte of measurement state per row, and diagnostics interned and stored only for the
rows that have them. Every append goes through :func:`core.score.score_violation`, so the column cannot hold a
score the Score type would refuse; :meth:`ScoreColumn.score` rebuilds a full Score on demand.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Hashable, Iterator
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from evalglass.core.score import (
    _SCORED,
    _VALID,
    Diagnostic,
    Score,
    ScoreContractError,
    Status,
    Validity,
    score_violation,
    value_violation,
)
from evalglass.core.uniform import all_of_type

#: Every legal (status, validity) pair, in a fixed order: a row's state byte is an index into this tuple.
STATES: tuple[tuple[Status, Validity], ...] = (
    (Status.SCORED, Validity.VALID),
    (Status.SCORED, Validity.INVALID),
    *(
        (status, validity)
        for status in (Status.BLOCKED, Status.NON_EVALUABLE, Status.SKIPPED, Status.ERROR)
        for validity in (Validity.NOT_MEASURED, Validity.NOT_APPLICABLE)
    ),
)
STATE_CODE: dict[tuple[Status, Validity], int] = {pair: code for code, pair in enumerate(STATES)}
SCORED_VALID = 0

Diagnostics = tuple[Diagnostic, ...]


def note_key(diagnostics: Diagnostics) -> Hashable:
    """What a column interns ``diagnostics`` by: equal keys exactly when the tuples are equal.

    A single note of the :class:`Diagnostic` type itself, with no private or extra attributes and its three fields
    in its ``__dict__`` (every note a metric makes), is keyed by the text of those fields: pydantic's ``==`` of two
    such models is the equality of those fields, and its ``__hash__`` is a Python call (a replay interns thousands
    of notes). Anything else is keyed by the tuple itself, whose ``==`` is pydantic's; a tuple of models never equals
    a tuple of texts, and no model of the second kind equals one of the first (another type, a private or extra
    attribute, or a field missing makes pydantic's ``==`` false), so a column's notes are interned as before."""
    if len(diagnostics) == 1 and type(note := diagnostics[0]) is Diagnostic:
        try:
            if note.__pydantic_private__ is None and not note.__pydantic_extra__:
                fields = note.__dict__
                return (fields["code"], fields["message"], fields["detail"])
        except (AttributeError, KeyError):  # a model made by hand without them: keyed as pydantic compares it
            pass
    return diagnostics


def _all_finite(floats: list[float]) -> bool:
    """Whether every float is finite: a finite sum implies every term is (a NaN or an infinity makes the sum NaN or
    infinite); only a sum that is not (finite terms can overflow it) needs each term checked."""
    return math.isfinite(sum(floats)) or bool(np.isfinite(np.array(floats, dtype=np.float64)).all())


class ScoreColumn:
    """Append-only scores of one metric, one row per example in dataset order."""

    __slots__ = ("_diag_ids", "_diag_of_row", "_diag_table", "_evidence", "_states", "_values")

    def __init__(self) -> None:
        self._values = array("d")
        self._states = bytearray()
        self._diag_table: list[Diagnostics] = []
        self._diag_ids: dict[Hashable, int] = {}  # by note_key
        self._diag_of_row: dict[int, int] = {}
        self._evidence: dict[int, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def append(self, result: float | int | Score) -> None:
        """Add the next row. A bare number is shorthand for scored+valid and is checked like one."""
        if isinstance(result, Score):
            self._append_score(result)
            return
        if type(result) is not float or not math.isfinite(result):
            why = value_violation(result)
            if why is not None:
                raise ScoreContractError(why)
        try:
            self._values.append(result)
        except OverflowError:  # an int beyond the float range would only be stored as infinity
            raise ScoreContractError("value must be finite, got an integer too large for a float") from None
        self._states.append(SCORED_VALID)

    def extend_measured(self, results: list[float | int | Score]) -> bool:
        """Append a batch of results at once when every one is a finite ``float``; otherwise append nothing.

        The batch form of :meth:`append` for the common case: one type check and one finiteness check over the
        batch instead of a check per row. Returns False, leaving the column untouched, when any result is not a
        finite float (a Score, an int, a bool, NaN...): the caller then appends them one by one, so each gets
        :meth:`append`'s checks and its own error.
        """
        if not results:
            return True
        if not all_of_type(results, float):
            return False
        floats = cast(list[float], results)
        if not _all_finite(floats):
            return False
        # ``fromlist`` converts in place: faster than building an array to extend from, and far faster than
        # ``extend`` from the list (an iterator, item by item).
        self._values.fromlist(floats)
        self._states.extend(bytes(len(floats)))  # SCORED_VALID is 0
        return True

    def extend_scored(self, results: list[Any]) -> list[int] | None:
        """Append a batch of finite floats and scored+valid :class:`Score` objects holding a finite float (a
        replay's noted scores) at once, and return the positions of the Scores; or append nothing and return None,
        and the caller appends one by one, so each result gets :meth:`append`'s checks and its own error.

        What it holds afterwards is exactly what appending one by one would hold: such a Score breaks no rule of
        :func:`score_violation` whatever its notes (a scored+valid score needs none), and its notes and evidence
        are kept as :meth:`_append_score` keeps them. Only the Score type itself is taken, with its fields as
        validation leaves them (the two states the enum members, the value a float, notes and evidence tuples);
        anything else (a subclass, a model built with other fields, an int) returns None, and :meth:`append`
        decides it as before. One loop and one ``fromlist`` for the batch instead of a call per row."""
        values: list[float] = []
        scores: list[int] = []
        noted: list[tuple[int, Diagnostics, tuple[str, ...]]] = []
        for index, result in enumerate(results):
            if type(result) is float:
                values.append(result)
                continue
            if type(result) is not Score:
                return None
            fields = result.__dict__
            try:
                value, diagnostics, evidence = fields["value"], fields["diagnostics"], fields["evidence"]
                plain = fields["status"] is _SCORED and fields["validity"] is _VALID
            except KeyError:
                return None
            if not plain or type(value) is not float or type(diagnostics) is not tuple or type(evidence) is not tuple:
                return None
            values.append(value)
            scores.append(index)
            if diagnostics or evidence:
                noted.append((index, diagnostics, evidence))
        if not _all_finite(values):
            return None
        first = len(self._states)
        table = len(self._diag_table)
        try:
            for index, diagnostics, _ in noted:
                if diagnostics:
                    self._diag_of_row[first + index] = self._intern(diagnostics)
        except TypeError:  # a note that cannot be hashed (a model built by hand): undone, and append decides it
            for index, _, _ in noted:
                self._diag_of_row.pop(first + index, None)
            for diagnostics in self._diag_table[table:]:
                del self._diag_ids[note_key(diagnostics)]
            del self._diag_table[table:]
            return None
        for index, _, evidence in noted:
            if evidence:
                self._evidence[first + index] = evidence
        self._values.fromlist(values)
        self._states.extend(bytes(len(values)))  # SCORED_VALID is 0
        return scores

    def _append_score(self, score: Score) -> None:
        # A Score validated itself on construction, but frozen models can be built with model_construct(); check
        # again so the column never trusts a caller.
        why = score_violation(score.status, score.validity, score.value, bool(score.diagnostics))
        if why is not None:
            raise ScoreContractError(why)
        row = len(self._states)
        self._values.append(math.nan if score.value is None else score.value)
        self._states.append(STATE_CODE[(score.status, score.validity)])
        if score.diagnostics:
            self._diag_of_row[row] = self._intern(score.diagnostics)
        if score.evidence:
            self._evidence[row] = score.evidence

    def _intern(self, diagnostics: Diagnostics) -> int:
        key = note_key(diagnostics)
        found = self._diag_ids.get(key)
        if found is None:
            found = len(self._diag_table)
            self._diag_table.append(diagnostics)
            self._diag_ids[key] = found
        return found

    def score(self, row: int) -> Score:
        status, validity = STATES[self._states[row]]
        value = self._values[row]
        return Score(
            status=status,
            validity=validity,
            value=None if status is not Status.SCORED else value,
            diagnostics=self.diagnostics(row),
            evidence=self._evidence.get(row, ()),
        )

    def diagnostics(self, row: int) -> Diagnostics:
        index = self._diag_of_row.get(row)
        return () if index is None else self._diag_table[index]

    def __iter__(self) -> Iterator[Score]:
        return (self.score(row) for row in range(len(self)))

    def values(self) -> npt.NDArray[np.float64]:
        """Every row's value (NaN where none exists), as a zero-copy view."""
        return np.frombuffer(self._values, dtype=np.float64) if self._values else np.empty(0, np.float64)

    def states(self) -> npt.NDArray[np.uint8]:
        return np.frombuffer(bytes(self._states), dtype=np.uint8) if self._states else np.empty(0, np.uint8)

    def diagnostic_rows(self) -> Iterator[tuple[int, Diagnostics]]:
        for row, index in self._diag_of_row.items():
            yield row, self._diag_table[index]
