"""steps (counts and budgets), loop (the same call again and again) and final_state (a bound check of the state the
agent left behind), on trajectories in each shape they are recorded in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalglass.core.checks import CheckResult
from evalglass.core.example import Example
from evalglass.core.score import Score, Status
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext
from tests.checks.helpers import spec
from tests.metrics.helpers import assert_unmeasured, assert_worst, measure

OPENAI = [
    {"role": "user", "content": "Book me a table"},
    {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q": "table"}'}}]},
    {"role": "tool", "tool_call_id": "1", "content": "none"},
    {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q": "table"}'}}]},
    {"role": "tool", "tool_call_id": "2", "content": "none"},
    {"role": "assistant", "tool_calls": [{"function": {"name": "search", "arguments": '{"q":"table"}'}}]},
    {"role": "tool", "tool_call_id": "3", "content": "none"},
    {"role": "assistant", "content": "Sorry."},
]


@pytest.mark.parametrize(
    ("config", "output", "value"),
    [
        ({"count": "model_turns"}, OPENAI, 4.0),
        ({"count": "tool_calls"}, OPENAI, 3.0),
        ({"count": "tool_calls", "max": 3}, OPENAI, 1.0),
        ({"count": "model_turns", "max": 3}, OPENAI, 0.0),
        ({"count": "model_turns"}, {"tool_calls": [], "steps": 7}, 7.0),
        ({"count": "tool_calls"}, [], 0.0),
    ],
)
def test_steps_counts_what_it_declares(config: dict[str, Any], output: Any, value: float) -> None:
    result = measure({"type": "steps", **config}, output)
    assert (result if type(result) is float else getattr(result, "value", None)) == value
    if value == 0.0 and "max" in config:
        assert isinstance(result, Score) and result.diagnostics[0].message == "4 model turns, over the budget of 3"


def test_model_turns_of_a_trace_output_are_unknown_not_guessed() -> None:
    trace_output = {"tool_calls": [{"name": "lookup"}], "messages": [{"role": "assistant", "parts": []}]}
    assert_unmeasured(
        measure({"type": "steps", "count": "model_turns"}, trace_output), Status.NON_EVALUABLE, "model_turns_unknown"
    )
    assert measure({"type": "steps", "count": "tool_calls"}, trace_output) == 1.0


def test_an_unreadable_trajectory_has_no_worst_count_but_a_worst_budget() -> None:
    assert_unmeasured(measure({"type": "steps", "count": "tool_calls"}, 12), Status.ERROR, "trajectory_unreadable")
    assert_worst(measure({"type": "steps", "count": "tool_calls", "max": 5}, 12), 0.0, "trajectory_unreadable")


def test_loop_finds_the_same_call_in_a_row_as_json_and_names_it() -> None:
    result = measure({"type": "loop", "repeats": 3}, OPENAI)  # '{"q": "table"}' and '{"q":"table"}' are one call
    assert isinstance(result, Score) and result.value == 0.0 and result.diagnostics[0].code == "loop_found"
    assert result.diagnostics[0].message == 'search({"q":"table"}) made 3 times in a row'
    assert measure({"type": "loop", "repeats": 4}, OPENAI) == 1.0


def test_loop_in_a_row_or_anywhere() -> None:
    calls = [{"name": "a", "arguments": {}}, {"name": "b"}, {"name": "a", "arguments": {}}]
    assert measure({"type": "loop", "repeats": 2}, calls) == 1.0  # never twice in a row
    anywhere = measure({"type": "loop", "repeats": 2, "consecutive": False}, calls)
    assert isinstance(anywhere, Score) and anywhere.diagnostics[0].message == "a({}) made 2 times in the trajectory"
    other_arguments = [{"name": "a", "arguments": {"page": page}} for page in range(5)]
    assert measure({"type": "loop", "repeats": 2}, other_arguments) == 1.0  # paging on is not looping


def test_loop_on_an_unreadable_trajectory_is_a_wrong_answer() -> None:
    assert_worst(measure({"type": "loop"}, "I kept searching"), 0.0, "trajectory_unreadable")


COMPARE = """
    import json, os, sys
    folder = os.environ["EVALGLASS_TARGET"]
    state = json.load(open(os.path.join(folder, "state.json")))
    expected = json.load(open(os.path.join(folder, "expected.json")))
    sys.exit(0 if state["cart"] == expected["cart"] else 1)
"""


def _final_state(tmp_path: Path) -> tuple[Any, list[CheckResult]]:
    records: list[CheckResult] = []
    context = BuildContext(tmp_path, name="cart", checks={"compare": spec(COMPARE)}, check_sink=records.append)
    config = {"type": "final_state", "check": "compare", "reference": "expected"}
    return parse_metric_spec(config).build(context), records


def test_final_state_runs_the_bound_check_on_the_state_and_the_gold(tmp_path: Path) -> None:
    function, records = _final_state(tmp_path)
    expected = {"cart": ["soup"]}
    right = Example("a", 1, {"expected": expected}, {"final_state": {"cart": ["soup"], "paid": False}})
    wrong = Example("b", 2, {"expected": expected}, {"final_state": {"cart": []}})
    assert function(right).value == 1.0 and function(wrong).value == 0.0  # type: ignore[union-attr]
    assert [record.binding.value for record in records] == ["bound", "bound"]  # the folder as written was checked


def test_final_state_without_a_state_or_gold_never_runs_the_check(tmp_path: Path) -> None:
    function, records = _final_state(tmp_path)
    no_gold = function(Example("a", 1, {}, {"final_state": {"cart": []}}))
    assert_unmeasured(no_gold, Status.NON_EVALUABLE, "reference_missing")
    no_state = function(Example("b", 2, {"expected": {"cart": []}}, {"messages": []}))
    assert_worst(no_state, 0.0, "output_field_missing")
    assert records == []


def test_final_state_writes_what_the_check_reads(tmp_path: Path) -> None:
    """The state and the expected state as sorted, indented JSON files: what a check compares is exactly the
    recorded value."""
    dump = """
        import os, sys
        folder = os.environ["EVALGLASS_TARGET"]
        print(open(os.path.join(folder, "state.json")).read(), file=sys.stderr)
        sys.exit(1)
    """
    records: list[CheckResult] = []
    context = BuildContext(tmp_path, name="s", checks={"dump": spec(dump)}, check_sink=records.append)
    function = parse_metric_spec({"type": "final_state", "check": "dump"}).build(context)
    function(Example("a", 1, {}, {"final_state": {"b": 1, "a": [1, 2]}}))
    (record,) = records
    assert json.loads(record.stderr_tail) == {"a": [1, 2], "b": 1}


NAN_CALL = [{"name": "a", "arguments": {"x": float("nan")}}]


def test_arguments_json_cannot_hold_are_the_systems_wrong_answer_or_the_references_problem() -> None:
    """tool_calls@4, loop@4: arguments the system made that JSON cannot hold (a NaN, a set) score the worst value
    with wrong_type (an error before, blocking the gate); the same in the reference is non_evaluable."""
    tools = {"type": "tool_calls", "reference": "gold", "mode": "exact"}
    assert_worst(measure(tools, NAN_CALL, gold=[{"name": "a", "arguments": {"x": 1}}]), 0.0, "wrong_type")
    assert_unmeasured(
        measure(tools, [{"name": "a", "arguments": {"x": 1}}], gold=NAN_CALL),
        Status.NON_EVALUABLE,
        "reference_wrong_type",
    )
    per_call = {"type": "tool_calls", "reference": "gold", "measure": "recall"}
    assert_worst(measure(per_call, NAN_CALL, gold=[{"name": "a", "arguments": {"x": 1}}]), 0.0, "wrong_type")
    assert_worst(measure({"type": "loop", "repeats": 2, "consecutive": False}, NAN_CALL * 2), 0.0, "wrong_type")
    assert measure(tools, [{"name": "a", "arguments": {"x": 1}}], gold=[{"name": "a", "arguments": {"x": 1}}]) == 1.0
