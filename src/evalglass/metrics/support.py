"""Shared pieces for builtin metrics: type names for diagnostics and the standard non-measurement scores.

These keep the wording of diagnostics uniform across metrics so reports can group them by code.
"""

from __future__ import annotations

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


def wrong_type(metric: str, needs: str, value: Any, *, code: str = "wrong_type", hint: str = "") -> Score:
    """An ``error`` score for an input the metric cannot measure because of its type."""
    message = f"{metric} needs {needs}, got {json_type_name(value)}"
    if hint:
        message = f"{message}; {hint}"
    return Score.error(code, message, detail=preview(value))


def scored_with_note(value: float, code: str, message: str, detail: str | None = None) -> Score:
    """A valid measurement that also says why it came out as it did (e.g. which schema rule failed)."""
    return Score.noted(value, code, message, detail)


class NoReferenceSpec(MetricSpec):
    """Base for metrics that judge the output on its own: a ``reference`` path would be silently ignored."""

    @model_validator(mode="after")
    def _refuse_reference(self) -> NoReferenceSpec:
        if self.reference is not None:
            raise ValueError(
                f"this metric type does not compare with a reference; remove 'reference: {self.reference}'"
            )
        return self
