"""Scoring dataset lines in a live run: each line's samples through the lane, then every metric (sync metrics
inline or on the metric threads, judges awaited concurrently), counted for the progress line.

Three ways, one outcome: a line at a time (:meth:`LiveScorer.score`), a chunk of lines with the lane's calls made at
once (:meth:`LiveScorer.score_chunk`), or consecutive batches of plain lines as columns with no object per example
(:meth:`LiveScorer.score_columns`); each metric scores a chunk's or a column's rows through its batch path, as a
recorded run does. What they return goes to the run sink (as :class:`~evalglass.engine.produce.sink.Rows`) and to
``outputs.jsonl`` (``engine.produce.liveoutputs``) in dataset order, byte for byte the same whichever way a line took.

A failed lane call makes every metric of that sample ``error`` with the lane's diagnostic; a failed judge call makes
that judge's score ``error``. The run goes on; nothing becomes 0.0.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalglass import hostwatch
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.goldfields import record_without
from evalglass.core.outputparse import parse_json_output, stored_output
from evalglass.core.score import Diagnostic, Score, Status
from evalglass.core.uniform import all_of_type
from evalglass.engine.datasets.dataset import BATCH, BadLine
from evalglass.engine.produce.progress import Counters
from evalglass.engine.produce.scoring import BuiltMetric, call_metric, expand, guard
from evalglass.engine.produce.sink import Rows
from evalglass.engine.produce.tokens import Tally
from evalglass.engine.spec.config import LoadedConfig
from evalglass.hostwatch import Watch
from evalglass.lanes.ports import Lane, LaneColumn, LaneFailure, LaneOutcome, LaneOutput, failure_score
from evalglass.lanes.retry import Attempt
from evalglass.metrics.base import AsyncScorer

if TYPE_CHECKING:
    from concurrent.futures import Executor

#: Examples gathered for one hand-off to a chunked lane at most (see LiveScorer.span): eight batches, so that the
#: lines started and not yet written stay a few thousand however cheap the calls are (sixteen measured no faster at
#: 1,000,000 examples and kept 3 MB more in flight; see BENCHMARKS.md, issue 17, session 5).
MAX_SPAN = 8 * BATCH


@dataclass(frozen=True, slots=True)
class ExampleResult:
    """One dataset line, scored: per metric, one result per sample row (a float or a Score); and what the lane
    produced and the judges said, for ``outputs.jsonl``."""

    item: Example | BadLine
    rows: int
    results: dict[str, list[Any]]
    produced: list[dict[str, Any]] | None = None
    judged: dict[str, list[dict[str, Any] | None]] | None = None


def rows_of(results: Sequence[ExampleResult], names: Sequence[str]) -> Rows:
    """Consecutive lines' results as the sink takes them (one block)."""
    items = [result.item for result in results]
    return Rows(
        [item.id for item in items],
        [item.line for item in items],
        [item.fields if isinstance(item, Example) else None for item in items],
        {name: [value for result in results for value in result.results[name]] for name in names},
        per_line=[result.rows for result in results],
    )


@dataclass(frozen=True, slots=True)
class ScoredColumns:
    """Consecutive batches of dataset lines, all examples, scored as columns (the chunked path): row ``i`` of
    ``results`` and ``produced`` is example ``i // epochs``, sample ``i % epochs``. No object per example or row."""

    #: The batches' examples, joined.
    batch: ExampleBatch
    epochs: int
    #: Per metric, one result (a float or a Score) per row.
    results: dict[str, list[Any]]
    #: What the lane produced for each row.
    produced: LaneColumn
    #: How many examples each batch held, in order: one block of ``scores.jsonl`` each.
    blocks: tuple[int, ...]

    def rows(self) -> Rows:
        """The batches as the sink takes them: one block per batch, as if each had been scored alone."""
        batch = self.batch
        return Rows(batch.ids, batch.lines, batch.records, self.results, per_line=self.epochs, blocks=self.blocks)


@dataclass
class LiveParts:
    """What a live run builds inside its event loop: the lane and the judges (their clients belong to the loop)."""

    lane: Lane | None = None
    judges: dict[str, AsyncScorer] = field(default_factory=dict)
    #: What the supervisor names when the process dies while the lane's calls are in flight.
    lane_watch: Watch | None = None

    async def aclose(self) -> None:
        closers = [self.lane.aclose()] if self.lane is not None else []
        closers.extend(judge.aclose() for judge in self.judges.values())
        await asyncio.gather(*closers, return_exceptions=True)


def _left(watch: Watch, _: object) -> None:
    watch.leave()


def _retries(attempts: Sequence[Attempt]) -> int:
    """Attempts after the first of their call (an agent's outcome holds the attempts of each of its model steps)."""
    return sum(attempt.number > 1 for attempt in attempts)


class LiveScorer:
    """Scores one dataset line at a time; shared by every example task of the run."""

    def __init__(
        self,
        loaded: LoadedConfig,
        metrics: list[BuiltMetric],
        parts: LiveParts,
        counters: Counters,
        pool: Executor | None,
    ) -> None:
        config = loaded.config
        self.order = list(config.metrics)
        self.metrics = metrics
        self.sync = [
            (metric.name, guard(metric.name, metric.scorer.one), metric.parallel, metric.watch) for metric in metrics
        ]
        self.lane = parts.lane
        #: Each record as the lane is given it: as gold sees it, without any variant's recorded output (a variant
        #: of a run whose other variants are recorded in the dataset is never fed their answers). None: the record
        #: itself (no output is recorded in the dataset file: every live run without recorded variants).
        hidden = config.gold_excluded_fields if parts.lane is not None else ()
        self._shown = record_without(hidden) if hidden else None
        self.lane_watch = parts.lane_watch or hostwatch.watch("the task lane")
        self.judges = parts.judges
        self.samples = config.samples
        self.sample_count = config.recorded_sample_count
        self.parse_json = config.parse_json and config.lane is not None
        self.counters = counters
        self.pool = pool
        self.epochs = config.lane.epochs if config.lane is not None else 1
        self.tallies: dict[str, Tally] = {
            name: Tally(source=name, model=spec.tokens_model()) for name, spec in config.metrics.items() if spec.live
        }
        tokens_model = config.lane.tokens_model() if config.lane is not None else None
        if tokens_model is not None:
            self.tallies["task"] = Tally(source="task", model=tokens_model)
        if self.lane is not None:
            self._failure_score = failure_score
            self._lane_output = LaneOutput
        #: Examples go to the lane in chunks (``score_chunk``) when its ``produce_many`` does less per call and
        #: every metric runs inline: no judge (each awaits its own call) and no metric on a thread pool.
        self.chunked = (
            self.lane is not None
            and self.lane.chunked
            and not self.judges
            and not any(parallel and pool is not None for _, _, parallel, _ in self.sync)
        )

    async def score(self, item: Example | BadLine) -> ExampleResult:
        produced: list[dict[str, Any]] | None = [] if self.lane is not None and isinstance(item, Example) else None
        rows = await self._rows(item, produced)
        if isinstance(rows, Score):
            return self._unscored(item, rows, produced)
        if len(rows) == 1:  # the common case: no gather, no extra futures
            per_row = [await self._score_row(rows[0])]
        else:
            per_row = await asyncio.gather(*(self._score_row(row) for row in rows))
        return self._assemble(item, rows, per_row, produced)

    async def score_chunk(self, items: Sequence[Example | BadLine]) -> list[ExampleResult]:
        """``score`` of each item, in order, with the lane's calls for them all made at once (``produce_many``)
        and each metric run once over the chunk's measured rows (its batch path, as a recorded run scores; a
        metric without one, or whose batch call fails, scores row by row with the same outcome). Only when
        :attr:`chunked`."""
        epochs, lane = self.epochs, self.lane
        assert lane is not None  # chunked implies a lane
        shown = self._shown
        jobs = [
            (item.id, item.fields if shown is None else shown(item.fields), sample)
            for item in items
            if isinstance(item, Example)
            for sample in range(epochs)
        ]
        with self.lane_watch:
            outcomes = await lane.produce_many(jobs) if jobs else []
        laid_out: list[tuple[Example | BadLine, list[Example | Score] | Score, list[dict[str, Any]] | None]] = []
        position = 0
        for item in items:
            if isinstance(item, BadLine):
                laid_out.append((item, Score.error(item.code, item.message), None))
                continue
            produced: list[dict[str, Any]] = []
            laid_out.append((item, self._lane_rows(item, outcomes[position : position + epochs], produced), produced))
            position += epochs
        measured = ExampleBatch.of(
            [row for _, rows, _ in laid_out if isinstance(rows, list) for row in rows if isinstance(row, Example)]
        )
        found = {metric.name: iter(call_metric(metric, measured, None)) for metric in self.metrics}
        return self._chunk_results(laid_out, found)

    def _chunk_results(
        self,
        laid_out: list[tuple[Example | BadLine, list[Example | Score] | Score, list[dict[str, Any]] | None]],
        found: dict[str, Any],
    ) -> list[ExampleResult]:
        """Each line of a chunk with its rows' results: a measured row's from its metric's batch results (in
        order), a failed sample's or an unscored line's score for every metric."""
        order = self.order
        results: list[ExampleResult] = []
        scored_rows = 0  # results that are plain numbers, counted at once (the progress line's "scored")
        count = self.counters.count_result
        for line, line_rows, line_produced in laid_out:
            if isinstance(line_rows, Score):
                results.append(self._unscored(line, line_rows, line_produced))
                continue
            scored: dict[str, list[Any]] = {name: [] for name in order}
            for row in line_rows:
                for name in order:
                    value = next(found[name]) if type(row) is Example else row
                    if type(value) is float:
                        scored_rows += 1
                    else:
                        count(value, 1)
                    scored[name].append(value)
            if line_produced:
                note_truncated(scored, line_produced)
            results.append(ExampleResult(line, len(line_rows), scored, line_produced, {}))
        self._count_scored(scored_rows)
        return results

    def span(self) -> int:
        """How many examples the producer gathers, from consecutive batches, for one :meth:`score_columns` (at
        least one batch, at most :data:`MAX_SPAN`): as many as the lane takes in one hand-off, so that cheap calls
        cross to its thread in runs longer than a batch. Only when :attr:`chunked`."""
        assert self.lane is not None  # chunked implies a lane
        return min(MAX_SPAN, self.lane.column_size() // self.epochs)

    async def score_columns(self, batches: Sequence[ExampleBatch]) -> ScoredColumns:
        """:meth:`score_chunk` of consecutive batches of examples, as columns from the lane (``produce_column``,
        once for them all) to the metrics' batch paths, with no object per example: the same results in the same
        order. Only when :attr:`chunked`."""
        lane, epochs, counters = self.lane, self.epochs, self.counters
        assert lane is not None  # chunked implies a lane
        batch = batches[0] if len(batches) == 1 else ExampleBatch.joined(batches)
        with self.lane_watch:
            records = batch.records if self._shown is None else list(map(self._shown, batch.records))
            produced = await lane.produce_column(batch.ids, records, epochs)
        measured = self._measured_column(batch, produced)
        results = {metric.name: call_metric(metric, measured, None) for metric in self.metrics}
        rows = len(produced.values)
        counters.calls += rows
        if produced.failures:
            results = self._with_failures(results, produced.failures, rows)
        self._count_column_results(results)
        return ScoredColumns(batch, epochs, results, produced, tuple(map(len, batches)))

    def _measured_column(self, batch: ExampleBatch, produced: LaneColumn) -> ExampleBatch:
        """The rows the lane produced an output for, as one batch for the metrics (parsed under ``parse: json``)."""
        epochs, values, failures = self.epochs, produced.values, produced.failures
        outputs = [parse_json_output(value) for value in values] if self.parse_json else values
        if epochs == 1 and not failures:
            return ExampleBatch(ids=batch.ids, lines=batch.lines, records=batch.records, outputs=outputs)
        kept = [row for row in range(len(values)) if row not in failures]
        examples = [row // epochs for row in kept]
        samples = [row % epochs for row in kept]
        return ExampleBatch(
            ids=[batch.ids[index] for index in examples],
            lines=[batch.lines[index] for index in examples],
            records=[batch.records[index] for index in examples],
            outputs=[outputs[row] for row in kept],
            samples=samples if any(samples) else None,
        )

    def _with_failures(
        self, results: dict[str, list[Any]], failures: dict[int, LaneFailure], rows: int
    ) -> dict[str, list[Any]]:
        """Every metric's results on all the rows: a failed call's row is its failure score, for every metric."""
        counters = self.counters
        counters.lane_failures += len(failures)
        scores = {}
        for row, failure in failures.items():
            if failure.attempts:
                counters.retries += _retries(failure.attempts)
            scores[row] = self._failure_score(failure)
        laid: dict[str, list[Any]] = {}
        for name, found in results.items():
            measured_results = iter(found)
            laid[name] = [scores[row] if row in scores else next(measured_results) for row in range(rows)]
        return laid

    def _count_column_results(self, results: dict[str, list[Any]]) -> None:
        count, scored_rows = self.counters.count_result, 0
        for found in results.values():
            if all_of_type(found, float):
                scored_rows += len(found)
                continue
            for value in found:
                if type(value) is float:
                    scored_rows += 1
                else:
                    count(value, 1)
        self._count_scored(scored_rows)

    def _count_scored(self, rows: int) -> None:
        if rows:
            statuses = self.counters.statuses
            statuses["scored"] = statuses.get("scored", 0) + rows

    def _unscored(self, item: Example | BadLine, score: Score, produced: list[dict[str, Any]] | None) -> ExampleResult:
        self.counters.count_result(score, len(self.order))
        return ExampleResult(item, 1, {name: [score] for name in self.order}, produced)

    def _assemble(
        self,
        item: Example | BadLine,
        rows: Sequence[Example | Score],
        per_row: Sequence[tuple[dict[str, Any], dict[str, dict[str, Any]]]],
        produced: list[dict[str, Any]] | None,
    ) -> ExampleResult:
        results: dict[str, list[Any]] = {name: [] for name in self.order}
        judged: dict[str, list[dict[str, Any] | None]] = {name: [] for name in self.judges}
        for row_results, notes in per_row:
            for name in self.order:
                results[name].append(row_results[name])
            for name in self.judges:
                judged[name].append(notes.get(name))
        if produced:
            note_truncated(results, produced)
        return ExampleResult(item, len(rows), results, produced, judged)

    async def _rows(
        self, item: Example | BadLine, produced: list[dict[str, Any]] | None
    ) -> list[Example | Score] | Score:
        """The sample rows of one line: examples carrying an output, or a lane's failure score for that sample."""
        if self.lane is None:
            expanded = expand(item, self.samples, self.sample_count)
            return expanded if isinstance(expanded, Score) else list(expanded)
        if isinstance(item, BadLine):
            return Score.error(item.code, item.message)
        fields = item.fields if self._shown is None else self._shown(item.fields)
        with self.lane_watch:
            if self.epochs == 1:
                outcomes = [await self.lane.produce(item.id, fields, 0)]
            else:
                outcomes = await asyncio.gather(
                    *(self.lane.produce(item.id, fields, sample) for sample in range(self.epochs))
                )
        return self._lane_rows(item, outcomes, produced)

    def _lane_rows(
        self, item: Example, outcomes: Sequence[LaneOutcome], produced: list[dict[str, Any]] | None
    ) -> list[Example | Score]:
        """The sample rows of one example from its lane's outcomes (one per sample, in sample order)."""
        rows: list[Example | Score] = []
        counters, tally, parse = self.counters, self.tallies.get("task"), self.parse_json
        for sample, outcome in enumerate(outcomes):
            counters.calls += 1
            if outcome.attempts:
                counters.retries += _retries(outcome.attempts)
            if isinstance(outcome, self._lane_output):
                counters.cached += outcome.cached
                model_calls = outcome.model_calls
                if tally is not None:
                    if model_calls is None:
                        tally.add(outcome.usage, cached=outcome.cached and not outcome.replayed)
                    else:  # an output several model calls made (an agent's steps): each call counted
                        for usage, cached in model_calls:
                            tally.add(usage, cached=cached)
                output = outcome.value
                if parse:
                    output = parse_json_output(output)
                rows.append(Example(item.id, item.line, item.fields, output, sample))
                if produced is not None:
                    # as produced, before parsing (an answer a json lane could not parse: its text, marked)
                    entry: dict[str, Any] = {"sample": sample, **stored_output(outcome.value, "output")}
                    if outcome.truncated is not None:  # kept only for a cut-off answer: others' rows stay as they were
                        entry["finish_reason"] = outcome.truncated
                    if outcome.tries:
                        entry["attempts"] = outcome.tries
                        if model_calls is not None:
                            entry["calls"] = len(model_calls)
                    produced.append(entry)
            else:
                self.counters.lane_failures += 1
                rows.append(self._failure_score(outcome))
                if produced is not None:
                    failed: dict[str, Any] = {
                        "sample": sample,
                        "error": {"code": outcome.code, "message": outcome.message},
                    }
                    if outcome.tries:
                        failed["attempts"] = outcome.tries
                        if outcome.calls is not None:
                            failed["calls"] = outcome.calls
                    produced.append(failed)
        return rows

    async def _score_row(self, row: Example | Score) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Every metric's result for one sample row, and what each judge said about it."""
        notes: dict[str, dict[str, Any]] = {}
        if isinstance(row, Score):
            self.counters.count_result(row, len(self.order))
            return dict.fromkeys(self.order, row), notes
        found: dict[str, Any] = {}
        loop = asyncio.get_running_loop()
        waiting: list[tuple[str, Awaitable[Any]]] = []
        for name, function, parallel, watch in self.sync:
            watch.enter()
            if parallel and self.pool is not None:
                pooled = loop.run_in_executor(self.pool, function, row)
                pooled.add_done_callback(functools.partial(_left, watch))  # on the loop, like enter
                waiting.append((name, pooled))
            else:
                try:
                    found[name] = function(row)
                finally:
                    watch.leave()
        for name, judge in self.judges.items():
            waiting.append((name, self._judge(judge, row, notes, name)))
        if len(waiting) == 1:
            name, awaitable = waiting[0]
            found[name] = await awaitable
        elif waiting:
            values = await asyncio.gather(*(awaitable for _, awaitable in waiting))
            found.update(zip((name for name, _ in waiting), values, strict=True))
        for name in self.order:
            self.counters.count_result(found[name], 1)
        return found, notes

    async def _judge(self, judge: AsyncScorer, row: Example, notes: dict[str, dict[str, Any]], name: str) -> Score:
        result = await judge.judge(row)
        if result.record is not None:  # several calls (a jury's votes, compared pairs): what they found
            notes[name] = {"label": result.label, **result.record}
            tries = sum(part.tries for part in result.parts)
            if tries:
                notes[name].update(attempts=tries, calls=sum(part.tries > 0 for part in result.parts))
        elif result.raw is not None:
            notes[name] = {"label": result.label, "rationale": result.rationale, "attempts": result.tries}
        elif result.tries:  # the call failed: what it failed with, and how many attempts it took
            diagnostic = result.score.diagnostics[0]
            notes[name] = {"error": {"code": diagnostic.code, "message": diagnostic.message}, "attempts": result.tries}
        for call in result.parts or (result,):
            self.counters.retries += _retries(call.attempts)
            if call.call_id is not None:
                self.counters.calls += 1
                self.counters.cached += call.cached
                self.tallies[name].add(call.usage, cached=call.cached and not call.replayed)
        if not result.score.included and result.score.status is Status.ERROR:
            self.counters.judge_failures += 1
        score: Score = result.score
        return score


__all__ = ["MAX_SPAN", "ExampleResult", "LiveParts", "LiveScorer", "ScoredColumns", "note_truncated", "rows_of"]


def note_truncated(results: dict[str, list[Any]], produced: list[dict[str, Any]]) -> None:
    """Each metric's result on a sample whose answer was cut off at its token limit (``finish_reason`` in its
    ``outputs.jsonl`` entry, ``lanes.chatcall.TRUNCATED``) carries the note ``output_truncated``: the answer is
    scored as it is, a measurement (its value and status unchanged), and the note tells a limit set too low from a
    wrong answer in explain and view. ``produced`` holds one entry per sample row, in order."""
    for row, entry in enumerate(produced):
        reason = entry.get("finish_reason")
        if reason is None:
            continue
        note = Diagnostic(
            code="output_truncated",
            message=f"the answer was cut off at its token limit (finish reason {reason}); scored as it is",
        )
        for found in results.values():
            found[row] = _with_note(found[row], note)


def _with_note(result: Any, note: Diagnostic) -> Score:
    """``result`` (a number or a Score) with ``note`` after its own diagnostics."""
    if not isinstance(result, Score):
        return Score.noted(float(result), note.code, note.message)
    return result.model_copy(update={"diagnostics": (*result.diagnostics, note)})
