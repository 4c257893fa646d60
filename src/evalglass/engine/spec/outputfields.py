"""A metric may read only what its lane records: a field the lane never writes is the config's mistake, not a wrong
answer.

A live lane writes a known set of fields when its output is a structure of its own: an agent lane's output is its
trajectory (``core.conversation.Trajectory``). A metric whose ``field`` names anything else (``latency_ms``,
``answer``...) would find it missing on every example, and a missing field scores the metric's worst value
(``output_field_missing``: what the system under test answered lacks it): a gate would fail on every run, on the
config's mistake, with nothing the system could change. The lane spec says which fields it never writes
(``unrecorded_field``: an agent's ``cost`` without a price for its model, too), and the config refuses such a
metric before any call is made (exit 2), at the metric's ``field`` key. ``final_state`` when no tool keeps state is
known only once the tools are loaded (:func:`stateless_final_state`, asked by the live run).

Limit: a field written only by some answers (an agent's ``text``, absent when its last turn called tools) is what
the system did, so it stays a measurement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from evalglass.core.fieldpath import FieldPathError, parse_path
from evalglass.lanes.specs import LaneSpec
from evalglass.metrics.base import MetricSpec

if TYPE_CHECKING:  # naming every metric type imports every type's module (metrics.registry)
    from evalglass.metrics.registry import AnyMetricSpec

#: The field a trajectory's tool state ends in.
STATE_FIELD = "final_state"

Problem = tuple[tuple[str | int, ...], str]


def _first(field: str) -> str | int | None:
    try:
        path = parse_path(field)
    except FieldPathError:
        return None  # reported where the path is validated
    return path[0] if path else None


def unrecorded_field_problems(
    lanes: Iterable[tuple[str | None, LaneSpec]], metrics: Mapping[str, AnyMetricSpec], priced: Iterable[str]
) -> list[Problem]:
    """The metrics that read a field no output of a live lane (the task's, or a variant's: ``lanes`` as (variant
    name or None, lane)) holds, each at the metric's ``field`` key. Recorded outputs hold what the user's files do."""
    priced = tuple(priced)
    problems: list[Problem] = []
    for variant, lane in lanes:
        whose = f" (variant '{variant}')" if variant is not None else ""
        for name, spec in metrics.items():
            first = _first(spec.field) if spec.field is not None else None
            why = lane.unrecorded_field(first, priced) if isinstance(first, str) else None
            if why is not None:
                problems.append(
                    (
                        ("metrics", name, "field"),
                        f"metric '{name}' reads '{spec.field}', but {why}{whose}: every example would score its "
                        "worst value",
                    )
                )
    return problems


def stateless_final_state(metrics: Mapping[str, MetricSpec], keeps_state: bool) -> str | None:
    """Why the run cannot measure a metric on the trajectory's ``final_state`` (None when it can): the built lane
    records no state (``keeps_state`` False: no tool of the agent lane takes a ``state`` keyword and the task
    declares no ``state:``), so no trajectory holds one."""
    if keeps_state:
        return None
    for name, spec in metrics.items():
        if spec.field is not None and _first(spec.field) == STATE_FIELD:
            return (
                f"metric '{name}' reads the trajectory's final_state, but no tool of the task takes a `state` keyword "
                "and the task declares no `state:`, so no trajectory holds a state: give the tools that change it a "
                "keyword-only `state` parameter, or declare `task.state`"
            )
    return None


__all__ = ["STATE_FIELD", "stateless_final_state", "unrecorded_field_problems"]
