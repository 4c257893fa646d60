"""Metrics on what an agent did besides which calls it made: how many steps (``steps``), whether it went round in
circles (``loop``), and the state it left behind (``final_state``, through a bound check).

Each reads the trajectory in any shape :mod:`evalglass.core.trajectory` reads; a trajectory that is no conversation
is a wrong answer (``trajectory_unreadable``, scored as ``on_invalid_output`` says).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field

from evalglass.core.example import Example
from evalglass.core.jsonvalue import NotJsonError, json_key
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.stats import UNIT_SCALE, ScaleSpec
from evalglass.core.trajectory import Call, Inconsistent, Unreadable, count_model_turns, read_calls, shown_call
from evalglass.metrics.base import (
    ABSENT,
    BuildContext,
    MetricFn,
    MetricResult,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.check import CheckMetricSpec
from evalglass.metrics.invalid import invalid_answer, unreadable_answer
from evalglass.metrics.support import (
    CountBound,
    NoReferenceSpec,
    clip,
    one_line,
    preview,
    scored_with_note,
    wrong_reference,
)


class StepsSpec(NoReferenceSpec):
    """The number of model turns or of tool calls; with ``max``, whether it stayed within that budget."""

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TRAJECTORY

    summary: ClassVar[str] = (
        "The number of model turns (or tool calls) a trajectory took; with max, 1.0 within that budget, else 0.0."
    )

    type: Literal["steps"] = "steps"
    count: Literal["model_turns", "tool_calls"] = Field(description="What is counted: model_turns or tool_calls.")
    max: CountBound | None = Field(default=None, description="The budget: 1.0 when the count is at most this.")

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        unreadable = unreadable_answer(self, context)
        turns, budget = self.count == "model_turns", self.max
        counted = "model turns" if turns else "tool calls"

        def steps(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            try:
                found = count_model_turns(value) if turns else len(read_calls(value))
            except Inconsistent as exc:
                return exc.score(example)
            except Unreadable as exc:
                return unreadable("trajectory_unreadable", f"the output is not a trajectory: {exc}")
            if found is None:
                return Score.non_evaluable(
                    "model_turns_unknown",
                    f"example {example.id}: the trajectory lists its calls but not the model turns that made them "
                    "(a trace's output holds only the last model call's messages); count tool_calls instead",
                )
            if budget is None:
                return float(found)
            if found <= budget:
                return 1.0
            return scored_with_note(0.0, "over_budget", f"{found} {counted}, over the budget of {budget}")

        return steps

    def value_scale(self) -> ScaleSpec | None:
        """Within the budget or not; a bare count has no upper end (and so no worst value)."""
        return UNIT_SCALE if self.max is not None else None


class LoopSpec(NoReferenceSpec):
    """1.0 when no call (the same tool with the same arguments) is made ``repeats`` times or more, in a row or (with
    ``consecutive: false``) anywhere in the trajectory; else 0.0, naming the call."""

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TRAJECTORY

    summary: ClassVar[str] = "1.0 when no identical tool call is repeated `repeats` times (in a row), else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["loop"] = "loop"
    repeats: int = Field(default=3, ge=2, description="How many identical calls make a loop.")
    consecutive: bool = Field(default=True, description="Count only identical calls in a row.")

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        unreadable = unreadable_answer(self, context)
        repeats, consecutive = self.repeats, self.consecutive

        def loop(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            try:
                calls = read_calls(value)
                found = _repeated(calls, repeats, consecutive)
            except Inconsistent as exc:
                return exc.score(example)
            except Unreadable as exc:
                return unreadable("trajectory_unreadable", f"the output is not a trajectory: {exc}")
            except NotJsonError as exc:  # the system's calls: a wrong answer
                return unreadable("wrong_type", f"loop compares JSON arguments: {one_line(str(exc))}", preview(value))
            if found is None:
                return 1.0
            call, times = found
            where = "in a row" if consecutive else "in the trajectory"
            return scored_with_note(0.0, "loop_found", f"{_shown(call)} made {times} times {where}")

        return loop


def _repeated(calls: list[Call], repeats: int, consecutive: bool) -> tuple[Call, int] | None:
    """The first call made ``repeats`` times (in a row), with how many times it was made (its whole run, or all)."""
    keys = [_identity(call) for call in calls]
    if consecutive:
        run = 1
        for index in range(1, len(keys) + 1):
            if index < len(keys) and keys[index] == keys[index - 1]:
                run += 1
                continue
            if run >= repeats:
                return calls[index - 1], run
            run = 1
        return None
    counts: dict[Hashable, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    for call, key in zip(calls, keys, strict=True):
        if counts[key] >= repeats:
            return call, counts[key]
    return None


def _identity(call: Call) -> Hashable:
    if call.invalid is not None:
        return (call.name, "invalid", call.invalid)
    return (call.name, None if call.arguments is ABSENT else json_key(call.arguments))


def _shown(call: Call) -> str:
    return clip(shown_call(call), 120)


#: The files the state (and the expected state) become in the check's target folder.
STATE_FILE = "state.json"
EXPECTED_FILE = "expected.json"


class FinalStateSpec(CheckMetricSpec):
    """A declared check run against the state the agent left behind: the trajectory's ``final_state`` (or
    ``field``) written as ``state.json`` in the check's private target folder, with the gold's expected state (at
    ``reference``, when given) beside it as ``expected.json``. PASS → 1.0, FAIL → 0.0, as for ``check``."""

    summary: ClassVar[str] = (
        "Runs a declared check against the state the trajectory left (state.json, and expected.json from the "
        "reference): 1.0 on PASS, 0.0 on FAIL."
    )

    given_reference: ClassVar[bool] = True

    type: Literal["final_state"] = "final_state"  # type: ignore[assignment]
    field: str | None = Field(
        default="final_state", description="Where the state is in the output (default: the trajectory's final_state)."
    )

    def check_input(self, context: BuildContext) -> Callable[[Example], Any]:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        unreadable = unreadable_answer(self, context)
        gold = reference_getter(self) if self.reference is not None else None

        def given(example: Example) -> Any:
            files: dict[str, str] = {}
            if gold is not None:
                expected = gold(example)
                if expected is ABSENT:
                    return missing_reference(self, example)
                try:
                    files[EXPECTED_FILE] = _json_file(expected)
                except TypeError as exc:  # the gold's problem, not the system's
                    return wrong_reference("final_state", "a JSON value", expected, hint=str(exc))
            state = target(example)
            if state is ABSENT:
                return invalid(example)
            try:
                files[STATE_FILE] = _json_file(state)
            except TypeError as exc:  # the state the system left: a wrong answer
                return unreadable("wrong_type", f"the final state is not JSON: {exc}", preview(state))
            return files

        return given


def _json_file(value: Any) -> str:
    """``value`` as the JSON file a check reads; TypeError when it is not JSON (orjson alone writes a NaN or an
    infinity as ``null``, which would show the check another state than the one measured)."""
    try:
        json_key(value)
    except NotJsonError as exc:
        raise TypeError(str(exc)) from None
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE).decode()


__all__ = ["EXPECTED_FILE", "STATE_FILE", "FinalStateSpec", "LoopSpec", "StepsSpec"]
