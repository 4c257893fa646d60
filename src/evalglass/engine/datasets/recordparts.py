"""What of a dataset record a reader is shown beside an example's scores: its input (the record without the output,
reference and id fields), its reference (the fields the metrics compare with) and, for a recorded run, its
output field. One statement of the split, for the HTML report and ``view --examples`` alike."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalglass.core.fieldpath import ABSENT, value_getter


@dataclass(frozen=True)
class RecordParts:
    output_field: str | None
    reference_fields: tuple[str, ...]
    hidden: frozenset[str]
    _output: Callable[[Any], Any] | None
    _references: Mapping[str, Callable[[Any], Any]]

    def input(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in data.items() if key not in self.hidden}

    def output(self, data: Mapping[str, Any]) -> Any:
        """The recorded output field's value (ABSENT when the record lacks it, or the run's output is no field)."""
        return ABSENT if self._output is None else self._output(data)

    def reference(self, data: Mapping[str, Any]) -> Any:
        """The one reference field's value, or each reference field's by name when metrics read several (ABSENT
        for a field the record lacks); ABSENT when no metric reads a reference."""
        found = {name: getter(data) for name, getter in self._references.items()}
        if not found:
            return ABSENT
        return next(iter(found.values())) if len(found) == 1 else found


def record_parts(config: Mapping[str, Any]) -> RecordParts:
    """The split the run's recorded config implies. Raises ``FieldPathError`` on a malformed field path."""
    task = config.get("task") or {}
    recorded = not isinstance(task, dict) or task.get("type", "recorded") == "recorded"
    output_field = str(task.get("field", "output")) if recorded and isinstance(task, dict) else None
    references = tuple(
        sorted(
            {
                spec["reference"]
                for spec in (config.get("metrics") or {}).values()
                if isinstance(spec, dict) and isinstance(spec.get("reference"), str)
            }
        )
    )
    id_field = (config.get("dataset") or {}).get("id_field", "id")
    return RecordParts(
        output_field=output_field,
        reference_fields=references,
        hidden=frozenset({*([output_field] if output_field is not None else []), *references, id_field}),
        _output=value_getter(output_field) if output_field is not None else None,
        _references={name: value_getter(name) for name in references},
    )


#: What a field the record lacks is shown as: an absent field is not an empty one.
ABSENT_FIELD = "(field absent)"


def present(value: Any) -> Any:
    """``value`` with every ABSENT (the value itself, or a field of several references) shown as
    :data:`ABSENT_FIELD`."""
    if isinstance(value, dict):
        return {name: present(item) for name, item in value.items()}
    return ABSENT_FIELD if value is ABSENT else value
