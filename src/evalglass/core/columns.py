"""Compact storage for one metric's scores over a whole population.

A million examples must not become a million Score objects at rest. A column keeps a float array of values (NaN
where no value exists), one byte of measurement state per row, and diagnostics interned and stored only for the
rows that have them. Every append goes through :func:`core.score.score_violation`, so the column cannot hold a
score the Score type would refuse; :meth:`ScoreColumn.score` rebuilds a full Score on demand.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import cast

import numpy as np
import numpy.typing as npt

from evalglass.core.score import (
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


class ScoreColumn:
    """Append-only scores of one metric, one row per example in dataset order."""

    __slots__ = ("_diag_ids", "_diag_of_row", "_diag_table", "_evidence", "_states", "_values")

    def __init__(self) -> None:
        self._values = array("d")
        self._states = bytearray()
        self._diag_table: list[Diagnostics] = []
        self._diag_ids: dict[Diagnostics, int] = {}
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
        # A finite sum implies every term is finite (a NaN or an infinity makes the sum NaN or infinite). Only a
        # sum that is not (finite terms can overflow it) needs each term checked.
        if not math.isfinite(sum(floats)) and not np.isfinite(np.array(floats, dtype=np.float64)).all():
            return False
        # ``fromlist`` converts in place: faster than building an array to extend from, and far faster than
        # ``extend`` from the list (an iterator, item by item).
        self._values.fromlist(floats)
        self._states.extend(bytes(len(floats)))  # SCORED_VALID is 0
        return True

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
        found = self._diag_ids.get(diagnostics)
        if found is None:
            found = len(self._diag_table)
            self._diag_table.append(diagnostics)
            self._diag_ids[diagnostics] = found
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
