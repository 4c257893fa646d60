"""Shared pieces for builtin metrics: type names for diagnostics and the standard non-measurement scores.

These keep the wording of diagnostics uniform across metrics so reports can group them by code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, model_validator

from evalglass import redaction
from evalglass.core.score import Score
from evalglass.metrics.base import MetricSpec

_PREVIEW_CHARS = 160

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


def preview(value: Any) -> str:
    """A bounded repr for diagnostics: outputs can be megabytes long, reports should not be."""
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return clip(text)


def clip(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """``text``, redacted (see ``evalglass.redaction``), then cut to ``limit`` characters with an ellipsis when it
    was longer."""
    return redaction.current().head(text, limit, "...")


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a message (e.g. from a parser) fits the one-line diagnostics and error style."""
    return clip(" ".join(text.split()), limit) or "(no message)"


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
