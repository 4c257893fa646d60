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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.notcaptured import NOT_CAPTURED, uncaptured_overlap
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


def not_recorded_score(name: str, example: Example, what: str) -> Score:
    return Score.unmeasured(
        Status.NON_EVALUABLE,
        "not_recorded",
        f"example {example.id}: its span does not report {what}, and metric '{name}' needs it (the instrumentation "
        "or the provider recorded none: a gap in the evidence, not the system's answer)",
    )
