"""contains, regex and word_count: pass/fail tables, options, missing targets and wrong input types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Status, Validity
from evalglass.core.stats import Direction
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext
from tests.metrics.helpers import assert_unmeasured, assert_worst, measure


@pytest.mark.parametrize(
    ("config", "output", "expected"),
    [
        ({"value": "Paris"}, "The capital is Paris.", 1.0),
        ({"value": "Paris"}, "The capital is paris.", 0.0),
        ({"value": "Paris", "case_sensitive": False}, "THE CAPITAL IS PARIS", 1.0),
        ({"value": ["Lyon", "Paris"]}, "Paris", 1.0),
        ({"value": ["Lyon", "Paris"], "mode": "all"}, "Paris", 0.0),
        ({"value": ["Lyon", "Paris"], "mode": "all"}, "Paris and Lyon", 1.0),
        ({"value": "straße", "case_sensitive": False}, "STRASSE", 1.0),
    ],
)
def test_contains_literal(config: dict[str, Any], output: str, expected: float) -> None:
    assert measure({"type": "contains", **config}, output) == expected


def test_contains_reference_string_and_list() -> None:
    config = {"type": "contains", "reference": "gold"}
    assert measure(config, "answer: 42", gold="42") == 1.0
    assert measure(config, "answer: 41", gold="42") == 0.0
    assert measure({**config, "mode": "all"}, "a b", gold=["a", "c"]) == 0.0
    assert measure({**config, "mode": "any"}, "a b", gold=["a", "c"]) == 1.0


def test_contains_reference_problems() -> None:
    config = {"type": "contains", "reference": "gold"}
    assert_unmeasured(measure(config, "text"), Status.NON_EVALUABLE, "reference_missing")
    assert_unmeasured(measure(config, "text", gold=""), Status.NON_EVALUABLE, "reference_empty")
    assert_unmeasured(measure(config, "text", gold=[]), Status.NON_EVALUABLE, "reference_empty")
    assert_unmeasured(measure(config, "text", gold=7), Status.NON_EVALUABLE, "reference_wrong_type")


@pytest.mark.parametrize(
    "config",
    [
        {"type": "contains"},
        {"type": "contains", "value": "x", "reference": "gold"},
        {"type": "contains", "value": ""},
        {"type": "contains", "value": []},
        {"type": "contains", "value": ["a", ""]},
    ],
)
def test_contains_refuses_bad_config(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec(config)


@pytest.mark.parametrize("metric", ["contains", "regex", "word_count"])
@pytest.mark.parametrize("output", [42, None, ["a"], {"a": "b"}, True])
def test_text_metrics_score_non_strings_as_wrong_answers(metric: str, output: Any) -> None:
    config = {
        "contains": {"type": "contains", "value": "a"},
        "regex": {"type": "regex", "pattern": "a"},
        "word_count": {"type": "word_count", "max": 5},
    }[metric]
    score = assert_worst(measure(config, output), 0.0, "wrong_type")
    assert metric in score.diagnostics[0].message
    excluded = assert_unmeasured(
        measure({**config, "on_invalid_output": "exclude"}, output), Status.ERROR, "wrong_type"
    )
    assert excluded.validity is Validity.NOT_MEASURED


def test_contains_with_a_reference_scores_a_non_string_answer_as_wrong() -> None:
    config = {"type": "contains", "reference": "gold"}
    assert_worst(measure(config, 7, gold="7"), 0.0, "wrong_type")


@pytest.mark.parametrize("metric", ["contains", "regex", "word_count"])
def test_text_metrics_missing_field_is_a_wrong_answer_and_no_output_is_unmeasured(metric: str) -> None:
    config = {
        "contains": {"type": "contains", "value": "a"},
        "regex": {"type": "regex", "pattern": "a"},
        "word_count": {"type": "word_count", "max": 5},
    }[metric]
    score = assert_worst(measure({**config, "field": "answer.text"}, {"answer": {}}), 0.0, "output_field_missing")
    assert "answer.text" in score.diagnostics[0].message
    excluded = {**config, "field": "answer.text", "on_invalid_output": "exclude"}
    assert_unmeasured(measure(excluded, {"answer": {}}), Status.NON_EVALUABLE, "field_missing")
    assert_unmeasured(measure(config, ABSENT), Status.NON_EVALUABLE, "field_missing")


def test_nested_field_is_measured() -> None:
    output = {"answer": {"items": [{"text": "hello world"}]}}
    assert measure({"type": "contains", "value": "world", "field": "answer.items.0.text"}, output) == 1.0
    assert measure({"type": "word_count", "min": 3, "field": "answer.items.0.text"}, output) == 0.0


@pytest.mark.parametrize(
    ("config", "output", "expected"),
    [
        ({"pattern": r"\d{3}"}, "call 555 now", 1.0),
        ({"pattern": r"\d{3}", "match": "fullmatch"}, "call 555 now", 0.0),
        ({"pattern": r"\d{3}", "match": "fullmatch"}, "555", 1.0),
        ({"pattern": "^yes$"}, "maybe\nyes", 0.0),
        ({"pattern": "^yes$", "flags": ["multiline"]}, "maybe\nyes", 1.0),
        ({"pattern": "YES"}, "yes", 0.0),
        ({"pattern": "YES", "flags": ["ignorecase"]}, "yes", 1.0),
        ({"pattern": "a.b"}, "a\nb", 0.0),
        ({"pattern": "a.b", "flags": ["dotall"]}, "a\nb", 1.0),
    ],
)
def test_regex(config: dict[str, Any], output: str, expected: float) -> None:
    assert measure({"type": "regex", **config}, output) == expected


def test_regex_invalid_pattern_is_refused_at_config_load() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_metric_spec({"type": "regex", "pattern": "(unclosed"})
    assert "invalid regular expression '(unclosed'" in str(caught.value)
    assert "position" in str(caught.value)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "regex", "pattern": "a", "flags": ["verbose"]},
        {"type": "regex", "pattern": "a", "match": "prefix"},
        {"type": "regex", "pattern": "a", "reference": "gold"},
    ],
)
def test_regex_refuses_bad_options(config: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec(config)


@pytest.mark.parametrize(
    ("bounds", "output", "expected"),
    [
        ({"min": 2, "max": 3}, "one two", 1.0),
        ({"min": 2, "max": 3}, "  one\n two\tthree  ", 1.0),
        ({"min": 2, "max": 3}, "one two three four", 0.0),
        ({"min": 2}, "one", 0.0),
        ({"max": 0}, "   ", 1.0),
        ({"max": 1}, "", 1.0),
    ],
)
def test_word_count(bounds: dict[str, int], output: str, expected: float) -> None:
    assert measure({"type": "word_count", **bounds}, output) == expected


@pytest.mark.parametrize("bounds", [{}, {"min": 3, "max": 2}, {"min": -1}, {"max": 2.5}, {"min": True}, {"max": "3"}])
def test_word_count_refuses_bad_bounds(bounds: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "word_count", **bounds})


def test_a_wrong_type_scores_the_worst_end_of_a_lower_is_better_metric() -> None:
    """A rate of forbidden text gated lower-is-better: a non-text answer is its worst, 1.0, never a free 0.0."""
    spec = parse_metric_spec({"type": "regex", "pattern": "forbidden"})
    function = spec.build(BuildContext(Path("."), direction=Direction.LOWER_IS_BETTER))
    assert_worst(function(Example(id="ex-1", line=3, fields={}, output=None)), 1.0, "wrong_type")
