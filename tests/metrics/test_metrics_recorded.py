"""``recorded_score``: another tool's per-sample score, mapped by the rules every metric follows."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.core.score import Score, Status, Validity, score_violation
from evalglass.metrics.base import BuildContext
from evalglass.metrics.recorded import format_labels
from evalglass.metrics.registry import parse_metric_spec


def scored(spec: dict[str, Any], output: Any) -> float | Score:
    function = parse_metric_spec({"type": "recorded_score", **spec}).build(BuildContext(Path(".")))
    return function(Example(id="s1", line=1, fields={}, output=output, sample=2))


def entry(**fields: Any) -> dict[str, Any]:
    return {"text": "answer", "scores": {"match": fields}}


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        ({"value": 1}, 1.0),
        ({"value": 0.25}, 0.25),
        ({"value": 0}, 0.0),
        ({"value": True}, 1.0),
        ({"value": False}, 0.0),
        ({"value": "C"}, 1.0),
        ({"value": "I"}, 0.0),
        ({"value": "P"}, 0.5),
        ({"value": None, "passed": True}, 1.0),
        ({"value": None, "passed": False}, 0.0),
    ],
)
def test_a_measured_score_is_its_value(recorded: dict[str, Any], expected: float) -> None:
    # inspect's labels, as a config over an inspect log fills them in (tests/tools/test_tool_labels.py).
    assert scored({"scorer": "match", "values": format_labels("inspect")}, entry(**recorded)) == expected


@pytest.mark.parametrize(
    ("output", "code"),
    [
        (entry(value=None, error="grader timed out"), "recorded_score_error"),
        (entry(value=None), "recorded_score_missing"),
        ({"text": "a", "scores": {}}, "recorded_score_missing"),
        ({"scores": {}, "error": "model refused: rate limited"}, "recorded_score_error"),
        ({"text": "a"}, "recorded_score_missing"),
        (entry(value="Z"), "recorded_score_unmapped"),
        (entry(value=[1, 2]), "recorded_score_malformed"),
        (entry(value=float("nan")), "recorded_score_malformed"),
        ({"scores": {"match": 3}}, "recorded_score_malformed"),
    ],
)
def test_a_score_the_tool_did_not_make_is_an_error_never_zero(output: Any, code: str) -> None:
    result = scored({"scorer": "match"}, output)
    assert isinstance(result, Score)
    assert result.status is Status.ERROR and result.value is None
    assert result.diagnostics[0].code == code
    assert "example s1 (sample 2)" in result.diagnostics[0].message


def test_the_tools_error_message_is_kept() -> None:
    result = scored({"scorer": "match"}, entry(value=None, error="grader timed out"))
    assert isinstance(result, Score) and "grader timed out" in result.diagnostics[0].message


def test_a_value_outside_the_declared_scale_is_untrusted() -> None:
    result = scored({"scorer": "match", "scale": {"min": 0, "max": 100}}, entry(value=140))
    assert isinstance(result, Score) and result.validity is Validity.INVALID and result.value == 140.0
    assert scored({"scorer": "match", "scale": {"min": 0, "max": 100}}, entry(value=37.5)) == 37.5


def test_labels_and_keys_are_declared() -> None:
    spec = {"scorer": "match", "values": {"good": 1, "meh": 0.4}, "key": "verdict"}
    assert scored(spec, entry(value={"verdict": "meh"})) == 0.4
    missing = scored(spec, entry(value={"other": "good"}))
    assert isinstance(missing, Score) and missing.diagnostics[0].code == "recorded_score_missing"


VALUES = st.none() | st.booleans() | st.integers(-5, 5) | st.floats() | st.sampled_from(["C", "I", "P", "N", "x"])


@given(
    value=VALUES,
    passed=st.none() | st.booleans(),
    error=st.none() | st.sampled_from(["", "boom"]),
    sample_error=st.none() | st.just("sample failed"),
)
def test_every_recorded_entry_gives_a_legal_score_and_a_failure_is_never_a_number(
    value: Any, passed: bool | None, error: str | None, sample_error: str | None
) -> None:
    recorded: dict[str, Any] = {"value": value}
    if passed is not None:
        recorded["passed"] = passed
    if error is not None:
        recorded["error"] = error
    output: dict[str, Any] = {"scores": {"match": recorded}}
    if sample_error:
        output = {"scores": {}, "error": sample_error}
    result = scored({"scorer": "match"}, output)
    if isinstance(result, Score):
        assert score_violation(result.status, result.validity, result.value, bool(result.diagnostics)) is None
    else:
        assert type(result) is float and math.isfinite(result)
    tool_failed = bool(error) or bool(sample_error) or (value is None and passed is None)
    if tool_failed:
        assert isinstance(result, Score) and result.status is Status.ERROR and result.value is None
