"""The baselines comparative gates compare with: found through the ledger, read, fingerprinted, copied.

At run time a pinned baseline is read from the folder the ledger's ``baselines:`` entry names (relative to the ledger
file) or the run its reference names (through the run's locator); a baseline approved as a source is the newest
run its candidates offer that the source trusts (``engine.decide.baselinesearch``). Its fingerprinted files are copied
into the run folder (``baselines/NAME/``: the run record and scores, and for a source the signed digest list that
vouches for them); ``verify`` reads that copy, so it re-derives a comparative gate from the run's own artifacts, through
the same code.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalglass.core.authority import BaselineApproval, BlockReason
from evalglass.core.baselinesource import BaselineTrust, SignatureState
from evalglass.core.comparative import BaselineRun, ComparativeInputs
from evalglass.core.runrecord import BaselineRecord, RunRecord
from evalglass.core.scorecard import DatasetSummary
from evalglass.core.stats import Ties
from evalglass.engine.decide.baselinesearch import (
    CommittedListing,
    SourceSearch,
    candidates_of,
    newest_trusted,
    run_trust,
)
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, changed_mid_run, load_columns
from evalglass.engine.runs.compare import (
    RunForComparison,
    load_for_comparison,
    metric_definition,
    metric_definition_payload,
)
from evalglass.engine.runs.digests import DIGESTS_FILE
from evalglass.engine.runs.runfolder import atomically, make_dirs
from evalglass.engine.runs.runlocator import RunLocator
from evalglass.engine.spec.config import Config
from evalglass.engine.spec.ledger import LoadedLedger
from evalglass.errors import SetupError

BASELINES_DIR = "baselines"


def compared_metrics(config: Config) -> dict[str, str]:
    """The metrics comparative gates decide on, as the decision names them (``metric@variant`` for a gate on a
    variant), each with the declared metric it measures (empty: the run has no comparative gate)."""
    return {
        gate.decided_subject: gate.metric
        for gate in config.gates.values()
        if gate.compare_to is not None and gate.metric is not None
    }


def compared_ties(config: Config, *, unfavourable: bool = True) -> dict[str, Ties]:
    """Per compared metric (:func:`compared_metrics`' names), where a ``majority`` tie goes in the baseline's column
    as in this run's (``Config.tie_side`` of this run's metric: both sides of a pair break a tie alike);
    ``unfavourable`` off only to re-derive a run recorded before ties went to the unfavourable side."""
    return {
        name: config.tie_side(metric, unfavourable=unfavourable) for name, metric in compared_metrics(config).items()
    }


def compared_definitions(
    config: Config, definition_files: dict[str, dict[str, str]]
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Per compared metric (:func:`compared_metrics`' names), the fingerprint of its declared metric's definition
    and that definition: what the baseline's must equal."""
    compared = compared_metrics(config)
    return (
        {name: metric_definition(config, metric, definition_files) for name, metric in compared.items()},
        {name: metric_definition_payload(config, metric, definition_files) for name, metric in compared.items()},
    )


def _read(
    name: str, folder: Path, location: str, metrics: Mapping[str, Ties], *, trusted: bool, whole_set: bool = True
) -> tuple[BaselineRun, RunForComparison | None]:
    """The run in ``folder`` as a baseline; ``trusted``: also what its signature proves (a source's baseline).
    ``metrics`` are named as this run's decision names them (:func:`compared_ties`: each with where a majority tie
    goes); each is paired with the baseline's column ``RunForComparison.baseline_name`` gives (its variant of the
    same name, or its one column). ``whole_set``: the folder is a finished run's, checked as a set as every reader
    checks a run (:func:`_refused_set`); off only for the copy a run keeps of its baseline (``baselines/NAME/``),
    which the run's own digest list binds."""
    from evalglass.core.variantnames import baseline_candidates

    wanted = list(dict.fromkeys(column for metric in metrics for column in baseline_candidates(metric)))
    try:
        run = load_for_comparison(folder, what=f"baseline '{name}' run", metrics=wanted)
    except SetupError as exc:
        # A file that cannot be read may be a damaged one: the damage is what is named, as every reader names it.
        damage = _refused_set(name, folder, None, trusted=trusted) if whole_set and folder.is_dir() else None
        return BaselineRun(name=name, location=location, problem=damage or exc.what), None
    damage = _refused_set(name, folder, run, trusted=trusted) if whole_set else None
    if damage is not None:
        return BaselineRun(name=name, location=location, problem=damage), None
    columns = {metric: column for metric in metrics if (column := run.baseline_name(metric)) is not None}
    return (
        BaselineRun(
            name=name,
            location=location,
            fingerprint=run.fingerprint,
            run_id=run.record.run_id,
            dataset_fingerprint=run.record.dataset.fingerprint,
            gold_fingerprint=run.record.dataset.gold_fingerprint,
            ids=run.ids,
            metrics={metric: run.side(column, metrics[metric]) for metric, column in columns.items()},
            trust=run_trust(folder, run) if trusted else None,
            definitions={metric: run.definition_payload(column) for metric, column in columns.items()},
            variants=run.config.variant_names,
        ),
        run,
    )


def _refused_set(name: str, folder: Path, run: RunForComparison | None, *, trusted: bool) -> str | None:
    """The baseline's folder checked as a whole artifact set by the check every reader and ``verify`` make
    (``engine.runs.integrity``: every file ``digests.json`` lists, each file the run record binds by its hash; a
    folder without ``digests.json`` is refused). The files ``run`` already read are not read again. A pinned
    baseline that does not add up stops the run (SetupError, exit 2, one line naming the file): the gate would
    otherwise be decided, or blocked, on files nobody vouches for. A source's candidate that does not add up is
    passed over (the line is returned, named in the baseline's ``skipped``), as one that cannot be read is."""
    from evalglass.engine.decide.consistency import refuse_damaged
    from evalglass.engine.runs.artifacts import load_runrecord
    from evalglass.engine.runs.digests import load_digests
    from evalglass.engine.runs.integrity import ArtifactCheck

    known = {} if run is None else {RUNRECORD_FILE: run.record_sha256, **run.score_files}
    what = f"baseline '{name}' run"
    folder = Path(os.path.normpath(folder))  # named as a user would type it (not `evals/../runs/base`)
    try:
        try:
            digests = load_digests(folder)
        except SetupError as exc:  # a digest list that cannot be read: the run's set cannot be vouched for
            raise SetupError(f"{what} does not add up: {exc.what}", where=exc.where, fix=exc.fix) from None
        check = ArtifactCheck(folder, digests, known)
        refuse_damaged(folder, check.listed_problems(), what=what)
        # Listed and intact, the run record is the run's own: what it binds is checked against it.
        refuse_damaged(folder, check.record_problems(load_runrecord(folder) if run is None else run.record), what=what)
    except SetupError as exc:
        if trusted:
            return exc.what
        raise
    return None


def refuse_damaged_baselines(config: Config, ledger: LoadedLedger) -> None:
    """Before any work is done: each pinned baseline the comparative gates name, found as a folder beside the
    ledger, checked as a whole artifact set (:func:`_refused_set`), so a damaged one stops the run before a lane
    spends a call. A baseline named by reference (``main@latest``) or approved as a source is found, and checked,
    when the gates are decided (a run written back from the history is checked against its stored hashes too)."""
    for name in dict.fromkeys(gate.compare_to for gate in config.gates.values() if gate.compare_to is not None):
        approval = ledger.ledger.baselines.get(name or "")
        if name is None or approval is None or approval.is_source or approval.run is None:
            continue
        folder = ledger.path.parent / approval.run
        if folder.is_dir():
            _refused_set(name, folder, None, trusted=False)


def read_baseline(
    name: str, ledger: LoadedLedger, metrics: Mapping[str, Ties], locator: RunLocator | None, suite: str
) -> tuple[BaselineRun, RunForComparison | None]:
    """The baseline the ledger lists under ``name`` for a run of dataset ``suite``: a pinned one's ``run`` folder
    (relative to the ledger file) or the run its reference names through ``locator`` (the run's, see
    ``engine.runs.runlocator``); a source's newest trusted run (``engine.decide.baselinesearch``)."""
    approval = ledger.ledger.baselines[name]
    if approval.is_source:
        return _read_source(name, approval, ledger.path.parent, metrics, locator, suite)
    assert approval.run is not None
    reference = approval.run
    source, location = ledger.path.parent / reference, str(ledger.path.parent / reference)
    if not source.exists() and locator is not None:
        found_run = _locate(reference, locator)
        if found_run is not None:  # a run reference (main@latest): its fingerprint is still checked
            source, location = found_run, reference
    return _read(name, source, location, metrics, trusted=False)


def _read_source(
    name: str,
    approval: BaselineApproval,
    ledger_dir: Path,
    metrics: Mapping[str, Ties],
    locator: RunLocator | None,
    suite: str,
) -> tuple[BaselineRun, RunForComparison | None]:
    where = str(ledger_dir / approval.folder) if approval.folder is not None else "the run history"
    search = SourceSearch(name=name, approval=approval, suite=suite, where=where)
    try:
        candidates = candidates_of(search, ledger_dir, locator)
        return newest_trusted(
            search,
            candidates,
            lambda baseline, folder, found_at: _read(baseline, folder, found_at, metrics, trusted=True),
        )
    except CommittedListing as exc:  # the listing is the pull request's to choose: the gate blocks
        return BaselineRun(
            name=name, location=where, problem=exc.line(), problem_code=BlockReason.BASELINE_UNTRUSTED
        ), None
    except SetupError as exc:  # the history cannot be listed: the gate blocks, the run goes on
        return BaselineRun(name=name, location=where, problem=exc.what), None


def _locate(reference: str, locator: RunLocator) -> Path | None:
    try:
        return locator(reference)
    except SetupError:
        return None  # read as a folder below, which says the baseline's run cannot be read


def _signed(run: RunForComparison) -> BaselineTrust | None:
    """For the record of a pinned baseline: what its signature says, when it has one that can be checked (the
    decision never depends on it; a source's baseline carries it already)."""
    if not (run.folder / DIGESTS_FILE).is_file():
        return None
    try:
        return run_trust(run.folder, run)
    except SetupError:  # no `cryptography`: a pinned baseline does not need it
        return None


@dataclasses.dataclass(frozen=True)
class ReadBaselines:
    """Every baseline a run's comparative gates name, read whole before the run starts any host code
    (:func:`read_baselines`): what decides, and the bytes of each one's files the run copies into its folder."""

    found: dict[str, BaselineRun]
    records: dict[str, BaselineRecord]
    #: Per baseline, its files (relative path → bytes) as read, copied into ``baselines/<name>/`` by
    #: :func:`write_baselines`.
    files: dict[str, dict[str, bytes]]


def read_baselines(config: Config, ledger: LoadedLedger, locator: RunLocator | None) -> ReadBaselines:
    """Read every baseline the config's comparative gates name and the ledger lists (in a run with variants, every
    variant's scores file: the baseline's fingerprint covers them all). Called before any host code runs: a lane
    or a metric runs as the same user and could otherwise, mid-run, delete the newest signed runs from a source's
    folder (or its history) so that an older one became the baseline, or swap the files copied into the run."""
    metrics = compared_ties(config)
    found: dict[str, BaselineRun] = {}
    records: dict[str, BaselineRecord] = {}
    files: dict[str, dict[str, bytes]] = {}
    for name in dict.fromkeys(gate.compare_to for gate in config.gates.values() if gate.compare_to is not None):
        assert name is not None
        approval = ledger.ledger.baselines.get(name)
        if approval is None:
            continue  # the gate blocks with baseline_missing: the ledger lists no such baseline
        baseline, run = read_baseline(name, ledger, metrics, locator, config.dataset.name)
        trust = baseline.trust
        if run is not None:
            names = [RUNRECORD_FILE, *run.score_files]
            if approval.is_source and (run.folder / DIGESTS_FILE).is_file():
                names.append(DIGESTS_FILE)
            files[name] = {file: (run.folder / file).read_bytes() for file in names}
            trust = trust or _signed(run)
        found[name] = baseline
        records[name] = baseline_record(baseline, trust)
    return ReadBaselines(found, records, files)


def write_baselines(read: ReadBaselines, folder: Path) -> None:
    """Each baseline's files as :func:`read_baselines` read them, into ``folder/baselines/<name>/`` (byte for byte,
    atomically, mode 0600), where ``verify`` re-derives the comparison from."""
    for name, files in read.files.items():
        target = folder / BASELINES_DIR / name
        for file, data in files.items():
            make_dirs((target / file).parent)
            with atomically(target / file) as out:
                out.write(data)


def baseline_record(baseline: BaselineRun, trust: BaselineTrust | None) -> BaselineRecord:
    """What the run record keeps of a baseline: where it was, what it was, and for a signed one who signed it."""
    signed = trust is not None and trust.signature is SignatureState.VALID
    return BaselineRecord(
        location=baseline.location,
        problem=baseline.problem,
        problem_code=None if baseline.problem is None else baseline.problem_code,
        fingerprint=baseline.fingerprint,
        run_id=baseline.run_id,
        signed_by=trust.signer if signed and trust is not None else None,
        branch=trust.branch if signed and trust is not None else None,
        skipped=baseline.skipped,
    )


def proposed_baseline(folder: Path, run_text: str) -> BaselineRecord:
    """A run someone proposes as a baseline (``explain --baseline RUN``): its fingerprint, and who signed it on which
    branch when its signature holds. ``run_text`` is what the ledger's ``run:`` would say to find it. A run that
    does not add up (``consistency.load_checked``: a damaged or swapped artifact) is refused, never proposed."""
    from evalglass.engine.decide.consistency import load_checked

    load_checked(folder)
    run = load_for_comparison(folder, what="baseline run", metrics=[])
    found = BaselineRun(name="", location=run_text, fingerprint=run.fingerprint, run_id=run.record.run_id)
    return baseline_record(found, _signed(run))


def baselines_for_verify(
    config: Config, record: RunRecord, folder: Path, *, unfavourable_ties: bool = True
) -> dict[str, BaselineRun]:
    """The baselines as the run found them, re-read from the copies in its folder (nothing outside it); a majority
    tie broken as :func:`compared_ties` says (``unfavourable_ties`` off: as a run recorded before that rule)."""
    metrics = compared_ties(config, unfavourable=unfavourable_ties)
    found: dict[str, BaselineRun] = {}
    for name, recorded in record.baselines.items():
        if recorded.problem is not None:
            found[name] = BaselineRun(
                name=name,
                location=recorded.location,
                problem=recorded.problem,
                problem_code=recorded.problem_code or BlockReason.BASELINE_MISSING,
                skipped=recorded.skipped,
            )
        else:
            approval = record.ledger.baselines.get(name)
            trusted = approval is not None and approval.is_source
            copy = folder / BASELINES_DIR / name  # bound by this run's digest list, which verify checks
            baseline = _read(name, copy, recorded.location, metrics, trusted=trusted, whole_set=False)[0]
            found[name] = dataclasses.replace(baseline, skipped=recorded.skipped)
    return found


def comparative_inputs(
    config: Config,
    scores: Path,
    definition_files: dict[str, dict[str, str]],
    dataset: DatasetSummary,
    baselines: dict[str, BaselineRun],
    today: str,
    written: str | None = None,
) -> ComparativeInputs:
    """This run's side: its example ids (read back from ``scores``, its scores file: in a run with variants the first
    variant's, whose ids every variant shares), gold, metric definitions (by the name the decision gives each
    compared metric), suite and day (``today``: the run's own, which a baseline's age is counted to).

    ``written``: the SHA-256 of the scores file as the run wrote it (``run``, whose decision reads the ids back after
    host code ran: a lane, a python metric or a standalone check runs as the same user and can rewrite the run's own
    folder). The ids are taken only from bytes that hash to it: a file whose ids were shuffled re-paired this run's
    answers with other baseline examples, which narrows a paired interval and turned an undecided ``lower_bound``
    gate green. ``verify`` passes None: it checks the file against the digest list on its own."""
    loaded = load_columns(
        scores, [], samples=config.samples, clustered=config.dataset.cluster_field is not None, ids=True
    )
    if written is not None and loaded.sha256 != written:
        raise changed_mid_run(scores, "scores file", loaded.sha256, written)
    assert loaded.ids is not None
    definitions, payloads = compared_definitions(config, definition_files)
    return ComparativeInputs(
        ids=loaded.ids,
        dataset_fingerprint=dataset.fingerprint,
        gold_fingerprint=dataset.gold_fingerprint,
        definitions=definitions,
        definition_payloads=payloads,
        baselines=baselines,
        suite=config.dataset.name,
        today=today,
    )
