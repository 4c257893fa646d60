"""Every lookup table keyed by an enum, anywhere in the package, has an entry for every member.

The tables are found, not listed: every module of the package is imported and every module-level mapping whose
keys are all members of one enum is checked. A new enum member without an entry in some table fails here (and,
for tables built with ``core.tables.total``, already when the module loads).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from enum import Enum, StrEnum

import pytest

import evalglass
from evalglass.core.tables import total

#: Modules that are scripts or data, not library code: importing them would run them.
SKIP = ("evalglass.__main__", "evalglass.examples", "evalglass.templates")


def enum_keyed_tables() -> list[tuple[str, type[Enum], Mapping[Enum, object]]]:
    found = []
    for info in pkgutil.walk_packages(evalglass.__path__, "evalglass."):
        if info.name.startswith(SKIP):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not isinstance(value, Mapping) or not value:
                continue
            kinds = {type(key) for key in value}
            if len(kinds) == 1 and issubclass(kind := kinds.pop(), Enum):
                found.append((f"{info.name}.{name}", kind, value))
    return found


TABLES = enum_keyed_tables()


def test_the_scan_finds_the_known_tables():
    names = {name for name, _, _ in TABLES}
    assert {"evalglass.report.repairs.BLOCK_REASON_FIXES", "evalglass.report.fmt.OUTCOME_LABEL"} <= names
    assert {"evalglass.core.verdict.EXIT_CODES", "evalglass.core.checks.CHECK_EXIT_CODES"} <= names


@pytest.mark.parametrize(("name", "kind", "table"), TABLES, ids=[name for name, _, _ in TABLES])
def test_every_enum_keyed_table_is_total(name, kind, table):
    assert set(table) == set(kind), f"{name} lacks {sorted(str(m) for m in set(kind) - set(table))}"


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


def test_total_refuses_a_table_missing_a_member_or_holding_a_foreign_key():
    with pytest.raises(TypeError, match="missing \\['BLUE'\\]"):
        total(Colour, {Colour.RED: 1})
    with pytest.raises(TypeError, match="foreign"):
        total(Colour, {Colour.RED: 1, Colour.BLUE: 2, "green": 3})  # type: ignore[dict-item]
    table = total(Colour, {Colour.RED: 1, Colour.BLUE: 2})
    assert dict(table) == {Colour.RED: 1, Colour.BLUE: 2}
    with pytest.raises(TypeError):
        table[Colour.RED] = 3  # type: ignore[index]
