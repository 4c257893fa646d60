"""A run folder's files as compressed, hashed chunks (what the history stores), and those chunks back as files.

Each file is read once, in pieces of :data:`CHUNK_SIZE` bytes, hashed (SHA-256, as ``digests.json`` writes it)
and compressed with zlib in the same pass; the pieces are stored as rows, so memory stays bounded whatever the
size of the run and no row approaches a database's size limit for one value. Reading back decompresses, re-hashes
and refuses a file whose bytes do not hash to the recorded SHA-256.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from sqlalchemy import Connection, select

from evalglass.core.fingerprint import PREFIX
from evalglass.engine.runs.digests import DIGESTS_FILE, artifact_names
from evalglass.history.schema import ArtifactChunkRow

CHUNK_SIZE = 4 << 20
#: zlib level 1: about a fifth of a run's JSON bytes at a few hundred MB/s; higher levels cost far more time
#: for a few percent of size (BENCHMARKS.md, history).
COMPRESSION_LEVEL = 1


def artifact_files(folder: Path) -> list[str]:
    """Every file of the run folder as a '/'-separated relative path, sorted: what ``digests.json`` covers (hidden
    entries such as partial files left out, symbolic links never followed) and ``digests.json`` itself."""
    names = [*artifact_names(folder), DIGESTS_FILE]
    return sorted(name for name in names if stat.S_ISREG(_lstat_mode(folder / name)))


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return 0


class Compressed:
    """Iterating yields the file's compressed pieces, one per :data:`CHUNK_SIZE` bytes read; afterwards
    ``sha256`` (``sha256:<hex>``, as ``digests.json`` writes it) and ``size`` describe the bytes read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sha256 = ""
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        from evalglass.engine.runs.artifacts import open_artifact

        digest = hashlib.sha256()
        with open_artifact(self.path, self.path.name) as handle:
            while block := handle.read(CHUNK_SIZE):
                digest.update(block)
                self.size += len(block)
                yield zlib.compress(block, COMPRESSION_LEVEL)
        self.sha256 = PREFIX + digest.hexdigest()


def stored_pieces(connection: Connection, pk: int, name: str) -> Iterable[bytes]:
    """Run ``pk``'s stored file ``name`` as its compressed pieces, in order (what :func:`restore` reads back)."""
    return connection.execute(
        select(ArtifactChunkRow.data)
        .where(ArtifactChunkRow.run_pk == pk, ArtifactChunkRow.name == name)
        .order_by(ArtifactChunkRow.seq)
    ).scalars()


def restore(pieces: Iterable[bytes], target: Path) -> tuple[str, int]:
    """Write the decompressed ``pieces`` to ``target`` (a new private file, flushed to disk and renamed into place
    by the one atomic writer every artifact goes through) and return the SHA-256 (``sha256:<hex>``) and size of
    what was written, for the caller to compare with the record. A piece that does not decompress is kept as it is
    stored, so the hash differs and the caller sees it."""
    from evalglass.engine.runs.runfolder import atomically

    digest = hashlib.sha256()
    size = 0
    with atomically(target) as out:
        for piece in pieces:
            try:
                block = zlib.decompress(piece)
            except zlib.error:
                block = piece
            digest.update(block)
            size += len(block)
            out.write(block)
    return PREFIX + digest.hexdigest(), size
