# The C extension's functions (_calls.c); each answers None where the pure function must decide.
from typing import Any

def own_calls(value: Any, absent: Any, /) -> tuple[list[dict[str, Any]], list[str], list[Any]] | None: ...
def pair_flat(
    names: list[str], arguments: list[Any], wanted_names: list[str], wanted_arguments: list[Any], /
) -> list[int] | None: ...
