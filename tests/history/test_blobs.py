"""A file stored as compressed chunks comes back byte for byte with the SHA-256 of its bytes, whatever its size
relative to the chunk size; a corrupted piece shows as a different hash, never as a silent success."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.history import blobs
from evalglass.history.refs import is_reference


@given(data=st.binary(max_size=5000), chunk=st.integers(min_value=1, max_value=700))
def test_a_file_round_trips_through_its_chunks(data: bytes, chunk: int) -> None:
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(blobs, "CHUNK_SIZE", chunk)
        source = Path(folder, "in.bin")
        source.write_bytes(data)
        pieces = blobs.Compressed(source)
        stored = list(pieces)
        assert len(stored) == -(-len(data) // chunk)  # one piece per chunk read, none for an empty file
        assert pieces.sha256 == "sha256:" + hashlib.sha256(data).hexdigest() and pieces.size == len(data)
        target = Path(folder, "out.bin")
        assert blobs.restore(stored, target) == (pieces.sha256, len(data))
        assert target.read_bytes() == data
        assert target.stat().st_mode & 0o077 == 0


@given(data=st.binary(min_size=1, max_size=2000), flip=st.integers(min_value=0))
def test_a_changed_piece_changes_the_hash(data: bytes, flip: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder, "in.bin")
        source.write_bytes(data)
        pieces = blobs.Compressed(source)
        stored = list(pieces)
        raw = bytearray(data)
        raw[flip % len(raw)] ^= 0xFF
        import zlib

        for forged in ([zlib.compress(bytes(raw))], [b"not zlib at all"]):
            found, _size = blobs.restore(forged, Path(folder, "out.bin"))
            assert found != pieces.sha256
        assert stored  # the original still restores to its hash
        assert blobs.restore(stored, Path(folder, "out.bin"))[0] == pieces.sha256


def test_the_files_of_a_folder_are_its_visible_regular_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "baselines" / "main").mkdir(parents=True)
    (tmp_path / "baselines" / "main" / "scores.jsonl").write_text("")
    (tmp_path / ".scores.jsonl.1.ab.partial").write_text("half")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x").write_text("x")
    os.symlink(tmp_path / "a.json", tmp_path / "link.json")
    os.symlink(tmp_path / "baselines", tmp_path / "linked-dir")
    assert blobs.artifact_files(tmp_path) == ["a.json", "baselines/main/scores.jsonl"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("last", True), ("main@latest", True), ("feature/x@2026-12-01", True), ("20261201T000000Z-abc", True),
     (".evalglass/runs/x", False), ("runs/x", False)],
)  # fmt: skip
def test_what_counts_as_a_run_reference(text: str, expected: bool) -> None:
    assert is_reference(text) is expected
