"""The Score contract: no illegal state can be built or loaded, and JSON round trips are lossless."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.columns import ScoreColumn
from evalglass.core.score import (
    Diagnostic,
    Score,
    ScoreContractError,
    Status,
    Validity,
    score_violation,
)

DIAG = Diagnostic(code="why", message="because")

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)
diagnostics = st.lists(
    st.builds(
        Diagnostic,
        code=st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True),
        message=st.text(min_size=1, max_size=20),
        detail=st.none() | st.text(max_size=20),
    ),
    max_size=2,
).map(tuple)


def legal(status: Status, validity: Validity, value: object, has_diag: bool) -> bool:
    """The rules restated independently of the implementation, as the design document words them."""
    if status is Status.SCORED:
        number_ok = (
            value is not None
            and not isinstance(value, bool)
            and isinstance(value, int | float)
            and math.isfinite(value)
        )
        if not number_ok or validity not in (Validity.VALID, Validity.INVALID):
            return False
    elif value is not None or validity not in (Validity.NOT_MEASURED, Validity.NOT_APPLICABLE):
        return False
    return has_diag or (status is Status.SCORED and validity is Validity.VALID)


@given(st.sampled_from(Status), st.sampled_from(Validity), values, diagnostics)
def test_a_score_exists_exactly_when_the_rules_allow_it(status, validity, value, diags):
    expected = legal(status, validity, value, bool(diags))
    try:
        score = Score(status=status, validity=validity, value=value, diagnostics=diags)
    except ValidationError:
        assert not expected
        return
    assert expected
    assert score_violation(score.status, score.validity, score.value, bool(score.diagnostics)) is None


@given(st.sampled_from(Status), st.sampled_from(Validity), values, diagnostics)
def test_json_round_trip_is_lossless(status, validity, value, diags):
    try:
        score = Score(status=status, validity=validity, value=value, diagnostics=diags, evidence=("example:1",))
    except ValidationError:
        return
    assert Score.model_validate_json(score.model_dump_json()) == score


@given(st.sampled_from(Status), st.sampled_from(Validity), values, diagnostics)
def test_loading_json_enforces_the_same_rules_as_construction(status, validity, value, diags):
    raw = {
        "status": status.value,
        "validity": validity.value,
        "value": value,
        "diagnostics": [d.model_dump() for d in diags],
    }
    expected = legal(status, validity, value, bool(diags))
    try:
        Score.model_validate(raw)
    except ValidationError:
        assert not expected
    else:
        assert expected


@pytest.mark.parametrize("bad", [True, False, math.nan, math.inf, -math.inf, "1.0"])
def test_scored_refuses_bools_nan_inf_and_strings(bad):
    with pytest.raises(ValidationError):
        Score(status=Status.SCORED, validity=Validity.VALID, value=bad)


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.SCORED])
def test_missing_is_never_zero(status):
    with pytest.raises(ValidationError, match=r"never 0\.0"):
        Score(status=status, validity=Validity.NOT_MEASURED, value=0.0, diagnostics=(DIAG,))


def test_non_perfect_states_need_a_diagnostic():
    with pytest.raises(ValidationError, match="diagnostic"):
        Score(status=Status.SCORED, validity=Validity.INVALID, value=0.5)
    with pytest.raises(ValidationError, match="diagnostic"):
        Score(status=Status.ERROR, validity=Validity.NOT_MEASURED)


def test_scores_are_frozen():
    score = Score.measured(1.0)
    with pytest.raises(ValidationError):
        score.value = 0.0  # type: ignore[misc]


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.integers(0, 5))))
def test_columns_refuse_what_the_score_type_refuses(items):
    column = ScoreColumn()
    accepted = 0
    for item in items:
        ok = not isinstance(item, bool) and math.isfinite(item)
        try:
            column.append(item)
        except ScoreContractError:
            assert not ok
        else:
            assert ok
            accepted += 1
    assert len(column) == accepted


def test_column_round_trips_full_scores():
    column = ScoreColumn()
    originals = [
        Score.measured(0.25),
        Score.error("boom", "it broke", "trace"),
        Score.non_evaluable("reference_missing", "no gold"),
        Score.untrusted(7.0, "judge_off_scale", "7 is outside 1..5"),
        Score.error("boom", "it broke", "trace"),
    ]
    for score in originals:
        column.append(score)
    assert list(column) == originals


def test_column_refuses_a_score_built_without_validation():
    forged = Score.model_construct(status=Status.ERROR, validity=Validity.NOT_MEASURED, value=0.0, diagnostics=())
    with pytest.raises(ScoreContractError):
        ScoreColumn().append(forged)


def _validated_note(value: object, code: object, message: object, detail: object) -> Score | str:
    """What the validating constructor gives for a note, or its error's text."""
    try:
        return Score(
            status=Status.SCORED,
            validity=Validity.VALID,
            value=value,
            diagnostics=(Diagnostic(code=code, message=message, detail=detail),),
        )
    except ValidationError as exc:
        return str(exc)


@given(
    value=values,
    code=st.one_of(st.sampled_from(["tool_calls_counted", "why"]), st.text(max_size=4)),
    message=st.text(max_size=5),
    detail=st.none() | st.text(max_size=3) | st.integers(),
    times=st.integers(1, 3),
)
def test_a_note_built_without_validation_is_the_validated_note(
    value: object, code: object, message: object, detail: object, times: int
) -> None:
    """``Score.noted`` skips validation only for what validation would take unchanged, and gives the same Score
    (equal, the same JSON, the same fields set, usable as a key); anything else is refused as the validating
    constructor refuses it, whether or not the code was met before."""
    expected = _validated_note(value, code, message, detail)
    for _ in range(times):  # the first time a code is met it is validated; after that it is trusted
        try:
            found: Score | str = Score.noted(value, code, message, detail)  # type: ignore[arg-type]
        except ValidationError as exc:
            found = str(exc)
        assert found == expected
        if isinstance(found, Score):
            assert isinstance(expected, Score)
            assert found.model_dump_json() == expected.model_dump_json()
            assert found.model_fields_set == expected.model_fields_set
            assert found.diagnostics[0].model_fields_set == expected.diagnostics[0].model_fields_set
            assert hash(found) == hash(expected) and repr(found) == repr(expected)
            column = ScoreColumn()
            column.append(found)
            assert list(column) == [expected]
