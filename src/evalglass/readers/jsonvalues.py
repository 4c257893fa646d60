"""Whether a value from host code or a user's file can be written as JSON *as it is*.

orjson writes a NaN or an infinity as ``null`` without a word, so a value that is not a measurement (or not JSON)
would be stored as a plausible-looking null, another value than the one given. Every place that encodes such a value
(a python lane's answer, an agent's tool result and state, a Parquet cell) asks :func:`json_problem` (or, when it
has encoded the value already, :func:`non_finite` once the encoding holds a ``null``) and says what it found.
"""

from __future__ import annotations

import math
from typing import Any

import orjson


def json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as JSON (a set, an object, a non-text key, an integer beyond 64 bits, a
    reference cycle, a NaN or an infinity), or None."""
    try:
        encoded = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        return str(exc)
    return non_finite(value) if b"null" in encoded else None


def non_finite(value: Any) -> str | None:
    """Why ``value`` holds a NaN or an infinity (which orjson writes as ``null``), or None. Ask it only of a value
    whose encoding holds a ``null`` (the rest never hold one): it walks the whole value."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"{item!r} is not a JSON number"
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return None


__all__ = ["json_problem", "non_finite"]
