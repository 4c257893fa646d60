"""``task.parse: json``: JSON-text outputs parsed once, before any metric sees them.

A string output is parsed as one JSON document; an output that is already structured (or absent) is left as it is.
Text that does not parse becomes an :class:`UnparsedOutput`, which metrics never receive as if it were an output:
the pipeline scores it ``error`` (``output_not_json``) for every metric, except one that declares ``judges_json``
(``json_valid``), whose job is to judge exactly that, and which gets the text and measures it (0.0).

A live ``chat`` or ``command`` lane declared ``output: json`` makes the same value of an answer that is not JSON
(a wrong answer, measured like a recorded one), and stores it, in ``outputs.jsonl`` and the call cache, as the text
under its usual key with :data:`NOT_JSON` beside it (:func:`stored_output`), which :func:`read_stored_output` reads
back as the same value: a resumed or cached run scores it the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The key beside a stored output saying the text under its key is an answer that is not JSON, and why.
NOT_JSON = "not_json"

#: What made a lane's output JSON (a ``chat`` or ``command`` lane's ``output: json``, a ``python`` lane's contract),
#: in the diagnostic of an answer that is not.
DECLARED_JSON = "the lane's output is json"


@dataclass(frozen=True, slots=True)
class UnparsedOutput:
    """A text output that ``task.parse: json`` could not parse."""

    text: str
    message: str
    #: What declared the output JSON, for the diagnostic.
    declared: str = "task.parse is json"


def parse_json_output(value: Any) -> Any:
    """The parsed document for JSON text; the value itself when it is not a string; UnparsedOutput on failure.

    Parsed strictly (RFC 8259: no NaN or Infinity, one document, surrounding whitespace allowed).
    """
    if type(value) is not str:
        return value
    try:
        return json.loads(value, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        return UnparsedOutput(text=value, message=str(exc))


def stored_output(value: Any, key: str) -> dict[str, Any]:
    """``{key: value}``, or for an :class:`UnparsedOutput` ``{key: its text, NOT_JSON: why}``."""
    if type(value) is UnparsedOutput:
        return {key: value.text, NOT_JSON: value.message}
    return {key: value}


def read_stored_output(entry: Mapping[str, Any], key: str, declared: str) -> Any:
    """What :func:`stored_output` stored under ``key`` (the entry must hold it): an :class:`UnparsedOutput`
    (``declared`` saying what made the output JSON) where :data:`NOT_JSON` is beside a text."""
    value, why = entry[key], entry.get(NOT_JSON)
    if type(why) is str and type(value) is str:
        return UnparsedOutput(text=value, message=why, declared=declared)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
