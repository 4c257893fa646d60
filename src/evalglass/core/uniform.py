"""Whether a batch's values all have one exact type.

Batch paths test this once per batch (in C) and then process the whole batch without a type test per value (with
``map`` over C functions such as ``dict.get`` where one exists, else one bare comprehension); a batch that is not
uniform takes the per-value path instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def all_of_type(values: Sequence[Any], kind: type) -> bool:
    """True when ``values`` is non-empty and every value's type is exactly ``kind`` (a subclass does not count:
    ``bool`` is not ``int``)."""
    return bool(values) and list(map(type, values)).count(kind) == len(values)  # measured faster than a set
