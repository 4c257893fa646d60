"""One run: stream the dataset, score every example, decide, write artifacts.

The loop keeps no per-example objects: the dataset comes in batches of parallel lists (``ExampleBatch``), scores go
into compact columns and each batch is written to ``scores.jsonl`` as one block.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import orjson

from evalglass import redaction
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.checks import CheckResult
from evalglass.core.columns import ScoreColumn
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.runrecord import SCORES_FILE, BaselineRecord, RunRecord
from evalglass.core.score import Score
from evalglass.core.scorecard import Scorecard
from evalglass.engine.artifacts import (
    CHECKS_FILE,
    LAST_RUN_POINTER,
    REPORT_FILE,
    RUNRECORD_FILE,
    SCORECARD_FILE,
    ScoresWriter,
    write_model,
    write_text,
)
from evalglass.engine.config import LoadedConfig, load_config
from evalglass.engine.dataset import BadLine
from evalglass.engine.decision import Evidence, decided_scorecard, run_record
from evalglass.engine.digests import DIGESTS_FILE, private_key, signing_key_from_env, write_digests
from evalglass.engine.executorspec import RayExecutorSpec
from evalglass.engine.ledger import LoadedLedger, check_against_config, load_ledger, refuse_unpinned_ledger
from evalglass.engine.metricbuild import build_metrics
from evalglass.engine.runfolder import PartialFile, locked, make_dirs, sweep_partials, write_atomic, writing
from evalglass.engine.runlocator import RunLocator
from evalglass.engine.scoresblock import encode_score
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
    metric_pool,
    metric_workers,
    new_row_shape,
    refuse_first_repeat,
    same_score_everywhere,
)
from evalglass.engine.staleness import stale_causes
from evalglass.errors import Interrupted
from evalglass.lanes.shipping import ClusterLost
from evalglass.version import __version__

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


class CheckRecordWriter:
    """Appends every per-example check record to ``checks.jsonl`` (thread-safe: checks finish concurrently)."""

    def __init__(self, folder: Path) -> None:
        self._file = PartialFile(folder / CHECKS_FILE, lazy=True)
        self._lock = threading.Lock()
        self._redactor = redaction.current()

    def __call__(self, result: CheckResult) -> None:
        line = self._redactor.json_bytes(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_APPEND_NEWLINE))
        with self._lock:
            self._file.write(line)

    def commit(self) -> None:
        """Publish the records (only when a per-example check ran at all)."""
        self._file.commit()

    def abort(self) -> None:
        self._file.abort()


def score_batch(
    batch: ExampleBatch | list[Example | BadLine],
    metrics: list[BuiltMetric],
    columns: dict[str, ScoreColumn],
    writer: ScoresSink,
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
            for name, entry in same_score_everywhere(rows, columns, shape.samples).items():
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
    writer: ScoresSink,
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
            runs.append((rows, encode_score(rows)))
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


def run_standalone_checks(loaded: LoadedConfig) -> dict[str, CheckResult]:
    config = loaded.config
    names = config.standalone_checks
    if not names:
        return {}
    from evalglass.engine.checking import checks_watch
    from evalglass.lanes.checkrun import run_checks  # subprocess, signals: only for runs that have checks

    expected = {name: state for name in names if (state := config.expected_state(name)) is not None}
    with checks_watch(names):
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
        #: Why the run stopped, when not by a signal (a lost cluster).
        self.reason = reason
        #: Warnings of the run so far (a last-started pointer that could not be written): printed before the line.
        self.warnings = warnings
        progress = f" after {done} of {total} examples" if done is not None and total else ""
        why = f"{reason}; " if reason else ""
        super().__init__(
            f"{why}interrupted{progress}: completed calls are cached; resume with: evalglass run --resume {folder}"
        )

    def stderr_lines(self) -> list[str]:
        return [*self.warnings, str(self)]


def run(
    config_path: Path,
    out: Path | None = None,
    *,
    now: datetime | None = None,
    cache_mode: str = "use",
    resume: Path | None = None,
    progress: Any = None,
    pinned_ledger: Path | None = None,
    locator: RunLocator | None = None,
) -> RunOutcome:
    """Evaluate, decide and write the artifacts.

    ``resume`` names the folder of an earlier, unfinished run: it is re-evaluated under its own run id and
    ``created_at`` (completed calls come from the cache) after checking that nothing it depends on changed.
    ``progress`` is an ``engine.progress.Reporter`` (live runs only). ``pinned_ledger`` (``run --ledger``) is the
    ledger the host requires: a config naming any other file is refused, since the config is what a pull request
    edits and a ledger it points to could be one the pull request wrote. ``locator`` finds a baseline the ledger
    names by reference (``engine.runlocator``; None: baselines are folders only). Every secret of the environment
    (and every one the config declares) is redacted from everything the run writes.
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
            locator=locator,
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
    locator: RunLocator | None,
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
                folder,
                created,
                recorded_manifest,
                manifest,
                loaded,
                ledger,
                mode,
                progress,
                counters,
                signing_key,
                locator,
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
    locator: RunLocator | None,
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
        else:
            sweep_killed_writers(folder)
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
                    folder,
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
            outcome = _finish(
                loaded, ledger, scored, folder, manifest.run_id, manifest.created_at, signing_key, locator
            )
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


def sweep_killed_writers(folder: Path) -> None:
    """The partial files that runs killed in this folder left (``.scores.jsonl.PID.*.partial`` ...), removed before
    it is resumed: only those of the files a run writes here (engine/runfolder.py's names), nothing else."""
    from evalglass.engine.baselines import BASELINES_DIR
    from evalglass.engine.explorer import OUTPUTS_FILE
    from evalglass.engine.manifest import MANIFEST_FILE

    sweep_partials(
        folder,
        {
            MANIFEST_FILE,
            SCORES_FILE,
            OUTPUTS_FILE,
            CHECKS_FILE,
            RUNRECORD_FILE,
            SCORECARD_FILE,
            REPORT_FILE,
            DIGESTS_FILE,
        },
    )
    copies = folder / BASELINES_DIR
    if copies.is_dir() and not copies.is_symlink():
        for copy in copies.iterdir():
            if copy.is_dir() and not copy.is_symlink():
                sweep_partials(copy, {RUNRECORD_FILE, SCORES_FILE})


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
    from evalglass.engine.datasetfile import open_reader

    refuse_first_repeat(open_reader(loaded), loaded.dataset_path)


def score_recorded(loaded: LoadedConfig, metrics: list[BuiltMetric], writer: ScoresSink) -> Scored:
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
    locator: RunLocator | None = None,
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

        baselines, baseline_records = baselines_for_run(config, ledger, folder, locator)
        comparative = comparative_inputs(config, folder / SCORES_FILE, loaded.definition_files, dataset, baselines)
    evidence = Evidence(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        ledger=ledger.ledger,
        gate_fingerprints=gate_fingerprints,
        check_results=check_results,
        today=day_of_timestamp(created_at),
        standings=standings,
        comparative=comparative,
        ledger_where=ledger.gate_where(),
        stale=stale_causes(config, loaded.definition_files, ledger.ledger, gate_fingerprints),
    )
    scorecard = decided_scorecard(
        config, scored.columns, scored.shape.run_shape(), dataset, evidence, scored.calls, scored.usage
    )
    record = run_record(loaded, ledger, dataset, evidence, baseline_records, scored.scores_sha256, scored.usage)
    from evalglass.engine.failing import report_markdown

    write_model(folder / RUNRECORD_FILE, record)
    write_model(folder / SCORECARD_FILE, scorecard)
    write_text(folder / REPORT_FILE, report_markdown(folder, scorecard))
    # Last: it covers every file written before it.
    write_digests(folder, run_id, signing_key, known={record.scores_file: scored.scores_sha256})
    return RunOutcome(folder=folder, scorecard=scorecard, record=record)
