"""Content a source did not capture is not a measurement: a metric that needs it is ``content_not_captured``.

Trace records list the paths of content their instrumentation did not capture (``not_captured``: message content
is opt-in in every GenAI convention) and leave that content out. A metric reading one of those paths would
otherwise see a missing field, which measures the system under test (a missing answer scores the metric's worst
value). Here the evaluator lacks the content, so the metric is ``non_evaluable`` with ``content_not_captured``:
never 0.0, and a gate counts it as an incomplete measurement unless it tolerates ``non_evaluable``.

What a metric needs is what it declares: the output (or its ``field``) for metrics that measure the output, and
its ``reference`` path in the record. A judge also needs whatever its templates name: a template that needs a
value the record lacks, in a record that lists content as not captured, is ``content_not_captured`` too. Host
``python`` metrics get the record (``not_captured`` included) and decide themselves.

Applied, with a failed sample's guard, to every metric of a run whose records can lack content (traces, other
tools' results) by :mod:`~evalglass.engine.datasets.sampleguard`.

A trace's output also holds what its instrumentation reported besides content (:data:`TELEMETRY`: token usage, the
span's duration, the response's model and id). A span that did not report one (a provider that returns no usage, an
instrumentation that records none) leaves it absent or null: the evaluator lacks it, so a metric that needs it is
``non_evaluable`` with ``not_recorded`` (:func:`unrecorded_telemetry`), never the worst value a missing field of an
answer scores.

The same holds of any output's own telemetry (:data:`OUTPUT_TELEMETRY`: a trajectory's ``usage`` totals and its
``cost``), on every run: an agent lane leaves out a total some model step did not report and lists it in the
trajectory's ``not_recorded`` (a recorded trajectory may list it too), and a metric whose ``field`` reads one that
is listed, absent or null is ``not_recorded`` (:func:`unrecorded_output`): a budget never passes on tokens that were
never counted, nor fails on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.notcaptured import NOT_CAPTURED, NOT_RECORDED, uncaptured_overlap
from evalglass.core.score import Score, Status
from evalglass.metrics.base import MetricSpec

CODE = "content_not_captured"
#: What a trace record's output holds that its instrumentation reports besides content (core.conversation.TraceOutput).
TELEMETRY: tuple[tuple[str, ...], ...] = (
    ("output", "usage"),
    ("output", "latency_ms"),
    ("output", "model"),
    ("output", "response_id"),
)


#: What an output (a trajectory) holds that counts its calls rather than answers: read by ``field``, a gap in it is
#: the evaluator's, not the system's.
OUTPUT_TELEMETRY = frozenset({"usage", "cost"})


def output_telemetry_path(spec: MetricSpec) -> tuple[str | int, ...] | None:
    """The path in the output ``spec`` reads when it is under :data:`OUTPUT_TELEMETRY`, else None."""
    if spec.field is None:
        return None
    path = parse_path(spec.field)
    return path if path and path[0] in OUTPUT_TELEMETRY else None


def unrecorded_output(output: Any, path: tuple[str | int, ...]) -> str | None:
    """The field (dotted) of ``path`` the output lacks or lists as ``not_recorded``, or None when it holds it. A
    path the output's writer could not have filled (an output that is not an object) is the system's answer: None."""
    if type(output) is not dict:
        return None
    listed = output.get(NOT_RECORDED)
    if listed and isinstance(listed, list):
        hit = uncaptured_overlap([item for item in listed if isinstance(item, str)], path)
        if hit is not None:
            return hit
    value = get_path(output, path)
    if value is ABSENT or value is None:
        return ".".join(str(part) for part in path)
    return None


def needed_paths(spec: MetricSpec, output_field: str) -> tuple[tuple[str | int, ...], ...]:
    """The record paths ``spec`` reads: the output (or its field inside it), and its reference."""
    paths: list[tuple[str | int, ...]] = []
    if spec.measures_output or spec.field is not None:
        output = parse_path(output_field)
        paths.append(output + (parse_path(spec.field) if spec.field is not None else ()))
    if spec.reference is not None:
        paths.append(parse_path(spec.reference))
    return tuple(paths)


def missing_content(record: Mapping[str, Any], paths: tuple[tuple[str | int, ...], ...]) -> str | None:
    """The listed path one of ``paths`` needs, or None when everything needed was captured."""
    listed = record.get(NOT_CAPTURED) if type(record) is dict else None
    if not listed:
        return None
    for path in paths:
        hit = uncaptured_overlap(listed, path)
        if hit is not None:
            return hit
    return None


def not_captured_score(name: str, example: Example, what: str) -> Score:
    return Score.unmeasured(
        Status.NON_EVALUABLE,
        CODE,
        f"example {example.id}: {what} was not captured by the instrumentation, and metric '{name}' needs it "
        "(enable content capture in the instrumentation to measure it)",
    )


def telemetry_paths(paths: tuple[tuple[str | int, ...], ...]) -> tuple[tuple[str | int, ...], ...]:
    """The paths of ``paths`` at or under a trace's :data:`TELEMETRY` (a metric on ``usage.input_tokens``)."""
    return tuple(path for path in paths if any(path[: len(prefix)] == prefix for prefix in TELEMETRY))


def unrecorded_telemetry(record: Mapping[str, Any], paths: tuple[tuple[str | int, ...], ...]) -> str | None:
    """The path of ``paths`` (from :func:`telemetry_paths`) a trace record's span did not report, or None (and None
    for a record that is not a trace's)."""
    if type(record) is not dict or type(record.get("span_id")) is not str:
        return None
    for path in paths:
        value = get_path(record, path)
        if value is ABSENT or value is None:
            return ".".join(str(part) for part in path)
    return None


#: Who left a field unrecorded, as :func:`not_recorded_score` says it: a trace's span, or an output's writer.
_UNRECORDED_BY = {
    "span": "its span does not report {what}, and metric '{name}' needs it (the instrumentation or the provider "
    "recorded none",
    "output": "its output does not record {what}, and metric '{name}' needs it (a model call reported no count for "
    "it, or whoever wrote the output recorded none",
}


def not_recorded_score(name: str, example: Example, what: str, *, unrecorded_by: str = "span") -> Score:
    """``non_evaluable`` ``not_recorded``: a field a metric needs that a span (``unrecorded_by="span"``) or an
    output's writer (``"output"``) did not record, a gap in the evidence and never the system's answer."""
    said = _UNRECORDED_BY[unrecorded_by].format(what=what, name=name)
    return Score.unmeasured(
        Status.NON_EVALUABLE,
        "not_recorded",
        f"example {example.id}: {said}: a gap in the evidence, not the system's answer)",
    )
