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

The same holds of what a metric reads from the whole output (no ``field``): a metric declares it
(``MetricSpec.reads``: an answer, a trajectory, or either) and a task says what its output is (a live lane's
``output_shape``; a recorded trace's ``output``, a trajectory; another recorded field, what the run's own metrics read
it as). ``exact_match`` on an agent's trajectory scored every example 0.0 (``type_mismatch``), ``contains`` an
``error``, ``json_valid`` 1.0 (an object is JSON): none measures the answer, so such a metric is refused at its line,
saying to set ``field: text`` (the trajectory's final answer). A trajectory metric on a chat lane's text is refused
the same way. Nothing is read by default: the same metric on a chat and an agent variant reads two different things,
and a definition approved for one must not silently mean another.

Limit: a field written only by some answers (an agent's ``text``, absent when its last turn called tools) is what
the system did, so it stays a measurement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from evalglass.core.fieldpath import FieldPathError, parse_path
from evalglass.core.outputshape import OutputShape
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


def recorded_shape(dataset_format: str | None, field: str) -> OutputShape:
    """What a recorded task's output is, when its source says: a trace record's ``output`` is a trajectory (its
    ``output.text`` the answer); anything else is what the user's files hold."""
    if dataset_format == "otlp":
        if field == "output":
            return OutputShape.TRAJECTORY
        if field == "output.text":
            return OutputShape.ANSWER
    return OutputShape.ANY


def _whole(metrics: Mapping[str, AnyMetricSpec], *shapes: OutputShape) -> list[str]:
    return [name for name, spec in metrics.items() if spec.field is None and spec.output_read() in shapes]


def output_shape_problems(
    tasks: Iterable[tuple[str | None, OutputShape]], metrics: Mapping[str, AnyMetricSpec]
) -> list[Problem]:
    """The metrics that read the whole output as what no output of a task (``tasks`` as (variant name or None,
    its output's shape)) is, each at the metric's entry. A task whose output may be anything (a recorded field, host
    code) is what the run's metrics read it as: one metric reading it as an answer and another as a trajectory
    cannot both be right when the answer's reader needs text, so it is refused (a trajectory's answer is its
    ``text``).

    Limit: a metric is refused only when it can read no task's output. Variants of different shapes (a chat and an
    agent lane) share their metrics, and a `field` that reads one reads nothing of the other, so one metric of the
    answer on both is kept: the agent variant's scores of it are 0.0 or an error, as before this check."""
    tasks = list(tasks)
    found: dict[str, list[str]] = {}
    answers = _whole(metrics, OutputShape.TEXT, OutputShape.ANSWER)
    texts = _whole(metrics, OutputShape.TEXT)
    trajectories = _whole(metrics, OutputShape.TRAJECTORY)
    for variant, shape in tasks:
        whose = f" (variant '{variant}')" if variant is not None else ""
        if shape is OutputShape.TRAJECTORY:
            refused = answers
            why = (
                f"reads the whole output as an answer, but the task's output is a trajectory{whose} (messages, tool "
                "calls, usage): set `field: text` to measure its final answer, or every example scores the "
                "trajectory object (0.0 or an error), never the answer"
            )
        elif shape is OutputShape.ANSWER:
            refused = trajectories
            why = (
                f"reads a trajectory, but the task's output is an answer's text{whose}: measure an agent (`task: "
                "{type: agent}`) or recorded conversations, or every example scores its worst value"
            )
        else:
            # What the run's metrics read it as. Only a metric of text is refused: a value (exact_match,
            # set_overlap) may be a list of calls a trajectory metric reads too.
            refused = texts if trajectories else []
            why = (
                f"reads the whole output as text, but metric '{trajectories[0]}' reads it as a trajectory{whose}: "
                "one output is not both; set `field: text` to measure a trajectory's final answer"
                if trajectories
                else ""
            )
        for name in refused:
            found.setdefault(name, []).append(f"metric '{name}' ({metrics[name].type}) {why}")
    return [(("metrics", name), whys[0]) for name, whys in found.items() if len(whys) == len(tasks)]


def csv_text_problems(metrics: Mapping[str, AnyMetricSpec]) -> list[Problem]:
    """The metrics that cannot read a recorded output that is a CSV cell (every output the run scores comes from a
    CSV dataset's cells, none parsed: ``task.parse`` unset), each at its entry.

    A CSV cell is text (the reader guesses no types), so a ``field`` inside it is absent on every example
    (``output_field_missing``) and ``numeric_bounds`` without ``coerce`` finds ``"0.9"``, never ``0.9``
    (``wrong_type``): each example would score the worst value, and an approved gate fail, on the file format rather
    than on anything the system answered."""
    problems: list[Problem] = []
    for name, spec in metrics.items():
        if spec.field is not None:
            problems.append(
                (
                    ("metrics", name, "field"),
                    f"metric '{name}' reads '{spec.field}' inside the output, but the output is a CSV cell's text, "
                    "which has no fields: set `task.parse: json` if the cells hold JSON, or every example scores "
                    "its worst value (output_field_missing)",
                )
            )
        elif spec.type == "numeric_bounds" and not getattr(spec, "coerce", True):
            problems.append(
                (
                    ("metrics", name),
                    f"metric '{name}' (numeric_bounds) reads a number, but the output is a CSV cell's text ('0.9', "
                    "never 0.9): set `coerce: true` to read the number written in it, or every example scores its "
                    "worst value (wrong_type)",
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


__all__ = [
    "STATE_FIELD",
    "csv_text_problems",
    "output_shape_problems",
    "recorded_shape",
    "stateless_final_state",
    "unrecorded_field_problems",
]
