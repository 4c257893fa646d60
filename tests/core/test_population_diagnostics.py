"""The population view counts diagnostics on measured scores too (issue 27): a wrong answer scored its metric's
worst value is in the value, and the view says how many of each diagnostic are, also after samples are reduced."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.columns import ScoreColumn
from evalglass.core.population import TOP_DIAGNOSTICS, DiagnosticCount, population_of
from evalglass.core.reduce import reduce_column
from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.core.stats import Reducer, Ties


def noted(value: float, code: str) -> Score:
    return Score(
        status=Status.SCORED,
        validity=Validity.VALID,
        value=value,
        diagnostics=(Diagnostic(code=code, message=f"{code} here"),),
    )


CODES = st.sampled_from(["output_not_json", "output_field_missing", "schema_mismatch", "host_raised"])
RESULTS = (
    st.floats(0, 1)
    | st.builds(noted, st.floats(0, 1), CODES)
    | st.builds(Score.error, CODES, st.just("why"))
    | st.builds(Score.non_evaluable, CODES, st.just("why"))
)


def test_a_wrong_answer_in_the_value_is_counted_as_included() -> None:
    column = ScoreColumn()
    for result in [1.0, noted(0.0, "output_not_json"), noted(0.0, "output_not_json"), Score.error("x", "why")]:
        column.append(result)
    population = population_of(column, 4)
    assert population.included == 3 and population.excluded_total == 1
    counted = {item.code: (item.count, item.included) for item in population.top_diagnostics}
    assert counted == {"output_not_json": (2, 2), "x": (1, 0)}


def test_a_diagnostic_count_cannot_include_more_than_it_counts() -> None:
    with pytest.raises(ValidationError, match="included"):
        DiagnosticCount(code="output_not_json", count=2, example="e", included=3)


@settings(max_examples=200, deadline=None)
@given(results=st.lists(RESULTS, max_size=30))
def test_every_diagnostic_is_counted_with_how_many_are_in_the_value(results: list[float | Score]) -> None:
    column = ScoreColumn()
    for result in results:
        column.append(result)
    population = population_of(column, len(results))
    scores = [result for result in results if isinstance(result, Score)]
    counts = Counter(score.diagnostics[0].code for score in scores)
    included = Counter(score.diagnostics[0].code for score in scores if score.included)
    assert len(population.top_diagnostics) == min(len(counts), TOP_DIAGNOSTICS)
    for item in population.top_diagnostics:
        assert (item.count, item.included) == (counts[item.code], included[item.code])


def test_reducing_samples_keeps_the_diagnostic_of_a_measured_sample() -> None:
    """Example 0: one of its two samples was a wrong answer (scored 0.0); it enters the value with the note."""
    column = ScoreColumn()
    for result in [noted(0.0, "output_not_json"), 1.0, 1.0, 1.0]:
        column.append(result)
    reduced = reduce_column(column, np.array([0, 0, 1, 1]), 2, Reducer.MEAN, ties=Ties.LOW)
    first = reduced.score(0)
    assert first.included and first.value == 0.5
    assert [diagnostic.code for diagnostic in first.diagnostics] == ["output_not_json"]
    assert reduced.score(1).diagnostics == ()
    (counted,) = population_of(reduced, 2).top_diagnostics
    assert (counted.code, counted.count, counted.included) == ("output_not_json", 1, 1)


@settings(max_examples=200, deadline=None)
@given(per_example=st.lists(st.lists(RESULTS, min_size=1, max_size=4), min_size=1, max_size=8))
def test_a_reduced_example_carries_each_code_its_measured_samples_carried(
    per_example: list[list[float | Score]],
) -> None:
    column = ScoreColumn()
    example_of_row = []
    for example, samples in enumerate(per_example):
        for result in samples:
            column.append(result)
            example_of_row.append(example)
    reduced = reduce_column(
        column, np.array(example_of_row, dtype=np.int64), len(per_example), Reducer.MEAN, ties=Ties.LOW
    )
    for example, samples in enumerate(per_example):
        score = reduced.score(example)
        if not score.included:
            continue
        carried = [s.diagnostics[0].code for s in samples if isinstance(s, Score)]
        assert [diagnostic.code for diagnostic in score.diagnostics] == list(dict.fromkeys(carried))
