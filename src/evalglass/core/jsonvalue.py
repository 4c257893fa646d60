"""JSON equality and parsing with JSON's semantics rather than Python's.

Python says ``True == 1`` and ``1 == 1.0`` and parses ``NaN``; JSON has a distinct boolean type, one number
type and no NaN. Metrics compare values through :func:`json_key` so that ``true`` never matches ``1`` while
``1`` matches ``1.0``, and parse text through :func:`parse_json_text`, which accepts exactly RFC 8259
documents.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping
from typing import Any

import orjson

from evalglass.core.textcase import caseless


class NotJsonError(TypeError):
    """The value cannot be a JSON value (a set, bytes, NaN, a non-string object key...)."""


class TooDeepError(NotJsonError, ValueError):
    """The value or text may well be JSON, but is nested too deeply to walk: the metric cannot measure it, which is
    an ``error``, never a 0.0."""


def json_key(value: Any, *, fold_case: bool = False) -> Hashable:
    """A hashable key equal for two values exactly when they are equal as JSON.

    Array order matters, object key order does not. ``fold_case`` compares every string value (not object
    keys) by Unicode's canonical caseless match (:func:`~evalglass.core.textcase.caseless`). Raises
    :class:`NotJsonError` for anything that is not a JSON value.
    """
    if type(value) is dict and not fold_case:
        flat = _flat_object_key(value)
        if flat is not None:
            return flat
    try:
        return _key(value, fold_case)
    except RecursionError:
        raise TooDeepError("the value is nested too deeply to compare") from None


def is_json_value(value: Any) -> bool:
    """Whether ``value`` is made only of JSON types (str-keyed objects, arrays, strings, finite
    numbers...)."""
    try:
        json_key(value)
    except NotJsonError:
        return False
    return True


#: The tags of :func:`_key` for the scalar types a flat object's values take without a check (a float may be NaN).
_FLAT_TAGS: dict[type, str] = {str: "s", int: "n", bool: "b"}


def _flat_object_key(value: dict[Any, Any]) -> Hashable | None:
    """:func:`_key` of an object with text keys and text, integer or boolean values (a tool call's arguments), in one
    comprehension; None for any other object (the general walk decides it)."""
    try:
        members = [(key, (_FLAT_TAGS[type(item)], item)) for key, item in value.items()]
    except KeyError:
        return None
    if not all(type(key) is str for key in value):
        return None
    return ("o", frozenset(members))


def _key(value: Any, fold: bool) -> Hashable:
    if isinstance(value, str):
        return ("s", caseless(value) if fold else value)
    if value is None:
        return ("z",)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("n", value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJsonError(f"{value!r} is not a JSON number")
        return ("n", value)
    if isinstance(value, list | tuple):
        return ("a", tuple(_key(item, fold) for item in value))
    if isinstance(value, Mapping):
        return ("o", frozenset(_member(key, item, fold) for key, item in value.items()))
    raise NotJsonError(f"a Python {type(value).__name__} is not a JSON value")


def _member(key: Any, item: Any, fold: bool) -> tuple[str, Hashable]:
    if not isinstance(key, str):
        raise NotJsonError(f"object key {key!r} is not a string")
    return key, _key(item, fold)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_text(text: str) -> Any:
    """Parse one JSON document; raises ValueError with the parser's position-bearing message (:class:`TooDeepError`
    when the text is nested deeper than the parsers can go, which says nothing about whether it is JSON).

    orjson handles the common case fast; the standard library is the fallback, so integers beyond 64 bits
    still parse, and it is told to refuse the ``NaN``/``Infinity`` extensions Python normally accepts.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise TooDeepError("JSON document is nested too deeply to parse") from None
