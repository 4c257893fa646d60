"""The newest run a baseline approved as a source trusts: candidates newest first, each judged by its own signature.

A source (``baselines: NAME: {branch, signed_by, max_age_days}``) names no run: the run history (through the run's
locator) or a folder of run folders offers candidates, newest first as *they* order them, and the first one whose
signature is the approved key's, whose signed branch is the approved one and whose run record is of this suite is
the baseline. A candidate refused on those grounds is passed over (and named in the gate's note), so a newer
unsigned or foreign-key run someone put into the history cannot make the gate block; only when no candidate
qualifies does the gate block, with the newest candidate's reason. How old the chosen run is, and whether it is
comparable, is judged afterwards (``core.comparative``): an older trusted run is never taken instead.

Each candidate's digest list is read first (one small file) and most refusals happen there; only a candidate
signed by the approved key on the approved branch is read whole. At most :data:`MAX_EXAMINED` candidates are
examined, so a flood of forged rows costs a bounded time (and then blocks, saying so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from evalglass.core.authority import BaselineApproval, BlockReason, Reason
from evalglass.core.baselinesource import BaselineTrust, SignatureState, identity_reasons
from evalglass.core.comparative import BaselineRun
from evalglass.core.fingerprint import short
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, load_json, load_json_model
from evalglass.engine.runs.compare import RunForComparison
from evalglass.engine.runs.digests import DIGESTS_FILE, Digests, check_own_signature
from evalglass.engine.runs.provenance import git_tracks
from evalglass.engine.runs.runlocator import RunCandidate, RunLocator
from evalglass.errors import SetupError

#: Candidates examined before a source gives up (each costs one small read; a forged flood must not cost more).
MAX_EXAMINED = 200


@dataclass(frozen=True)
class FolderCandidate:
    """A run folder inside a source's ``folder``."""

    path: Path
    run_id: str
    where: str

    def digests_file(self) -> Path | None:
        path = self.path / DIGESTS_FILE
        return path if path.is_file() else None

    def folder(self) -> Path:
        return self.path


def folder_candidates(folder: Path) -> list[RunCandidate]:
    """The folder itself when it is a run folder (a committed ``history export``), else each run folder in it,
    newest first by the start time its run record claims (the claim orders; the signature decides)."""
    if not folder.is_dir():
        raise SetupError(
            "the baseline source's folder does not exist",
            where=str(folder),
            fix="fix `folder:` in the ledger's baseline (relative to the ledger), or drop it to use the run history",
        )
    if (folder / RUNRECORD_FILE).is_file():
        return [FolderCandidate(folder, _claimed(folder)[1], str(folder))]
    found = [(_claimed(path), path) for path in folder.iterdir() if path.is_dir() and (path / RUNRECORD_FILE).is_file()]
    found.sort(key=lambda item: (item[0][0], item[1].name), reverse=True)
    return [FolderCandidate(path, run_id, str(path)) for (_, run_id), path in found]


def _claimed(folder: Path) -> tuple[str, str]:
    """(start time, run id) as the run record says, or empty texts when it cannot be read (sorted last)."""
    try:
        data = load_json(folder / RUNRECORD_FILE, "run record")
    except SetupError:
        return "", folder.name
    if not isinstance(data, dict):
        return "", folder.name
    created, run_id = data.get("created_at"), data.get("run_id")
    return (created if isinstance(created, str) else "", run_id if isinstance(run_id, str) else folder.name)


def signature_trust(digests_file: Path | None) -> tuple[BaselineTrust, Digests | None]:
    """What a digest list's own signature proves (not yet whether it covers the files at hand)."""
    if digests_file is None:
        return BaselineTrust(signature=SignatureState.UNSIGNED), None
    try:
        digests: Digests = load_json_model(digests_file, Digests, "digest list")
    except SetupError as exc:
        return BaselineTrust(signature=SignatureState.INVALID, why_invalid=f"its {DIGESTS_FILE}: {exc.what}"), None
    if digests.signature is None:
        return BaselineTrust(signature=SignatureState.UNSIGNED), digests
    check = check_own_signature(digests)
    if not check.valid:
        return BaselineTrust(signature=SignatureState.INVALID, why_invalid=check.problem), digests
    branch = digests.provenance.git_branch if digests.provenance is not None else None
    return BaselineTrust(signature=SignatureState.VALID, signer=check.signer, branch=branch), digests


def run_trust(folder: Path, run: RunForComparison) -> BaselineTrust:
    """What the run's signature proves about the run record and scores read from ``folder`` (every variant's, in a
    run with variants), with the suite and start time that (signed) run record states."""
    path = folder / DIGESTS_FILE
    trust, digests = signature_trust(path if path.is_file() else None)
    trust = dataclasses.replace(trust, suite=run.record.dataset.name, created_at=run.record.created_at)
    if trust.signature is not SignatureState.VALID or digests is None:
        return trust
    for name, found, what in (
        (RUNRECORD_FILE, run.record_sha256, "run record"),
        *((file, sha256, "scores") for file, sha256 in run.score_files.items()),
    ):
        if digests.files.get(name) != found:
            return dataclasses.replace(
                trust,
                signature=SignatureState.INVALID,
                signer=None,
                why_invalid=f"its {what} is not the one signed (edited after signing)",
            )
    return trust


@dataclass(frozen=True)
class SourceSearch:
    """One source's baseline to look for: its name, the approval, this run's suite, and where it is looked for (as
    messages say it)."""

    name: str
    approval: BaselineApproval
    suite: str
    where: str


def candidates_of(search: SourceSearch, ledger_dir: Path, locator: RunLocator | None) -> Iterable[RunCandidate]:
    """The source's candidates newest first: its ``folder`` (relative to the ledger), else the run history."""
    approval = search.approval
    assert approval.branch is not None
    if approval.folder is not None:
        folder = ledger_dir / approval.folder
        refuse_committed(folder, "run folders")
        return folder_candidates(folder)
    if locator is None:
        raise SetupError(
            f"baseline '{search.name}' follows branch '{approval.branch}' in the run history, but this run has no "
            "run history to look in",
            fix="run through `evalglass run` or `evalglass.run()` (they open the history), or give the baseline a "
            "`folder:` of run folders",
        )
    return locator.newest(approval.branch, search.suite)


class CommittedListing(SetupError):
    """A source's candidates are listed from files the repository tracks (:func:`refuse_committed`)."""


def refuse_committed(listing: Path, what: str) -> None:
    """Refuse a source listing its candidates from ``listing`` when git tracks it: a pull request commits those files,
    and the repository's own history holds every run of the branch exported there before, so it could put back an
    earlier signed run (within ``max_age_days``) and choose a weaker baseline; signatures prove who made a run,
    never that it is the newest. Raises :class:`CommittedListing` (the gate blocks: ``baseline_untrusted``)."""
    if git_tracks(listing):
        raise CommittedListing(
            f"the branch's runs are listed from {what} the repository tracks ({listing}): a pull request commits "
            "them, so it could put back an earlier signed run and choose its own baseline",
            fix="list the branch's runs where only CI writes (the shared run history, EVALGLASS_DB, or a folder the "
            "workflow downloads the branch's newest run into), or pin one run (`run:` and `fingerprint:`)",
        )


#: Reads one candidate whole: (baseline name, its folder, where it was found) → the baseline with its trust, and
#: the run when it could be read.
Reader = Callable[[str, Path, str], tuple[BaselineRun, RunForComparison | None]]


def newest_trusted(
    search: SourceSearch,
    candidates: Iterable[RunCandidate],
    read: Reader,
) -> tuple[BaselineRun, RunForComparison | None]:
    """The newest candidate the source may take (its trust in ``BaselineRun.trust``, the ones passed over in
    ``skipped``), or a BaselineRun whose ``problem`` says why none qualified (``problem_code``: the newest
    candidate's reason, ``baseline_missing`` when there was none)."""
    approval = search.approval
    skipped: list[str] = []
    refusal: Reason | None = None
    examined = 0
    for candidate in candidates:
        examined += 1
        if examined > MAX_EXAMINED:
            skipped.append(f"(stopped after {MAX_EXAMINED} candidates)")
            break
        try:
            quick, _ = signature_trust(candidate.digests_file())
        except SetupError as exc:
            skipped.append(f"{candidate.run_id} (cannot be read: {exc.what})")
            continue
        reasons = identity_reasons(search.name, approval, quick, search.suite)
        if not reasons:
            try:
                folder = candidate.folder()
            except SetupError as exc:
                skipped.append(f"{candidate.run_id} (cannot be read: {exc.what})")
                continue
            baseline, run = read(search.name, folder, candidate.where)
            if baseline.problem is not None or baseline.trust is None:
                skipped.append(f"{candidate.run_id} (cannot be read: {baseline.problem})")
                continue
            reasons = identity_reasons(search.name, approval, baseline.trust, search.suite)
            if not reasons:
                return dataclasses.replace(baseline, skipped=tuple(skipped)), run
        refusal = refusal or reasons[0]
        skipped.append(f"{candidate.run_id} ({reasons[0].code.value})")
    return _none_qualified(search, refusal, skipped), None


def _none_qualified(search: SourceSearch, refusal: Reason | None, skipped: list[str]) -> BaselineRun:
    approval = search.approval
    assert approval.signed_by is not None
    wanted = (
        f"no run of dataset '{search.suite}' on branch '{approval.branch}' signed by key {short(approval.signed_by)}"
    )
    if refusal is None:
        why = f"{wanted} ({'none listed' if not skipped else 'none could be read: ' + '; '.join(skipped[:5])})"
        code = BlockReason.BASELINE_MISSING
    else:
        why = f"{wanted}; the newest candidate is refused: {refusal.message}"
        code = refusal.code
    return BaselineRun(name=search.name, location=search.where, problem=why, problem_code=code, skipped=tuple(skipped))
