"""A recorded run written back as a folder, byte for byte, each file checked against its stored SHA-256."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from evalglass.engine.runs.runfolder import make_dirs
from evalglass.errors import SetupError
from evalglass.history.blobs import restore, stored_pieces
from evalglass.history.schema import ArtifactRow


@dataclass(frozen=True)
class Mismatch:
    """A stored file whose bytes do not hash to the SHA-256 recorded with it (a row edited by hand)."""

    name: str
    recorded: str
    found: str


def write_run(engine: Engine, pk: int, target: Path) -> list[Mismatch]:
    """Write every stored file of run ``pk`` under ``target`` (created; it must be empty) and return the files
    whose bytes differ from their recorded SHA-256 or size (they are written as stored, for the caller to judge)."""
    make_dirs(target)
    mismatches: list[Mismatch] = []
    with engine.connect() as connection:
        files = connection.execute(
            select(ArtifactRow.name, ArtifactRow.sha256, ArtifactRow.size)
            .where(ArtifactRow.run_pk == pk)
            .order_by(ArtifactRow.name)
        ).all()
        for name, sha256, size in files:
            path = _inside(target, name)
            make_dirs(path.parent)
            found, written = restore(stored_pieces(connection, pk, name), path)
            if found != sha256 or written != size:
                mismatches.append(Mismatch(name, f"{sha256} ({size} bytes)", f"{found} ({written} bytes)"))
    return mismatches


def _inside(target: Path, name: str) -> Path:
    """``target/name``, refusing a stored name that would leave ``target`` (an absolute path, ``..``)."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise SetupError(
            f"a stored artifact name is not a plain relative path: {name!r}",
            fix="the history database was edited; record the run again from its folder",
        )
    return target.joinpath(*parts)
