"""What no metric measures: a sample the source failed to produce, or content it did not capture. One guard, in
front of every metric of a run (synchronous scorers and judges alike), so a metric's type never decides whether an
error or an absent answer becomes a verdict.

Two states of a sample come from its source, not from the system under test:

- **the source failed the sample** (another tool's results, ``engine.datasets.toollogs.toolresults``: the tool's own
error, a
  provider failure, a cancelled sample): every metric is ``error`` with ``tool_sample_failed``, naming the tool's
  error. Checked first, so a failed sample is never reported as merely not captured.
- **the content a metric needs was not captured** (traces, other tools' results: ``engine.datasets.uncaptured``): the
metric
  is ``non_evaluable`` with ``content_not_captured``.

A judge would otherwise be sent the error or the missing answer (and score it as the worst answer, or judge an
error message); a deterministic metric would score a missing field as the system's failure. Applied only to
datasets whose records can carry these states (``dataset.may_lack_content``, ``dataset.tool_results``), so other
runs pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.notcaptured import NOT_CAPTURED
from evalglass.core.score import Score
from evalglass.engine.datasets.uncaptured import (
    missing_content,
    needed_paths,
    not_captured_score,
    not_recorded_score,
    output_telemetry_path,
    telemetry_paths,
    unrecorded_output,
    unrecorded_telemetry,
)
from evalglass.metrics.base import MetricSpec, Scorer

if TYPE_CHECKING:
    from evalglass.lanes.judge import JudgeResult
    from evalglass.metrics.base import AsyncScorer


class SampleGuard:
    """The score metric ``name`` gets on an example it must not measure, or None to measure it."""

    __slots__ = ("_failed", "_failed_score", "_name", "_output_telemetry", "_paths", "_telemetry")

    def __init__(self, name: str, spec: MetricSpec, output_field: str, *, failures: bool, uncaptured: bool) -> None:
        self._name = name
        # Only another tool's results can say a sample failed: a JSONL dataset's run does not load their reader,
        # which is imported here, once per metric, rather than on each example.
        self._failed: Callable[[Any], bool] | None = None
        self._failed_score: Callable[[str, Example], Score] | None = None
        if failures:
            from evalglass.engine.datasets.toollogs.toolresults import failed_sample_score, sample_failed

            self._failed, self._failed_score = sample_failed, failed_sample_score
        self._paths = needed_paths(spec, output_field) if uncaptured else ()
        self._telemetry = telemetry_paths(self._paths)
        self._output_telemetry = output_telemetry_path(spec)

    @property
    def active(self) -> bool:
        return self._failed is not None or bool(self._paths) or self._output_telemetry is not None

    def unmeasured(self, example: Example) -> Score | None:
        failed = self._failed
        if failed is not None and failed(example.output):
            assert self._failed_score is not None
            return self._failed_score(self._name, example)
        if self._paths:
            what = missing_content(example.fields, self._paths)
            if what is not None:
                return not_captured_score(self._name, example, what)
        if self._telemetry:
            what = unrecorded_telemetry(example.fields, self._telemetry)
            if what is not None:
                return not_recorded_score(self._name, example, what)
        if self._output_telemetry is not None:
            what = unrecorded_output(example.output, self._output_telemetry)
            if what is not None:
                return not_recorded_score(self._name, example, what, unrecorded_by="output")
        return None

    def any_unmeasured(self, examples: ExampleBatch) -> bool:
        failed = self._failed
        if failed is not None and any(map(failed, examples.outputs)):
            return True
        telemetry = self._output_telemetry
        if telemetry is not None and any(unrecorded_output(each, telemetry) is not None for each in examples.outputs):
            return True
        return bool(self._paths) and any(
            missing_content(record, self._paths) is not None
            or (self._telemetry and unrecorded_telemetry(record, self._telemetry) is not None)
            for record in examples.records
        )


def guard_scorer(guard: SampleGuard, scorer: Scorer) -> Scorer:
    """``scorer``, giving ``guard``'s score on the examples it must not measure."""
    if not guard.active:
        return scorer
    inner_one = scorer.one

    def one(example: Example) -> Any:
        unmeasured = guard.unmeasured(example)
        return inner_one(example) if unmeasured is None else unmeasured

    inner_batch = scorer.batch
    if inner_batch is None:
        return Scorer(one)

    def batch(examples: ExampleBatch) -> Any:
        if guard.any_unmeasured(examples):
            return None  # the caller scores this batch example by example, through ``one``
        return inner_batch(examples)

    return Scorer(one, batch)


class GuardedJudge:
    """A judge (:class:`~evalglass.metrics.base.AsyncScorer`) that is never sent what ``guard`` holds back."""

    def __init__(self, name: str, guard: SampleGuard, judge: AsyncScorer) -> None:
        self._name = name
        self._guard = guard
        self._judge = judge

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._judge, attribute)

    async def judge(self, example: Example) -> JudgeResult:
        from evalglass.lanes.judge import JudgeResult

        unmeasured = self._guard.unmeasured(example)
        if unmeasured is not None:
            return JudgeResult(unmeasured)
        result = await self._judge.judge(example)
        # A template naming content the record lists as not captured (the input, for one) fails to render:
        # that is the same missing content, not a fault of the template.
        listed = example.fields.get(NOT_CAPTURED) if type(example.fields) is dict else None
        if listed and any(diagnostic.code == "template_field_missing" for diagnostic in result.score.diagnostics):
            return JudgeResult(not_captured_score(self._name, example, " and ".join(listed)))
        return result

    async def aclose(self) -> None:
        await self._judge.aclose()


__all__ = ["GuardedJudge", "SampleGuard", "guard_scorer"]
