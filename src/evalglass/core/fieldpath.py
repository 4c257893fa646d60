"""Dotted paths into nested JSON: ``answer.items.0.name``.

A path segment that is all digits indexes a list; anything else is a mapping key. A key that itself contains a dot
can be written in brackets: ``meta["a.b"].x``. Absence is a distinct sentinel, never ``None``: a field that holds
JSON null is present.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any, Final

from evalglass.core.uniform import all_of_type

_SEGMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|([^.\[\]]+)')


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # Pickled by name, so an example shipped to another process (a Ray worker) still compares `is ABSENT`.
        return "ABSENT"


ABSENT: Final = _Absent()


class FieldPathError(ValueError):
    pass


def parse_path(path: str) -> tuple[str | int, ...]:
    """Split a path into keys and list indexes; raises FieldPathError on a malformed path."""
    if not path or path.startswith(".") or path.endswith(".") or ".." in path:
        raise FieldPathError(f"malformed field path {path!r}: use dotted keys such as 'answer.items.0'")
    segments: list[str | int] = []
    pos = 0
    while pos < len(path):
        if path[pos] == ".":
            pos += 1
        match = _SEGMENT.match(path, pos)
        if match is None:
            raise FieldPathError(f"malformed field path {path!r} at character {pos + 1}")
        quoted, plain = match.groups()
        if quoted is not None:
            segments.append(quoted.replace('\\"', '"'))
        else:
            segments.append(int(plain) if plain.isdigit() else plain)
        pos = match.end()
    return tuple(segments)


def get_path(document: Any, path: tuple[str | int, ...]) -> Any:
    """The value at ``path`` or ABSENT when any step is missing."""
    current = document
    for segment in path:
        if isinstance(segment, int) and isinstance(current, Sequence) and not isinstance(current, str):
            if segment >= len(current):
                return ABSENT
            current = current[segment]
        elif isinstance(current, Mapping):
            key = str(segment)
            if key not in current:
                return ABSENT
            current = current[key]
        else:
            return ABSENT
    return current


def value_getter(path: str | None) -> Callable[[Any], Any]:
    """``get_path(document, parse_path(path))`` (the document itself for None), walking plain dicts inline.

    Same answers as :func:`get_path` for every document: JSON objects (exact ``dict``) with plain keys take the
    fast way, anything else goes through ``get_path`` from where the fast way stopped.
    """
    if path is None:
        return _itself
    parts = parse_path(path)
    if not all(type(part) is str for part in parts):
        return lambda document: get_path(document, parts)
    if len(parts) == 1:
        key = parts[0]
        return lambda document: document.get(key, ABSENT) if type(document) is dict else get_path(document, parts)

    def walk(document: Any) -> Any:
        current = document
        for index, key in enumerate(parts):
            if type(current) is not dict:
                return get_path(current, parts[index:])
            current = current.get(key, ABSENT)
            if current is ABSENT:
                return ABSENT
        return current

    return walk


def _itself(document: Any) -> Any:
    return document


@functools.lru_cache(maxsize=256)
def values_getter(path: str | None) -> Callable[[list[Any]], list[Any]]:
    """``[value_getter(path)(document) for document in documents]``, with no Python call per document when the
    path is one key and every document is a plain dict. Cached: batch paths ask for the same few paths again and
    again."""
    if path is None:
        return list
    parts = parse_path(path)
    if len(parts) == 1 and type(parts[0]) is str:
        key = parts[0]

        def values(documents: list[Any]) -> list[Any]:
            if all_of_type(documents, dict):
                return list(map(dict.get, documents, repeat(key), repeat(ABSENT)))  # no Python call per document
            return [
                document.get(key, ABSENT) if type(document) is dict else get_path(document, parts)
                for document in documents
            ]

        return values
    get = value_getter(path)
    return lambda documents: [get(document) for document in documents]
