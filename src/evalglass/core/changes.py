"""What changed between two definitions, field by field: the words behind a fingerprint that no longer matches.

`explain` says it of a stale approval (the approved ``definition:`` against the current one); a comparative gate and
``preflight`` say it of a baseline whose metric is defined differently from this run's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def definition_changes(approved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``path: old → new`` for each changed field, ``+ path: new`` added, ``- path: old`` removed, sorted by path."""
    before, after = _flatten(approved), _flatten(current)
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            changes.append(f"- {path}: {_shown(before[path])}")
        elif path not in before:
            changes.append(f"+ {path}: {_shown(after[path])}")
        elif before[path] != after[path]:
            changes.append(f"{path}: {_shown(before[path])} → {_shown(after[path])}")
    return changes


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
