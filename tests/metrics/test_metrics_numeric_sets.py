"""numeric_bounds (bounds, inclusivity, coercion) and set_overlap (measures and empty-set rules)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.score import Status, Validity
from evalglass.metrics import parse_metric_spec
from tests.metrics.helpers import assert_unmeasured, assert_worst, measure


@pytest.mark.parametrize(
    ("bounds", "output", "result"),
    [
        ({"min": 0, "max": 1}, 0, 1.0),
        ({"min": 0, "max": 1}, 1, 1.0),
        ({"min": 0, "max": 1}, 0.5, 1.0),
        ({"min": 0, "max": 1}, 1.0000001, 0.0),
        ({"min": 0, "max": 1, "inclusive": False}, 0, 0.0),
        ({"min": 0, "max": 1, "inclusive": False}, 1, 0.0),
        ({"min": 0, "max": 1, "inclusive": False}, 0.5, 1.0),
        ({"min": 10}, 10**30, 1.0),
        ({"max": -2.5}, -3, 1.0),
        ({"max": -2.5}, -2, 0.0),
        ({"max": 100}, float("inf"), 0.0),
        ({"min": 100}, float("-inf"), 0.0),
    ],
)
def test_numeric_bounds(bounds: dict[str, Any], output: Any, result: float) -> None:
    assert measure({"type": "numeric_bounds", **bounds}, output) == result


@pytest.mark.parametrize("output", ["3.5", True, False, None, [1], {"v": 1}])
def test_numeric_bounds_wrong_types_are_wrong_answers_scored_worst(output: Any) -> None:
    """The system answered, with something that is no number: a measurement (the worst value, noted), not an
    error that blocks the gate on a mistake only the system can mend."""
    score = assert_worst(measure({"type": "numeric_bounds", "min": 0}, output), 0.0, "wrong_type")
    assert "numeric_bounds needs a number" in score.diagnostics[0].message
    assert "scored 0, the worst value of its scale" in score.diagnostics[0].message


@pytest.mark.parametrize("output", ["3.5", None, [1]])
def test_numeric_bounds_wrong_types_are_left_out_under_exclude(output: Any) -> None:
    config = {"type": "numeric_bounds", "min": 0, "on_invalid_output": "exclude"}
    score = assert_unmeasured(measure(config, output), Status.ERROR, "wrong_type")
    assert score.validity is Validity.NOT_MEASURED


def test_numeric_string_note_suggests_coerce() -> None:
    score = assert_worst(measure({"type": "numeric_bounds", "max": 9}, "3"), 0.0, "wrong_type")
    assert "coerce: true" in score.diagnostics[0].message
    assert score.diagnostics[0].detail == "'3'"


def test_nan_is_not_a_number() -> None:
    assert_worst(measure({"type": "numeric_bounds", "max": 9}, float("nan")), 0.0, "not_a_number")


@pytest.mark.parametrize(("output", "result"), [("3.5", 1.0), (" -1e1 ", 0.0), (".5", 1.0), ("+4.", 1.0), ("12", 0.0)])
def test_coerce_reads_decimal_text(output: str, result: float) -> None:
    assert measure({"type": "numeric_bounds", "min": 0, "max": 10, "coerce": True}, output) == result


@pytest.mark.parametrize("output", ["1,000", "nan", "inf", "3 apples", "", "1_000", "0x10"])
def test_coerce_refuses_non_decimal_text(output: str) -> None:
    config = {"type": "numeric_bounds", "min": 0, "coerce": True}
    assert_worst(measure(config, output), 0.0, "not_a_number")


def test_numeric_bounds_field_and_absence() -> None:
    config = {"type": "numeric_bounds", "min": 0, "max": 1, "field": "scores.0"}
    assert measure(config, {"scores": [0.3]}) == 1.0
    assert_worst(measure(config, {"scores": []}), 0.0, "output_field_missing")
    excluded = {**config, "on_invalid_output": "exclude"}
    assert_unmeasured(measure(excluded, {"scores": []}), Status.NON_EVALUABLE, "field_missing")


@pytest.mark.parametrize(
    "bounds",
    [
        {},
        {"min": 2, "max": 1},
        {"min": 1, "max": 1, "inclusive": False},
        {"min": True},
        {"max": "5"},
        {"max": float("nan")},
        {"min": float("inf")},
    ],
)
def test_numeric_bounds_refuses_bad_config(bounds: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "numeric_bounds", **bounds})


def test_numeric_bounds_single_point_range_is_allowed_when_inclusive() -> None:
    assert measure({"type": "numeric_bounds", "min": 1, "max": 1}, 1) == 1.0


@pytest.mark.parametrize(
    ("measure_name", "output", "gold", "result"),
    [
        ("f1", ["a", "b"], ["a", "b"], 1.0),
        ("f1", ["a", "b"], ["b", "c"], 0.5),
        ("precision", ["a", "b", "c", "d"], ["a"], 0.25),
        ("recall", ["a", "b", "c", "d"], ["a", "z"], 0.5),
        ("f1", ["a", "a", "b"], ["b", "a"], 1.0),
        ("f1", [1, 2], [1.0, 2.0], 1.0),
        ("f1", [True], [1], 0.0),
        ("f1", [{"k": 1}], [{"k": 1}], 1.0),
        ("f1", ["A"], ["a"], 0.0),
        # Empty-set rules: both empty agree; one empty gives 0.0 wherever the measure is defined.
        ("f1", [], [], 1.0),
        ("precision", [], [], 1.0),
        ("recall", [], [], 1.0),
        ("f1", [], ["a"], 0.0),
        ("recall", [], ["a"], 0.0),
        ("f1", ["a"], [], 0.0),
        ("precision", ["a"], [], 0.0),
    ],
)
def test_set_overlap(measure_name: str, output: list[Any], gold: list[Any], result: float) -> None:
    config = {"type": "set_overlap", "reference": "gold", "measure": measure_name}
    assert measure(config, output, gold=gold) == pytest.approx(result)


@pytest.mark.parametrize(("measure_name", "output", "gold"), [("precision", [], ["a"]), ("recall", ["a"], [])])
def test_set_overlap_undefined_measures_are_non_evaluable(
    measure_name: str, output: list[str], gold: list[str]
) -> None:
    config = {"type": "set_overlap", "reference": "gold", "measure": measure_name}
    score = assert_unmeasured(measure(config, output, gold=gold), Status.NON_EVALUABLE, "measure_undefined")
    assert measure_name in score.diagnostics[0].message


def test_set_overlap_case_insensitive() -> None:
    config = {"type": "set_overlap", "reference": "gold", "case_sensitive": False}
    assert measure(config, ["Paris", "LYON"], gold=["paris", "lyon"]) == 1.0


def test_set_overlap_problems() -> None:
    config = {"type": "set_overlap", "reference": "gold"}
    assert_unmeasured(measure(config, ["a"]), Status.NON_EVALUABLE, "reference_missing")
    assert_worst(measure(config, "a", gold=["a"]), 0.0, "wrong_type")  # the system's answer: measured
    assert_worst(measure(config, None, gold=["a"]), 0.0, "wrong_type")
    assert_unmeasured(measure(config, ["a"], gold="a"), Status.NON_EVALUABLE, "reference_wrong_type")  # the gold's
    assert_worst(measure(config, [{1, 2}], gold=["a"]), 0.0, "wrong_type")
    excluded = {**config, "on_invalid_output": "exclude"}
    assert_unmeasured(measure(excluded, "a", gold=["a"]), Status.ERROR, "wrong_type")
    nested = {**config, "field": "entities"}
    assert_worst(measure(nested, {"other": []}, gold=["a"]), 0.0, "output_field_missing")
    # What the evaluator lacks comes first: a malformed reference is not measured, whatever the answer.
    assert_unmeasured(measure(nested, {"other": []}, gold="a"), Status.NON_EVALUABLE, "reference_wrong_type")
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "set_overlap"})
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "set_overlap", "reference": "gold", "measure": "jaccard"})
