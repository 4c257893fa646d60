"""The live producer: outputs produced by a lane and/or graded by LLM judges, concurrently, on one event loop, and
handed to the run sink in dataset order.

Shape of the run (one event loop, one executor, the call cache):

* a **producer** streams the dataset's batches and starts one task per example (per batch when the lane takes
  chunks, or per run of consecutive batches when its calls are cheap: ``LiveScorer.span``), but never more than
  ``window`` examples are started and not yet written (when the lane takes chunks: ``window // BATCH`` tasks, each
  of at most ``MAX_SPAN`` examples), a bounded queue, so memory stays flat however large the dataset is and
  however long one slow example holds up the head of the line; the sink checks a batch's ids for a repeat
  (``RunSink.check_ids``) before any of its tasks starts (a run of batches: together, before its one task, and
  before a line that stops the stream is reported);
* each example task produces its samples through the lane (every call through the run's one executor and cache)
  and scores them (``engine.produce.livescorer``: sync metrics inline, check metrics on the metric threads, judges
  concurrently);
* a **consumer** awaits the example tasks in dataset order (the reorder buffer is the queue itself), gathers a
  batch's lines until its last is in and hands them to the sink as one block, as a recorded run's batch is, so
  ``decide_run``, ``verify`` and the artifacts cannot tell the two producers apart; it writes ``outputs.jsonl``
  (``engine.produce.liveoutputs``) in the same order.

Determinism (what makes ``--resume`` byte-identical): scores depend only on the outputs and answers, which the cache
replays; the written order is the dataset's, whatever the completion order; evidence ids are content addresses. One
exception by design: a judge's answer that is no score on its scale is never kept (``lanes.judge``), so a resumed
run asks that judge again and may score the example where the interrupted run could not.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from evalglass import hostwatch
from evalglass.collector import fewer_collections
from evalglass.core.example import Example, ExampleBatch
from evalglass.engine.datasets.dataset import BATCH, BadLine
from evalglass.engine.datasets.source import DatasetSource
from evalglass.engine.produce.cache import CacheMode, CallCache
from evalglass.engine.produce.cachekey import CACHE_FILE, cache_path
from evalglass.engine.produce.interrupts import LoopStopper
from evalglass.engine.produce.liveoutputs import OutputsWriter
from evalglass.engine.produce.livescorer import ExampleResult, LiveParts, LiveScorer, ScoredColumns, rows_of
from evalglass.engine.produce.metricbuild import build_live_metric
from evalglass.engine.produce.progress import Counters, Reporter
from evalglass.engine.produce.scoring import BuiltMetric, metric_pool
from evalglass.engine.produce.sink import Produced, RunSink
from evalglass.engine.produce.tokens import Tally
from evalglass.engine.spec.config import LoadedConfig
from evalglass.engine.spec.executorspec import RayExecutorSpec
from evalglass.engine.spec.outputfields import stateless_final_state
from evalglass.errors import SetupError
from evalglass.lanes.executor import AsyncioExecutor, EndpointLimit, Executor
from evalglass.lanes.ports import Lane
from evalglass.metrics.base import AsyncScorer

if TYPE_CHECKING:
    from concurrent.futures import Executor as Threads

    from evalglass.engine.produce.raycluster import RayCluster

#: How long closing the lane's and judges' clients may take when the run ends (or is stopped).
_CLOSE_S = 10.0


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


def live_extra_missing(exc: ImportError) -> SetupError:
    from evalglass.dependencies import install_hint

    return SetupError(
        f"live lanes and judges need {exc.name or 'a package'}, which is not installed", fix=install_hint(exc.name)
    )


def _build(loaded: LoadedConfig, executor: Executor, cache: CallCache | None) -> LiveParts:
    """Lane and judges, inside the running loop (their HTTP clients belong to it)."""
    try:
        from evalglass.lanes.base import LaneConfigError
        from evalglass.lanes.registry import build_lane
    except ImportError as exc:
        raise live_extra_missing(exc) from None

    config = loaded.config
    built = LiveParts()
    try:
        if config.lane is not None:
            built.lane_watch = hostwatch.watch(f"{config.lane.type} lane ({config.lane.host_reference()})")
            try:
                ship_async = isinstance(config.executor, RayExecutorSpec) and config.executor.ship_async
                with built.lane_watch:  # building a python lane imports its module: host code runs
                    built.lane = build_lane(
                        config.lane,
                        base_dir=loaded.base_dir,
                        executor=executor,
                        cache=cache,
                        ship_async=ship_async,
                        prices=config.prices,
                    )
            except LaneConfigError as exc:
                raise SetupError(f"task: {exc}", where=str(loaded.path)) from None
            # A lane that says whether its outputs hold a state (an agent's, once its tools are loaded).
            if stateless := stateless_final_state(config.metrics, getattr(built.lane, "keeps_state", True)):
                raise SetupError(stateless, where=str(loaded.path))
        for name, spec in config.metrics.items():
            # built like every metric (engine.produce.metricbuild), here because its clients need the loop
            if spec.live:
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


@dataclass(frozen=True)
class LiveProducer:
    """Scores the dataset with the lane and judges (a ``Producer``, see ``engine.produce.sink``). Ctrl-C propagates as
    KeyboardInterrupt once calls are cancelled; completed calls are already in the cache. Problems that leave the
    scores intact (the call cache could not be written) are appended to ``warnings``, whether the run completes or
    is interrupted."""

    loaded: LoadedConfig
    metrics: list[BuiltMetric]
    folder: Path
    cache_mode: CacheMode
    progress: Reporter | None
    counters: Counters
    run_id: str | None = None
    warnings: list[str] = field(default_factory=list)
    cluster: RayCluster | None = None
    #: The call cache's untrusted entries, once it is closed (see ``CallCache.unvouched``).
    untrusted: list[int] = field(default_factory=list)
    #: The run's count of them over every producer it ran, kept when this one stops early (``engine.jobs.pipeline``).
    untrusted_met: list[int] = field(default_factory=list)

    def produce(self, sink: RunSink) -> Produced:
        reader = DatasetSource(self.loaded, keep=sink.keep)
        if self.progress is not None:
            self.progress.counters = self.counters
        stopper = LoopStopper()
        outputs = OutputsWriter(self.folder)
        tallies: dict[str, Tally] = {}
        try:
            with stopper.installed():
                asyncio.run(self._main(sink, reader, outputs, stopper, tallies))
            dataset = reader.summary()
            notes = reader.notes
            reads = reader.reads()
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
        outputs_sha256 = outputs.commit()
        usage = tuple(tally.summary(self.loaded.config.prices) for tally in tallies.values())
        return Produced(
            dataset=dataset,
            calls=outputs.calls,
            usage=usage,
            untrusted_cache_entries=sum(self.untrusted),
            notes=notes,
            reads=reads,
            outputs_sha256=outputs_sha256,
        )

    async def _main(
        self,
        sink: RunSink,
        reader: DatasetSource,
        outputs: OutputsWriter,
        stopper: LoopStopper,
        tallies: dict[str, Tally],
    ) -> None:
        """The run's loop: its cache, executor, metric threads, lane and judges, opened here and closed whatever
        happens."""
        stopper.attach()
        config = self.loaded.config
        cache = open_cache(self.loaded, self.cache_mode, self.run_id)
        executor = build_executor(self.loaded, self.cluster)
        if self.cluster is not None:
            self.cluster.on_lost = stopper.request_stop  # a lost cluster stops the run the way Ctrl-C does
        self.counters.in_flight = lambda: executor.stats.in_flight
        pool = metric_pool(config, self.metrics)
        parts: LiveParts | None = None
        ticker: asyncio.Task[None] | None = None
        try:
            parts = _build(self.loaded, executor, cache)
            scorer = LiveScorer(self.loaded, self.metrics, parts, self.counters, pool)
            tallies.update(scorer.tallies)
            if self.progress is not None:
                ticker = asyncio.ensure_future(self.progress.run())
            window = max(256, 4 * config.concurrency.max_in_flight)
            with fewer_collections():  # the calls allocate fast; see evalglass/collector.py
                await _score_all(self.loaded, scorer, sink, reader, window, outputs)
        finally:
            await self._close(ticker, parts, executor, pool, cache)

    async def _close(
        self,
        ticker: asyncio.Task[None] | None,
        parts: LiveParts | None,
        executor: AsyncioExecutor,
        pool: Threads | None,
        cache: CallCache | None,
    ) -> None:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        if self.progress is not None:
            self.progress.close()
        if parts is not None:
            with contextlib.suppress(TimeoutError):  # a client that cannot close in time is left to exit
                await asyncio.wait_for(parts.aclose(), _CLOSE_S)
        await executor.aclose()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if cache is not None:
            self.warnings.extend(cache.problems(untrusted=False))  # the run says that once, for every cache
            self.untrusted.append(cache.unvouched)
            self.untrusted_met.append(cache.unvouched)
            cache.close()


#: An example task: one line (or a chunk of lines) as results, or a run of batches as columns.
_Task = asyncio.Task[list[ExampleResult] | ScoredColumns]


async def _score_all(
    loaded: LoadedConfig,
    scorer: LiveScorer,
    sink: RunSink,
    reader: DatasetSource,
    window: int,
    outputs: OutputsWriter,
) -> None:
    """The scoring phase: from the first example started to the last one handed to the sink (see the module
    docstring; ``benchmarks/phase_cpu.py`` times it)."""
    await _Window(scorer, sink, reader, window, outputs).run()


class _Window:
    """Producer/consumer with a bounded, ordered queue of example tasks (see the module docstring)."""

    def __init__(
        self, scorer: LiveScorer, sink: RunSink, reader: DatasetSource, window: int, outputs: OutputsWriter
    ) -> None:
        self.scorer, self.sink, self.reader, self.outputs = scorer, sink, reader, outputs
        self.counters = scorer.counters
        # A task per batch when the lane takes chunks (see LiveScorer.chunked), else one per example.
        self.queue: asyncio.Queue[tuple[_Task, bool] | None] = asyncio.Queue(
            maxsize=max(2, window // BATCH) if scorer.chunked else window
        )
        self.started: set[_Task] = set()
        #: Consecutive batches of examples gathered for one hand-off to a chunked lane (their ids noted, checked
        #: together before the run of batches starts), and how many examples they hold.
        self.gathered: list[ExampleBatch] = []
        self.gathered_examples = 0
        #: The lines of the batch being written, until its last is in (one block, whatever order calls finish in).
        self.pending: list[ExampleResult] = []
        self.names = list(sink.columns)

    async def run(self) -> None:
        producer = asyncio.ensure_future(self._produce())
        consumer = asyncio.ensure_future(self._consume())
        try:
            done, _ = await asyncio.wait({producer, consumer}, return_when=asyncio.FIRST_EXCEPTION)
            for finished in done:
                if finished.exception() is not None:
                    raise finished.exception()  # type: ignore[misc]
            await asyncio.gather(producer, consumer)
        finally:
            pending = [task for task in (producer, consumer, *self.started) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)

    def _settled(self, task: _Task) -> None:
        self.started.discard(task)
        # Marks a failure as seen: the consumer still raises it when it reaches the task, and when the run stops
        # before that (an earlier task failed), asyncio prints no "Task exception was never retrieved" traceback.
        if not task.cancelled():
            task.exception()

    async def _start(self, work: Awaitable[list[ExampleResult] | ScoredColumns], ends_block: bool) -> None:
        task = asyncio.ensure_future(work)
        self.started.add(task)
        task.add_done_callback(self._settled)
        await self.queue.put((task, ends_block))

    async def _one(self, item: Example | BadLine) -> list[ExampleResult]:
        return [await self.scorer.score(item)]

    async def _produce(self) -> None:
        batches = self.reader.batches()  # a block of scores.jsonl each, whichever way its lines are scored
        while True:
            try:
                batch = next(batches, None)
            except Exception:
                # A line that stops the stream: a repeated id read before it is refused first, as when each batch
                # was checked as it came.
                self.sink.check_ids()
                raise
            if batch is None:
                break
            await self._take(batch)
        if self.gathered:
            await self._start_gathered()
        await self.queue.put(None)

    async def _take(self, batch: ExampleBatch | list[Example | BadLine]) -> None:
        """Start the tasks of one batch, after its ids are checked (a repeated id is refused before that line's
        calls are made), or gather it into the next run of batches."""
        scorer, sink = self.scorer, self.sink
        if scorer.chunked and isinstance(batch, ExampleBatch):
            self.gathered.append(batch)
            self.gathered_examples += len(batch)
            sink.note_ids(batch)
            if self.gathered_examples + BATCH > scorer.span():
                await self._start_gathered()
            return
        if self.gathered:
            await self._start_gathered()
        sink.note_ids(batch)
        sink.check_ids()
        if not scorer.chunked:
            items = batch.examples() if isinstance(batch, ExampleBatch) else batch
            for position, item in enumerate(items):
                await self._start(self._one(item), position == len(items) - 1)
        elif batch:  # lines as objects (a malformed one among them): one chunk
            await self._start(scorer.score_chunk(cast(list[Example | BadLine], batch)), True)

    async def _start_gathered(self) -> None:
        self.sink.check_ids()
        gathered, self.gathered, self.gathered_examples = self.gathered, [], 0
        await self._start(self.scorer.score_columns(gathered), True)

    async def _consume(self) -> None:
        sink, outputs, counters = self.sink, self.outputs, self.counters
        while (entry := await self.queue.get()) is not None:
            task, ends_block = entry
            scored = await task
            if isinstance(scored, ScoredColumns):
                sink.add(scored.rows())
                outputs.write_columns(scored)
                counters.done += len(scored.batch)
                continue
            self.pending += scored
            counters.done += len(scored)
            if ends_block:
                pending, self.pending = self.pending, []
                sink.add(rows_of(pending, self.names))
                outputs.write_many(pending)


__all__ = [
    "CACHE_FILE",
    "LiveProducer",
    "build_executor",
    "cache_path",
    "live_extra_missing",
    "open_cache",
]
