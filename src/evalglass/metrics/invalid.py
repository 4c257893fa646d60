"""What an answer a metric cannot read scores: a wrong answer is a measurement, a gap in the evaluator is not.

Under ``task.parse: json`` an output that does not parse, and an output without the field a metric reads, are
properties of what the system under test answered. With ``on_invalid_output: worst`` (the default) such an answer
scores the worst value of the metric's scale (its minimum when higher is better, its maximum when lower is better:
the direction of the gates on the metric), ``scored``/``valid``, with the diagnostic ``output_not_json`` or
``output_field_missing`` kept for the population view. So does an answer present but of a type the metric cannot
measure (``wrong_type``: ``null`` or ``"0.9"`` where ``numeric_bounds`` reads a number), :func:`wrong_answer`.
Excluding it instead would drop exactly the answers a format metric exists to catch, and an accuracy gate would
block on the system's own mistakes, a red that no change to the evaluator can mend.

With ``on_invalid_output: exclude`` the answer is left out as before: ``error`` ``output_not_json`` or
``non_evaluable`` ``field_missing``. A metric without a scale (a ``python`` metric that declares none), or whose
gates disagree on which way it improves, has no worst value: its unreadable answers are left out the same way, and
the diagnostic says why and what to change. (A gate then blocks, ``incomplete_measurement``: never a silent pass.)

What the evaluator lacks stays unmeasured whatever the option: no recorded output at all, a missing or malformed
reference (metrics look at the reference before the answer), a judge or metric that failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.score import Score
from evalglass.metrics.base import BuildContext, MetricSpec, OnInvalidOutput
from evalglass.metrics.support import clip, scored_with_note

#: How much of an unparsed output a diagnostic keeps (redacted first).
_TEXT_CHARS = 200

#: The score of an example whose answer the metric cannot read, from the example.
InvalidAnswer = Callable[[Example], Score]


class UnreadableAnswer(Protocol):
    """The score of an answer that is there but not in the form the metric reads (a trajectory that is no
    conversation), from its diagnostic code, what is wrong with it and optionally a preview of it."""

    def __call__(self, code: str, message: str, detail: str | None = None, /) -> Score: ...


#: The score of an answer of the wrong type, from the ``error`` score that says what is wrong with it
#: (``metrics.support.wrong_type``): the same diagnostic, scored as ``on_invalid_output`` says.
WrongAnswer = Callable[[Score], Score]


def invalid_answer(spec: MetricSpec, context: BuildContext) -> InvalidAnswer:
    """The function a metric calls where the part of the output it reads is absent (its target getter returned
    ABSENT): it tells no output at all, text that is not JSON and a missing field apart, and scores each as the
    spec's ``on_invalid_output`` and scale say."""
    name, field = context.name or str(getattr(spec, "type", "metric")), spec.field
    worst, left_out = _worst(spec, context, name)
    scored = f"; scored {worst:g}, the worst value of its scale (on_invalid_output: worst)" if worst is not None else ""

    def score(example: Example) -> Score:
        output = example.output
        if output is ABSENT:
            return Score.non_evaluable("field_missing", f"example {example.id} has no output to measure")
        if type(output) is UnparsedOutput:
            message = (
                f"example {example.id} (line {example.line}): {output.declared}, but the output is not JSON "
                f"({output.message})"
            )
            detail = clip(output.text, _TEXT_CHARS)
            if worst is None:
                needs = f"; metric '{name}' needs the parsed output{left_out}"
                return Score.error("output_not_json", message + needs, detail)
            return scored_with_note(worst, "output_not_json", message + scored, detail)
        message = f"the output of example {example.id} has no field '{field}'"
        if type(output) is str:
            message += " (the output is text: if it holds JSON, set task.parse: json)"
        if worst is None:
            return Score.non_evaluable("field_missing", message + left_out)
        return scored_with_note(worst, "output_field_missing", message + scored)

    return score


def unreadable_answer(spec: MetricSpec, context: BuildContext) -> UnreadableAnswer:
    """The function a metric calls where the answer is present but not in the form it reads (``code``, e.g.
    ``trajectory_unreadable``, and ``message``, what is wrong and where): a wrong answer, scored as the spec's
    ``on_invalid_output`` and scale say, like text that is not JSON."""
    name = context.name or str(getattr(spec, "type", "metric"))
    worst, left_out = _worst(spec, context, name)

    def score(code: str, message: str, detail: str | None = None) -> Score:
        if worst is None:
            return Score.error(code, message + left_out, detail)
        return scored_with_note(
            worst, code, f"{message}; scored {worst:g}, the worst value of its scale (on_invalid_output: worst)", detail
        )

    return score


def wrong_answer(spec: MetricSpec, context: BuildContext) -> WrongAnswer:
    """The function a metric calls on an answer that is present but of a type it cannot measure (a ``null``, a list
    or ``"0.9"`` where ``numeric_bounds`` reads a number; anything but text where ``regex`` reads text), with the
    ``error`` score its type check gave: a wrong answer, which only the system under test can mend, so it is scored
    as ``on_invalid_output`` says (the worst value with the same diagnostic) like text that is not JSON. A ``null``
    is such an answer, not a missing one: the system said nothing where the field asks for a value, as a chat lane
    records a declined answer as an empty text. A field absent from the output stays :func:`invalid_answer`'s
    (``output_field_missing``), and a field no output of the lane can hold is refused with the config
    (``engine.spec.outputfields``)."""
    unreadable = unreadable_answer(spec, context)

    def rescore(error: Score) -> Score:
        diagnostic = error.diagnostics[0]
        return unreadable(diagnostic.code, diagnostic.message, diagnostic.detail)

    return rescore


def _worst(spec: MetricSpec, context: BuildContext, name: str) -> tuple[float | None, str]:
    """The value an unreadable answer scores, or None and (under ``worst``) why there is none, as a message tail."""
    if spec.on_invalid_output is OnInvalidOutput.EXCLUDE:
        return None, ""
    keep = " (or set on_invalid_output: exclude to keep this as it is)"
    if context.direction is None:
        return None, (
            f"; the gates on metric '{name}' disagree on which way it improves, so the answer has no single worst "
            f"value to score: gate it in one direction{keep}"
        )
    worst = spec.worst_value(context.direction)
    if worst is None:
        return None, (
            f"; metric '{name}' declares no scale, so the answer has no worst value to score: declare "
            f"'scale: {{min: ..., max: ...}}' on it{keep}"
        )
    return worst, ""


__all__ = ["InvalidAnswer", "UnreadableAnswer", "WrongAnswer", "invalid_answer", "unreadable_answer", "wrong_answer"]
