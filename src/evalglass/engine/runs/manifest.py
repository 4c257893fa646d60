"""The run manifest (``run.json``): written before the first example is scored, so a killed run can be resumed.

A resumed run is the *same* run: it keeps the run id and ``created_at`` and re-evaluates with the call cache, so no
completed call is repeated and the final artifacts are the bytes an uninterrupted run would have written. That is
only honest while nothing it depends on changed, so the manifest records what the run was started on (config
bytes, the files metric definitions live in, the ledger, the dataset) and ``--resume`` refuses when any differs.

A run folder can come from anywhere (a pull request can commit one, ``.evalglass/last-started`` with it), and a
resumed run takes its run id and ``created_at`` from the manifest: the day the run counts as made on decides which
approvals have expired. So the manifest is sealed with an HMAC under the call cache's key
(``engine.produce.cachekey``: ``EVALGLASS_CACHE_KEY``, else the per-user key file) when the run starts, and
``--resume`` refuses a manifest whose seal does not verify: only a run started where that key is can be resumed.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import hashlib
import hmac
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.fingerprint import PREFIX, canonical_json, fingerprint_of
from evalglass.engine.datasets.dataset import MAX_LINE
from evalglass.engine.runs.artifacts import load_json_model, write_model
from evalglass.errors import SetupError
from evalglass.readers.userfiles import open_regular, read_regular

MANIFEST_FILE = "run.json"
LAST_STARTED_POINTER = Path(".evalglass") / "last-started"
#: Names this use of the cache key: a manifest's seal is never a cache entry's MAC, nor the reverse.
_SEAL_DOMAIN = b"evalglass.run-manifest/1\0"


class DatasetIdentity(BaseModel):
    """What the dataset was when the run started: its bytes' SHA-256 (live runs) or, for recorded runs, whose
    scoring is cheap to repeat, only its size and modification time (hashing a large file twice is not free)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    fingerprint: str | None = None
    examples: int | None = Field(default=None, description="Non-blank lines; the total progress counts towards.")
    size: int
    mtime_ns: int


class RunManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.run/1"] = "evalglass.run/1"
    run_id: str
    created_at: str
    tool_version: str
    config_path: str = Field(description="The config path as the run was given it (resolved from the same folder).")
    config_fingerprint: str = Field(description="SHA-256 of the config file's bytes.")
    definitions_fingerprint: str = Field(description="Fingerprint of the files metric definitions live in.")
    ledger_fingerprint: str | None = Field(description="SHA-256 of the ledger's bytes; None when it was missing.")
    dataset: DatasetIdentity
    seal: str | None = Field(
        default=None,
        description="HMAC-SHA256 (hex) of the other fields under the call cache's key (docs/caching.md): `--resume` "
        "takes a run id and creation time only from a manifest sealed where that key is. None: the key could not "
        "be had when the run started, and the run cannot be resumed.",
    )


def sealed(manifest: RunManifest, key: bytes) -> RunManifest:
    """``manifest`` with its seal under ``key``."""
    return manifest.model_copy(update={"seal": _seal(manifest, key)})


def _seal(manifest: RunManifest, key: bytes) -> str:
    body = manifest.model_dump(mode="json", exclude={"seal"})
    return hmac.new(key, _SEAL_DOMAIN + canonical_json(body), "sha256").hexdigest()


def refuse_unsealed(folder: Path, manifest: RunManifest, key: bytes, source: str) -> None:
    """One line, before any work, when ``manifest`` was not sealed under ``key`` (from ``source``)."""
    if manifest.seal is not None and hmac.compare_digest(manifest.seal, _seal(manifest, key)):
        return
    raise SetupError(
        f"cannot resume run {manifest.run_id}: its manifest (run.json) was not sealed with this machine's cache key "
        f"({source}), so its run id and creation time are not taken on its word (a run folder can come from "
        "anywhere, a pull request included)",
        where=str(folder),
        fix="start a new run with `evalglass run` (completed calls are still cached); a run started in CI resumes "
        "where the same EVALGLASS_CACHE_KEY is set",
    )


def definitions_fingerprint(definition_files: dict[str, dict[str, str]]) -> str:
    return fingerprint_of(definition_files)


def file_fingerprint(path: Path) -> str | None:
    """SHA-256 of the file's bytes; None when there is no such file (anything else that is wrong with it, a FIFO
    or a folder in its place, is the one-line error loading it would give)."""
    try:
        return PREFIX + hashlib.sha256(read_regular(path, what="authority ledger")).hexdigest()
    except SetupError:
        if not path.exists():
            return None
        raise


#: Bytes read at a time when hashing the dataset (no more than the longest line, so only a line left open across
#: chunks can be longer than that).
_IDENTITY_CHUNK = min(1 << 20, MAX_LINE)
#: What ``bytes.strip()`` removes, but the newline: a line of only these is blank.
_BLANK = b" \t\r\x0b\x0c"


def dataset_identity(path: Path, *, hash_contents: bool) -> DatasetIdentity:
    """Identity of the dataset file. With ``hash_contents`` the bytes are hashed (and lines counted) in one pass."""
    try:
        stat = path.stat()
    except OSError:
        return DatasetIdentity(size=-1, mtime_ns=-1)
    if not hash_contents:
        return DatasetIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
    digest = hashlib.sha256()
    examples = 0
    # A chunk at a time (not a line at a time: a tenth of the time on short lines): every byte hashed, each line
    # with something besides whitespace counted (what ``line.strip()`` tells), and a line longer than MAX_LINE
    # (newline included) met as the run's reader meets it. Only the line left open across chunks can be that long.
    open_length, open_blank = 0, True
    try:
        with open_regular(path, what="dataset file") as handle:
            while chunk := handle.read(_IDENTITY_CHUNK):
                digest.update(chunk)
                first_newline = chunk.find(b"\n")
                if first_newline < 0:
                    open_length += len(chunk)
                else:
                    if open_length + first_newline + 1 > MAX_LINE:
                        return DatasetIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
                    open_length = len(chunk) - chunk.rfind(b"\n") - 1
                if open_length > MAX_LINE:  # reading it for the run refuses it, naming the line
                    return DatasetIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
                pieces = chunk.translate(None, _BLANK).split(b"\n")  # a blank line is an empty piece
                if len(pieces) == 1:
                    open_blank = open_blank and not pieces[0]
                    continue
                examples += not (open_blank and not pieces[0])
                middle = pieces[1:-1]
                examples += len(middle) - middle.count(b"")
                open_blank = not pieces[-1]
        examples += not open_blank
    except (OSError, SetupError):
        # Reading it for the run itself gives the one-line error for this (a FIFO, a folder, unreadable).
        return DatasetIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
    return DatasetIdentity(
        fingerprint=PREFIX + digest.hexdigest(), examples=examples, size=stat.st_size, mtime_ns=stat.st_mtime_ns
    )


def write_manifest(folder: Path, manifest: RunManifest) -> None:
    write_model(folder / MANIFEST_FILE, manifest)


def load_manifest(folder: Path) -> RunManifest:
    path = folder / MANIFEST_FILE
    if not folder.is_dir():
        # What `.evalglass/last-started` names after a run that stopped before it could write its folder (a full
        # disk, a file-size limit): that run removed the folder it created, so there is nothing to continue.
        raise SetupError(
            "nothing to resume: this run folder does not exist (a run that cannot write its folder removes it)",
            where=str(folder),
            fix="start a new run with `evalglass run`",
        )
    if not path.exists():
        raise SetupError(
            "nothing to resume: no run manifest (run.json) in this folder",
            where=str(folder),
            fix="name the folder of a run started by this version of `evalglass run`",
        )
    manifest: RunManifest = load_json_model(path, RunManifest, "run manifest")
    return manifest


def refuse_changes(folder: Path, recorded: RunManifest, current: RunManifest) -> None:
    """One line naming the first thing that changed since the run started, and what to do instead."""
    changes: list[str] = []
    if recorded.config_fingerprint != current.config_fingerprint:
        changes.append("the config")
    if recorded.definitions_fingerprint != current.definitions_fingerprint:
        changes.append("a file a metric is defined by (schema, host module, rubric)")
    if recorded.ledger_fingerprint != current.ledger_fingerprint:
        changes.append("the authority ledger")
    before, now = recorded.dataset, current.dataset
    if before.fingerprint is not None:
        if before.fingerprint != now.fingerprint:
            changes.append("the dataset")
    elif (before.size, before.mtime_ns) != (now.size, now.mtime_ns):
        changes.append("the dataset")
    if recorded.tool_version != current.tool_version:
        changes.append(f"the EvalGlass version ({recorded.tool_version} → {current.tool_version})")
    if changes:
        raise SetupError(
            f"cannot resume run {recorded.run_id}: {' and '.join(changes)} changed since it started",
            where=str(folder),
            fix="start a new run with `evalglass run` (completed calls are still cached)",
        )


__all__ = [
    "LAST_STARTED_POINTER",
    "MANIFEST_FILE",
    "DatasetIdentity",
    "RunManifest",
    "dataset_identity",
    "definitions_fingerprint",
    "file_fingerprint",
    "load_manifest",
    "refuse_changes",
    "refuse_unsealed",
    "sealed",
    "write_manifest",
]
