"""Dotted paths into nested JSON: ``answer.items.0.name``.

A path segment that is all digits indexes a list; anything else is a mapping key. A key that itself contains a dot
can be written in brackets: ``meta["a.b"].x``. Absence is a distinct sentinel, never ``None``: a field that holds
JSON null is present.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

_SEGMENT = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|([^.\[\]]+)')


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


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
