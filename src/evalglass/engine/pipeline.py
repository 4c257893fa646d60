"""One run: stream the dataset, score every example, decide, write artifacts.

The loop keeps no per-example objects: the dataset comes in batches of parallel lists (``ExampleBatch``), scores go
into compact columns and each batch is written to ``scores.jsonl`` as one block.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shutil
import threading
import traceback
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import numpy as np
import orjson

from evalglass import __version__, redaction
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.checks import CheckResult
from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import GateInput, MetricInput, RunShape, decide_run
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import JUDGES_JSON, UnparsedOutput
from evalglass.core.runrecord import SCORES_FILE, BaselineRecord, RunRecord
from evalglass.core.score import Score, ScoreContractError, Status
from evalglass.core.scorecard import CallTotals, CheckSummary, DatasetSummary, Scorecard
from evalglass.core.usage import TokenUsage
from evalglass.engine.artifacts import (
    CHECKS_FILE,
    LAST_RUN_POINTER,
    REPORT_FILE,
    RUNRECORD_FILE,
    SCORECARD_FILE,
    ScoresWriter,
    score_to_json,
    write_atomic,
    write_model,
    write_text,
)
from evalglass.engine.config import Config, LoadedConfig, config_as_recorded, load_config
from evalglass.engine.dataset import BadLine, field_getter
from evalglass.engine.digests import private_key, signing_key_from_env, write_digests
from evalglass.engine.executorspec import RayExecutorSpec
from evalglass.engine.ledger import LoadedLedger, check_against_config, load_ledger
from evalglass.engine.runfolder import locked, make_dirs, open_private, writing
from evalglass.engine.staleness import stale_causes
from evalglass.errors import Interrupted, SetupError
from evalglass.lanes.shipping import ClusterLost
from evalglass.metrics.base import BatchedMetric, MetricFn, build_with_batch
from evalglass.metrics.check import CheckMetricSpec, CheckSink
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.llm_judge import LlmJudgeSpec

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from evalglass.core.comparative import ComparativeInputs
    from evalglass.engine.cache import CacheMode
    from evalglass.engine.manifest import RunManifest
    from evalglass.engine.progress import Counters
    from evalglass.engine.raycluster import RayCluster


@dataclass(frozen=True)
class RunOutcome:
    folder: Path
    scorecard: Scorecard
    record: RunRecord
    #: Problems that did not touch the verdict or the artifacts (the command line prints them on stderr).
    warnings: tuple[str, ...] = ()


def new_run_id(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def default_run_folder(run_id: str) -> Path:
    return Path(".evalglass") / "runs" / run_id


@dataclass(frozen=True)
class BuiltMetric:
    name: str
    function: MetricFn
    parallel: bool


class CheckRecordWriter:
    """Appends every per-example check record to ``checks.jsonl`` (thread-safe: checks finish concurrently)."""

    def __init__(self, folder: Path) -> None:
        self.final = folder / CHECKS_FILE
        self.partial = self.final
        self._lock = threading.Lock()
        self._handle: IO[bytes] | None = None
        self._redactor = redaction.current()

    def __call__(self, result: CheckResult) -> None:
        line = self._redactor.json_bytes(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_APPEND_NEWLINE))
        with self._lock:
            if self._handle is None:
                self.partial, fd = open_private(self.final)
                self._handle = os.fdopen(fd, "wb")
            self._handle.write(line)

    def commit(self) -> None:
        """Publish the records (only when a per-example check ran at all)."""
        if self._handle is not None:
            self._handle.close()
            os.replace(self.partial, self.final)

    def abort(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):  # closing flushes, which fails again on a full disk
                self._handle.close()
            with contextlib.suppress(FileNotFoundError):
                self.partial.unlink()


def build_metrics(
    loaded: LoadedConfig, check_sink: CheckSink | None = None, cluster: RayCluster | None = None
) -> list[BuiltMetric]:
    """The synchronous metrics, built once. LLM judges are asynchronous: the live run builds them in its loop.
    With a ``cluster``, the metrics it ships (host ``python`` and ``check`` metrics) are built to run there, and
    run concurrently across examples like any metric that waits on something outside the process."""
    built: list[BuiltMetric] = []
    config = loaded.config
    shipped = config.shipped_metrics if cluster is not None else set()
    for name, spec in config.metrics.items():
        if isinstance(spec, LlmJudgeSpec):
            continue
        try:
            if name in shipped:
                from evalglass.engine.raycluster import build_shipped_metric

                assert cluster is not None
                built.append(BuiltMetric(name, build_shipped_metric(cluster, loaded, name, check_sink), True))
                continue
            if isinstance(spec, CheckMetricSpec):
                function = spec.build_check(config.checks[spec.check], loaded.base_dir, check_sink)
            else:
                function = build_with_batch(spec, spec.build(loaded.base_dir))
        except MetricLoadError as exc:
            raise SetupError(f"metric '{name}': {exc}", where=str(loaded.path)) from None
        if config.parse_json:
            function = guard_unparsed(name, spec.type in JUDGES_JSON, function)
        built.append(BuiltMetric(name=name, function=function, parallel=spec.parallel))
    return built


def metric_workers(config: Config) -> int:
    """Threads for the metrics that run concurrently across examples: ``check_workers``, else one per CPU here, or
    with a cluster executor as many as calls may be in flight (each thread only waits for its task)."""
    if config.check_workers:
        return config.check_workers
    if config.shipped_metrics:
        return config.concurrency.max_in_flight
    return os.cpu_count() or 1


def metric_pool(config: Config) -> Any:
    """The threads that wait for shipped metric calls: daemon threads, so a thread stuck in the cluster client
    after the cluster was lost (Ray blocks up to a minute on a head that is gone) never holds up the exit of a run
    that already stopped like Ctrl-C."""
    from evalglass.lanes.daemonpool import DaemonThreadPool

    return DaemonThreadPool(metric_workers(config), name="evalglass-shipped", max_abandoned=0)


def not_json_score(name: str, example: Example, output: UnparsedOutput) -> Score:
    return Score.error(
        "output_not_json",
        f"example {example.id} (line {example.line}): task.parse is json, but the output is not JSON "
        f"({output.message}); metric '{name}' needs the parsed output",
        output.text[:200],
    )


def guard_unparsed(name: str, judges_json: bool, function: MetricFn) -> MetricFn:
    """``function`` for ``task.parse: json``: an output that did not parse is an ``output_not_json`` error, or,
    for a metric whose job is to judge JSON (``judges_json``), its raw text, which the metric then measures."""

    def one(example: Example) -> Any:
        output = example.output
        if type(output) is not UnparsedOutput:
            return inner_one(example)
        if judges_json:
            return inner_one(Example(example.id, example.line, example.fields, output.text, example.sample))
        return not_json_score(name, example, output)

    inner_one = function.one if isinstance(function, BatchedMetric) else function
    if not isinstance(function, BatchedMetric):
        return one
    inner_batch = function.batch

    def batch(examples: ExampleBatch) -> Any:
        if any(type(output) is UnparsedOutput for output in examples.outputs):
            return None  # the caller scores this batch example by example, through ``one``
        return inner_batch(examples)

    return BatchedMetric(one, batch)


def metric_raised(name: str, exc: BaseException) -> Score:
    """The error score of a metric that raised: its message and traceback tail, redacted before being cut."""
    redactor = redaction.current()
    tail = "".join(traceback.format_exception(exc, limit=-3)).strip()
    message = redactor.text(f"metric '{name}' raised {type(exc).__name__}: {exc}")
    return Score.error("metric_raised", message, redactor.tail(tail, 2000, ""))


def _bad_result(name: str, result: object, why: str) -> Score:
    return Score.error("metric_bad_result", f"metric '{name}' returned {result!r}: {why}")


def call_metric(metric: BuiltMetric, batch: ExampleBatch, pool: ThreadPoolExecutor | None) -> list[Any]:
    """One metric over a batch; a raising call becomes an error score, never a number.

    A metric with a batch path scores the batch in one call. Should that call raise (or miscount), the batch is
    scored example by example instead, so every example gets exactly the outcome it would get alone.
    """
    function, name = metric.function, metric.name
    if isinstance(function, BatchedMetric):
        if not (metric.parallel and pool is not None):
            try:
                results = function.batch(batch)
            except Exception:
                results = None
            if results is not None and len(results) == len(batch):
                return results
        function = function.one

    def guarded(example: Example) -> Any:
        try:
            return function(example)
        except Exception as exc:
            return metric_raised(name, exc)

    examples = batch.examples()
    if metric.parallel and pool is not None and len(examples) > 1:
        return list(pool.map(guarded, examples))
    return [guarded(example) for example in examples]


@dataclass
class RowShape:
    """How rows relate to examples and clusters, collected while streaming (compact arrays, no objects)."""

    samples: bool
    cluster_of: Callable[[Mapping[str, Any]], Any] | None
    example_of_row: array[int] = field(default_factory=lambda: array("q"))
    cluster_ids: array[int] = field(default_factory=lambda: array("q"))
    cluster_keys: dict[str, int] = field(default_factory=dict)
    examples: int = 0

    def add_example(self, rows: int, cluster: str | None) -> None:
        if self.samples:
            self.example_of_row.extend([self.examples] * rows)
        if self.cluster_of is not None:
            key = cluster if cluster is not None else f"\x00unclustered:{self.examples}"
            self.cluster_ids.append(self.cluster_keys.setdefault(key, len(self.cluster_keys)))
        self.examples += 1

    def add_single_rows(self, count: int, clusters: list[str | None] | None) -> None:
        """``add_example(1, cluster)`` for ``count`` examples of one row each (``clusters``: one per example)."""
        if self.samples or self.cluster_of is not None:
            for index in range(count):
                self.add_example(1, clusters[index] if clusters is not None else None)
            return
        self.examples += count

    def run_shape(self) -> RunShape:
        return RunShape(
            examples=self.examples,
            example_of_row=np.frombuffer(self.example_of_row, dtype=np.int64) if self.samples else None,
            clusters=np.frombuffer(self.cluster_ids, dtype=np.int64) if self.cluster_of is not None else None,
        )


def cluster_key(value: Any) -> str | None:
    """A cluster id as recorded: strings and integers name a cluster; anything else (absent, null) does not."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    return None


def expand(item: Example | BadLine, samples: bool) -> list[Example] | Score:
    """The sample rows one dataset line produces, or the single score every metric gets when it produces none."""
    if isinstance(item, BadLine):
        return Score.error(item.code, item.message)
    if item.output is ABSENT:
        return Score.unmeasured(
            Status.BLOCKED, "output_missing", f"example {item.id} (line {item.line}) has no recorded output"
        )
    if not samples:
        return [item]
    if not isinstance(item.output, list):
        return Score.error(
            "samples_not_a_list",
            f"example {item.id} (line {item.line}): task.samples is on, so the output must be a list of samples, "
            f"not {type(item.output).__name__}",
        )
    if not item.output:
        return Score.unmeasured(
            Status.BLOCKED, "output_missing", f"example {item.id} (line {item.line}) has an empty list of samples"
        )
    return [
        Example(id=item.id, line=item.line, fields=item.fields, output=value, sample=index)
        for index, value in enumerate(item.output)
    ]


def score_batch(
    batch: ExampleBatch | list[Example | BadLine],
    metrics: list[BuiltMetric],
    columns: dict[str, ScoreColumn],
    writer: ScoresWriter,
    pool: ThreadPoolExecutor | None,
    shape: RowShape,
) -> None:
    """Score a batch metric by metric (tight loops), append to the columns and write it as one block, in order.

    When every example is one row to measure (no samples, no bad line, every output present: ``expand`` would give
    each ``[example]``), each metric's results go into its column as one batch, with the same checks and the same
    bytes as the general path below.
    """
    plain = _plain(batch, shape.samples)
    names = [metric.name for metric in metrics]
    if plain is not None:
        encoded: list[list[Any]] = []
        for metric in metrics:
            encoded.append(append_results(columns[metric.name], metric.name, call_metric(metric, plain, pool)))
        clusters: list[str | None] | None = None
        if shape.cluster_of is not None:
            cluster_of = shape.cluster_of
            clusters = [cluster_key(cluster_of(record)) for record in plain.records]
        shape.add_single_rows(len(plain), clusters)
        writer.write_block(plain.ids, plain.lines, dict(zip(names, encoded, strict=True)), clusters)
        return
    items = batch.examples() if isinstance(batch, ExampleBatch) else batch
    expanded = [expand(item, shape.samples) for item in items]
    if not shape.samples:
        _score_single_rows(items, expanded, metrics, columns, writer, pool, shape)
        return
    measurable = [example for rows in expanded if isinstance(rows, list) for example in rows]
    measured = ExampleBatch.of(measurable)
    results = [iter(call_metric(metric, measured, pool)) for metric in metrics]
    block: dict[str, list[Any]] = {name: [] for name in names}
    clusters = [] if shape.cluster_of is not None else None
    for item, rows in zip(items, expanded, strict=True):
        cluster = None
        if shape.cluster_of is not None and isinstance(item, Example):
            cluster = cluster_key(shape.cluster_of(item.fields))
        if clusters is not None:
            clusters.append(cluster)
        if isinstance(rows, Score):
            shape.add_example(1, cluster)
            for name, entry in _same_score_everywhere(rows, columns, shape.samples).items():
                block[name].append(entry)
            continue
        shape.add_example(len(rows), cluster)
        for metric, produced in zip(metrics, results, strict=True):
            entries = [append_result(columns[metric.name], metric.name, next(produced)) for _ in rows]
            block[metric.name].append(entries if shape.samples else entries[0])
    writer.write_block([item.id for item in items], [item.line for item in items], block, clusters)


def _score_single_rows(
    items: Sequence[Example | BadLine],
    expanded: list[list[Example] | Score],
    metrics: list[BuiltMetric],
    columns: dict[str, ScoreColumn],
    writer: ScoresWriter,
    pool: ThreadPoolExecutor | None,
    shape: RowShape,
) -> None:
    """A batch without samples in which some lines are not measured (a malformed line, a missing output).

    The measured rows still go through each metric as one batch, and their results into the column a run of
    consecutive rows at a time (``extend_measured``), so a dataset with many bad lines costs about what a clean
    one does rather than a per-row append for every metric (10 % malformed lines once made a run 4-20 times
    slower). The bytes written and the column's contents are exactly those of the per-row path.
    """
    measured = ExampleBatch.of([rows[0] for rows in expanded if isinstance(rows, list)])
    # The batch as runs: an int is that many consecutive measured rows; a (Score, its JSON) is one unmeasured row.
    runs: list[int | tuple[Score, Any]] = []
    for rows in expanded:
        if isinstance(rows, Score):
            runs.append((rows, score_to_json(rows)))
        elif runs and isinstance(runs[-1], int):
            runs[-1] += 1
        else:
            runs.append(1)
    block: dict[str, list[Any]] = {}
    for metric in metrics:
        results = call_metric(metric, measured, pool)
        column = columns[metric.name]
        encoded: list[Any] = []
        start = 0
        for run in runs:
            if not isinstance(run, int):
                column.append(run[0])
                encoded.append(run[1])
                continue
            encoded += append_results(column, metric.name, results[start : start + run])
            start += run
        block[metric.name] = encoded
    clusters: list[str | None] | None = None
    if shape.cluster_of is not None:
        cluster_of = shape.cluster_of
        clusters = [cluster_key(cluster_of(item.fields)) if isinstance(item, Example) else None for item in items]
    shape.add_single_rows(len(items), clusters)
    writer.write_block([item.id for item in items], [item.line for item in items], block, clusters)


def _plain(batch: ExampleBatch | list[Example | BadLine], samples: bool) -> ExampleBatch | None:
    """The batch when every example in it is one row to measure (see :func:`score_batch`), else None."""
    if samples:
        return None
    if isinstance(batch, list):
        if any(issubclass(kind, BadLine) for kind in set(map(type, batch))):
            return None
        batch = ExampleBatch.of(cast(list[Example], batch))
    if ABSENT in batch.outputs:  # outputs are parsed JSON values here, whose == with ABSENT is plain False
        return None
    return batch


def append_results(column: ScoreColumn, name: str, results: list[Any]) -> list[Any]:
    """Append consecutive rows' results: at once when all are finite floats, else one by one through
    :func:`append_result`. Returns the JSON the scores file keeps for them."""
    if column.extend_measured(results):
        return results
    return [append_result(column, name, result) for result in results]


def append_result(column: ScoreColumn, name: str, result: Any) -> Any:
    """Append to the column (which re-checks the score contract; a result it refuses becomes a
    ``metric_bad_result`` error) and return the JSON the scores file keeps."""
    try:
        column.append(result)
    except (ScoreContractError, TypeError) as exc:
        result = _bad_result(name, result, str(exc))
        column.append(result)
    return result if type(result) is float else score_to_json(result)


def _same_score_everywhere(score: Score, columns: dict[str, ScoreColumn], samples: bool) -> dict[str, Any]:
    for column in columns.values():
        column.append(score)
    encoded = score_to_json(score)
    return dict.fromkeys(columns, [encoded] if samples else encoded)


def run_standalone_checks(loaded: LoadedConfig) -> dict[str, CheckResult]:
    config = loaded.config
    names = config.standalone_checks
    if not names:
        return {}
    from evalglass.lanes.checkrun import run_checks  # subprocess, signals: only for runs that have checks

    expected = {name: state for name in names if (state := config.expected_state(name)) is not None}
    return run_checks({name: config.checks[name] for name in names}, loaded.base_dir, expected=expected)


class RunInterrupted(Interrupted):
    """Ctrl-C during a run: what was done is kept (cached calls, the manifest) so the run can be resumed."""

    def __init__(
        self,
        folder: Path,
        done: int | None,
        total: int | None,
        reason: str | None = None,
        *,
        warnings: tuple[str, ...] = (),
    ) -> None:
        self.folder = folder
        self.done = done
        self.total = total
        #: Warnings of the run so far (a last-started pointer that could not be written): printed before the line.
        self.warnings = warnings
        progress = f" after {done} of {total} examples" if done is not None and total else ""
        why = f"{reason}; " if reason else ""
        super().__init__(
            f"{why}interrupted{progress}: completed calls are cached; resume with: evalglass run --resume {folder}"
        )

    def stderr_lines(self) -> list[str]:
        return [*self.warnings, str(self)]


@dataclass
class Scored:
    """The dataset, scored: every metric's column, how rows map to examples, and the dataset as it was read."""

    columns: dict[str, ScoreColumn]
    shape: RowShape
    dataset: DatasetSummary
    scores_sha256: str
    usage: tuple[TokenUsage, ...] = ()
    calls: CallTotals | None = None  # live runs: see CallTotals


def run(
    config_path: Path,
    out: Path | None = None,
    *,
    now: datetime | None = None,
    cache_mode: str = "use",
    resume: Path | None = None,
    progress: Any = None,
    pinned_ledger: Path | None = None,
) -> RunOutcome:
    """Evaluate, decide and write the artifacts.

    ``resume`` names the folder of an earlier, unfinished run: it is re-evaluated under its own run id and
    ``created_at`` (completed calls come from the cache) after checking that nothing it depends on changed.
    ``progress`` is an ``engine.progress.Reporter`` (live runs only). ``pinned_ledger`` (``run --ledger``) is the
    ledger the host requires: a config naming any other file is refused, since the config is what a pull request
    edits and a ledger it points to could be one the pull request wrote. Every secret of the environment (and every
    one the config declares) is redacted from everything the run writes.
    """
    from evalglass.engine.interrupts import terminate_like_interrupt

    with redaction.installed(), terminate_like_interrupt():
        return _run(
            config_path,
            out,
            now=now,
            cache_mode=cache_mode,
            resume=resume,
            progress=progress,
            pinned_ledger=pinned_ledger,
        )


def _run(
    config_path: Path,
    out: Path | None,
    *,
    now: datetime | None,
    cache_mode: str,
    resume: Path | None,
    progress: Any,
    pinned_ledger: Path | None,
) -> RunOutcome:
    from evalglass.engine.cache import CacheMode
    from evalglass.engine.manifest import (
        RunManifest,
        dataset_identity,
        definitions_fingerprint,
        file_fingerprint,
        load_manifest,
        refuse_changes,
    )

    mode = CacheMode(cache_mode)
    recorded_manifest = load_manifest(resume) if resume is not None else None
    loaded = load_config(config_path)
    config = loaded.config
    refuse_unpinned_ledger(loaded, pinned_ledger)
    identity = dataset_identity(loaded.dataset_path, hash_contents=config.live)
    if recorded_manifest is not None:
        assert resume is not None
        run_id, created_at, folder = recorded_manifest.run_id, recorded_manifest.created_at, resume
    else:
        moment = now or datetime.now(UTC)
        run_id, created_at = new_run_id(moment), moment.isoformat().replace("+00:00", "Z")
        folder = out if out is not None else default_run_folder(run_id)
    manifest = RunManifest(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        config_path=str(config_path),
        config_fingerprint=loaded.fingerprint,
        definitions_fingerprint=definitions_fingerprint(loaded.definition_files),
        ledger_fingerprint=file_fingerprint(loaded.ledger_path),
        dataset=identity,
    )
    if recorded_manifest is not None:
        refuse_changes(folder, recorded_manifest, manifest)
    ledger = load_ledger(loaded.ledger_path)
    check_against_config(ledger, config)
    signing_key = signing_key_from_env()
    if signing_key is not None:
        private_key(signing_key)  # a bad key is refused before any work is done, not after
    from evalglass.engine.progress import Counters

    counters = Counters(total=identity.examples)
    with writing(folder):
        created = make_dirs(folder)
        with locked(folder):
            outcome = _run_in(
                folder, created, recorded_manifest, manifest, loaded, ledger, mode, progress, counters, signing_key
            )
            # The pointer is written under the lock: a concurrent run cannot finish between this run and it.
            problem = point_last_run_at(folder)
    return outcome if problem is None else dataclasses.replace(outcome, warnings=(*outcome.warnings, problem))


def _run_in(
    folder: Path,
    created: bool,
    recorded_manifest: RunManifest | None,
    manifest: RunManifest,
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    mode: CacheMode,
    progress: Any,
    counters: Counters,
    signing_key: str | None,
) -> RunOutcome:
    """The run in its (created, locked) folder: what is written on the way is removed if the run fails, unless it
    can be resumed."""
    from evalglass.engine.manifest import write_manifest

    config = loaded.config
    cluster: RayCluster | None = None
    #: Problems that leave the run's results intact (a pointer, the call cache): printed, never silent.
    warnings: list[str] = []
    try:
        # First: a manifest is never written with the pointer still naming another run (it is removed if it
        # cannot be moved).
        problem = point_last_started_at(folder)
        if problem is not None:
            warnings.append(problem)
        if recorded_manifest is None:
            write_manifest(folder, manifest)
        writer = ScoresWriter(folder)
        check_records = CheckRecordWriter(folder)
        try:
            if isinstance(config.executor, RayExecutorSpec):  # the one place a cluster is joined
                from evalglass.engine.raycluster import RayCluster

                cluster = RayCluster(loaded).connect()
            metrics = build_metrics(loaded, check_records, cluster)
            if config.live:
                from evalglass.engine.liverun import score_live

                scored = score_live(
                    loaded,
                    metrics,
                    writer,
                    cache_mode=mode,
                    progress=progress,
                    counters=counters,
                    run_id=manifest.run_id,
                    warnings=warnings,
                    cluster=cluster,
                )
            else:
                scored = score_recorded(loaded, metrics, writer)
            check_records.commit()
            outcome = _finish(loaded, ledger, scored, folder, manifest.run_id, manifest.created_at, signing_key)
            return dataclasses.replace(outcome, warnings=(*warnings, *outcome.warnings))
        except BaseException:
            writer.abort()
            check_records.abort()
            raise
        finally:
            if cluster is not None:
                cluster.close()
    except KeyboardInterrupt as stop:
        # The manifest stays: completed calls are in the cache and `--resume` finishes the run under its own id.
        reason = cluster.lost if cluster is not None else None
        reason = reason or (str(stop) if isinstance(stop, ClusterLost) else None)
        raise RunInterrupted(
            folder,
            counters.done if config.live else None,
            manifest.dataset.examples,
            reason,
            warnings=tuple(warnings),
        ) from None
    except BaseException:
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def refuse_unpinned_ledger(loaded: LoadedConfig, pinned_ledger: Path | None) -> None:
    """``--ledger``: the config is what a pull request edits, so it may not point the run at another ledger."""
    if pinned_ledger is not None and pinned_ledger.resolve() != loaded.ledger_path.resolve():
        raise SetupError(
            f"the config names the ledger {loaded.ledger_path}, but this run is pinned to {pinned_ledger} (--ledger)",
            where=str(loaded.path),
            fix=f"set `ledger:` in the config to the host's ledger, {pinned_ledger}",
        )


def point_last_run_at(folder: Path) -> str | None:
    """Record ``folder`` as the last finished run; on failure, a warning line instead of an exception.

    The run is complete and its verdict stands whether or not the pointer moves (the pointer only saves typing a
    folder later), so a failure here does not change the exit code. It is never silent either: see
    :func:`_point_at`.
    """
    return _point_at(
        LAST_RUN_POINTER,
        folder,
        records="this run as the last one",
        removed="commands without a folder will ask for one",
        stale="a command without a folder may show an older run",
        name_it=f"evalglass view {folder}",
    )


def point_last_started_at(folder: Path) -> str | None:
    """Record ``folder`` as the last started run (what ``run --resume`` without a folder resumes); on failure, a
    warning line. The run does not need the pointer to complete, and an interrupted run names its own folder in
    the line that says how to resume it, so a failure does not stop the run."""
    from evalglass.engine.manifest import LAST_STARTED_POINTER

    return _point_at(
        LAST_STARTED_POINTER,
        folder,
        records="this run as the last one started",
        removed="`evalglass run --resume` without a folder will ask for one",
        stale="`evalglass run --resume` without a folder may resume an older run",
        name_it=f"evalglass run --resume {folder}",
    )


def _point_at(pointer: Path, folder: Path, *, records: str, removed: str, stale: str, name_it: str) -> str | None:
    """Write ``pointer`` to hold ``folder``; on failure, the warning line that says so, and what follows.

    The old pointer is removed when it can be, so a command that reads it asks for a folder rather than acting on
    an older run as if it were this one; the line says whether that worked, and how to name this run instead.
    """
    try:
        make_dirs(pointer.parent)
        write_atomic(pointer, str(folder.resolve()).encode() + b"\n")
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        try:
            pointer.unlink(missing_ok=True)
            after = f"it was removed, so {removed}"
        except OSError:
            after = f"it could not be removed either, so {stale}"
        return f"warning: {pointer}: could not record {records} ({why}); {after}. Name this run explicitly: {name_it}"
    return None


def check_duplicate(first_line: dict[str, int], item: Example | BadLine, path: Path) -> None:
    """One example at a time (the live path, where calls dominate): remembers each id's first line.

    A malformed line's made-up id (``line:3``) takes part, so a real id can never be the same as one: the run is
    refused instead, as for any repeated id, and says which line the made-up id names. (A made-up id's line is
    remembered negated, which is how it is told apart without keeping more per id.)
    """
    mark = -item.line if isinstance(item, BadLine) else item.line
    seen = first_line.setdefault(item.id, mark)
    if seen != mark:
        raise _duplicate(item.id, mark, seen, path)


def id_hashes(batch: ExampleBatch | list[Example | BadLine]) -> map[int]:
    """The hash of each id in the batch (a malformed line's made-up one too), to find repeats with after the
    stream."""
    if isinstance(batch, ExampleBatch):
        return map(hash, batch.ids)
    return map(hash, [item.id for item in batch])


def refuse_duplicate_ids(hashes: array[int], loaded: LoadedConfig) -> None:
    """Refuse a dataset that repeats an id, once it has been streamed.

    The stream keeps one 8-byte hash per example rather than a set of every id (a tenth of the memory, and
    sorting once beats a million set insertions). Only when two hashes are equal, which a repeated id guarantees
    and a rare hash collision also causes, is the dataset read again to find a real repeat and name both its lines.
    Nothing the stream wrote is kept when this raises: the run folder is removed.
    """
    ordered = np.sort(np.frombuffer(hashes, dtype=np.int64)) if hashes else np.empty(0, np.int64)
    if not (ordered[1:] == ordered[:-1]).any():
        return
    from evalglass.engine.source import open_reader

    first_line: dict[str, int] = {}
    for item in open_reader(loaded):
        check_duplicate(first_line, item, loaded.dataset_path)


def _duplicate(example_id: str, line: int, first: int, path: Path) -> SetupError:
    """Lines as :func:`check_duplicate` marks them: negative for a malformed line, whose made-up id a real one
    repeats (a made-up id names its own line, so two can never be the same)."""
    if first < 0 or line < 0:
        made_up, real = (-first, line) if first < 0 else (-line, first)
        return SetupError(
            f"example id '{example_id}' is also the id given to malformed line {made_up}",
            where=f"{path}:{real}",
            fix=f"fix line {made_up}, or give the example at line {real} another id",
        )
    return SetupError(
        f"duplicate example id '{example_id}' (first at line {first})",
        where=f"{path}:{line}",
        fix="give every example a unique id",
    )


def new_row_shape(config: Config) -> RowShape:
    cluster_field = config.dataset.cluster_field
    return RowShape(
        samples=config.samples, cluster_of=field_getter(cluster_field) if cluster_field is not None else None
    )


def score_recorded(loaded: LoadedConfig, metrics: list[BuiltMetric], writer: ScoresWriter) -> Scored:
    """Recorded outputs (in the dataset or their own file): batches of examples, metric by metric (no event loop,
    no calls)."""
    from evalglass.engine.source import DatasetSource

    config = loaded.config
    source = DatasetSource(loaded)
    columns = {name: ScoreColumn() for name in config.metrics}
    shape = new_row_shape(config)
    hashes = array("q")
    workers = metric_workers(config)
    pool: ThreadPoolExecutor | None = None
    if any(metric.parallel for metric in metrics):
        from concurrent.futures import ThreadPoolExecutor

        pool = metric_pool(config) if config.shipped_metrics else ThreadPoolExecutor(max_workers=workers)
    try:
        for batch in source.batches():
            hashes.extend(id_hashes(batch))
            score_batch(batch, metrics, columns, writer, pool, shape)
        refuse_duplicate_ids(hashes, loaded)
        dataset = source.summary()
    finally:
        source.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    scores_sha256 = writer.commit()
    return Scored(columns=columns, shape=shape, dataset=dataset, scores_sha256=scores_sha256)


def _finish(
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    scored: Scored,
    folder: Path,
    run_id: str,
    created_at: str,
    signing_key: str | None = None,
) -> RunOutcome:
    """Standalone checks, the decision and the artifacts: the same for recorded and live runs."""
    config = loaded.config
    dataset = scored.dataset
    check_results = run_standalone_checks(loaded)
    gate_fingerprints = {name: config.gate_fingerprint(name, loaded.definition_files) for name in config.gates}
    standings = {}
    if config.judges:
        from evalglass.engine.calibrate import judge_standings

        standings = judge_standings(loaded)
    comparative: ComparativeInputs | None = None
    baseline_records: dict[str, BaselineRecord] = {}
    if any(gate.compare_to is not None for gate in config.gates.values()):
        from evalglass.engine.baselines import baselines_for_run, comparative_inputs

        baselines, baseline_records = baselines_for_run(config, ledger, folder)
        comparative = comparative_inputs(config, folder / SCORES_FILE, loaded.definition_files, dataset, baselines)
    summaries, payload = decide_run(
        metric_inputs(config, scored.columns),
        gate_inputs(
            config,
            gate_fingerprints,
            check_results,
            stale_causes(config, loaded.definition_files, ledger.ledger, gate_fingerprints),
        ),
        ledger.ledger,
        config.dataset.name,
        dataset.gold,
        scored.shape.run_shape(),
        standings,
        comparative,
        ledger.gate_where(),
        today=day_of_timestamp(created_at),
    )
    scorecard = Scorecard(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        dataset=dataset,
        decision=payload,
        metrics=summaries,
        checks=tuple(CheckSummary.of(name, result) for name, result in check_results.items()),
        calls=scored.calls,
        usage=scored.usage,
    )
    record = RunRecord(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        config_path=str(loaded.path),
        config_fingerprint=loaded.fingerprint,
        config_source=loaded.raw.decode("utf-8"),
        config=config_as_recorded(config),
        ledger_path=str(ledger.path),
        ledger_fingerprint=ledger.fingerprint,
        ledger_source=ledger.raw.decode("utf-8"),
        ledger=ledger.ledger,
        dataset=dataset,
        gate_fingerprints=gate_fingerprints,
        gate_evaluators=config.evaluators_by_gate(),
        definition_files=loaded.definition_files,
        check_results=check_results,
        judge_fingerprints={name: standing.fingerprint for name, standing in standings.items()},
        calibrations={
            name: standing.calibration for name, standing in standings.items() if standing.calibration is not None
        },
        baselines=baseline_records,
        scores_sha256=scored.scores_sha256,
        usage=scored.usage,
    )
    from evalglass.engine.failing import report_markdown

    write_model(folder / RUNRECORD_FILE, record)
    write_model(folder / SCORECARD_FILE, scorecard)
    write_text(folder / REPORT_FILE, report_markdown(folder, scorecard))
    # Last: it covers every file written before it.
    write_digests(folder, run_id, signing_key, known={record.scores_file: scored.scores_sha256})
    return RunOutcome(folder=folder, scorecard=scorecard, record=record)


def metric_inputs(config: Config, columns: dict[str, ScoreColumn]) -> list[MetricInput]:
    return [
        MetricInput(
            name=name,
            type=spec.type,
            description=spec.description,
            uses_reference=spec.uses_reference,
            column=columns[name],
            reducer=spec.reducer,
            k=spec.k,
            interval=spec.interval,
            scale=spec.value_scale(),
        )
        for name, spec in config.metrics.items()
    ]


def gate_inputs(
    config: Config,
    fingerprints: dict[str, str],
    check_results: dict[str, CheckResult],
    stale: Mapping[str, str] | None = None,
) -> list[GateInput]:
    """``stale`` holds, per gate, what made its approval stale when that is an evaluator's version
    (``engine.staleness``)."""
    causes = stale or {}
    return [
        GateInput(
            name=name,
            spec=spec,
            fingerprint=fingerprints[name],
            check_result=check_results.get(spec.check) if spec.check is not None else None,
            stale_cause=causes.get(name),
        )
        for name, spec in config.gates.items()
    ]
