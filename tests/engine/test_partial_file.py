"""The one "partial file, then rename" writer every artifact goes through (scores, outputs, check records, and
one-shot files): nothing is visible under the final name until commit, abort leaves nothing, and a lazy file that
was never written is never published."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.engine.runs.runfolder import PartialFile, commit_together, sweep_partials, write_atomic


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


def _written(folder: Path, names: list[str]) -> list[PartialFile]:
    files = [PartialFile(folder / name) for name in names]
    for file, name in zip(files, names, strict=True):
        file.write(name.encode() + b"\n")
    return files


def test_commit_together_syncs_every_file_before_any_is_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["runrecord.json", "scorecard.json", "report.md", "digests.json"]
    files = _written(tmp_path, names)
    seen_at_sync: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        seen_at_sync.append(sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".partial")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    commit_together(files)
    assert seen_at_sync == [[]] * 4  # four fsyncs, each before the first rename
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert all((tmp_path / name).read_bytes() == name.encode() + b"\n" for name in names)


def test_commit_together_publishes_nothing_when_one_sync_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scorecard.json").write_bytes(b"old")
    files = _written(tmp_path, ["runrecord.json", "scorecard.json", "digests.json"])
    failing = files[1]
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if failing._handle is not None and fd == failing._handle.fileno():
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left"):
        commit_together(files)
    assert [p.name for p in tmp_path.iterdir()] == ["scorecard.json"]  # the old file, no partial, nothing new
    assert (tmp_path / "scorecard.json").read_bytes() == b"old"


FINALS = ("scores.jsonl", "outputs.jsonl", "run.json")
_names = st.one_of(
    # what a killed writer leaves: the partial name of a final this sweep is about, or of another
    st.builds(
        lambda final, pid, tag: f".{final}.{pid}.{tag}.partial",
        st.sampled_from([*FINALS, "report.html", "notes.txt"]),
        st.integers(min_value=1, max_value=4_000_000),
        st.text("0123456789abcdef", min_size=8, max_size=8),
    ),
    # near misses a person or another tool may have there
    st.builds(
        lambda final, pid, tag, end: f".{final}.{pid}.{tag}{end}",
        st.sampled_from(FINALS),
        st.sampled_from(["12", "x1", ""]),
        st.text("0123456789abcdefgz", min_size=0, max_size=9),
        st.sampled_from([".partial", ".partial~", ".part", ""]),
    ),
    st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=["Cs"]), min_size=1, max_size=30),
)


def _final_of(name: str) -> str | None:
    """The file a partial file's name is of (what open_private writes: ``.NAME.PID.8HEX.partial``), or None."""
    found = re.fullmatch(r"\.(.+)\.[0-9]+\.[0-9a-f]{8}\.partial", name)
    return found[1] if found else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(_names, max_size=12), kinds=st.lists(st.sampled_from(["file", "dir", "link"]), min_size=12))
def test_sweep_removes_exactly_the_killed_writers_partial_files(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], kinds: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("run")
    own = f".scores.jsonl.{os.getpid()}.0123abcd.partial"
    names = {name for name in names if name not in (".", "..")} | {own}
    made: dict[str, str] = {}
    for name, kind in zip(sorted(names), [*kinds, "file"], strict=False):
        path = folder / name
        if kind == "dir":
            path.mkdir()
        elif kind == "link":
            path.symlink_to(folder / "nowhere")
        else:
            path.write_bytes(b"x")
        made[name] = kind
    removed = sweep_partials(folder, FINALS)
    expected = {name for name, kind in made.items() if kind == "file" and name != own and _final_of(name) in FINALS}
    assert removed == len(expected)
    assert {path.name for path in folder.iterdir()} == set(made) - expected


def test_sweep_of_a_missing_folder_removes_nothing(tmp_path: Path) -> None:
    assert sweep_partials(tmp_path / "gone", FINALS) == 0
