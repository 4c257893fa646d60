"""Property: a reference (gold) a metric cannot compare with is the gold's problem, never an ``error`` (issue #32).

Every builtin metric type either refuses a ``reference`` when its config loads, or decides a reference of the wrong
type, not JSON, or missing as ``non_evaluable`` (``reference_wrong_type``, ``reference_missing``: tolerable, and
counted), through ``metrics.support.wrong_reference`` and ``metrics.base.missing_reference``. An ``error`` blocks
every gate on the metric whatever its tolerance, a false red the system's answers do not show.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score, Status
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext
from evalglass.metrics.registry import spec_class
from evalglass.metrics.support import REFERENCE_WRONG_TYPE, NoReferenceSpec, wrong_reference
from evalglass.metrics.trajectories import FinalStateSpec
from evalglass.metrics.versions import METRIC_VERSIONS

CALLS = [{"name": "search", "arguments": {"q": "paris"}}]

#: Every builtin type that compares with a reference, with an answer it reads (so a non-measurement can only be the
#: reference's doing).
REFERENCED: dict[str, tuple[dict[str, Any], Any]] = {
    "exact_match": ({"type": "exact_match", "reference": "gold"}, "Paris"),
    "contains": ({"type": "contains", "reference": "gold", "case_sensitive": False}, "Paris"),
    "set_overlap": ({"type": "set_overlap", "reference": "gold"}, ["Paris"]),
    "tool_calls": ({"type": "tool_calls", "reference": "gold", "mode": "any_order"}, CALLS),
    "final_state": ({"type": "final_state", "check": "state", "reference": "gold"}, {"final_state": {"a": 1}}),
}
#: Types left out here: a ``python`` metric's host function is handed the reference as it is and decides itself; a
#: judge (``llm_judge``, ``jury``) decides through the same ``wrong_reference`` before it is called, which
#: ``tests/live/test_judge.py`` proves against a real HTTP server.
HANDED_ON = {"python", "llm_judge", "jury"}

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from(["", "Paris", "search"])
)
GOLDS = st.recursive(
    SCALARS | st.sampled_from([{1, 2}, b"bytes", frozenset({"x"}), (1, "a"), {1: "int key"}, math.nan]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["name", "q", "x"]), children),
    max_leaves=6,
) | st.just(ABSENT)


def _score(name: str, gold: Any) -> Any:
    config, output = REFERENCED[name]
    spec = parse_metric_spec(config)
    fields = {} if gold is ABSENT else {"gold": gold}
    example = Example(id="ex-1", line=1, fields=fields, output=output)
    context = BuildContext(Path("."))
    if isinstance(spec, FinalStateSpec):  # what the check is given (a Score when it is not run); no check runs
        return spec.check_input(context)(example)
    return spec.build(context).one(example)


def test_every_builtin_type_is_covered() -> None:
    """A type added later must join the property (or refuse a reference when its config loads)."""
    for name in METRIC_VERSIONS:
        if name in REFERENCED or name in HANDED_ON:
            continue
        with pytest.raises(ValidationError, match="does not compare with a reference"):
            parse_metric_spec({"type": name, "reference": "gold", **_minimal(name)})
    for name in (*REFERENCED, *HANDED_ON):  # each of them reads the reference it is given
        assert not issubclass(spec_class(name), NoReferenceSpec)


def _minimal(name: str) -> dict[str, Any]:
    """The options a type needs to load, so only ``reference`` can be what it refuses."""
    return {
        "regex": {"pattern": "a"},
        "json_schema": {"schema": {"type": "object"}},
        "field_present": {"fields": ["a"]},
        "numeric_bounds": {"min": 0},
        "word_count": {"max": 3},
        "enum": {"values": ["a"]},
        "check": {"check": "c"},
        "recorded_score": {"scorer": "s"},
        "steps": {"count": "tool_calls"},
    }.get(name, {})


@pytest.mark.parametrize("name", sorted(REFERENCED))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gold=GOLDS)
def test_a_reference_problem_is_never_an_error(name: str, gold: Any) -> None:
    result = _score(name, gold)
    if not isinstance(result, Score):
        return  # measured (a number, or the files a check is given)
    assert result.status is not Status.ERROR, (name, gold, result)
    codes = {diagnostic.code for diagnostic in result.diagnostics}
    if any(code.startswith("reference_") for code in codes):
        assert result.status is Status.NON_EVALUABLE and result.value is None, (name, gold, result)
    if gold is ABSENT:
        assert codes == {"reference_missing"}, result


@pytest.mark.parametrize(
    ("name", "gold"),
    [
        ("exact_match", {1, 2}),
        ("exact_match", math.nan),
        ("contains", 7),
        ("contains", ["a", 1]),
        ("set_overlap", "Paris"),
        ("set_overlap", [b"bytes"]),
        ("tool_calls", "search"),
        ("tool_calls", [{"arguments": {}}]),
        ("tool_calls", [{"name": "search", "arguments": {"q": math.nan}}]),
        ("final_state", {"a": math.nan}),
    ],
)
def test_each_metric_names_the_gold_problem(name: str, gold: Any) -> None:
    result = _score(name, gold)
    assert isinstance(result, Score) and result.status is Status.NON_EVALUABLE, result
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == REFERENCE_WRONG_TYPE
    assert diagnostic.message.startswith(f"{name} needs a reference that is "), diagnostic.message


def test_the_one_decision() -> None:
    score = wrong_reference("contains", "a string", 7, hint="write it as text")
    assert (score.status, score.value, score.diagnostics[0].code) == (
        Status.NON_EVALUABLE,
        None,
        "reference_wrong_type",
    )
    assert score.diagnostics[0].message == "contains needs a reference that is a string, got number; write it as text"
    assert score.diagnostics[0].detail == "7"
