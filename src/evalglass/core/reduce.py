"""Several samples (epochs) of one example become one per-example score before any statistics.

An example enters the math only when every one of its samples was measured validly; otherwise it is excluded with
the most serious state among its samples (error, then blocked, invalid, non_evaluable, skipped) and that sample's
diagnostics. An example that enters keeps the diagnostics its samples' measured values carried (each code once,
from the first sample with it), so a sample scored as a wrong answer (``output_not_json``) is still counted. A
reducer that is undefined for an example (pass@k with fewer than k samples) makes it an error. Under ``majority`` a
tie between equally frequent values goes to the side ``ties`` names: the caller passes the unfavourable side of the
gates' direction (``Ties.against``), so a split vote is never read as a win.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalglass.core.columns import SCORED_VALID, STATES, ScoreColumn
from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.core.stats import Reducer, Ties, WithinSpread, reduce_samples, within_spread

_SEVERITY = {
    Status.ERROR: 5,
    Status.BLOCKED: 4,
    Status.SCORED: 3,  # scored but invalid; scored+valid never competes here
    Status.NON_EVALUABLE: 2,
    Status.SKIPPED: 1,
}
SEVERITY = np.array([0 if code == SCORED_VALID else _SEVERITY[status] for code, (status, _) in enumerate(STATES)])


def reduce_column(
    column: ScoreColumn,
    example_of_row: npt.NDArray[np.int64],
    examples: int,
    reducer: Reducer,
    k: int | None = None,
    *,
    ties: Ties,
) -> ScoreColumn:
    """One row per example, in example order, from a column of sample rows; ``ties``: where a ``majority`` tie
    goes (required, so no caller reduces without saying which side is unfavourable)."""
    states = column.states()
    values = column.values()
    if example_of_row.shape[0] != states.shape[0]:
        raise ValueError("every sample row needs its example index")
    rows = np.bincount(example_of_row, minlength=examples)
    valid = states == SCORED_VALID
    valid_rows = np.bincount(example_of_row[valid], minlength=examples)
    whole = (rows == valid_rows) & (rows > 0)
    if reducer.needs_k and k is not None:
        whole &= valid_rows >= k
    reduced = np.full(examples, np.nan)
    problem: str | None = None
    if whole.any():
        keep = whole[example_of_row]
        try:
            per = reduce_samples(example_of_row[keep], values[keep], reducer, k=k, ties=ties)
            reduced[per.examples] = per.values
        except ValueError as exc:
            problem = str(exc)
    worst = _worst_rows(states, example_of_row, examples)
    notes = _measured_notes(column, states, example_of_row)
    out = ScoreColumn()
    for example in range(examples):
        if problem is not None and whole[example]:
            out.append(Score.error("reducer_undefined", f"{reducer.value} cannot reduce these samples: {problem}"))
        elif whole[example]:
            noted = notes.get(example)
            value = float(reduced[example])
            out.append(
                value
                if noted is None
                else Score(
                    status=Status.SCORED, validity=Validity.VALID, value=value, diagnostics=tuple(noted.values())
                )
            )
        elif rows[example] and valid_rows[example] == rows[example]:
            out.append(
                Score.error(
                    "too_few_samples",
                    f"{reducer.value} with k={k} needs at least {k} samples; this example has {rows[example]}",
                )
            )
        else:
            out.append(column.score(int(worst[example])))
    return out


def _measured_notes(
    column: ScoreColumn, states: npt.NDArray[np.uint8], example_of_row: npt.NDArray[np.int64]
) -> dict[int, dict[str, Diagnostic]]:
    """Per example, the diagnostics its measured (scored+valid) sample rows carry, each code once."""
    notes: dict[int, dict[str, Diagnostic]] = {}
    for row, diagnostics in column.diagnostic_rows():
        if states[row] != SCORED_VALID:
            continue
        found = notes.setdefault(int(example_of_row[row]), {})
        for diagnostic in diagnostics:
            found.setdefault(diagnostic.code, diagnostic)
    return notes


def _worst_rows(
    states: npt.NDArray[np.uint8], example_of_row: npt.NDArray[np.int64], examples: int
) -> npt.NDArray[np.int64]:
    """For each example, the index of its most serious non-valid sample row (-1 when all are valid)."""
    worst = np.full(examples, -1, dtype=np.int64)
    best_severity = np.zeros(examples, dtype=np.int64)
    severity = SEVERITY[states]
    for row in np.flatnonzero(severity):
        example = example_of_row[row]
        if severity[row] > best_severity[example]:
            best_severity[example] = severity[row]
            worst[example] = row
    return worst


def within_of(
    column: ScoreColumn, example_of_row: npt.NDArray[np.int64] | None, examples: int, reducer: Reducer
) -> WithinSpread | None:
    """How much the samples of one example vary, over the examples whose every sample was measured validly (those
    that enter the math). Only for the ``mean`` reducer: what sampling more epochs would buy is said of per-example
    means; the other reducers (majority, max, pass@k ...) do not average their noise away like that. None without
    samples."""
    if example_of_row is None or reducer is not Reducer.MEAN:
        return None
    valid = column.states() == SCORED_VALID
    rows = np.bincount(example_of_row, minlength=examples)
    whole = rows == np.bincount(example_of_row[valid], minlength=examples)
    keep = valid & whole[example_of_row]
    return within_spread(example_of_row[keep], column.values()[keep])
