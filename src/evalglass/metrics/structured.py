"""Metrics over JSON output: is it JSON at all (``json_valid``), and does it carry the expected fields
(``field_present``).

Text that fails to parse is a validly measured 0.0, not an error: malformed JSON from the system under test is
the very failure these metrics exist to count. The 0.0 carries an ``invalid_json`` diagnostic with the
parser's message. Under ``task.parse: json``, ``json_valid`` measures the text of an output that did not parse the
same way; ``field_present`` scores it as any metric scores an answer it cannot read (``metrics.invalid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from evalglass.core.example import Example
from evalglass.core.fieldpath import FieldPathError, get_path, parse_path
from evalglass.core.jsonvalue import NotJsonError, TooDeepError, json_key, parse_json_text
from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.outputshape import OutputShape
from evalglass.core.score import Score
from evalglass.metrics.base import ABSENT, BuildContext, MetricFn, MetricResult, measured_target
from evalglass.metrics.invalid import invalid_answer
from evalglass.metrics.support import (
    NoReferenceSpec,
    json_type_name,
    one_line,
    preview,
    scored_with_note,
)


def parse_or_fail(text: str) -> Any:
    """The parsed document, or a scored 0.0 with an ``invalid_json`` diagnostic when the text is not JSON (an
    ``error`` when it is too deep to tell)."""
    try:
        return parse_json_text(text)
    except TooDeepError as exc:
        return Score.error("too_deep", f"the output cannot be parsed: {exc}")
    except ValueError as exc:
        return scored_with_note(0.0, "invalid_json", f"the output is not valid JSON: {one_line(str(exc))}")


class JsonValidSpec(NoReferenceSpec):
    """Whether the output is JSON.

    A string is parsed as one strict RFC 8259 document (no ``NaN``, no trailing commas, no Markdown code
    fences); a bare ``42``, ``true`` or ``null`` is such a document. A value that is already structured (a dataset
    that stored parsed output, ``task.parse: json`` having parsed the text, a Python lane returning a dict) is
    valid when it holds only JSON values: an object, an array, a number, a boolean or null the system answered is
    valid JSON (``json_valid@3``: a bare number, boolean or null was an ``error`` ``wrong_type`` before, a red on an
    answer that was valid JSON text). A value JSON cannot hold (a NaN or infinity, a set, bytes, an object) is the
    system's invalid answer: 0.0 with ``not_json`` naming its type.
    """

    deterministic: ClassVar[bool] = True

    reads: ClassVar[OutputShape] = OutputShape.ANSWER

    summary: ClassVar[str] = "1.0 when the output is a valid JSON document (or an already-parsed JSON value)."
    binary: ClassVar[bool] = True

    type: Literal["json_valid"] = "json_valid"

    def build_one(self, context: BuildContext) -> MetricFn:
        whole = self.field is None
        target = _output_or_its_text if whole else measured_target(self)
        invalid = invalid_answer(self, context)

        def json_valid(example: Example) -> MetricResult:
            value = target(example)
            if value is ABSENT:
                return invalid(example)
            if isinstance(value, str):
                parsed = parse_or_fail(value)
                if isinstance(parsed, Score):
                    return parsed
                output = example.output
                if whole and type(output) is UnparsedOutput:  # its text happens to parse: still not JSON
                    return scored_with_note(0.0, "not_json", f"the output is not JSON: {output.message}")
                return 1.0
            try:
                json_key(value)
            except TooDeepError as exc:
                return Score.error("too_deep", f"the output cannot be checked: {exc}")
            except NotJsonError as exc:
                return scored_with_note(
                    0.0,
                    "not_json",
                    f"the output ({json_type_name(value)}) holds a value JSON cannot represent: {one_line(str(exc))}",
                    preview(value),
                )
            return 1.0

        return json_valid


class FieldPresentSpec(NoReferenceSpec):
    """Whether a JSON output carries every listed field (dotted paths, list indexes allowed: ``items.0.id``).

    A string output is parsed first unless ``parse_strings: false``. An output that is not an object or array
    has none of the fields and scores 0.0 with a ``not_an_object`` diagnostic; missing fields are named in a
    ``fields_missing`` diagnostic.
    """

    unordered: ClassVar[tuple[str, ...]] = ("fields",)
    deterministic: ClassVar[bool] = True

    summary: ClassVar[str] = "1.0 when the JSON output has all the listed fields (non-null if asked), else 0.0."
    binary: ClassVar[bool] = True

    type: Literal["field_present"] = "field_present"
    fields: list[str] = Field(min_length=1, description="Dotted paths that must exist in the output.")
    non_null: bool = Field(default=False, description="Also require each field's value to be non-null.")
    parse_strings: bool = Field(default=True, description="Parse a string output as JSON text first.")

    @field_validator("fields")
    @classmethod
    def _paths(cls, fields: list[str]) -> list[str]:
        for path in fields:
            try:
                parse_path(path)
            except FieldPathError as exc:
                raise ValueError(str(exc)) from None
        return fields

    def build_one(self, context: BuildContext) -> MetricFn:
        target = measured_target(self)
        invalid = invalid_answer(self, context)
        paths = tuple((name, parse_path(name)) for name in self.fields)
        non_null, parse_strings = self.non_null, self.parse_strings

        def field_present(example: Example) -> MetricResult:
            document = target(example)
            if document is ABSENT:
                return invalid(example)
            if parse_strings and isinstance(document, str):
                document = parse_or_fail(document)
                if isinstance(document, Score):
                    return document
            if not isinstance(document, Mapping | list | tuple):
                return scored_with_note(
                    0.0,
                    "not_an_object",
                    f"the output is a {json_type_name(document)}, not an object or array: it has no fields",
                )
            absent = [name for name, path in paths if _lacks(get_path(document, path), non_null)]
            if not absent:
                return 1.0
            return scored_with_note(0.0, "fields_missing", f"missing or null: {', '.join(absent)}")

        return field_present


def _output_or_its_text(example: Example) -> Any:
    """The whole output, or the text of one ``task.parse: json`` could not parse: whether text is JSON is what
    ``json_valid`` measures, so it measures that text (0.0, ``invalid_json``) whatever ``on_invalid_output`` says."""
    output = example.output
    return output.text if type(output) is UnparsedOutput else output


def _lacks(value: Any, non_null: bool) -> bool:
    return value is ABSENT or (non_null and value is None)
