"""Content a source did not capture: the record key that lists it and whether a path a metric reads is one of them.

Apart from :mod:`evalglass.core.conversation` (which re-exports both) so that the dataset readers and the metrics'
guard, which need only these, do not load the conversation's pydantic models: a recorded run never builds them.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The record key listing the paths of content its source did not capture.
NOT_CAPTURED = "not_captured"
#: The output key (a trajectory's) listing the paths of totals its writer could not record: a model step reported
#: no count for them (``usage.input_tokens``, ``cost``). Absent from the output, never a partial sum.
NOT_RECORDED = "not_recorded"


def _named_parts(path: Iterable[str | int]) -> tuple[str, ...]:
    """A path's key segments: list indexes do not name content (``output.tool_calls.0.arguments`` is
    ``output.tool_calls.arguments``)."""
    return tuple(part for part in path if isinstance(part, str))


def uncaptured_overlap(not_captured: Iterable[str], path: tuple[str | int, ...]) -> str | None:
    """The listed path ``path`` reads from or contains, or None. Reading a whole object some of whose content was
    not captured needs that content too."""
    wanted = _named_parts(path)
    for listed in not_captured:
        parts = tuple(listed.split("."))
        shorter = min(len(parts), len(wanted))
        if parts[:shorter] == wanted[:shorter]:
            return listed
    return None


__all__ = ["NOT_CAPTURED", "NOT_RECORDED", "uncaptured_overlap"]
