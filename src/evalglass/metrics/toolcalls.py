"""``tool_calls``: the tool calls an agent made against the calls the gold expects, by a declared rule.

The calls made are read from the output (or ``field``) in any shape :mod:`evalglass.core.trajectory` reads: an
agent lane's trajectory, a trace record's output, OpenAI or Anthropic messages, a list of calls. The calls expected
are read from ``reference`` the same way (usually a list of ``{name, arguments}``). When one call matches one
expected call is :mod:`evalglass.metrics.callmatch`'s rule.

``measure: pass`` (the default) scores 1.0 when the declared ``mode`` holds, else 0.0:

* ``exact``: the same calls in the same order, as many;
* ``in_order``: the expected calls appear in order among the calls made; other calls may come between them
  (``extra_calls: allow``, the default) or not (``forbid``: every call made matches some expected call);
* ``any_order``: the same calls as a multiset (duplicates count, order does not);
* ``subset``: every call made is one of the expected calls (each expected call used once): none outside them;
* ``superset``: every expected call was made (each call made used once); others may be made too.

``measure: precision | recall | f1`` scores the per-call counts instead (order never enters them): with ``m`` calls
matched in the largest pairing, precision ``m / made``, recall ``m / expected``, F1 ``2m / (made + expected)``.
Whatever the measure, a result short of perfect carries them in its note: the evidence of what was counted.

**Vacuous results are declared.** When no call is expected and the mode holds (nothing was made, or the mode allows
calls beyond the expected ones), nothing was compared: ``vacuous: exclude`` (the default) leaves the example out
(``non_evaluable`` ``no_calls_expected``), ``vacuous: pass`` scores it 1.0 with that note. A ratio with a zero
denominator (precision of no calls made, recall against no expected call) is ``non_evaluable``
``measure_undefined``, never a number.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Callable
from enum import StrEnum
from functools import lru_cache
from itertools import compress, count, filterfalse, islice
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field, model_validator

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.jsonvalue import NotJsonError, is_json_value
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.trajectory import Call, Inconsistent, Unreadable
from evalglass.metrics.base import (
    ABSENT,
    BatchMetricFn,
    BuildContext,
    MetricFn,
    MetricResult,
    MetricSpec,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.callmatch import (
    CallArguments,
    CallMatcher,
    ReadCalls,
    ToolRule,
)
from evalglass.metrics.invalid import invalid_answer, unreadable_answer
from evalglass.metrics.support import clip, one_line, preview, scored_with_note, wrong_reference

Measure = Literal["pass", "precision", "recall", "f1"]


class CallsMode(StrEnum):
    EXACT = "exact"
    IN_ORDER = "in_order"
    ANY_ORDER = "any_order"
    SUBSET = "subset"
    SUPERSET = "superset"


#: The modes _by_mode tells apart, read once (a member read from its enum class is a Python-level lookup, per row).
_EXACT, _IN_ORDER, _ANY_ORDER, _SUBSET = CallsMode.EXACT, CallsMode.IN_ORDER, CallsMode.ANY_ORDER, CallsMode.SUBSET


class ExtraCalls(StrEnum):
    ALLOW = "allow"
    FORBID = "forbid"


class Vacuous(StrEnum):
    """What a result with nothing compared scores: left out (``exclude``), or 1.0 (``pass``)."""

    PASS = "pass"
    EXCLUDE = "exclude"


class ToolCallsSpec(MetricSpec):
    """The calls made against the calls at ``reference``, by ``mode`` (``measure: pass``) or per call."""

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.TRAJECTORY

    summary: ClassVar[str] = (
        "1.0 when the tool calls made meet the declared mode against the expected calls (or their per-call "
        "precision, recall or F1)."
    )

    type: Literal["tool_calls"] = "tool_calls"
    reference: str = Field(description="Dotted path in the record holding the expected calls.")
    measure: Measure = Field(default="pass", description="pass (the mode holds), precision, recall or f1.")
    mode: CallsMode | None = Field(
        default=None, description="exact, in_order, any_order, subset or superset: required with measure: pass."
    )
    extra_calls: ExtraCalls | None = Field(
        default=None, description="in_order only: may calls other than the expected ones be made (default allow)."
    )
    arguments: CallArguments = Field(
        default=CallArguments.EXACT, description="How arguments compare: exact (JSON equality) or json_subset."
    )
    tools: dict[str, ToolRule] = Field(
        default_factory=dict, description="Per tool: a JSON Schema for its arguments, rules per argument."
    )
    vacuous: Vacuous = Field(
        default=Vacuous.EXCLUDE,
        description="No call expected and the mode holds: exclude the example (default), or score it 1.0.",
    )

    @model_validator(mode="after")
    def _declared_rules(self) -> "ToolCallsSpec":
        if self.measure == "pass" and self.mode is None:
            raise ValueError(
                "tool_calls with measure: pass needs a 'mode': exact, in_order, any_order, subset, superset"
            )
        if self.measure != "pass" and self.mode is not None:
            raise ValueError(
                f"measure {self.measure} counts matched calls as a multiset, whatever their order: remove 'mode'"
            )
        if self.extra_calls is not None and self.mode is not CallsMode.IN_ORDER:
            raise ValueError("'extra_calls' applies to mode: in_order only")
        return self

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        unreadable = unreadable_answer(self, context)
        gold = reference_getter(self)
        compare = self._comparer()

        def tool_calls(example: Example) -> MetricResult:
            reference = gold(example)
            if reference is ABSENT:
                return missing_reference(self, example)
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            result = compare(value, reference)
            if isinstance(result, UnreadableReference):
                return wrong_reference("tool_calls", "a list of calls", reference, hint=result)
            if isinstance(result, Inconsistent):
                return result.score(example)
            if isinstance(result, Unreadable):
                return unreadable("trajectory_unreadable", f"the output is not a trajectory: {result}")
            if isinstance(result, NotJsonArguments):
                if not is_json_value(reference):  # the gold's problem, not the system's (the reference comes first)
                    return wrong_reference("tool_calls", "a list of calls with JSON arguments", reference, hint=result)
                return unreadable("wrong_type", f"tool_calls compares JSON arguments: {result}", preview(value))
            return result

        return tool_calls

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """The outputs and references of the batch read at once, and read once for every ``tool_calls`` metric of
        the run that reads the same columns; an absent one is ``one``'s."""
        judge = self._judge()
        field, reference = self.field, self.reference

        def tool_calls_batch(batch: ExampleBatch) -> list[MetricResult]:
            values = batch.output_values(field)
            references = batch.record_values(reference)
            made = batch.derived(("tool_calls", True, field), lambda: list(map(_read, values)))
            expected = batch.derived(("tool_calls", False, reference), lambda: list(map(_read, references)))
            results: list[MetricResult] = []
            for index, (calls, gold) in enumerate(zip(made, expected, strict=True)):
                result = Unreadable() if calls is ABSENT or gold is ABSENT else judge(calls, gold)
                if isinstance(result, _FOR_ONE):
                    result = one(batch.example(index))
                results.append(result)
            return results

        return tool_calls_batch

    def _comparer(self) -> "Callable[[Any, Any], Judged]":
        """``compare(value, reference)``: the result for a present output and reference, or why the output is not a
        trajectory (which the per-example function scores as a wrong answer)."""
        judge = self._judge()
        return lambda value, reference: judge(_read(value), _read(reference))

    def _judge(
        self,
    ) -> "Callable[[ReadCalls | Unreadable, ReadCalls | Unreadable], Judged]":
        """``judge(made, expected)``: the result for the calls read from a present output and reference, or why the
        output is not a trajectory."""
        matcher = CallMatcher(self.arguments, self.tools)
        measure, mode, vacuous = self.measure, self.mode, self.vacuous
        named = "" if mode is None else mode.value  # read once: an enum's value is a Python property
        forbid = self.extra_calls is ExtraCalls.FORBID

        def judge(made: ReadCalls | Unreadable, expected: ReadCalls | Unreadable) -> Judged:
            if isinstance(expected, Unreadable):  # the per-example function names the reference's problem
                return UnreadableReference(one_line(str(expected)))
            if isinstance(made, Unreadable):
                return made
            try:
                if measure == "pass":
                    assert mode is not None
                    return _by_mode(matcher, mode, named, forbid, vacuous, made, expected)
                return _per_call(matcher, measure, vacuous, made, expected)
            except NotJsonError as exc:  # whose arguments they are, the per-example function tells
                return NotJsonArguments(one_line(str(exc)))

        return judge


class UnreadableReference(str):
    """Why the reference holds no calls (or holds calls that do not add up): the gold's problem, which the
    per-example function scores (``metrics.support.wrong_reference``)."""

    __slots__ = ()


class NotJsonArguments(str):
    """Why a call's arguments (the output's or the reference's) are not JSON: the per-example function scores it,
    as the reference's problem or as the system's wrong answer."""

    __slots__ = ()


#: What comparing one output with one reference gives: a result, or why there is none yet (the per-example function
#: scores the three reasons).
Judged = MetricResult | Unreadable | NotJsonArguments | UnreadableReference

#: ``scored_with_note`` without its wrapper's call: the two notes a replay's trajectory short of perfect gets.
_noted = Score.noted

#: What the batch path leaves to the per-example function (a tuple: ``A | B`` would build a union every row). ``str``
#: stands for :class:`NotJsonArguments` and :class:`UnreadableReference`, the reasons given as text (a result is never
#: text), so a row costs two checks however many such reasons there are.
_FOR_ONE = (Unreadable, str)


def _read(value: Any) -> ReadCalls | Unreadable | Any:
    """The calls a value holds, why it holds none (:class:`Unreadable`), or ABSENT as it came."""
    if value is ABSENT:
        return ABSENT
    try:
        return ReadCalls.of(value)
    except Unreadable as exc:
        return exc


def _by_mode(
    matcher: CallMatcher,
    mode: CallsMode,
    named: str,
    forbid: bool,
    vacuous: Vacuous,
    read: ReadCalls,
    wanted: ReadCalls,
) -> MetricResult:
    """The result of ``mode`` (whose value is ``named``) for the calls ``read`` against those ``wanted``."""
    made, expected = read.size, wanted.size
    why = ""
    pairing: list[int] | None = None
    if mode is _EXACT:
        difference = matcher.first_difference(read.calls, wanted.calls)
        holds = difference is None
        if difference is not None:
            why = f"first difference at call {difference + 1}: made {_at(read, difference)}, expected " + _at(
                wanted, difference
            )
    elif mode is _IN_ORDER:
        found = matcher.in_order(read.calls, wanted.calls)
        holds = found == expected
        if not holds:
            missing = _show(wanted.call(found))
            why = f"expected call {found + 1} ({missing}) is not made in order after the ones before it"
        elif forbid:
            stray = next(
                (call for call in read.calls if not any(matcher.matches(call, want) for want in wanted.calls)), None
            )
            holds = stray is None
            if stray is not None:
                why = f"{_show(stray)} matches no expected call (extra_calls: forbid)"
    else:
        pairing, matched = matcher.counted(read, wanted)
        if mode is _ANY_ORDER:
            holds = matched == made == expected
        elif mode is _SUBSET:
            holds = matched == made
        else:
            holds = matched == expected
    if holds and not expected:
        return _vacuous(vacuous, named, made)
    if holds and made == expected:
        return 1.0  # every call made is paired with an expected one: nothing to report
    if pairing is None:
        pairing, matched = matcher.counted(read, wanted)
    if holds and matched == made == expected:
        return 1.0
    if not why:
        why = read.described(wanted, pairing, _unmatched)
    verdict = "holds" if holds else "does not hold"
    return _noted(
        1.0 if holds else 0.0,
        "tool_calls_counted" if holds else "tool_calls_mismatch",
        f"{named} {verdict}: {_counts(matched, made, expected)}; {why}",
    )


def _per_call(
    matcher: CallMatcher, measure: Measure, vacuous: Vacuous, read: ReadCalls, wanted: ReadCalls
) -> MetricResult:
    made, expected = read.size, wanted.size
    if not made and not expected:
        return _vacuous(vacuous, measure, 0)
    if measure == "precision" and not made:
        return Score.non_evaluable("measure_undefined", "precision is undefined (0/0): no call was made")
    if measure == "recall" and not expected:
        return Score.non_evaluable("measure_undefined", "recall is undefined (0/0): no call is expected")
    pairing, matched = matcher.counted(read, wanted)
    if measure == "precision":
        value = matched / made
    elif measure == "recall":
        value = matched / expected
    else:
        value = 2.0 * matched / (made + expected)
    if matched == made == expected:
        return value
    unpaired = read.described(wanted, pairing, _unmatched)
    return _noted(value, "tool_calls_counted", f"{_counts(matched, made, expected)}; {unpaired}")


def _vacuous(vacuous: Vacuous, rule: str, made: int) -> Score:
    what = "no call was expected and none was made" if not made else f"no call was expected ({made} made)"
    if vacuous is Vacuous.PASS:
        return scored_with_note(1.0, "no_calls_expected", f"{rule}: {what}: nothing compared (vacuous: pass)")
    return Score.non_evaluable(
        "no_calls_expected", f"{rule}: {what}: nothing compared (vacuous: exclude; set vacuous: pass to score 1.0)"
    )


@lru_cache(maxsize=256)  # a replay's notes repeat a few counts thousands of times; the text depends on them alone
def _counts(matched: int, made: int, expected: int) -> str:
    precision = f"{matched / made:.3g}" if made else "undefined"
    recall = f"{matched / expected:.3g}" if expected else "undefined"
    f1 = 2.0 * matched / (made + expected)
    return (
        f"{matched} of {expected} expected calls matched by {made} made "
        f"(precision {precision}, recall {recall}, F1 {f1:.3g})"
    )


def _unmatched(made: ReadCalls, expected: ReadCalls, pairing: list[int]) -> str:
    """The first few expected calls left unpaired and calls made left unpaired (only those are read as calls)."""
    missing = list(islice(compress(count(), map(_UNPAIRED.__eq__, pairing)), 3))
    extra = list(islice(filterfalse(set(pairing).__contains__, range(made.size)), 3))
    parts = []
    if missing:
        parts.append("expected but not made: " + ", ".join(_shown(*expected.parts(index)) for index in missing))
    if extra:
        parts.append("made but not expected: " + ", ".join(_shown(*made.parts(index)) for index in extra))
    return "; ".join(parts) or "every call matched"


#: An expected call's place in a pairing when no call made is paired with it.
_UNPAIRED = -1


def _at(calls: ReadCalls, index: int) -> str:
    return _show(calls.call(index)) if index < len(calls) else "nothing"


def _show(call: Call) -> str:
    return _shown(call.name, call.arguments, call.invalid)


def _shown(name: str, arguments: Any, invalid: str | None) -> str:
    """A call as a note shows it: ``name(arguments)``, cut to 120 characters."""
    if invalid is not None:
        return clip(f"{name}(<not JSON: {invalid}>)", 120)
    if arguments is ABSENT:
        return f"{name}(...)"
    try:
        shown = orjson.dumps(arguments).decode()
    except TypeError:
        shown = "<not JSON>"
    return clip(f"{name}({shown})", 120)


__all__ = ["CallsMode", "ExtraCalls", "ToolCallsSpec", "Vacuous"]
