"""``numeric_bounds``: is a number inside a range.

Numbers written as text (``"3.5"``) are refused unless the spec sets ``coerce: true``. A model that answers
``"3.5"`` where the contract says ``3.5`` has produced different output, and quietly converting it would hide
that. Such an answer, like any answer that is not a number (``null``, a list, NaN, text that reads as no number
under ``coerce``), is the system's mistake: it scores the worst value with the diagnostic (``wrong_type``,
``not_a_number``) as ``on_invalid_output`` says (``metrics.invalid.wrong_answer``), never an ``error`` that would
block a gate on what only the system under test can mend.
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.core.uniform import all_of_type
from evalglass.metrics.base import ABSENT, BatchMetricFn, BuildContext, MetricFn, MetricResult, measured_target
from evalglass.metrics.invalid import invalid_answer, wrong_answer
from evalglass.metrics.support import Bound, NoReferenceSpec, preview, wrong_type

_DECIMAL = re.compile(r"\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")
_COERCE_HINT = "set 'coerce: true' to accept numbers written as text"


class NumericBoundsSpec(NoReferenceSpec):
    """A number within ``min`` and/or ``max``; bounds are inclusive unless ``inclusive: false``.

    With ``coerce: true`` a string in plain decimal or exponent notation (``" -3.5e2 "``) is read as a number;
    thousands separators, units, ``nan`` and ``inf`` are not numbers and give an ``error`` score.
    """

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.ANSWER

    summary: ClassVar[str] = "1.0 when the output number (or field) lies within [min, max], else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["numeric_bounds"] = "numeric_bounds"
    min: Bound | None = None
    max: Bound | None = None
    inclusive: bool = Field(default=True, description="Whether a value equal to a bound is inside the range.")
    coerce: bool = Field(default=False, description="Read numeric strings such as '3.5' as numbers.")

    @model_validator(mode="after")
    def _bounds(self) -> NumericBoundsSpec:
        if self.min is None and self.max is None:
            raise ValueError("numeric_bounds needs 'min', 'max' or both")
        low, high = self.min, self.max
        if low is not None and high is not None and (low > high or (low == high and not self.inclusive)):
            raise ValueError(f"numeric_bounds range is empty: min {self.min}, max {self.max}")
        return self

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        wrong = wrong_answer(self, context)
        low, high, inclusive, coerce = self.min, self.max, self.inclusive, self.coerce

        def inside(number: float) -> float:
            if inclusive:
                ok = (low is None or number >= low) and (high is None or number <= high)
            else:
                ok = (low is None or number > low) and (high is None or number < high)
            return 1.0 if ok else 0.0

        def numeric_bounds(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            number = _as_number(value, coerce)
            if isinstance(number, Score):
                return wrong(number)
            return inside(number)

        return numeric_bounds

    def build_batch(self, one: MetricFn) -> BatchMetricFn | None:
        """A float that is not NaN, or an int (never a bool), is compared in the loop; the rest is ``one``'s.

        The comparisons are the per-example ones, written out for each shape of range.
        """
        low, high = self.min, self.max
        if not self.inclusive or low is None or high is None:
            return self._one_sided_batch(one)

        def numeric_bounds_batch(batch: ExampleBatch) -> list[MetricResult]:
            numbers = batch.output_values(self.field)
            # Floats with a finite sum hold no NaN, which the loop below hands to ``one``.
            if all_of_type(numbers, float) and math.isfinite(sum(numbers)):
                return [1.0 if low <= number <= high else 0.0 for number in numbers]
            return [
                (1.0 if low <= number <= high else 0.0)
                if ((kind := type(number)) is float and number == number) or kind is int
                else one(batch.example(index))
                for index, number in enumerate(numbers)
            ]

        return numeric_bounds_batch

    def _one_sided_batch(self, one: MetricFn) -> BatchMetricFn:
        low, high, inclusive = self.min, self.max, self.inclusive

        def inside(number: float) -> float:
            if inclusive:
                ok = (low is None or number >= low) and (high is None or number <= high)
            else:
                ok = (low is None or number > low) and (high is None or number < high)
            return 1.0 if ok else 0.0

        def numeric_bounds_batch(batch: ExampleBatch) -> list[MetricResult]:
            numbers = batch.output_values(self.field)
            return [
                inside(number)
                if ((kind := type(number)) is float and number == number) or kind is int
                else one(batch.example(index))
                for index, number in enumerate(numbers)
            ]

        return numeric_bounds_batch


def _as_number(value: Any, coerce: bool) -> float | Score:
    """The value as a comparable number, or the ``error`` score explaining why it is not one (which the metric scores
    as a wrong answer: ``metrics.invalid.wrong_answer``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(value, float) and math.isnan(value):
            return Score.error("not_a_number", "numeric_bounds got NaN, which lies in no range")
        return value
    if isinstance(value, str):
        if not coerce:
            return wrong_type("numeric_bounds", "a number", value, hint=_COERCE_HINT)
        if _DECIMAL.fullmatch(value) is None:
            return Score.error(
                "not_a_number",
                "numeric_bounds could not read the output text as a number",
                detail=preview(value),
            )
        return float(value)
    return wrong_type("numeric_bounds", "a number", value)
