"""Do a run folder's artifacts add up as a set? The one check of the artifacts' bytes, made by ``verify`` and by
every reader of a run (``engine.decide.consistency.load_checked``) alike.

A run's artifacts travel (a CI download, a copy attached to a pull request), so any of them can arrive truncated,
with a byte flipped, swapped for the same file of another run, or not at all. What this checks, from the bytes alone:

- ``digests.json`` is there, names the run the run record names and lists the files every run writes;
- every file it lists is there, a regular file (never followed through a link), with the SHA-256 it lists, read
  a megabyte at a time (:func:`~evalglass.engine.runs.digests.file_sha256`), each file once;
- every file the run record names by its hash (``scores_sha256``, ``variant_scores``, ``compared_scores``, the kept
  outputs) is listed and hashes to what the record says, so the record and the scores it decided on stay bound.

A file in the folder that the list does not name (a JUnit report or an HTML page written after the run) is no
problem here: no reader reads it as the run's. What this cannot see is a consistent rewrite of the files and the
list together; a signature (``verify --key``) catches that, and anchoring (``verify`` in the host's checkout) the
snapshots' provenance.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from evalglass.core.fingerprint import PREFIX, short
from evalglass.core.runrecord import COMPARED_DIR, SCORES_FILE
from evalglass.engine.runs.artifacts import REPORT_FILE, RUNRECORD_FILE, SCORECARD_FILE
from evalglass.engine.runs.digests import DIGESTS_FILE, NOT_LISTED, Digests, file_sha256

if TYPE_CHECKING:
    from evalglass.core.runrecord import RunRecord

_LINK = "a symbolic link"
#: What a file that is not there hashes to in a problem (one that is not a regular file: ``<a directory>``...).
MISSING = "<missing>"
#: The files every finished run writes and lists: a list without one of them leaves it unbound.
WRITTEN_BY_EVERY_RUN = (SCORECARD_FILE, RUNRECORD_FILE, REPORT_FILE)
#: What to do when an artifact is a symbolic link: what a store that keeps files as links makes (git-annex, DVC's
#: symlink or hardlink-free caches). Links are never followed, even to a content-addressed object: the target lies
#: outside the folder, where nothing binds it to the run (a digest list behind a link could be any file), and a
#: target a later edit replaces would change the run without touching its folder. Regular files are what to restore.
LINKED_STORE = (
    "the run folder holds symbolic links, which are never followed (a store that keeps files as links restored it: "
    "git-annex, DVC): make them regular files with `git annex unlock FOLDER` (git-annex), `dvc config cache.type "
    "copy` then `dvc checkout --relink` (DVC), or copy the folder with its links resolved (`cp -rL`); `evalglass "
    "verify FOLDER` names every difference"
)
#: What to do about an artifact that does not add up: the same for every reader.
FETCH_AGAIN = (
    "the run folder was damaged or changed after the run (a truncated download, an edit, another run's file): copy "
    "the whole folder again or rerun `evalglass run`; `evalglass verify FOLDER` names every difference"
)


@dataclass(frozen=True)
class ArtifactProblem:
    """One way the artifacts do not add up: the file at fault, verify's field for it with what was recorded and
    what was found, and the sentence a reader refuses the run with."""

    file: str
    field: str
    recorded: str
    found: str
    line: str


class ArtifactCheck:
    """The artifacts of ``folder`` against ``digests`` (None: the run has no digest list, itself a problem) and the
    run record. ``known``: hashes of files the caller already read whole (the scorecard and run record a reader
    parses, the scores ``verify`` hashes as it loads them), so no file is read twice."""

    def __init__(self, folder: Path, digests: Digests | None, known: Mapping[str, str] | None = None) -> None:
        self.folder = folder
        self.digests = digests
        # A caller's hash is of the bytes it read, and a reader may have followed a link to read them (verify loads
        # the scores through ``open``): the same bytes behind a link, even one pointing outside the folder, are still
        # not the regular file the list names. So a known hash counts only for a name that is one.
        self._hashes: dict[str, str] = {
            name: found for name, found in (known or {}).items() if _outside_or_not_regular(folder, name) is None
        }

    def sha256(self, name: str) -> str:
        """The SHA-256 of artifact ``name`` as found (:data:`MISSING`, or what it is instead of a regular file, such
        as ``<a directory>``), hashed at most once. Never opens anything but a regular file (a FIFO would block)."""
        found = self._hashes.get(name)
        if found is None:
            path = self.folder / name
            kind = _outside_or_not_regular(self.folder, name)
            if kind is not None:
                found = f"<{kind}>"
            elif not path.exists():
                found = MISSING
            else:
                try:
                    found = file_sha256(path)
                except OSError:
                    found = MISSING  # vanished or unreadable between the look and the read: not the listed bytes
            self._hashes[name] = found
        return found

    def listed_problems(self) -> list[ArtifactProblem]:
        """The digest list is there and every file it lists has its bytes. Needs no parsed artifact, so a reader
        checks this before parsing one (a truncated scorecard is named as damaged, not as bad JSON)."""
        if self.digests is None:
            return [
                ArtifactProblem(
                    DIGESTS_FILE,
                    DIGESTS_FILE,
                    MISSING,
                    "the SHA-256 of every artifact the run wrote",
                    f"{DIGESTS_FILE} is missing, so nothing says which files are this run's",
                )
            ]
        unlisted = [
            ArtifactProblem(
                name,
                f"file {name}",
                NOT_LISTED,
                self.sha256(name),
                f"{DIGESTS_FILE} does not list {name}, which every run writes",
            )
            for name in WRITTEN_BY_EVERY_RUN
            if name not in self.digests.files
        ]
        listed = (self._listed(name, recorded) for name, recorded in sorted(self.digests.files.items()))
        return unlisted + [problem for problem in listed if problem is not None]

    def _listed(self, name: str, recorded: str) -> ArtifactProblem | None:
        found = self.sha256(name)
        if found == recorded:
            return None
        if found == MISSING:
            line = f"{name} is missing ({DIGESTS_FILE} lists it)"
        elif _said_kind(found) is not None:
            line = f"{name} is {_said_kind(found)}, not a regular file ({DIGESTS_FILE} lists it as one)"
        else:
            line = f"{name} is not the file {DIGESTS_FILE} lists (its SHA-256 is {short(found)}, not {short(recorded)})"
        return ArtifactProblem(name, f"file {name}", recorded, found, line)

    def record_problems(self, record: RunRecord) -> list[ArtifactProblem]:
        """The run record against the list and the files: the same run, and every file it names by its hash is
        listed and has those bytes."""
        problems: list[ArtifactProblem] = []
        if self.digests is not None and self.digests.run_id != record.run_id:
            problems.append(
                ArtifactProblem(
                    DIGESTS_FILE,
                    f"{DIGESTS_FILE}.run_id",
                    self.digests.run_id,
                    record.run_id,
                    f"{DIGESTS_FILE} is run {self.digests.run_id}, the run record is run {record.run_id}",
                )
            )
        kept = record.kept_outputs
        if kept is not None and (named := _named_hash(kept.file)) != kept.sha256:
            line = f"the run record names {kept.file} with SHA-256 {short(kept.sha256)}, not the one its name says"
            problems.append(ArtifactProblem(kept.file, "runrecord.kept_outputs.file", kept.sha256, named, line))
        for name, field, recorded in _bound_files(record):
            found = self.sha256(name)
            if self.digests is not None and name not in self.digests.files:
                line = f"{DIGESTS_FILE} does not list {name}, which the run record names ({field})"
            elif found == recorded:
                continue
            elif found == MISSING or _said_kind(found) is not None:
                said = "is missing" if found == MISSING else f"is {_said_kind(found)}, not a regular file"
                line = f"{name}, which the run record names ({field}), {said}"
            else:
                line = f"{name} is not the file the run record names ({field}: {short(recorded)}, found {short(found)})"
            problems.append(ArtifactProblem(name, field, recorded, found, line))
        return problems

    def problems(self, record: RunRecord) -> list[ArtifactProblem]:
        """Every problem: the list's, then the record's."""
        return self.listed_problems() + self.record_problems(record)


def _bound_files(record: RunRecord) -> Iterator[tuple[str, str, str]]:
    """(file, the record's field, the hash it records) for each file the run record binds by its hash."""
    yield record.scores_file, "runrecord.scores_sha256", record.scores_sha256
    for name, recorded in sorted(record.variant_scores.items()):
        if name != record.scores_file or recorded != record.scores_sha256:
            yield name, f"runrecord.variant_scores.{name}", recorded
    if record.compared_scores is not None:
        yield f"{COMPARED_DIR}/{SCORES_FILE}", "runrecord.compared_scores", record.compared_scores
    if record.kept_outputs is not None:
        yield record.kept_outputs.file, "runrecord.kept_outputs.sha256", record.kept_outputs.sha256


def _named_hash(kept_file: str) -> str:
    """The hash a kept-outputs file's name says (``blobs/<hex>.jsonl.gz``: the SHA-256 of its bytes)."""
    return PREFIX + kept_file.rsplit("/", 1)[-1].removesuffix(".jsonl.gz")


def _outside_or_not_regular(folder: Path, name: str) -> str | None:
    """What artifact ``name`` is when it cannot be the run's: a path outside the folder (a list or record could name
    any path; one outside is never read as the run's), or something there but not a regular file; None otherwise."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] == "/" or ".." in parts:
        return "a path outside the run folder"
    return _not_regular(folder / name)


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is there but not a regular file (a link is never followed); None otherwise."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return _LINK
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a socket or device" if stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"


def linked(problems: Sequence[ArtifactProblem]) -> bool:
    """Whether any of ``problems`` is an artifact found as a symbolic link (its fix is :data:`LINKED_STORE`)."""
    return any(_said_kind(problem.found) == _LINK for problem in problems)


def _said_kind(found: str) -> str | None:
    """The kind a found value names (``<a directory>`` -> ``a directory``), None for a hash or :data:`MISSING`."""
    return found[1:-1] if found.startswith("<a ") else None
