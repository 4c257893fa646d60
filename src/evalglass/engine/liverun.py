"""The live run: outputs produced by a lane and/or graded by LLM judges, concurrently, written in dataset order.

Shape of the pipeline (one event loop):

* a **producer** streams the dataset's batches and starts one task per example (per batch when the lane takes
  chunks, or per run of consecutive batches when its calls are cheap: :meth:`LiveScorer.span`), but never more than
  ``window`` examples are started and not yet written (when the lane takes chunks: ``window // BATCH`` tasks, each
  of at most :data:`MAX_SPAN` examples), a bounded queue, so memory stays flat however large the dataset is and
  however long one slow example holds up the head of the line; a batch's ids are checked for a repeat (one hash per
  id kept, :mod:`evalglass.engine.seenids`) before any of its tasks starts (a run of batches: together, before its
  one task, and before a line that stops the stream is reported);
* each example task produces its samples through the lane (every call through the run's one executor and cache),
  scores them with the synchronous metrics inline (check metrics, which start processes, on a thread pool) and with
  the judges concurrently;
* a **consumer** awaits the example tasks in dataset order (the reorder buffer is the queue itself) and appends to
  the same compact columns, ``RowShape`` and scores sink (``sink.ScoresSink``) the recorded path uses, one block
  per batch of dataset lines as the recorded path writes, so ``decide_run``, ``verify`` and the artifacts cannot
  tell the two paths apart.

A failed lane call makes every metric of that sample ``error`` with the lane's diagnostic; a failed judge call makes
that judge's score ``error``. The run goes on; nothing becomes 0.0.

Determinism (what makes ``--resume`` byte-identical): scores depend only on the outputs and answers, which the cache
replays; the written order is the dataset's, whatever the completion order; evidence ids are content addresses.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import hostwatch, redaction
from evalglass.collector import fewer_collections
from evalglass.core.columns import ScoreColumn
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.outputparse import parse_json_output
from evalglass.core.score import Score, Status
from evalglass.core.scorecard import CallTotals, count_call_attempts
from evalglass.core.uniform import all_of_type
from evalglass.engine.cache import CacheMode, CallCache
from evalglass.engine.config import LoadedConfig
from evalglass.engine.dataset import BATCH, BadLine
from evalglass.engine.datasetfile import open_reader
from evalglass.engine.executorspec import RayExecutorSpec
from evalglass.engine.interrupts import LoopStopper
from evalglass.engine.metricbuild import build_live_metric
from evalglass.engine.progress import Counters, Reporter
from evalglass.engine.runfolder import PartialFile
from evalglass.engine.seenids import SeenIds
from evalglass.engine.sink import (
    BuiltMetric,
    RowShape,
    Scored,
    ScoresSink,
    append_result,
    append_results,
    call_metric,
    cluster_key,
    expand,
    guard,
    metric_pool,
    metric_workers,
    new_row_shape,
    refuse_first_repeat,
)
from evalglass.engine.source import DatasetSource
from evalglass.engine.tokens import Tally
from evalglass.errors import SetupError
from evalglass.hostwatch import Watch
from evalglass.lanes.executor import AsyncioExecutor, EndpointLimit, Executor
from evalglass.lanes.ports import Lane, LaneColumn, LaneOutcome, LaneOutput, failure_score
from evalglass.lanes.retry import Attempt
from evalglass.metrics.base import AsyncScorer

if TYPE_CHECKING:
    from evalglass.engine.raycluster import RayCluster

CACHE_FILE = ".evalglass-cache.sqlite"
#: Examples gathered for one hand-off to a chunked lane at most (see LiveScorer.span): eight batches, so that the
#: lines started and not yet written stay a few thousand however cheap the calls are (sixteen measured no faster at
#: 1,000,000 examples and kept 3 MB more in flight; see BENCHMARKS.md, issue 17, session 5).
MAX_SPAN = 8 * BATCH
#: How long closing the lane's and judges' clients may take when the run ends (or is stopped).
_CLOSE_S = 10.0


def cache_path(loaded: LoadedConfig) -> Path:
    return loaded.base_dir / CACHE_FILE


def open_cache(loaded: LoadedConfig, mode: CacheMode, run: str | None = None) -> CallCache | None:
    """The run's call cache (None when the run uses none); ``CacheUnavailable`` (exit 2, one line) when it cannot
    be opened for writing. ``run`` (the run's id) stamps what it puts, so a resumed run can tell its own calls
    apart."""
    if mode is CacheMode.OFF or not loaded.config.uses_call_cache:
        return None
    return CallCache(cache_path(loaded), mode, run=run)


def build_executor(loaded: LoadedConfig, cluster: RayCluster | None = None) -> AsyncioExecutor:
    """The run's executor: its limits from ``concurrency:``; with a cluster, lanes ship their calls through it."""
    limits = loaded.config.concurrency
    overrides = {
        key: EndpointLimit(key=key, concurrency=entry.max_in_flight, rpm=entry.rpm)
        for key, entry in limits.endpoints.items()
    }
    executor = AsyncioExecutor(limits.max_in_flight, rpm=limits.rpm, endpoints=overrides)
    executor.offload = cluster
    return executor


@dataclass(frozen=True, slots=True)
class ExampleResult:
    """One dataset line, scored: per metric, one result per sample row (a float or a Score); and what the lane
    produced and the judges said, for ``outputs.jsonl``."""

    item: Example | BadLine
    rows: int
    results: dict[str, list[Any]]
    produced: list[dict[str, Any]] | None = None
    judged: dict[str, list[dict[str, Any] | None]] | None = None


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


OUTPUTS_FILE = "outputs.jsonl"


class OutputsWriter:
    """``outputs.jsonl``: per example, each sample's output (or why there is none) and each judge's label and
    rationale, in dataset order. Scores say how good an output was; this file says what it was. Written like
    ``scores.jsonl`` (hidden partial file, renamed on commit, 0600) and holding nothing time- or cache-dependent,
    so a resumed run writes the same bytes."""

    def __init__(self, folder: Path) -> None:
        self.final = folder / OUTPUTS_FILE
        self._file = PartialFile(self.final, buffering=1 << 20)
        self._redactor = redaction.current()
        self._calls = self._attempts = 0

    @property
    def calls(self) -> CallTotals:
        return CallTotals(calls=self._calls, attempts=self._attempts)

    def write(self, result: ExampleResult) -> None:
        self.write_many([result])

    def write_many(self, results: Sequence[ExampleResult]) -> None:
        """Each result's row, in order, redacted and written at once (no secret's JSON form holds a raw newline, so
        none can straddle two rows)."""
        self._file.write(self._redactor.json_bytes(b"".join(map(self._row, results))))

    def write_columns(self, scored: ScoredColumns) -> None:
        """Each example's row of a batch scored as columns: the bytes :meth:`write_many` writes for the same
        outcomes (a lane whose outputs carry nothing but their value: no ``attempts`` but a failure's)."""
        batch, epochs = scored.batch, scored.epochs
        values, failures = scored.produced.values, scored.produced.failures
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        if epochs == 1 and not failures and _fit_in_rows(values):
            # The common case, as orjson writes ``{"id": .., "line": .., "samples": [{"sample": 0, "output": ..}]}``
            # (compact, keys in that order), from each id and output encoded alone: a tenth of building the dicts.
            data = b"".join(
                [
                    b'{"id":%b,"line":%d,"samples":[{"sample":0,"output":%b}]}\n' % row
                    for row in zip(map(dumps, batch.ids), batch.lines, map(dumps, values), strict=True)
                ]
            )
            self._file.write(self._redactor.json_bytes(data))
            return
        if epochs == 1 and not failures:
            rows = [
                {"id": example_id, "line": line, "samples": [{"sample": 0, "output": value}]}
                for example_id, line, value in zip(batch.ids, batch.lines, values, strict=True)
            ]
        else:
            rows = []
            for index, (example_id, line) in enumerate(zip(batch.ids, batch.lines, strict=True)):
                samples: list[dict[str, Any]] = []
                for row in range(index * epochs, (index + 1) * epochs):
                    failure, sample = failures.get(row), row - index * epochs
                    if failure is None:
                        samples.append({"sample": sample, "output": values[row]})
                        continue
                    entry: dict[str, Any] = {
                        "sample": sample,
                        "error": {"code": failure.code, "message": failure.message},
                    }
                    if failure.tries:
                        entry["attempts"] = failure.tries
                        self._calls += 1
                        self._attempts += failure.tries
                    samples.append(entry)
                rows.append({"id": example_id, "line": line, "samples": samples})
        try:
            data = b"".join([dumps(row, option=newline) for row in rows])
        except TypeError:  # an output orjson refuses here: written the way write_many writes it
            data = b"".join(self._row_bytes(row) for row in rows)
        self._file.write(self._redactor.json_bytes(data))

    def _row(self, result: ExampleResult) -> bytes:
        row: dict[str, Any] = {"id": result.item.id, "line": result.item.line}
        if isinstance(result.item, BadLine):
            row["error"] = {"code": result.item.code, "message": result.item.message}
        if result.produced is not None:
            row["samples"] = result.produced
        if result.judged:
            row["judges"] = result.judged
        calls, attempts = count_call_attempts(row)
        self._calls += calls
        self._attempts += attempts
        return self._row_bytes(row)

    @staticmethod
    def _row_bytes(row: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # lanes refuse outputs that are not JSON; never a repr (its bytes differ between runs)
            row["samples"] = [_storable(sample) for sample in row.get("samples") or ()]
            return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)

    def commit(self) -> None:
        self._file.commit()

    def abort(self) -> None:
        self._file.abort()


def _fit_in_rows(values: list[Any]) -> bool:
    """Whether orjson writes every value where it sits in an ``outputs.jsonl`` row, three containers deep (a value
    that is JSON alone can be too deeply nested for that: its row then says so, see ``OutputsWriter._row_bytes``)."""
    try:
        orjson.dumps([[values]])
    except TypeError:
        return False
    return True


def _storable(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample, or what it failed with, checked where it sits in its row (two containers deep): an output nested
    just short of orjson's limit is JSON alone but not in the row, which must then say so rather than fail."""
    try:
        orjson.dumps([[sample]])
    except TypeError as exc:
        return {"sample": sample.get("sample"), "error": {"code": "output_unserialisable", "message": str(exc)}}
    return sample


@dataclass
class _Built:
    lane: Lane | None = None
    judges: dict[str, AsyncScorer] = field(default_factory=dict)
    #: What the supervisor names when the process dies while the lane's calls are in flight.
    lane_watch: Watch | None = None

    async def aclose(self) -> None:
        closers = [self.lane.aclose()] if self.lane is not None else []
        closers.extend(judge.aclose() for judge in self.judges.values())
        await asyncio.gather(*closers, return_exceptions=True)


def live_extra_missing(exc: ImportError) -> SetupError:
    from evalglass.dependencies import install_hint

    return SetupError(
        f"live lanes and judges need {exc.name or 'a package'}, which is not installed", fix=install_hint(exc.name)
    )


def _build(loaded: LoadedConfig, executor: Executor, cache: CallCache | None) -> _Built:
    """Lane and judges, inside the running loop (their HTTP clients belong to it)."""
    try:
        from evalglass.lanes.base import LaneConfigError
        from evalglass.lanes.registry import build_lane
    except ImportError as exc:
        raise live_extra_missing(exc) from None

    config = loaded.config
    built = _Built()
    try:
        if config.lane is not None:
            built.lane_watch = hostwatch.watch(f"{config.lane.type} lane ({config.lane.host_reference()})")
            try:
                ship_async = isinstance(config.executor, RayExecutorSpec) and config.executor.ship_async
                with built.lane_watch:  # building a python lane imports its module: host code runs
                    built.lane = build_lane(
                        config.lane, base_dir=loaded.base_dir, executor=executor, cache=cache, ship_async=ship_async
                    )
            except LaneConfigError as exc:
                raise SetupError(f"task: {exc}", where=str(loaded.path)) from None
        for name, spec in config.metrics.items():
            if spec.live:  # built like every metric (engine.metricbuild), here because its clients need the loop
                built.judges[name] = build_live_metric(loaded, name, executor, cache)
    except BaseException as exc:
        # Whatever was built before the failure holds open clients.
        closers: list[Lane | AsyncScorer] = [built.lane] if built.lane is not None else []
        closers.extend(built.judges.values())
        for item in closers:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().create_task(item.aclose())
        if isinstance(exc, ImportError):
            # A lane or judge imports its client's packages when it is built (the chat lane: the openai SDK,
            # aiohttp). Host code's own import errors never arrive here: loading it turns them into LaneConfigError.
            raise live_extra_missing(exc) from None
        raise
    return built


def _left(watch: Watch, _: object) -> None:
    watch.leave()


def _retries(attempts: Sequence[Attempt]) -> int:
    return max(0, len(attempts) - 1)


class LiveScorer:
    """Scores one dataset line at a time; shared by every example task of the run."""

    def __init__(
        self,
        loaded: LoadedConfig,
        metrics: list[BuiltMetric],
        built: _Built,
        counters: Counters,
        pool: ThreadPoolExecutor | None,
    ) -> None:
        config = loaded.config
        self.order = list(config.metrics)
        self.metrics = metrics
        self.sync = [
            (metric.name, guard(metric.name, metric.function), metric.parallel, metric.watch) for metric in metrics
        ]
        self.lane = built.lane
        self.lane_watch = built.lane_watch or hostwatch.watch("the task lane")
        self.judges = built.judges
        self.samples = config.samples
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
        jobs = [
            (item.id, item.fields, sample) for item in items if isinstance(item, Example) for sample in range(epochs)
        ]
        with self.lane_watch:
            outcomes = await lane.produce_many(jobs) if jobs else []
        laid_out: list[tuple[Example | BadLine, list[Example | Score] | Score, list[dict[str, Any]] | None]] = []
        measurable: list[Example] = []
        position = 0
        for item in items:
            if isinstance(item, BadLine):
                laid_out.append((item, Score.error(item.code, item.message), None))
                continue
            produced: list[dict[str, Any]] = []
            rows = self._lane_rows(item, outcomes[position : position + epochs], produced)
            position += epochs
            measurable.extend(row for row in rows if isinstance(row, Example))
            laid_out.append((item, rows, produced))
        measured = ExampleBatch.of(measurable)
        found = {metric.name: iter(call_metric(metric, measured, None)) for metric in self.metrics}
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
            results.append(ExampleResult(line, len(line_rows), scored, line_produced, {}))
        if scored_rows:
            statuses = self.counters.statuses
            statuses["scored"] = statuses.get("scored", 0) + scored_rows
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
            produced = await lane.produce_column(batch.ids, batch.records, epochs)
        values, failures = produced.values, produced.failures
        outputs = [parse_json_output(value) for value in values] if self.parse_json else values
        rows = len(values)
        if epochs == 1 and not failures:
            measured = ExampleBatch(ids=batch.ids, lines=batch.lines, records=batch.records, outputs=outputs)
        else:
            kept = [row for row in range(rows) if row not in failures]
            examples = [row // epochs for row in kept]
            samples = [row % epochs for row in kept]
            measured = ExampleBatch(
                ids=[batch.ids[index] for index in examples],
                lines=[batch.lines[index] for index in examples],
                records=[batch.records[index] for index in examples],
                outputs=[outputs[row] for row in kept],
                samples=samples if any(samples) else None,
            )
        results = {metric.name: call_metric(metric, measured, None) for metric in self.metrics}
        counters.calls += rows
        if failures:
            counters.lane_failures += len(failures)
            scores = {}
            for row, failure in failures.items():
                if failure.attempts:
                    counters.retries += _retries(failure.attempts)
                scores[row] = self._failure_score(failure)
            for name, found in results.items():
                measured_results = iter(found)
                results[name] = [scores[row] if row in scores else next(measured_results) for row in range(rows)]
        count, scored_rows = counters.count_result, 0
        for found in results.values():
            if all_of_type(found, float):
                scored_rows += len(found)
                continue
            for value in found:
                if type(value) is float:
                    scored_rows += 1
                else:
                    count(value, 1)
        if scored_rows:
            statuses = counters.statuses
            statuses["scored"] = statuses.get("scored", 0) + scored_rows
        return ScoredColumns(batch, epochs, results, produced, tuple(map(len, batches)))

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
        return ExampleResult(item, len(rows), results, produced, judged)

    async def _rows(
        self, item: Example | BadLine, produced: list[dict[str, Any]] | None
    ) -> list[Example | Score] | Score:
        """The sample rows of one line: examples carrying an output, or a lane's failure score for that sample."""
        if self.lane is None:
            expanded = expand(item, self.samples)
            return expanded if isinstance(expanded, Score) else list(expanded)
        if isinstance(item, BadLine):
            return Score.error(item.code, item.message)
        with self.lane_watch:
            if self.epochs == 1:
                outcomes = [await self.lane.produce(item.id, item.fields, 0)]
            else:
                outcomes = await asyncio.gather(
                    *(self.lane.produce(item.id, item.fields, sample) for sample in range(self.epochs))
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
                if tally is not None:
                    tally.add(outcome.usage, cached=outcome.cached and not outcome.replayed)
                output = outcome.value
                if parse:
                    output = parse_json_output(output)
                rows.append(Example(item.id, item.line, item.fields, output, sample))
                if produced is not None:
                    # as produced, before parsing
                    entry: dict[str, Any] = {"sample": sample, "output": outcome.value}
                    if outcome.tries:
                        entry["attempts"] = outcome.tries
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
        if result.raw is not None:
            notes[name] = {"label": result.label, "rationale": result.rationale, "attempts": result.tries}
        elif result.tries:  # the call failed: what it failed with, and how many attempts it took
            diagnostic = result.score.diagnostics[0]
            notes[name] = {"error": {"code": diagnostic.code, "message": diagnostic.message}, "attempts": result.tries}
        self.counters.retries += _retries(result.attempts)
        if result.call_id is not None:
            self.counters.calls += 1
            self.counters.cached += result.cached
            self.tallies[name].add(result.usage, cached=result.cached and not result.replayed)
        if not result.score.included and result.score.status is Status.ERROR:
            self.counters.judge_failures += 1
        score: Score = result.score
        return score


async def _score_all(
    loaded: LoadedConfig,
    scorer: LiveScorer,
    writer: ScoresSink,
    columns: dict[str, ScoreColumn],
    shape: RowShape,
    reader: DatasetSource,
    window: int,
    outputs: OutputsWriter,
) -> None:
    """Producer/consumer with a bounded, ordered queue of example tasks (see the module docstring)."""
    # A task per batch when the lane takes chunks (see LiveScorer.chunked), else one per example as before.
    chunked = scorer.chunked
    queue: asyncio.Queue[tuple[asyncio.Task[list[ExampleResult] | ScoredColumns], bool] | None] = asyncio.Queue(
        maxsize=max(2, window // BATCH) if chunked else window
    )
    started: set[asyncio.Task[list[ExampleResult] | ScoredColumns]] = set()
    counters = scorer.counters

    def _settled(task: asyncio.Task[list[ExampleResult] | ScoredColumns]) -> None:
        started.discard(task)
        # Marks a failure as seen: the consumer still raises it when it reaches the task, and when the run stops
        # before that (an earlier task failed), asyncio prints no "Task exception was never retrieved" traceback.
        if not task.cancelled():
            task.exception()

    async def one(item: Example | BadLine) -> list[ExampleResult]:
        return [await scorer.score(item)]

    async def start(work: Awaitable[list[ExampleResult] | ScoredColumns], ends_block: bool) -> None:
        task = asyncio.ensure_future(work)
        started.add(task)
        task.add_done_callback(_settled)
        await queue.put((task, ends_block))

    async def produce() -> None:
        # A repeated id is refused before that line's calls are made, from 16 bytes per id (see engine.seenids).
        seen = SeenIds(expected=counters.total or 0)
        # Consecutive batches of examples gathered for one hand-off to a chunked lane, and their ids' hashes, checked
        # at once before the run of batches starts (so that the id table is asked once per run, not per batch).
        gathered: list[ExampleBatch] = []
        hashes: list[int] = []

        def check(found: list[int], last: int) -> None:
            if seen.add(found):  # maybe: the lines so far are read again, which names both lines or finds none
                refuse_first_repeat(open_reader(loaded), reader.path, until=last)

        async def start_gathered() -> None:
            nonlocal gathered, hashes
            check(hashes, gathered[-1].lines[-1])
            run, gathered, hashes = gathered, [], []
            await start(scorer.score_columns(run), True)

        batches = reader.batches()  # a block of scores.jsonl each, whichever way its lines are scored
        while True:
            try:
                batch = next(batches, None)
            except Exception:
                # A line that stops the stream: a repeated id read before it is refused first, as when each batch
                # was checked as it came.
                if gathered:
                    check(hashes, gathered[-1].lines[-1])
                raise
            if batch is None:
                break
            if chunked and isinstance(batch, ExampleBatch):
                gathered.append(batch)
                hashes += map(hash, batch.ids)
                if len(hashes) + BATCH > scorer.span():
                    await start_gathered()
                continue
            if gathered:
                await start_gathered()
            if isinstance(batch, ExampleBatch):
                check(list(map(hash, batch.ids)), batch.lines[-1])
            else:
                check([hash(item.id) for item in batch], batch[-1].line if batch else 0)
            if not chunked:
                items = batch.examples() if isinstance(batch, ExampleBatch) else batch
                for position, item in enumerate(items):
                    await start(one(item), position == len(items) - 1)
            elif not isinstance(batch, ExampleBatch) and batch:  # (an ExampleBatch was gathered above)
                await start(scorer.score_chunk(batch), True)
        if gathered:
            await start_gathered()
        await queue.put(None)

    block = _Block(list(columns), shape.cluster_of is not None)

    def add_results(results: list[ExampleResult]) -> None:
        samples, cluster_of, names = shape.samples, shape.cluster_of, block.names
        if samples:
            encoded = [
                [[append_result(columns[name], name, value) for value in result.results[name]] for name in names]
                for result in results
            ]
        else:  # one row per example: each metric's rows go into its column at once
            by_metric = [
                append_results(columns[name], name, [result.results[name][0] for result in results]) for name in names
            ]
            encoded = [[[values[index]] for values in by_metric] for index in range(len(results))]
        for result, entries in zip(results, encoded, strict=True):
            item = result.item
            cluster = None
            if cluster_of is not None and isinstance(item, Example):
                cluster = cluster_key(cluster_of(item.fields))
            shape.add_example(result.rows, cluster)
            block.add(item.id, item.line, [entry if samples else entry[0] for entry in entries], cluster)
        outputs.write_many(results)

    def write_columns(scored: ScoredColumns) -> None:
        batch, epochs = scored.batch, scored.epochs
        clusters = None
        if shape.cluster_of is not None:
            cluster_of = shape.cluster_of
            clusters = [cluster_key(cluster_of(record)) for record in batch.records]
        scores: dict[str, list[Any]] = {}
        for name in block.names:
            encoded = append_results(columns[name], name, scored.results[name])
            if shape.samples:
                encoded = [encoded[start : start + epochs] for start in range(0, len(encoded), epochs)]
            scores[name] = encoded
        if shape.samples:
            for index in range(len(batch)):
                shape.add_example(epochs, clusters[index] if clusters is not None else None)
        else:
            shape.add_single_rows(len(batch), clusters)
        first = 0
        for size in scored.blocks:  # one block per batch of dataset lines, as if each had been scored alone
            end = first + size
            block_scores = {name: encoded[first:end] for name, encoded in scores.items()}
            block_clusters = clusters[first:end] if clusters is not None else None
            writer.write_block(batch.ids[first:end], batch.lines[first:end], block_scores, block_clusters)
            first = end
        outputs.write_columns(scored)

    async def consume() -> None:
        while (entry := await queue.get()) is not None:
            task, ends_block = entry
            scored = await task
            if isinstance(scored, ScoredColumns):
                write_columns(scored)
                counters.done += len(scored.batch)
                continue
            add_results(scored)
            counters.done += len(scored)
            if ends_block:
                block.write(writer)

    producer = asyncio.ensure_future(produce())
    consumer = asyncio.ensure_future(consume())
    try:
        done, _ = await asyncio.wait({producer, consumer}, return_when=asyncio.FIRST_EXCEPTION)
        for finished in done:
            if finished.exception() is not None:
                raise finished.exception()  # type: ignore[misc]
        await asyncio.gather(producer, consumer)
    finally:
        pending = [task for task in (producer, consumer, *started) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


class _Block:
    """The scores of one batch of dataset lines, gathered example by example until the batch's last is in: one
    block of ``scores.jsonl`` per batch, as a recorded run writes, whichever order calls finish in and however the
    lines were scored (so a resumed run, or one that takes another path, writes the same bytes)."""

    def __init__(self, names: list[str], clustered: bool) -> None:
        self.names = names
        self._clustered = clustered
        self._reset()

    def _reset(self) -> None:
        self._ids: list[str] = []
        self._lines: list[int] = []
        self._scores: list[list[Any]] = [[] for _ in self.names]
        self._clusters: list[str | None] = []

    def add(self, example_id: str, line: int, entries: list[Any], cluster: str | None) -> None:
        self._ids.append(example_id)
        self._lines.append(line)
        for column, entry in zip(self._scores, entries, strict=True):
            column.append(entry)
        self._clusters.append(cluster)

    def write(self, writer: ScoresSink) -> None:
        scores = dict(zip(self.names, self._scores, strict=True))
        writer.write_block(self._ids, self._lines, scores, self._clusters if self._clustered else None)
        self._reset()


def score_live(
    loaded: LoadedConfig,
    metrics: list[BuiltMetric],
    writer: ScoresSink,
    folder: Path,
    *,
    cache_mode: CacheMode,
    progress: Reporter | None,
    counters: Counters,
    run_id: str | None = None,
    warnings: list[str] | None = None,
    cluster: RayCluster | None = None,
) -> Scored:
    """Score the dataset with the lane and judges. Ctrl-C propagates as KeyboardInterrupt once calls are cancelled;
    completed calls are already in the cache. Problems that leave the scores intact (the call cache could not be
    written) are appended to ``warnings``, whether the run completes or is interrupted."""
    config = loaded.config
    reader = DatasetSource(loaded)
    columns = {name: ScoreColumn() for name in config.metrics}
    shape = new_row_shape(config)
    if progress is not None:
        progress.counters = counters

    stopper = LoopStopper()

    async def main() -> None:
        stopper.attach()
        cache = open_cache(loaded, cache_mode, run_id)
        executor = build_executor(loaded, cluster)
        if cluster is not None:
            cluster.on_lost = stopper.request_stop  # a lost cluster stops the run the way Ctrl-C does
        counters.in_flight = lambda: executor.stats.in_flight
        pool = None
        if any(metric.parallel for metric in metrics):
            workers = metric_workers(config)
            pool = metric_pool(config) if config.shipped_metrics else ThreadPoolExecutor(max_workers=workers)
        built: _Built | None = None
        ticker: asyncio.Task[None] | None = None
        try:
            built = _build(loaded, executor, cache)
            scorer = LiveScorer(loaded, metrics, built, counters, pool)
            tallies.update(scorer.tallies)
            if progress is not None:
                ticker = asyncio.ensure_future(progress.run())
            window = max(256, 4 * config.concurrency.max_in_flight)
            with fewer_collections():  # the calls allocate fast; see evalglass/collector.py
                await _score_all(loaded, scorer, writer, columns, shape, reader, window, outputs)
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            if progress is not None:
                progress.close()
            if built is not None:
                with contextlib.suppress(TimeoutError):  # a client that cannot close in time is left to exit
                    await asyncio.wait_for(built.aclose(), _CLOSE_S)
            await executor.aclose()
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            if cache is not None:
                if warnings is not None:
                    warnings.extend(cache.problems())
                cache.close()

    tallies: dict[str, Tally] = {}
    outputs = OutputsWriter(folder)
    try:
        with stopper.installed():
            asyncio.run(main())
        dataset = reader.summary()
    except asyncio.CancelledError:
        outputs.abort()
        if stopper.signals:  # SIGINT or SIGTERM: an interrupted run, resumable
            raise KeyboardInterrupt from None
        raise
    except BaseException:
        outputs.abort()
        raise
    finally:
        reader.close()
    outputs.commit()
    scores_sha256 = writer.commit()
    usage = tuple(tally.summary(config.prices) for tally in tallies.values())
    return Scored(
        columns=columns,
        shape=shape,
        dataset=dataset,
        scores_sha256=scores_sha256,
        calls=outputs.calls,
        usage=usage,
    )
