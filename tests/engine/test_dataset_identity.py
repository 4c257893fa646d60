"""The dataset's identity for a live run's manifest (what ``--resume`` compares) is read a chunk at a time: it must
say exactly what reading it a line at a time says (the same fingerprint, the same count of non-blank lines, the
same refusal to hash a file with a line longer than the reader takes), wherever the chunks happen to cut."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.fingerprint import PREFIX
from evalglass.engine.runs import manifest
from evalglass.engine.runs.manifest import DatasetIdentity, dataset_identity


def _line_by_line(path: Path, max_line: int) -> DatasetIdentity:
    """The identity as a line-at-a-time reader takes it (what the chunked reading must agree with)."""
    stat = path.stat()
    digest, examples = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while line := handle.readline(max_line + 1):
            if len(line) > max_line:
                return DatasetIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns)
            digest.update(line)
            examples += bool(line.strip())
    return DatasetIdentity(
        fingerprint=PREFIX + digest.hexdigest(), examples=examples, size=stat.st_size, mtime_ns=stat.st_mtime_ns
    )


_pieces = st.sampled_from([b"\n", b"\r\n", b" ", b"\t", b"\x0b", b"\x0c", b"{}", b'{"id": "a"}', b"x" * 9, b"\xc3\xa9"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_pieces, max_size=40), st.integers(1, 12), st.integers(1, 30))
def test_chunked_identity_is_the_line_by_line_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pieces: list[bytes], chunk: int, max_line: int
) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(pieces))
    monkeypatch.setattr(manifest, "MAX_LINE", max_line)
    monkeypatch.setattr(manifest, "_IDENTITY_CHUNK", min(chunk, max_line))
    assert dataset_identity(path, hash_contents=True) == _line_by_line(path, max_line)


def test_identity_of_a_real_sized_dataset(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(b'{"id": "e%d"}\n' % n + (b"  \n" if n % 1000 == 0 else b"") for n in range(300_000)))
    found = dataset_identity(path, hash_contents=True)
    assert found == _line_by_line(path, manifest.MAX_LINE)
    assert found.examples == 300_000
