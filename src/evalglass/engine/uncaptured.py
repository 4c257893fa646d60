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

Applied only to datasets whose records can lack content (``dataset.format: otlp``), so other runs pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalglass.core.conversation import NOT_CAPTURED, uncaptured_overlap
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import parse_path
from evalglass.core.score import Score, Status
from evalglass.metrics.base import MetricSpec, Scorer

if TYPE_CHECKING:
    from evalglass.lanes.judge import JudgeResult
    from evalglass.metrics.base import AsyncScorer

CODE = "content_not_captured"


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


def guard_uncaptured(name: str, spec: MetricSpec, output_field: str, scorer: Scorer) -> Scorer:
    """``scorer``, made ``content_not_captured`` on records that lack content it needs."""
    paths = needed_paths(spec, output_field)
    if not paths:
        return scorer
    inner_one = scorer.one

    def one(example: Example) -> Any:
        what = missing_content(example.fields, paths)
        return inner_one(example) if what is None else not_captured_score(name, example, what)

    inner_batch = scorer.batch
    if inner_batch is None:
        return Scorer(one)

    def batch(examples: ExampleBatch) -> Any:
        if any(missing_content(record, paths) is not None for record in examples.records):
            return None  # the caller scores this batch example by example, through ``one``
        return inner_batch(examples)

    return Scorer(one, batch)


class UncapturedJudge:
    """A judge (:class:`~evalglass.metrics.base.AsyncScorer`) that does not judge content it was not given."""

    def __init__(self, name: str, spec: MetricSpec, output_field: str, judge: AsyncScorer) -> None:
        self._name = name
        self._paths = needed_paths(spec, output_field)
        self._judge = judge

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._judge, attribute)

    async def judge(self, example: Example) -> JudgeResult:
        from evalglass.lanes.judge import JudgeResult

        what = missing_content(example.fields, self._paths)
        if what is not None:
            return JudgeResult(not_captured_score(self._name, example, what))
        result = await self._judge.judge(example)
        score = result.score
        listed = example.fields.get(NOT_CAPTURED) if type(example.fields) is dict else None
        if listed and any(diagnostic.code == "template_field_missing" for diagnostic in score.diagnostics):
            return JudgeResult(not_captured_score(self._name, example, " and ".join(listed)))
        return result

    async def aclose(self) -> None:
        await self._judge.aclose()
