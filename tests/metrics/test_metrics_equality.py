"""exact_match and enum: JSON equality, normalisation options, reference handling."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.score import Score, Status, Validity
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.normalize import NormalizeOptions, build_normalizer
from tests.metrics.helpers import assert_unmeasured, assert_worst, measure


@pytest.mark.parametrize(
    ("normalize", "output", "expected", "result"),
    [
        ({}, "Paris", "Paris", 1.0),
        ({}, "paris", "Paris", 0.0),
        ({}, " Paris", "Paris", 0.0),
        ({"case": True}, "PARIS", "paris", 1.0),
        ({"case": True}, "Straße", "STRASSE", 1.0),
        ({"whitespace": True}, "  New \t York\n", "New York", 1.0),
        ({"whitespace": True}, "NewYork", "New York", 0.0),
        ({"punctuation": True}, "Paris!", "Paris", 1.0),
        ({"punctuation": True}, "«Paris»", "Paris", 1.0),
        ({"punctuation": True, "whitespace": True}, "yes , sir", "yes sir", 1.0),
        ({"unicode": True}, "ﬁne", "fine", 1.0),
        ({"unicode": False}, "ﬁne", "fine", 0.0),
        ({"unicode": True}, "Ｐａｒｉｓ", "Paris", 1.0),
        (
            {"case": True, "whitespace": True, "punctuation": True, "unicode": True},
            " ＰＡＲＩＳ!! ",
            "paris",
            1.0,
        ),
    ],
)
def test_exact_match_normalisation(normalize: dict[str, bool], output: str, expected: str, result: float) -> None:
    config = {"type": "exact_match", "expected": expected, "normalize": normalize}
    assert measure(config, output) == result
    with_reference = {"type": "exact_match", "reference": "gold", "normalize": normalize}
    assert measure(with_reference, output, gold=expected) == result


def test_normalizer_order_and_identity() -> None:
    assert build_normalizer(NormalizeOptions())("  A.  ") == "  A.  "
    everything = NormalizeOptions(case=True, whitespace=True, punctuation=True, unicode=True)
    assert build_normalizer(everything)("  Hello ,  WORLD ! ") == "hello world"


@pytest.mark.parametrize(
    ("output", "gold", "result"),
    [
        (42, 42, 1.0),
        (42, 42.0, 1.0),
        (True, 1, 0.0),
        (1, True, 0.0),
        (None, None, 1.0),
        ({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1}, 1.0),
        ({"a": [1, 2]}, {"a": [2, 1]}, 0.0),
        ([{"x": True}], [{"x": 1}], 0.0),
        ({"a": 1}, {"a": 1, "b": None}, 0.0),
    ],
)
def test_exact_match_json_equality(output: Any, gold: Any, result: float) -> None:
    assert measure({"type": "exact_match", "reference": "gold"}, output, gold=gold) == result
    assert measure({"type": "exact_match", "expected": gold}, output) == result


def test_text_against_number_is_the_number_it_spells_else_zero_with_a_note() -> None:
    # exact_match@5: "42" is 42 (before, 0.0 type_mismatch); text that spells no number still differs in type
    assert measure({"type": "exact_match", "reference": "gold"}, "42", gold=42) == 1.0
    assert measure({"type": "exact_match", "reference": "gold"}, "41", gold=42) == 0.0
    score = measure({"type": "exact_match", "reference": "gold"}, "forty-two", gold=42)
    assert isinstance(score, Score)
    assert (score.status, score.validity, score.value) == (Status.SCORED, Validity.VALID, 0.0)
    assert score.diagnostics[0].code == "type_mismatch"
    assert score.diagnostics[0].message.startswith("output type string vs expected type number")


def test_normalisation_never_applies_inside_structures() -> None:
    config = {"type": "exact_match", "expected": ["Paris"], "normalize": {"case": True}}
    assert measure(config, ["paris"]) == 0.0


def test_expected_null_is_an_expectation() -> None:
    assert measure({"type": "exact_match", "expected": None}, None) == 1.0
    score = measure({"type": "exact_match", "expected": None}, "")
    assert isinstance(score, Score) and score.value == 0.0 and score.diagnostics[0].code == "type_mismatch"
    assert measure({"type": "exact_match", "expected": None}, 0) == 0.0


def test_exact_match_missing_reference_and_field() -> None:
    reference = {"type": "exact_match", "reference": "answers.gold"}
    score = assert_unmeasured(measure(reference, "x", answers={}), Status.NON_EVALUABLE, "reference_missing")
    assert score.validity is Validity.NOT_APPLICABLE
    assert "answers.gold" in score.diagnostics[0].message
    nested = {"type": "exact_match", "expected": "x", "field": "a.b"}
    assert_worst(measure(nested, {"a": {"c": "x"}}), 0.0, "output_field_missing")
    excluded = {**nested, "on_invalid_output": "exclude"}
    assert_unmeasured(measure(excluded, {"a": {"c": "x"}}), Status.NON_EVALUABLE, "field_missing")
    assert measure(nested, {"a": {"b": "x"}}) == 1.0
    # The reference is looked at first: without it nothing is measured, however bad the answer.
    missing_both = {"type": "exact_match", "reference": "gold", "field": "intent"}
    assert_unmeasured(measure(missing_both, {}), Status.NON_EVALUABLE, "reference_missing")


def test_exact_match_non_json_output_is_a_wrong_answer() -> None:
    """exact_match@4: a value JSON cannot hold, answered by the system, is its wrong answer (worst, the type named);
    the same value in the reference is the gold's problem (non_evaluable); under exclude the answer is left out."""
    assert (
        "got Python set"
        in assert_worst(measure({"type": "exact_match", "expected": [1]}, {1, 2}), 0.0, "wrong_type")
        .diagnostics[0]
        .message
    )
    assert_worst(measure({"type": "exact_match", "expected": 1.0}, float("nan")), 0.0, "wrong_type")
    assert_worst(measure({"type": "exact_match", "reference": "gold"}, b"x", gold=[1]), 0.0, "wrong_type")
    assert_unmeasured(
        measure({"type": "exact_match", "reference": "gold"}, [1], gold={1}),
        Status.NON_EVALUABLE,
        "reference_wrong_type",
    )
    excluded = {"type": "exact_match", "expected": [1], "on_invalid_output": "exclude"}
    assert_unmeasured(measure(excluded, {1, 2}), Status.ERROR, "wrong_type")


@pytest.mark.parametrize(
    "config",
    [
        {"type": "exact_match"},
        {"type": "exact_match", "expected": "a", "reference": "gold"},
        {"type": "exact_match", "expected": "a", "normalize": {"casing": True}},
        {"type": "exact_match", "reference": "a..b"},
    ],
)
def test_exact_match_refuses_bad_config(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec(config)


@pytest.mark.parametrize(
    ("config", "output", "result"),
    [
        ({"values": ["yes", "no"]}, "yes", 1.0),
        ({"values": ["yes", "no"]}, "Yes", 0.0),
        ({"values": ["yes", "no"], "case_sensitive": False}, "Yes", 1.0),
        ({"values": [1, 2, 3]}, 2.0, 1.0),
        ({"values": [1, 2, 3]}, True, 0.0),
        ({"values": [None, "x"]}, None, 1.0),
        ({"values": [{"k": 1}]}, {"k": 1}, 1.0),
        # enum@5: text read against a number or a boolean as the value it spells, either side (exact_match@5's rule)
        ({"values": [4, 7]}, "4", 1.0),
        ({"values": [4, 7]}, " 7.0\n", 1.0),
        ({"values": [4, 7]}, "5", 0.0),
        ({"values": [4, 7]}, "4 apples", 0.0),
        ({"values": [4, 7]}, "1", 0.0),
        ({"values": ["4", "x"]}, 4, 1.0),
        ({"values": ["4", "x"]}, 4.5, 0.0),
        ({"values": [True]}, "true", 1.0),
        ({"values": [True]}, "True", 0.0),
        ({"values": [True], "case_sensitive": False}, "True", 1.0),
        ({"values": ["false"]}, False, 1.0),
        ({"values": [1]}, "true", 0.0),
    ],
)
def test_enum(config: dict[str, Any], output: Any, result: float) -> None:
    assert measure({"type": "enum", **config}, output) == result


def test_enum_edges() -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "enum", "values": []})
    assert_worst(measure({"type": "enum", "values": ["a"]}, b"a"), 0.0, "wrong_type")  # enum@4: a wrong answer
    assert_worst(measure({"type": "enum", "values": ["a"], "field": "label"}, {}), 0.0, "output_field_missing")
