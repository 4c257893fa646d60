"""``task.parse: json``: JSON-text outputs parsed once, before any metric sees them.

A string output is parsed as one JSON document; an output that is already structured (or absent) is left as it is.
Text that does not parse becomes an :class:`UnparsedOutput`, which metrics never receive as if it were an output:
the pipeline scores it ``error`` (``output_not_json``) for every metric, except one that declares ``judges_json``
(``json_valid``), whose job is to judge exactly that, and which gets the text and measures it (0.0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class UnparsedOutput:
    """A text output that ``task.parse: json`` could not parse."""

    text: str
    message: str


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


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
