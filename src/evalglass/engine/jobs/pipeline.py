"""One run, orchestrated: load and check what it reads, choose a producer and hand it the run's sink, then decide
and write the artifacts.

The producer scores the dataset (``engine.produce.recordedrun`` for recorded outputs, ``engine.produce.liverun`` for a
lane or judges); the sink (``engine.produce.sink``) owns what is scored: columns, clusters, the id check, the blocks of
``scores.jsonl``. This module does neither: it prepares the run folder, builds the metrics, joins a cluster when
the config names one, and finishes the run the same way whichever producer ran (standalone checks, the decision,
the artifacts, the digests).
"""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import shutil
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from evalglass import redaction
from evalglass.collector import collector_paused
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.checks import CheckResult
from evalglass.core.fingerprint import PREFIX, fingerprint_of_bytes
from evalglass.core.runrecord import COMPARED_DIR, GRADED_FILE, SCORES_FILE, VARIANTS_DIR, BaselineRecord, RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.engine.decide.decision import Evidence, decided_scorecard, run_record
from evalglass.engine.produce.interrupts import interrupt_inside
from evalglass.engine.produce.metricbuild import build_metrics
from evalglass.engine.produce.scoring import BuiltMetric
from evalglass.engine.produce.sink import Producer, RunSink, Scored, open_run_sink
from evalglass.engine.runs.artifacts import (
    CHECKS_FILE,
    LAST_RUN_POINTER,
    REPORT_FILE,
    RUNRECORD_FILE,
    SCORECARD_FILE,
    ScoresWriter,
    model_file_bytes,
    text_file_bytes,
)
from evalglass.engine.runs.digests import (
    DIGESTS_FILE,
    SignedProvenance,
    digests_of,
    file_sha256,
    private_key,
    signing_key_from_env,
)
from evalglass.engine.runs.earlierruns import earlier_definition_files
from evalglass.engine.runs.runfolder import (
    OUTPUTS_FILE,
    PartialFile,
    commit_together,
    locked,
    make_dirs,
    sweep_partials,
    write_atomic,
    writing,
)
from evalglass.engine.runs.runlocator import RunLocator
from evalglass.engine.spec.config import LoadedConfig, load_config
from evalglass.engine.spec.executorspec import RayExecutorSpec
from evalglass.engine.spec.ledger import LoadedLedger, check_against_config, load_ledger, refuse_unpinned_ledger
from evalglass.engine.spec.staleness import stale_causes
from evalglass.errors import EvalGlassError, Interrupted, SetupError
from evalglass.lanes.shipping import ClusterLost
from evalglass.readers.userfiles import FileState, file_state
from evalglass.version import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evalglass.core.authority import JudgeStanding
    from evalglass.core.comparative import ComparativeInputs
    from evalglass.engine.datasets.source import FileRead
    from evalglass.engine.decide.baselines import ReadBaselines
    from evalglass.engine.produce.cachekey import CacheSecret
    from evalglass.engine.produce.cachemode import CacheMode
    from evalglass.engine.produce.progress import Counters, Reporter
    from evalglass.engine.produce.raycluster import RayCluster
    from evalglass.engine.runs.manifest import RunManifest
    from evalglass.engine.spec.config import Config


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
    """Appends every per-example check record to ``checks.jsonl`` (thread-safe: checks finish concurrently), hashed as
    written: the digest list binds the records the run made, not the file as host code may have left it."""

    def __init__(self, folder: Path) -> None:
        self._file = PartialFile(folder / CHECKS_FILE, lazy=True)
        self._lock = threading.Lock()
        self._redactor = redaction.current()
        self._hash: hashlib._Hash | None = None

    def __call__(self, result: CheckResult) -> None:
        line = self._redactor.json_bytes(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_APPEND_NEWLINE))
        with self._lock:
            self._file.write(line)
            if self._hash is None:
                self._hash = hashlib.sha256()
            self._hash.update(line)

    def commit(self) -> str | None:
        """Publish the records (only when a per-example check ran at all); their ``sha256:`` hash, None for none."""
        self._file.commit()
        return None if self._hash is None else PREFIX + self._hash.hexdigest()

    def abort(self) -> None:
        self._file.abort()


def run_standalone_checks(loaded: LoadedConfig) -> dict[str, CheckResult]:
    config = loaded.config
    names = config.standalone_checks
    if not names:
        return {}
    from evalglass.engine.jobs.checking import checks_watch
    from evalglass.lanes.checkrun import run_checks  # subprocess, signals: only for runs that have checks

    expected = {name: state for name in names if (state := config.expected_state(name)) is not None}
    bound = loaded.bound_checks()  # each runs only as the code hashed at load (a lane may have rewritten it since)
    with checks_watch(names):
        return run_checks({name: bound[name] for name in names}, loaded.base_dir, expected=expected)


def read_file_states(loaded: LoadedConfig) -> dict[Path, FileState]:
    """The state of each file the run reads examples and outputs from while it scores, taken before any host code
    runs (:func:`refuse_changed_inputs`). The files are what each dataset source the run scores says it reads
    (``source_files``: the dataset's reader names every file its format opens, a recorded outputs file is added),
    for the run's config and each variant's, so a format with a second file cannot be left out here."""
    from evalglass.engine.datasets.source import source_files

    config = loaded.config
    paths = list(source_files(loaded))
    for name in config.variant_names:
        paths.extend(source_files(dataclasses.replace(loaded, config=config.for_variant(name))))
    return {path: file_state(path) for path in dict.fromkeys(paths)}


def host_code_while_reading(config: Config) -> bool:
    """Whether host code can run before the run has read its input files to their end: a live run (a lane, a
    judge's calls on the loop that reads the dataset), a python metric or a check scored per example (each batch is
    scored as it is read), a cluster's workers. A recorded run of builtin metrics reads every input before any host
    code runs (its standalone checks run after scoring)."""
    return (
        config.live
        or _runs_host_code(config)
        or any(spec.host_reference() is not None for spec in config.metrics.values())
        or isinstance(config.executor, RayExecutorSpec)
    )


def start_digests(
    loaded: LoadedConfig, states: dict[Path, FileState], known: dict[Path, str]
) -> dict[Path, str] | None:
    """The SHA-256 of each input file before any host code runs, when host code can run while the run reads them
    (:func:`host_code_while_reading`; None otherwise: what the run reads then is read before any host code). A
    file whose state moves during the run is then harmless only if its bytes are these ones: host code that rewrote
    the lines the run had not read yet, leaving them rewritten, would otherwise make what the run read and what the
    file holds agree. ``known``: hashes already taken before host code (a live run's dataset identity), not taken
    twice. Cost: one streaming read of each file not in ``known`` (a recorded run with a python metric)."""
    if not host_code_while_reading(loaded.config):
        return None
    digests: dict[Path, str] = {}
    for path, state in states.items():
        if state is None:
            continue
        found = known.get(path)
        if found is None:
            try:
                found = file_sha256(path)
            except OSError:
                continue  # unreadable now: the run's own read says why; no hash, so a moved state stops the run
        digests[path] = found
    return digests


def refuse_changed_inputs(
    states: dict[Path, FileState], reads: Sequence[FileRead] = (), before: dict[Path, str] | None = None
) -> None:
    """Exit 2 when a file the run read its examples or outputs from (:func:`read_file_states`) changed while the run
    read it. The dataset is read a batch at a time while host code runs (a lane, a python metric, a check, as the
    same user): rewriting the lines not read yet (the recorded outputs of a pull request's failing answers made the
    gold ones) made the run measure answers the committed file does not hold, and its record name a fingerprint of
    that mixture. Nothing is decided then; the file as committed is what a rerun reads.

    A moved state is not yet a change of bytes: a ``chmod``, a ``touch``, a backup tool or a checkout writing the
    same bytes moves it too. The file is then hashed (streaming, only when its state moved) and the run goes on when
    every read of it had one hash (``reads``: ``DatasetSource.reads``) equal to the file's bytes now and, when host
    code could run while it was read, to its bytes before any host code ran (``before``: :func:`start_digests`).
    A file read some other way too (an outputs file joined by index, lm-eval's results file) cannot be told apart:
    its moved state still stops the run.

    The path's state alone misses another file read under it: host code that re-points a link (or renames a folder
    on the path) before the reader opens the file and puts it back by the end leaves the path naming the untouched
    file. So the file each reader opened (``FileRead.opened``: device and inode, from its open handle) is held to
    the path's state at the start too, and one that is not that file is compared by its bytes like a moved state
    (limit: readers that do not say what they opened, another tool's formats, are held to the path's state only)."""
    for path, state in states.items():
        ours = [read for read in reads if read.path == path]
        opened = {identity for read in ours for identity in read.opened}
        # A file opened under the path that is not the one it named at the start (a link re-pointed, a folder
        # renamed, and put back by the end: the path's state is then as it was) is compared by its bytes too; so is
        # a file that was not there at the start.
        if file_state(path) == state and (opened <= {state[:2]} if state is not None else not opened):
            continue
        why = _bytes_differ(path, [read.sha256 for read in ours], before)
        if why is None:
            continue
        raise SetupError(
            "the file changed while the run read it (written, replaced, touched, another file read under its path, "
            "or its inode changed: a new hard link or a permission change counts too, since only the ctime shows a "
            "rewrite host code cannot hide), "
            f"and {why}: the examples and outputs it scored may not be the file's, so nothing was decided",
            where=str(path),
            fix="run again on a file nothing writes during the run (host code runs as the same user and must "
            "not write the dataset)",
        )


def _bytes_differ(path: Path, read: list[str | None], before: dict[Path, str] | None) -> str | None:
    """Why the bytes of ``path`` (whose state moved) cannot be shown to be the ones the run read, or None when they
    are: every read hashed whole, and each hash, and the one from before host code when there is one, is the
    file's now."""
    if not read or None in read:
        return "the run read it in a way no single hash covers, so a metadata-only change cannot be told from a rewrite"
    wanted = set(read)
    if before is not None:
        if path not in before:
            return "its bytes could not be hashed before host code ran"
        wanted.add(before[path])
    try:
        now = file_sha256(path)
    except OSError as exc:
        return f"it cannot be read now ({exc.strerror or type(exc).__name__})"
    if set(read) != {now}:
        return "its bytes are not the ones the run read"
    if wanted != {now}:  # what was read is the file now, rewritten before it was read (by a python metric, say)
        return "the run read its bytes as they are now, not as they were before any host code ran"
    return None


def refuse_rewritten_definitions(loaded: LoadedConfig) -> None:
    """Exit 2 when a file whose hash the run's metric gates are bound to (``LoadedConfig.definition_files``: metric
    definition files, the host modules a python metric imports) is not, at the end of the run, the bytes hashed
    when the config loaded. A check's code is compared around each of its commands instead (an ERROR naming the
    file, ``lanes.checkinputs.code_change``), so that only its gates block; once a check has run as approved, a
    later rewrite cannot change what it measured.

    Host code runs during a run (a lane, a python metric, a check's command) and a pull request edits it freely: it
    could rewrite a metric's module or a helper a metric imports lazily while the run goes on, so that the scores
    were computed by code no approval covers while the run record names the approved hashes. Nothing is decided
    then. A file rewritten and put back before the end has its bytes again, but not its state (``file_state``:
    inode, size, ctime, taken as the config loaded, before its bytes were hashed: ``LoadedConfig.definition_states``):
    a gated function that read it as data in between (a ``data_files:`` entry, a text it ``exec``s, an extension)
    read what no approval covers, so a moved state stops the run too, even with the bytes the same. Limit: a
    metadata-only change (``chmod``, a hard link made or removed) moves it as well, and ends an honest run with
    exit 2, never a verdict.
    """
    config = loaded.config
    host_ran = config.live or bool(config.checks) or any(spec.host_reference() for spec in config.metrics.values())
    if not host_ran or not loaded.definition_files:
        return
    from evalglass.core.checks import check_code_key
    from evalglass.engine.spec.config import (
        check_files_key,
        check_inputs_key,
        definition_label,
        metric_definition_hashes,
    )

    checks = {key(name) for name in config.checks for key in (check_files_key, check_code_key, check_inputs_key)}
    now = metric_definition_hashes(config, loaded.base_dir)  # (a check's files and inputs are not hashed again)
    for key in sorted((loaded.definition_files.keys() | now.keys()) - checks):
        before, after = loaded.definition_files.get(key, {}), now.get(key, {})
        for label in sorted(before.keys() | after.keys()):
            if before.get(label) != after.get(label):
                raise SetupError(
                    f"{label!r} ({key}) changed while the run ran: the run hashed it when it loaded the config, "
                    "and the gates' approvals bind those bytes, so nothing was decided",
                    where=str(loaded.base_dir / label),
                    fix="find what rewrites it during a run (a lane, a metric or a check writing into the project) "
                    "and run again",
                )
    root = loaded.base_dir.resolve()
    for path, state in loaded.definition_states.items():
        if file_state(path) != state:
            raise SetupError(
                f"{definition_label(path, root)} was written while the run ran (its ctime moved): what the gated "
                "metric read there is unknown, even though its bytes are the ones hashed when the config loaded",
                where=str(path),
                fix="find what writes into the project during a run (a lane, a metric or a check) and run again",
            )


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
        #: Warnings of the run so far (a last-started pointer that could not be written, cached answers not
        #: trusted): printed before the line.
        self.warnings = warnings
        progress = f" after {done} of {total} examples" if done is not None and total else ""
        why = f"{reason}; " if reason else ""
        super().__init__(
            f"{why}interrupted{progress}: completed calls are cached; resume with: evalglass run --resume {folder}"
        )


@dataclass(frozen=True)
class RunOptions:
    """How to run a config, everything but the config itself (what ``evalglass.run`` and ``evalglass run`` pass).

    ``out``: the run folder (default ``.evalglass/runs/<run id>``). ``now``: the run's creation time (default: the
    clock). ``cache_mode``: ``use``, ``off`` or ``refresh`` (the call cache of a live run). ``resume``: the folder of
    an earlier, unfinished run, re-evaluated under its own run id and ``created_at`` (completed calls come from the
    cache) after checking that nothing it depends on changed. ``progress``: an ``engine.produce.progress.Reporter``
    (live runs only). ``pinned_ledger`` (``run --ledger``): the ledger the host requires; a config naming any other file
    is refused, since the config is what a pull request edits and a ledger it points to could be one the pull request
    wrote. ``locator``: finds a baseline the ledger names by reference (``engine.runs.runlocator``; None: baselines are
    folders only)."""

    out: Path | None = None
    now: datetime | None = None
    cache_mode: str = "use"
    resume: Path | None = None
    progress: Reporter | None = None
    pinned_ledger: Path | None = None
    locator: RunLocator | None = None


def run(config_path: Path, options: RunOptions | None = None) -> RunOutcome:
    """Evaluate, decide and write the artifacts (see :class:`RunOptions`). Every secret of the environment (and
    every one the config declares) is redacted from everything the run writes."""
    from evalglass.engine.produce.interrupts import terminate_like_interrupt

    with redaction.installed(), terminate_like_interrupt():
        return _run(config_path, options or RunOptions())


@dataclass(frozen=True)
class _Prepared:
    """A run once its config, ledger and manifest are settled, before its folder is touched."""

    folder: Path
    #: The manifest of the run being resumed (None: a new run), and this run's.
    resumed: RunManifest | None
    manifest: RunManifest
    loaded: LoadedConfig
    ledger: LoadedLedger
    cache_mode: CacheMode
    options: RunOptions
    counters: Counters
    signing_key: str | None
    #: Where the call cache's key came from (None: it could not be had; see ``_run_key``).
    key_source: str | None = None
    #: The untrusted call-cache entries met so far, one count per cache closed (each variant's, the judges'
    #: side by side): shared by every stage (``dataclasses.replace`` keeps the list), so a run that stops early
    #: still says how many it met.
    untrusted_met: list[int] = dataclasses.field(default_factory=list)
    #: The comparative gates' baselines, read before any host code ran (None: the run has no comparative gate).
    baselines: ReadBaselines | None = None
    #: The files the run reads examples and outputs from, as they were before any host code ran.
    input_states: dict[Path, FileState] = dataclasses.field(default_factory=dict)
    #: Their hashes before any host code ran, when host code can run while they are read (``start_digests``).
    input_digests: dict[Path, str] | None = None
    #: Every judge's fingerprint (its rubric) and calibration record, read before any host code ran.
    judge_standings: dict[str, JudgeStanding] = dataclasses.field(default_factory=dict)


def _runs_host_code(config: Config) -> bool:
    """Whether the run will start host workers: a python lane, an agent's host tool, a python metric."""
    lane = config.lane
    if lane is not None and lane.host_functions():
        return True
    return any(spec.host_functions() for spec in config.metrics.values())


def _run(config_path: Path, options: RunOptions) -> RunOutcome:
    prepared = _prepare(config_path, options)
    folder = prepared.folder
    with writing(folder):
        created = make_dirs(folder)
        with locked(folder):
            if prepared.resumed is None and not created:
                refuse_occupied(folder)
            outcome = _run_in(prepared, created)
            # The pointer is written under the lock: a concurrent run cannot finish between this run and it.
            problem = point_last_run_at(folder)
    return outcome if problem is None else dataclasses.replace(outcome, warnings=(*outcome.warnings, problem))


def _prepare(config_path: Path, options: RunOptions) -> _Prepared:
    """Config, ledger and manifest loaded and checked; any problem is a ``SetupError`` before any work is done."""
    from evalglass.engine.produce.cachemode import CacheMode
    from evalglass.engine.produce.progress import Counters
    from evalglass.engine.runs.manifest import (
        RunManifest,
        dataset_identity,
        definitions_fingerprint,
        file_fingerprint,
        load_manifest,
        refuse_changes,
        refuse_unsealed,
        sealed,
    )

    mode = CacheMode(options.cache_mode)
    resumed = load_manifest(options.resume) if options.resume is not None else None
    loaded = load_config(config_path)
    config = loaded.config
    if _runs_host_code(config):
        from evalglass.lanes.hostworker import start_fork_server

        start_fork_server()  # its imports overlap with reading the dataset (only a speed-up: workers start it too)
    refuse_unpinned_ledger(loaded, options.pinned_ledger)
    identity = dataset_identity(loaded.dataset_path, hash_contents=config.live)
    key = _run_key(loaded, resuming=resumed is not None)
    if resumed is not None:
        assert options.resume is not None and key is not None
        refuse_unsealed(options.resume, resumed, key.key, key.source)
        run_id, created_at, folder = resumed.run_id, resumed.created_at, options.resume
    else:
        moment = options.now or datetime.now(UTC)
        run_id, created_at = new_run_id(moment), moment.isoformat().replace("+00:00", "Z")
        folder = options.out if options.out is not None else default_run_folder(run_id)
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
    if resumed is not None:
        refuse_changes(folder, resumed, manifest)
    elif key is not None:
        manifest = sealed(manifest, key.key)
    ledger = load_ledger(loaded.ledger_path)
    check_against_config(ledger, config)
    baselines = None
    if any(gate.compare_to is not None for gate in config.gates.values()):
        from evalglass.engine.decide.baselines import read_baselines, refuse_damaged_baselines

        refuse_damaged_baselines(config, ledger)  # a damaged baseline stops the run before any call is made
        # Read before any host code runs (a lane could otherwise change which run a source's newest is).
        baselines = read_baselines(config, ledger, options.locator)
    signing_key = signing_key_from_env()
    if signing_key is not None:
        private_key(signing_key)  # a bad key is refused before any work is done, not after
    counters = Counters(total=identity.examples)
    source = None if key is None else key.source
    states = read_file_states(loaded)
    known = {loaded.dataset_path: identity.fingerprint} if identity.fingerprint is not None else {}
    return _Prepared(
        folder,
        resumed,
        manifest,
        loaded,
        ledger,
        mode,
        options,
        counters,
        signing_key,
        source,
        baselines=baselines,
        input_states=states,
        input_digests=start_digests(loaded, states, known),
        judge_standings=_judge_standings(loaded),
    )


def _judge_standings(loaded: LoadedConfig) -> dict[str, JudgeStanding]:
    """The judges' rubric fingerprints and calibration records, read before any host code runs: a python lane or
    metric (the same user) rewriting a rubric or a calibration record mid-run must not change what the gates are
    decided on, as for the baselines and the dataset."""
    if not loaded.config.judges:
        return {}
    from evalglass.engine.jobs.calibrate import judge_standings

    return judge_standings(loaded)


def _run_key(loaded: LoadedConfig, *, resuming: bool) -> CacheSecret | None:
    """The call cache's key, which seals a run's manifest (engine/runs/manifest.py). A new run that cannot have it
    (no home folder, a key file that would lie in the project) still runs, unsealed: it is the resume that needs the
    seal, and then the key's problem is the one line a resume prints."""
    from evalglass.engine.produce.cachekey import cache_path, cache_secret

    try:
        return cache_secret(cache_path(loaded))
    except SetupError:
        if resuming:
            raise
        return None


#: How many of an occupied --out folder's files are looked at to name three of them.
_SHOWN_AMONG = 64


def refuse_occupied(folder: Path) -> None:
    """A new run writes into an empty folder only: every file it finds there would sit beside its artifacts, be
    covered by its ``digests.json`` and read as part of it (an earlier run's ``outputs.jsonl`` or ``checks.jsonl``,
    say). Hidden entries are not the run's (partial files of others are never opened: ``runfolder``); a resumed
    run continues in its own folder and is not asked."""
    from itertools import islice

    from evalglass.engine.runs.digests import DIGESTS_FILE, iter_artifact_names

    # The first few found (the folder's own files come before its subfolders') are enough to name three and say
    # how many more: never the whole tree (`--out ~` walked the home folder, `--out /` the machine).
    first = sorted(islice(iter_artifact_names(folder), _SHOWN_AMONG))
    found = [*first, *([DIGESTS_FILE] if (folder / DIGESTS_FILE).exists() else [])]
    if found:
        more = len(found) - 3
        shown = ", ".join(found[:3]) + (
            "" if more <= 0 else " and more" if len(first) == _SHOWN_AMONG else f" and {more} more"
        )
        raise SetupError(
            f"the run folder is not empty (it holds {shown})",
            where=str(folder),
            fix="give --out a new or empty folder (or remove what is in it); `--resume` finishes an interrupted run",
        )


def _run_in(prepared: _Prepared, created: bool) -> RunOutcome:
    """The run in its (created, locked) folder: what is written on the way is removed if the run fails, unless it
    can be resumed."""
    from evalglass.engine.runs.manifest import write_manifest

    folder, manifest = prepared.folder, prepared.manifest
    #: Problems that leave the run's results intact (a pointer, the call cache): printed, never silent.
    warnings: list[str] = []
    joined: list[RayCluster] = []
    try:
        # First: a manifest is never written with the pointer still naming another run (it is removed if it
        # cannot be moved).
        problem = point_last_started_at(folder)
        if problem is not None:
            warnings.append(problem)
        if prepared.resumed is None:
            write_manifest(folder, manifest)
        else:
            sweep_killed_writers(folder)
        if prepared.loaded.config.variant_names:
            variants = _score_variants(prepared, warnings, joined)
            judged = prepared.loaded.config.compared_metrics
            compared = _score_compared(prepared, warnings, joined, variants) if judged else None
            outcome = _finish_variants(prepared, variants, compared)
            return dataclasses.replace(outcome, warnings=(*warnings, *outcome.warnings))
        keeper = None
        if prepared.loaded.config.lane is None:  # recorded outputs: the run keeps what it scores
            from evalglass.engine.runs.keptoutputs import KeptOutputsWriter

            keeper = KeptOutputsWriter(folder)
        sink = open_run_sink(
            prepared.loaded, ScoresWriter(folder), expected=manifest.dataset.examples or 0, keeper=keeper
        )
        scored = _score(prepared, sink, warnings, joined)
        written = {OUTPUTS_FILE: scored.outputs_sha256, CHECKS_FILE: scored.checks_sha256}
        outcome = _finish(prepared, scored, written_files=written)
        return dataclasses.replace(outcome, warnings=(*warnings, *outcome.warnings))
    except BaseException as failed:
        if isinstance(failed, KeyboardInterrupt) or interrupt_inside(failed):
            # The manifest stays: completed calls are in the cache and `--resume` finishes the run under its own id.
            reason = joined[0].lost if joined else None
            reason = reason or (str(failed) if isinstance(failed, ClusterLost) else None)
            done = prepared.counters.done if prepared.loaded.config.live else None
            said = (*warnings, *_untrusted(prepared, sum(prepared.untrusted_met)))
            raise RunInterrupted(folder, done, manifest.dataset.examples, reason, warnings=said) from None
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(failed, EvalGlassError):
            # The cache entries the run did not trust before it failed are still said, before the error: they were
            # replaced by real answers, so a re-run will not meet them and this is the one time they are said. (The
            # run's other warnings speak of results a failed run does not have, and are left out.)
            failed.warnings = (*_untrusted(prepared, sum(prepared.untrusted_met)), *failed.warnings)
        raise


def _refuse_unlike_written(path: Path, sha256: str) -> None:
    """Exit 2 when ``path``, a file the run wrote and published, no longer holds the bytes written (``sha256``)."""
    try:
        now: str | None = file_sha256(path)
    except OSError:
        now = None
    if now != sha256:
        raise SetupError(
            "the file changed while the run read it (rewritten after the run wrote it, before its judges read it): "
            "what they would grade is not what the run wrote, so nothing was decided",
            where=str(path),
            fix="find what writes into the run folder during a run (a process a lane, metric or check left behind) "
            "and run again",
        )


def _score(prepared: _Prepared, sink: RunSink, warnings: list[str], joined: list[RayCluster]) -> Scored:
    """The dataset scored into ``sink`` by the run's producer; nothing of it is kept when this raises. A cluster
    the run joins is put in ``joined`` (a stopped run's reason may be its loss) and closed here."""
    loaded = prepared.loaded
    check_records = CheckRecordWriter(prepared.folder)
    cluster: RayCluster | None = None
    try:
        if isinstance(loaded.config.executor, RayExecutorSpec):  # the one place a cluster is joined
            from evalglass.engine.produce.raycluster import RayCluster

            cluster = RayCluster(loaded).connect()
            joined.append(cluster)
        metrics = build_metrics(loaded, check_records, cluster)
        produced = _producer(prepared, metrics, warnings, cluster).produce(sink)
        warnings.extend(produced.notes)
        scored = sink.commit(produced)
        scored.checks_sha256 = check_records.commit()
        return scored
    except BaseException:
        sink.abort()
        check_records.abort()
        raise
    finally:
        if cluster is not None:
            cluster.close()


def variant_folder(folder: Path, name: str) -> Path:
    """Where variant ``name`` of a run with variants writes what its scoring produces (scores, outputs, checks)."""
    return folder / VARIANTS_DIR / name


def _score_variants(prepared: _Prepared, warnings: list[str], joined: list[RayCluster]) -> dict[str, Scored]:
    """Every variant scored on the same dataset, one after another, each by the run's one producer with the
    variant's task (so its calls are cached and resumed under the variant's own lane definition)."""
    from evalglass.engine.produce.progress import Counters

    config = prepared.loaded.config
    expected = prepared.manifest.dataset.examples or 0
    scored: dict[str, Scored] = {}
    for name in config.variant_names:
        folder = variant_folder(prepared.folder, name)
        make_dirs(folder)
        loaded = dataclasses.replace(prepared.loaded, config=config.for_variant(name))
        counters = Counters(total=prepared.manifest.dataset.examples)
        variant = dataclasses.replace(prepared, folder=folder, loaded=loaded, counters=counters)
        sink = open_run_sink(loaded, ScoresWriter(folder), expected=expected)
        scored[name] = _score(variant, sink, warnings, joined)
        prepared.counters.done = counters.done
    return scored


def _score_compared(
    prepared: _Prepared, warnings: list[str], joined: list[RayCluster], variants: dict[str, Scored]
) -> Scored:
    """The judges of variants side by side (``compare_variants``), once every variant is scored: per example every
    variant's output, written to ``compared/graded.jsonl`` from the variants' outputs files, is scored as a
    recorded output by ``Config.for_compared`` (so the judges' calls are cached and resumed like any judge's).
    The files are read back only as ``variants`` wrote them (their hashes): host code ran in between (a later
    variant's lane or python metric) and could have rewritten an earlier variant's answers into winning ones."""
    from evalglass.engine.explore.variantoutputs import graded_lines
    from evalglass.engine.produce.progress import Counters

    config = prepared.loaded.config
    folder = prepared.folder / COMPARED_DIR
    make_dirs(folder)
    graded = folder / GRADED_FILE
    writer = PartialFile(graded, buffering=1 << 20)
    try:
        written = {name: variants[name].outputs_sha256 for name in config.compared_variants if name in variants}
        digest = hashlib.sha256()
        for line in graded_lines(prepared.folder, config.compared_variants, samples=config.samples, written=written):
            writer.write(line)
            digest.update(line)
        writer.commit()
        # The judges read it as their dataset, batch by batch, while a process host code left behind may still run:
        # held as the dataset is (refuse_changed_inputs) from the state recorded here, and that state is shown to be
        # the one of the bytes written (hashed after it is taken), since the file could be rewritten between the
        # rename that publishes it and this call.
        prepared.input_states[graded] = file_state(graded)
        _refuse_unlike_written(graded, PREFIX + digest.hexdigest())
    except BaseException:
        writer.abort()
        raise
    loaded = dataclasses.replace(prepared.loaded, config=config.for_compared(graded.resolve()))
    counters = Counters(total=prepared.manifest.dataset.examples)
    stage = dataclasses.replace(prepared, folder=folder, loaded=loaded, counters=counters)
    sink = open_run_sink(loaded, ScoresWriter(folder), expected=prepared.manifest.dataset.examples or 0)
    return _score(stage, sink, warnings, joined)


def _producer(
    prepared: _Prepared, metrics: list[BuiltMetric], warnings: list[str], cluster: RayCluster | None
) -> Producer:
    """The live producer when a lane or a judge makes calls, else the recorded one: the run's one choice of path."""
    loaded = prepared.loaded
    if not loaded.config.live:
        from evalglass.engine.produce.recordedrun import RecordedProducer

        return RecordedProducer(loaded, metrics)
    from evalglass.engine.produce.liverun import LiveProducer

    return LiveProducer(
        loaded,
        metrics,
        prepared.folder,
        cache_mode=prepared.cache_mode,
        progress=prepared.options.progress,
        counters=prepared.counters,
        run_id=prepared.manifest.run_id,
        warnings=warnings,
        cluster=cluster,
        untrusted_met=prepared.untrusted_met,
    )


def sweep_killed_writers(folder: Path) -> None:
    """The partial files that runs killed in this folder left (``.scores.jsonl.PID.*.partial`` ...), removed before
    it is resumed: only those of the files a run writes here (engine/runs/runfolder.py's names), nothing else."""
    from evalglass.engine.decide.baselines import BASELINES_DIR
    from evalglass.engine.runs.manifest import MANIFEST_FILE

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
    variants = folder / VARIANTS_DIR
    if variants.is_dir() and not variants.is_symlink():
        for variant in variants.iterdir():
            if variant.is_dir() and not variant.is_symlink():
                sweep_partials(variant, {SCORES_FILE, OUTPUTS_FILE, CHECKS_FILE})
    compared = folder / COMPARED_DIR
    if compared.is_dir() and not compared.is_symlink():
        sweep_partials(compared, {SCORES_FILE, OUTPUTS_FILE, CHECKS_FILE, GRADED_FILE})
    copies = folder / BASELINES_DIR
    if copies.is_dir() and not copies.is_symlink():
        for copy in copies.iterdir():
            if copy.is_dir() and not copy.is_symlink():
                sweep_partials(copy, {RUNRECORD_FILE, SCORES_FILE})
    from evalglass.engine.runs.keptoutputs import BLOBS_DIR, PENDING

    sweep_partials(folder / BLOBS_DIR, {PENDING})


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
    from evalglass.engine.runs.manifest import LAST_STARTED_POINTER

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


def signed_provenance(work_tree: Path) -> SignedProvenance:
    """The branch and commit a signed run's signature covers: where the signer made it (engine.runs.provenance)."""
    import os

    from evalglass.engine.runs.provenance import provenance

    found = provenance(work_tree, os.environ)
    return SignedProvenance(git_branch=found.git_branch, git_commit=found.git_commit)


def _finish_variants(prepared: _Prepared, scored: dict[str, Scored], compared: Scored | None = None) -> RunOutcome:
    """One decision over every variant's scores: the columns as ``metric@variant``, the usage as
    ``source@variant``, the scores files each hashed in the run record; the judges of variants side by side
    (``compared``) under their own names."""
    from evalglass.core.scorecard import CallTotals
    from evalglass.core.variants import variant_metric

    columns = {
        variant_metric(metric, name): column for name, each in scored.items() for metric, column in each.columns.items()
    }
    usage = tuple(
        item.model_copy(update={"source": variant_metric(item.source, name)})
        for name, each in scored.items()
        for item in each.usage
    )
    if compared is not None:
        columns.update(compared.columns)
        usage += compared.usage
    totals = [each.calls for each in (*scored.values(), *([compared] if compared else [])) if each.calls is not None]
    calls = CallTotals(calls=sum(t.calls for t in totals), attempts=sum(t.attempts for t in totals)) if totals else None
    first_name, first = next(iter(scored.items()))
    files = {f"{VARIANTS_DIR}/{name}/{SCORES_FILE}": each.scores_sha256 for name, each in scored.items()}
    # A recorded variant's own outputs file, hashed now: the run keeps no copy of it, and this binds what verify
    # re-scores it from. These are the bytes the run read: _finish refuses the run when the file changed since
    # before any host code ran (refuse_changed_inputs), and a write always moves its ctime.
    outputs = {
        name: file_sha256(prepared.loaded.base_dir / path)
        for name in scored
        if (path := prepared.loaded.config.for_variant(name).outputs_path) is not None
    }
    merged = Scored(
        columns=columns,
        shape=first.shape,
        dataset=first.dataset,
        scores_sha256=first.scores_sha256,
        usage=usage,
        calls=calls,
        untrusted_cache_entries=sum(
            each.untrusted_cache_entries for each in (*scored.values(), *([compared] if compared else []))
        ),
        reads=tuple(read for each in (*scored.values(), *([compared] if compared else [])) for read in each.reads),
    )
    written: dict[str, str | None] = {}
    for where, each in [*((f"{VARIANTS_DIR}/{name}", each) for name, each in scored.items()), (COMPARED_DIR, compared)]:
        if each is not None:
            written.update(
                {f"{where}/{OUTPUTS_FILE}": each.outputs_sha256, f"{where}/{CHECKS_FILE}": each.checks_sha256}
            )
    return _finish(
        prepared,
        merged,
        scores_file=f"{VARIANTS_DIR}/{first_name}/{SCORES_FILE}",
        variant_scores=files,
        compared_scores=compared.scores_sha256 if compared is not None else None,
        variant_outputs=outputs,
        written_files=written,
    )


def _finish(
    prepared: _Prepared,
    scored: Scored,
    *,
    scores_file: str = SCORES_FILE,
    variant_scores: dict[str, str] | None = None,
    compared_scores: str | None = None,
    variant_outputs: dict[str, str] | None = None,
    written_files: dict[str, str | None] | None = None,
) -> RunOutcome:
    """Standalone checks, the decision and the artifacts: the same for recorded and live runs, with or without
    variants (``variant_scores``: each variant's scores file and its hash; ``variant_outputs``: each recorded
    variant's own outputs file's hash; ``written_files``: files the run wrote as it scored (each lane's
    ``outputs.jsonl``, each ``checks.jsonl``), by their path in the folder, with the hash they were written with,
    None where none was)."""
    check_results = run_standalone_checks(prepared.loaded)
    refuse_rewritten_definitions(prepared.loaded)
    refuse_changed_inputs(prepared.input_states, scored.reads, prepared.input_digests)
    # The decision and the artifacts build what they need once (the models' validators and serializers, the
    # scorecard, the run record): thousands of young objects and no cycles to speak of, which the collector's
    # passes walked again and again (≈ 10 young passes, 7-11 ms of a 10-line replay run). Paused, they are freed by
    # reference counting as ever; cyclic garbage waits for the first pass after.
    with collector_paused():
        return _decide_and_write(
            prepared,
            scored,
            check_results,
            scores_file,
            variant_scores,
            compared_scores,
            variant_outputs,
            {file: sha256 for file, sha256 in (written_files or {}).items() if sha256 is not None},
        )


def _decide_and_write(
    prepared: _Prepared,
    scored: Scored,
    check_results: dict[str, CheckResult],
    scores_file: str,
    variant_scores: dict[str, str] | None,
    compared_scores: str | None,
    variant_outputs: dict[str, str] | None = None,
    written_files: dict[str, str] | None = None,
) -> RunOutcome:
    """The decision and the artifacts, once the standalone checks have run (see :func:`_finish`)."""
    loaded, ledger, folder = prepared.loaded, prepared.ledger, prepared.folder
    run_id, created_at = prepared.manifest.run_id, prepared.manifest.created_at
    config = loaded.config
    dataset = scored.dataset
    gate_fingerprints = {name: config.gate_fingerprint(name, loaded.definition_files) for name in config.gates}
    standings = prepared.judge_standings
    comparative: ComparativeInputs | None = None
    baseline_records: dict[str, BaselineRecord] = {}
    if any(gate.compare_to is not None for gate in config.gates.values()):
        from evalglass.engine.decide.baselines import comparative_inputs, write_baselines

        assert prepared.baselines is not None  # read by _prepare, before any host code ran
        write_baselines(prepared.baselines, folder)
        baselines, baseline_records = prepared.baselines.found, prepared.baselines.records
        comparative = comparative_inputs(
            config,
            folder / scores_file,
            loaded.definition_files,
            dataset,
            baselines,
            day_of_timestamp(created_at),
            written=scored.scores_sha256,
        )
    baseline_copies: dict[str, str] = {}
    if prepared.baselines is not None:  # the copies write_baselines makes, listed by the bytes read before host code
        from evalglass.engine.decide.baselines import BASELINES_DIR

        baseline_copies = {
            f"{BASELINES_DIR}/{name}/{file}": fingerprint_of_bytes(data)
            for name, files in prepared.baselines.files.items()
            for file, data in files.items()
        }
    approved_files: list[dict[str, dict[str, str]]] = []
    stale = stale_causes(
        config,
        loaded.definition_files,
        ledger.ledger,
        gate_fingerprints,
        # The runs beside this one: an earlier run made when an approval was fresh names what changed since.
        earlier=lambda: earlier_definition_files(folder.parent, leave_out=folder),
        used=approved_files,
    )
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
        stale=stale,
        approved_files=tuple(approved_files),
        unbound_check_code=loaded.unbound_check_code(),
    )
    judged = None
    if any(spec.judged_tally() is not None for spec in config.metrics.values()):
        from evalglass.engine.explore.judgedsummaries import judged_summaries

        judged = judged_summaries(config, folder, written_files or {})
    scorecard = decided_scorecard(
        config, scored.columns, scored.shape.run_shape(), dataset, evidence, scored.calls, scored.usage, judged
    )
    record = run_record(
        loaded,
        ledger,
        dataset,
        evidence,
        baseline_records,
        scored.scores_sha256,
        scored.usage,
        scored.kept,
        scored.untrusted_cache_entries,
    )
    if variant_scores:
        update = {
            "scores_file": scores_file,
            "variant_scores": variant_scores,
            "compared_scores": compared_scores,
            "variant_outputs": variant_outputs or {},
        }
        record = record.model_copy(update=update)
    from evalglass.engine.explore.reportfile import report_markdown

    # Published run record first (the report is rendered from the published one: a run with variants names its
    # scores files there), then report, digest list and, last, the scorecard, those three with one wait for the disk
    # (runfolder.commit_together renames in order). The scorecard is what says a run finished (``view``, ``verify``,
    # a resume, a reader of earlier runs look for it): a run killed or stopped between two renames leaves no
    # scorecard, so its folder never looks finished without its report and digest list; it is resumed instead.
    _publish_together(folder, {RUNRECORD_FILE: model_file_bytes(record)})
    card_bytes = model_file_bytes(scorecard)
    report = text_file_bytes(report_markdown(folder, scorecard))
    digests = digests_of(
        folder,
        run_id,
        prepared.signing_key,
        known={
            record.scores_file: scored.scores_sha256,
            **(variant_scores or {}),
            **({f"{COMPARED_DIR}/{SCORES_FILE}": compared_scores} if compared_scores is not None else {}),
            **({scored.kept.file: scored.kept.sha256} if scored.kept is not None else {}),
            # What the run wrote as written, not as found now: host code may still be running (a thread, a child).
            **(written_files or {}),
            **baseline_copies,
        },
        provenance=None if prepared.signing_key is None else signed_provenance(loaded.base_dir),
        pending={REPORT_FILE: fingerprint_of_bytes(report), SCORECARD_FILE: fingerprint_of_bytes(card_bytes)},
    )
    _publish_together(
        folder, {REPORT_FILE: report, DIGESTS_FILE: model_file_bytes(digests), SCORECARD_FILE: card_bytes}
    )
    warnings = _untrusted(prepared, scored.untrusted_cache_entries)
    return RunOutcome(folder=folder, scorecard=scorecard, record=record, warnings=warnings)


def _publish_together(folder: Path, contents: dict[str, bytes]) -> None:
    """Each file of ``contents`` written whole into ``folder``, then all published in their order at once
    (``runfolder.commit_together``); nothing of them is left when writing one fails."""
    files: list[PartialFile] = []
    try:
        for name, data in contents.items():
            files.append(PartialFile(folder / name))
            files[-1].write(data)
    except BaseException:
        for file in files:
            file.abort()
        raise
    commit_together(files)


def _untrusted(prepared: _Prepared, count: int) -> tuple[str, ...]:
    """One line for the ``count`` call-cache entries the run did not trust, over every cache it opened (one per
    variant and the judge pass of variants): as the run record counts them, or as met by a run that stopped."""
    if not count:
        return ()
    from evalglass.engine.produce.cache import untrusted_warning
    from evalglass.engine.produce.cachekey import cache_path

    path = cache_path(prepared.loaded)
    return (untrusted_warning(path, count, prepared.key_source or "the cache key"),)
