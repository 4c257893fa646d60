"""Lookup tables keyed by an enum, checked to be total when they are built.

A table from an enum to text (reasons to repair hints, outcomes to labels) that lacks a member fails only when
that member first shows up, usually in front of a user (``explain`` once crashed on a gate blocked with
``interval_undefined``). :func:`total` refuses such a table at import time, so adding a member to an enum without
an entry in every table fails every test that imports the module, not a user's run.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import TypeVar

K = TypeVar("K", bound=Enum)
V = TypeVar("V")


def total(keys: type[K], table: Mapping[K, V]) -> Mapping[K, V]:
    """``table`` as a read-only mapping, after checking it has exactly one entry per member of ``keys``."""
    missing = [member.name for member in keys if member not in table]
    foreign = [repr(key) for key in table if not isinstance(key, keys)]
    if missing or foreign:
        raise TypeError(
            f"a table keyed by {keys.__name__} must cover every member and nothing else: "
            f"missing {missing or 'none'}, foreign {foreign or 'none'}"
        )
    return MappingProxyType(dict(table))
