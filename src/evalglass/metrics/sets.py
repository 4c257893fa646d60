"""``set_overlap``: agreement between an output list and a gold list, as F1, precision or recall.

Lists are read as sets: duplicates collapse and order is ignored. Items compare with JSON equality (objects by
content, ``true`` distinct from ``1``); with ``case_sensitive: false`` string items are case-folded. An output
that is no list (``null``, a string) is the system's wrong answer: the worst value with the diagnostic
``wrong_type``, as ``on_invalid_output`` says (``metrics.invalid.wrong_answer``); a reference that is no list is
the gold's problem, ``non_evaluable`` ``reference_wrong_type`` (``metrics.support.wrong_reference``).

Empty sets, defined so that nothing unmeasurable becomes a number:

* both empty: 1.0 for every measure (output and gold agree there is nothing);
* output empty, gold not: recall 0.0, F1 0.0, precision undefined (0/0) -> ``non_evaluable``;
* gold empty, output not: precision 0.0, F1 0.0, recall undefined (0/0) -> ``non_evaluable``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar, Literal

from pydantic import Field

from evalglass.core.example import Example
from evalglass.core.jsonvalue import NotJsonError, json_key
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.metrics.base import (
    ABSENT,
    BuildContext,
    MetricFn,
    MetricResult,
    MetricSpec,
    measured_target,
    missing_reference,
    reference_getter,
)
from evalglass.metrics.invalid import invalid_answer, wrong_answer
from evalglass.metrics.support import wrong_reference, wrong_type

Measure = Literal["f1", "precision", "recall"]


class SetOverlapSpec(MetricSpec):
    """Set agreement of the output list with the list at ``reference`` (required)."""

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.ANSWER

    summary: ClassVar[str] = "F1, precision or recall of the output list against the reference list (as sets)."

    type: Literal["set_overlap"] = "set_overlap"
    reference: str = Field(description="Dotted path in the record holding the gold list.")
    measure: Measure = "f1"
    case_sensitive: bool = True

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        gold = reference_getter(self)
        fold = not self.case_sensitive
        measure = self.measure

        def set_overlap(example: Example) -> MetricResult:
            reference = gold(example)
            if reference is ABSENT:
                return missing_reference(self, example)
            expected = _as_set(reference, fold)
            if isinstance(expected, str):
                return wrong_reference("set_overlap", f"a list{expected}", reference)
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            produced = _as_set(value, fold)
            if isinstance(produced, str):  # the system's answer is no list (or holds no JSON): a wrong answer
                return wrong(wrong_type("set_overlap", f"an output that is a list{produced}", value))
            return overlap(produced, expected, measure)

        return set_overlap


def _as_set(items: Any, fold: bool) -> frozenset[Hashable] | str:
    """The items as a set of JSON keys, or what the list lacks (appended to "a list": ``""`` when it is no list)."""
    if not isinstance(items, list | tuple):
        return ""
    try:
        return frozenset(json_key(item, fold_case=fold) for item in items)
    except NotJsonError as exc:
        return f" of JSON values ({exc})"


def overlap(produced: frozenset[Hashable], expected: frozenset[Hashable], measure: Measure) -> MetricResult:
    """The chosen measure with the empty-set rules in the module docstring."""
    if not produced and not expected:
        return 1.0
    hits = len(produced & expected)
    if measure == "f1":
        return 2.0 * hits / (len(produced) + len(expected))
    if measure == "precision":
        if not produced:
            return _undefined("precision", "the output list is empty")
        return hits / len(produced)
    if not expected:
        return _undefined("recall", "the reference list is empty")
    return hits / len(expected)


def _undefined(measure: str, why: str) -> Score:
    return Score.non_evaluable("measure_undefined", f"{measure} is undefined (0/0): {why}")
