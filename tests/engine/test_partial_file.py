"""The one "partial file, then rename" writer every artifact goes through (scores, outputs, check records, and
one-shot files): nothing is visible under the final name until commit, abort leaves nothing, and a lazy file that
was never written is never published."""

from __future__ import annotations

import stat
from pathlib import Path

from evalglass.engine.runfolder import PartialFile, write_atomic


def test_commit_publishes_private_bytes_and_leaves_no_partial(tmp_path: Path) -> None:
    final = tmp_path / "scores.jsonl"
    file = PartialFile(final)
    file.write(b"a\n")
    assert not final.exists() and next(p.name for p in tmp_path.iterdir()).endswith(".partial")
    file.write(b"b\n")
    file.commit()
    assert final.read_bytes() == b"a\nb\n"
    assert stat.S_IMODE(final.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["scores.jsonl"]


def test_abort_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    final = tmp_path / "report.md"
    final.write_bytes(b"old")
    file = PartialFile(final)
    file.write(b"new")
    file.abort()
    assert final.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_a_lazy_file_never_written_is_never_published(tmp_path: Path) -> None:
    final = tmp_path / "checks.jsonl"
    file = PartialFile(final, lazy=True)
    assert list(tmp_path.iterdir()) == []
    file.commit()
    file.abort()
    assert list(tmp_path.iterdir()) == []


def test_write_atomic_replaces_whole(tmp_path: Path) -> None:
    final = tmp_path / "last-run"
    write_atomic(final, b"one\n")
    write_atomic(final, b"two\n")
    assert final.read_bytes() == b"two\n" and [p.name for p in tmp_path.iterdir()] == ["last-run"]
