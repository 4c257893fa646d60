"""``task.parse: json``: JSON-text outputs parsed once, before any metric sees them.

A string output is parsed as one JSON document; an output that is already structured (or absent) is left as it is.
Text that does not parse becomes an :class:`UnparsedOutput`, which metrics never receive as if it were an output:
the pipeline scores it ``error`` (``output_not_json``) for every metric, except one that declares ``judges_json``
(``json_valid``), whose job is to judge exactly that, and which gets the text and measures it (0.0).

A live ``chat`` or ``command`` lane declared ``output: json`` makes the same value of an answer that is not JSON
(a wrong answer, measured like a recorded one), and stores it, in ``outputs.jsonl`` and the call cache, as the text
under its usual key with :data:`NOT_JSON` beside it (:func:`stored_output`), which :func:`read_stored_output` reads
back as the same value: a resumed or cached run scores it the same.

A document nested deeper than :data:`MAX_PARSE_DEPTH` levels of arrays and objects is an :class:`UnparsedOutput`
too, by that fixed bound: where Python's recursion limit stops the parser depends on how deep the stack already is
where it is called (``run``'s scoring threads, ``verify``'s re-scoring), so a bound left to it would make the same
answer JSON in one and not in the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import orjson

#: The key beside a stored output saying the text under its key is an answer that is not JSON, and why.
NOT_JSON = "not_json"

#: What made a lane's output JSON (a ``chat`` or ``command`` lane's ``output: json``, a ``python`` lane's contract),
#: in the diagnostic of an answer that is not.
DECLARED_JSON = "the lane's output is json"

#: Deepest nesting of arrays and objects a parsed output may have (the dataset readers' bound,
#: ``readers.jsonsource.MAX_DEPTH``, is the same): far below where the parser or a metric walking the value could
#: reach Python's recursion limit from any stack it is called on.
MAX_PARSE_DEPTH = 128


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
        parsed = json.loads(value, parse_constant=_refuse_constant)
    except ValueError as exc:
        return UnparsedOutput(text=value, message=str(exc))
    except RecursionError:  # deeper than any bound below the limit: the same outcome as the bound's, whatever the stack
        return UnparsedOutput(text=value, message=_TOO_DEEP)
    if (type(parsed) is list or type(parsed) is dict) and nesting_depth(parsed, MAX_PARSE_DEPTH) > MAX_PARSE_DEPTH:
        return UnparsedOutput(text=value, message=_TOO_DEEP)
    return parsed


_TOO_DEEP = f"nested deeper than {MAX_PARSE_DEPTH} levels of arrays and objects"


def nesting_depth(value: Any, beyond: int) -> int:
    """Nesting depth of arrays and objects, without recursion (the value may be deeper than Python's recursion
    limit allows); counting stops once it is past ``beyond``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable[Any]
        if type(item) is dict:
            children = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > beyond:
            return deepest
        stack.extend(zip(children, repeat(level + 1)))
    return deepest


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


#: What follows an answer that is not JSON where one is shown (its why is the row's diagnostic).
NOT_JSON_MARK = "[not JSON]"


def shown_output(value: Any, *, indent: bool = False) -> str:
    """An output as a person reads it, whole (a renderer shortens and escapes it): a string as it is; an
    :class:`UnparsedOutput` (a Parquet NaN, a python lane's set, a chat reply that is not JSON) as the answer as the
    system gave it, its text, then :data:`NOT_JSON_MARK`, never the fields it is stored as; anything else as its JSON,
    an :class:`UnparsedOutput` inside it as that marked text (a string of the JSON), another value JSON cannot hold as
    its ``repr``; a NaN, an infinity (a tool log's answer or target, an OTLP double) or an integer beyond 64 bits (a
    tool log's target) as the standard library writes it (``NaN``, the digits), never orjson's ``null`` or its error.
    The one place every view of an example's answer (``view --examples``, the HTML and markdown reports, the
    explorer) makes its text, so all of them show such an answer the same way."""
    if type(value) is UnparsedOutput:
        return f"{value.text} {NOT_JSON_MARK}"
    if isinstance(value, str):
        return value
    # Passed through so that ``_shown_default`` sees an UnparsedOutput (orjson would write it as an object).
    option = orjson.OPT_PASSTHROUGH_DATACLASS | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        data = orjson.dumps(value, option=option, default=_shown_default)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits (a circle or a deep value raises below too)
        return _shown_as_is(value, indent)
    if b"null" in data:  # orjson writes a NaN or an infinity as null; the standard library refuses it here
        try:
            _shown_as_is(value, indent, allow_nan=False)
        except ValueError:
            return _shown_as_is(value, indent)
    return data.decode()


def _shown_as_is(value: Any, indent: bool, *, allow_nan: bool = True) -> str:
    """:func:`shown_output`'s text written by the standard library, in orjson's layout: a NaN or an infinity as
    ``NaN``/``Infinity``, an integer beyond 64 bits as its digits."""
    separators = (",", ": ") if indent else (",", ":")
    return json.dumps(
        value,
        indent=2 if indent else None,
        separators=separators,
        ensure_ascii=False,
        allow_nan=allow_nan,
        default=_shown_default,
    )


def _shown_default(value: Any) -> str:
    return shown_output(value) if type(value) is UnparsedOutput else repr(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
