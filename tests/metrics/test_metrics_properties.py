"""Property: whatever the output and record hold, every metric returns a finite float or a legal Score.

A metric that raised, or returned a bool, NaN or an int, would either crash a run or slip a non-measurement into
the averages; these tests throw JSON values, non-JSON Python objects, JSON-looking text, text ``task.parse: json``
could not parse and ABSENT at all of them. A wrong answer (unparsed text, a missing field) is measured at the worst
end of the scale for the metric's direction, or left out with ``on_invalid_output: exclude``; never anything else.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import parse_json_output
from evalglass.core.score import Score, Status, Validity, score_violation
from evalglass.core.stats import Direction
from evalglass.metrics import METRIC_TYPES, MetricFn, MetricResult, parse_metric_spec
from evalglass.metrics.base import BuildContext

SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
#: Text ``task.parse: json`` could not parse, as the pipeline hands it to metrics.
UNPARSED = (
    st.text(max_size=12).map(lambda text: parse_json_output("{" + text)).filter(lambda o: not isinstance(o, dict))
)
ODD = st.sampled_from([ABSENT, {1, 2}, b"bytes", object(), (1, "a"), {1: "int key"}, frozenset({"x"})]) | UNPARSED
TEXT_OF_JSON = VALUES.map(lambda value: json.dumps(value))
OUTPUTS = VALUES | ODD | TEXT_OF_JSON
RECORDS = st.dictionaries(st.sampled_from(["gold", "other"]), VALUES | ODD, max_size=2)
JSON_SAFE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=6,
)

CONFIGS: list[dict[str, Any]] = [
    {"type": "exact_match", "expected": "Paris", "normalize": {"case": True, "whitespace": True}},
    {"type": "exact_match", "reference": "gold", "normalize": {"punctuation": True, "unicode": True}},
    {"type": "exact_match", "expected": {"a": [1, 2]}, "field": "answer"},
    {"type": "contains", "value": ["a", "b"], "mode": "all", "case_sensitive": False},
    {"type": "contains", "reference": "gold"},
    {"type": "regex", "pattern": r"^\d+$", "match": "fullmatch", "flags": ["multiline"]},
    {"type": "json_valid"},
    {"type": "json_schema", "schema": {"type": "object", "required": ["a"]}},
    {"type": "json_schema", "schema": {"type": "array", "items": {"type": "integer"}}, "parse_strings": False},
    {"type": "field_present", "fields": ["a", "b.0"], "non_null": True},
    {"type": "numeric_bounds", "min": 0, "max": 1},
    {"type": "numeric_bounds", "min": -5, "inclusive": False, "coerce": True},
    {"type": "word_count", "min": 1, "max": 3},
    {"type": "set_overlap", "reference": "gold"},
    {"type": "set_overlap", "reference": "gold", "measure": "precision", "case_sensitive": False},
    {"type": "set_overlap", "reference": "gold", "measure": "recall", "field": "items"},
    {"type": "enum", "values": ["yes", "no", 1, None], "case_sensitive": False},
    {"type": "recorded_score", "scorer": "match"},
    {
        "type": "recorded_score",
        "scorer": "match",
        "key": "a",
        "values": {"yes": 1, "no": 0},
        "scale": {"min": 0, "max": 5},
    },
    {"type": "tool_calls", "reference": "gold", "mode": "any_order"},
    {"type": "tool_calls", "reference": "gold", "mode": "in_order", "extra_calls": "forbid", "vacuous": "pass"},
    {"type": "tool_calls", "reference": "gold", "measure": "precision", "arguments": "json_subset", "field": "t"},
    {
        "type": "tool_calls",
        "reference": "gold",
        "mode": "superset",
        "tools": {"": {"schema": {"type": "object"}, "arguments": {"": {"tolerance": 1}, "a": {"match": "ignore"}}}},
    },
    {"type": "steps", "count": "model_turns"},
    {"type": "steps", "count": "tool_calls", "max": 2},
    {"type": "loop", "repeats": 2, "consecutive": False},
]
BUILT: list[MetricFn] = [parse_metric_spec(config).build(BuildContext(Path("."))) for config in CONFIGS]


def assert_legal(result: MetricResult) -> None:
    if isinstance(result, Score):
        assert score_violation(result.status, result.validity, result.value, bool(result.diagnostics)) is None
    else:
        assert type(result) is float, f"bare result must be a float, got {type(result).__name__}"
        assert math.isfinite(result)


def test_every_builtin_type_is_exercised() -> None:
    # python is exercised in test_metrics_host.py; check and final_state start processes and are covered by
    # tests/checks, tests/metrics/test_metrics_trajectories.py and e2e; llm_judge and jury call models and are covered by
    # tests/live and tests/live_e2e.
    assert {config["type"] for config in CONFIGS} == set(METRIC_TYPES) - {
        "python",
        "check",
        "llm_judge",
        "jury",
        "final_state",
    }


@settings(max_examples=300, deadline=None)
@given(output=OUTPUTS, record=RECORDS)
def test_builtins_always_return_a_legal_result(output: Any, record: dict[str, Any]) -> None:
    example = Example(id="p", line=1, fields=record, output=output)
    for function in BUILT:
        assert_legal(function(example))


#: A usable reference for the types that read one, so that only the answer is wrong.
USABLE_GOLD = {
    "contains": lambda drawn: "needle",
    "set_overlap": lambda drawn: [drawn],
    "tool_calls": lambda drawn: [{"name": "t"}],
}


#: recorded_score reads another tool's score, not the system's answer: a score the tool did not record is a missing
#: measurement (an error, never the worst value; issue 31), which tests/metrics/test_metrics_recorded.py pins.
#: A bare count (steps without max) has no scale, so no worst value: its wrong answers are left out, which
#: tests/metrics/test_metrics_trajectories.py pins.
MEASURE_ANSWERS = [
    config
    for config in CONFIGS
    if config["type"] != "recorded_score" and parse_metric_spec(config).value_scale() is not None
]


@settings(max_examples=200, deadline=None)
@given(
    config=st.sampled_from(MEASURE_ANSWERS),
    answer=UNPARSED | st.dictionaries(st.sampled_from(["other", "b"]), JSON_SAFE, max_size=2),
    gold=JSON_SAFE,
    direction=st.sampled_from(list(Direction)),
    exclude=st.booleans(),
)
def test_a_wrong_answer_scores_the_worst_value_or_is_left_out(
    config: dict[str, Any], answer: Any, gold: Any, direction: Direction, exclude: bool
) -> None:
    """Text that did not parse, or an output without the field the metric reads (with the reference present):
    every builtin scores the worst end of its scale for its direction (scored, valid, the diagnostic kept), or with
    ``exclude`` leaves it out; never a middle value, never a value under ``exclude``."""
    config = {**config, "field": config.get("field", "answer"), "on_invalid_output": "exclude" if exclude else "worst"}
    function = parse_metric_spec(config).build(BuildContext(Path("."), direction=direction))
    reference = USABLE_GOLD.get(config["type"], lambda drawn: drawn)(gold)
    result = function(Example(id="p", line=1, fields={"gold": reference}, output=answer))
    assert isinstance(result, Score)
    if exclude:
        assert result.value is None and result.status in (Status.ERROR, Status.NON_EVALUABLE)
        assert result.diagnostics[0].code in ("field_missing", "output_not_json")
        return
    worst = 0.0 if direction is Direction.HIGHER_IS_BETTER else 1.0
    assert (result.status, result.validity, result.value) == (Status.SCORED, Validity.VALID, worst), result
    assert result.diagnostics[0].code == ("output_field_missing" if isinstance(answer, dict) else "output_not_json")


@settings(max_examples=150, deadline=None)
@given(expected=JSON_SAFE, allowed=st.lists(JSON_SAFE, min_size=1, max_size=4), output=OUTPUTS)
def test_drawn_literals_always_give_a_legal_result(expected: Any, allowed: list[Any], output: Any) -> None:
    example = Example(id="p", line=1, fields={}, output=output)
    assert_legal(
        parse_metric_spec({"type": "exact_match", "expected": expected}).build(BuildContext(Path(".")))(example)
    )
    assert_legal(parse_metric_spec({"type": "enum", "values": allowed}).build(BuildContext(Path(".")))(example))


@pytest.fixture(scope="module")
def echo_metric(tmp_path_factory: pytest.TempPathFactory) -> MetricFn:
    """One built metric (one worker) for every drawn value: building it per value started a worker each time,
    minutes of the suite for the same property."""
    folder = tmp_path_factory.mktemp("echo")
    (folder / "echo_metric.py").write_text("def echo(record):\n    return record['returned']\n")
    return parse_metric_spec({"type": "python", "function": "echo_metric.py:echo"}).build(BuildContext(folder))


@settings(max_examples=200, deadline=None)
@given(returned=VALUES | ODD | st.tuples(st.none(), SCALARS))
def test_host_metric_always_returns_a_legal_result(echo_metric: MetricFn, returned: Any) -> None:
    result = echo_metric(Example(id="p", line=1, fields={"returned": returned}, output="x"))
    assert_legal(result)
    if isinstance(returned, bool) or (isinstance(returned, float) and not math.isfinite(returned)):
        assert isinstance(result, Score) and result.diagnostics[0].code == "host_bad_return"


@settings(max_examples=200, deadline=None)
@given(output=OUTPUTS, record=RECORDS)
def test_a_metric_that_declares_itself_binary_scores_only_0_or_1(output: Any, record: dict[str, Any]) -> None:
    """``binary`` is what the failing-examples reader trusts to call a value of 0 a fail: a type that declares it
    must never score anything else (and set_overlap, which scores fractions, must not declare it)."""
    example = Example(id="p", line=1, fields=record, output=output)
    for config, function in zip(CONFIGS, BUILT, strict=True):
        result = function(example)
        value = result if type(result) is float else result.value if isinstance(result, Score) else None
        if METRIC_TYPES[config["type"]].binary and value is not None:
            assert value in (0.0, 1.0), (config, value)
    assert not METRIC_TYPES["set_overlap"].binary and not METRIC_TYPES["python"].binary
