"""Shared pieces for builtin metrics: type names for diagnostics and the standard non-measurement scores.

These keep the wording of diagnostics uniform across metrics so reports can group them by code.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, model_validator

from evalglass.core.score import Score

# The diagnostic text helpers live with the metric workers, which need them without pydantic; named here for metrics.
from evalglass.lanes.metricworker import clip as clip
from evalglass.lanes.metricworker import one_line as one_line
from evalglass.lanes.metricworker import preview as preview
from evalglass.metrics.base import MetricSpec

#: A numeric bound in a config: a real number, never a bool, a numeric string, NaN or infinity.
Bound = Annotated[float, Field(strict=True, allow_inf_nan=False)]
#: A count bound in a config: a non-negative integer, never a bool or a float.
CountBound = Annotated[int, Field(strict=True, ge=0)]


def json_type_name(value: Any) -> str:
    """The JSON name of a value's type (``string``, ``number``...), or its Python type for non-JSON values."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return f"Python {type(value).__name__}"


def wrong_type(metric: str, needs: str, value: Any, *, hint: str = "") -> Score:
    """An ``error`` score for an answer the metric cannot measure because of its type (callers pass it through
    ``metrics.invalid.wrong_answer``, which scores it as ``on_invalid_output`` says). Never for a reference: that is
    :func:`wrong_reference`."""
    return Score.error("wrong_type", _needs(metric, needs, value, hint), detail=preview(value))


#: The diagnostic code of a reference a metric cannot compare with (:func:`wrong_reference`).
REFERENCE_WRONG_TYPE = "reference_wrong_type"


def wrong_reference(metric: str, needs: str, value: Any, *, hint: str = "") -> Score:
    """The score of a reference (gold) the metric cannot compare with: of a type it cannot use, not JSON, or not
    readable as what it must hold. Every builtin metric decides a reference problem here, and it is always the
    gold's problem: ``non_evaluable`` ``reference_wrong_type`` (which ``tolerate: [non_evaluable]`` can set aside,
    still counted), never an ``error`` (which no gate tolerates) and never a measurement of the system. Its sibling
    for a reference the record lacks is ``metrics.base.missing_reference`` (``reference_missing``)."""
    return Score.non_evaluable(
        REFERENCE_WRONG_TYPE, _needs(metric, f"a reference that is {needs}", value, hint), detail=preview(value)
    )


def _needs(metric: str, needs: str, value: Any, hint: str) -> str:
    message = f"{metric} needs {needs}, got {json_type_name(value)}"
    return f"{message}; {hint}" if hint else message


def scored_with_note(value: float, code: str, message: str, detail: str | None = None) -> Score:
    """A valid measurement that also says why it came out as it did (e.g. which schema rule failed)."""
    return Score.noted(value, code, message, detail)


class NoReferenceSpec(MetricSpec):
    """Base for metrics that judge the output on its own: a ``reference`` path would be silently ignored."""

    @model_validator(mode="after")
    def _refuse_reference(self) -> "NoReferenceSpec":
        refuse_reference(self)
        return self


def refuse_reference(spec: MetricSpec) -> None:
    """Refuse a ``reference`` path on a spec that never reads it (it would be silently ignored, and bind the gate
    to validated gold for nothing)."""
    if spec.reference is not None:
        raise ValueError(f"this metric type does not compare with a reference; remove 'reference: {spec.reference}'")
