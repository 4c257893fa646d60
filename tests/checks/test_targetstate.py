"""Fingerprinting a check's target: what counts as state, what does not, and what makes it unreadable."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from evalglass.lanes.targetstate import (
    PathSelector,
    TargetUnavailable,
    fingerprint_files,
    fingerprint_target,
)


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return _tree(tmp_path / "t", {"a.txt": b"alpha\n", "pkg/b.py": b"print(1)\n", "pkg/sub/c.bin": b"\x00\xff"})


def test_same_content_same_fingerprint_regardless_of_location_and_creation_order(target: Path, tmp_path: Path) -> None:
    state = fingerprint_target(target)
    assert state.fingerprint.startswith("sha256:") and len(state.fingerprint) == 71
    assert (state.files, state.links, state.bytes) == (3, 0, 6 + 9 + 2)
    assert fingerprint_target(target) == state
    twin = _tree(tmp_path / "elsewhere" / "twin", {"pkg/sub/c.bin": b"\x00\xff", "pkg/b.py": b"print(1)\n"})
    (twin / "a.txt").write_bytes(b"alpha\n")
    os.utime(twin / "a.txt", (1, 1))  # timestamps are not state
    assert fingerprint_target(twin).fingerprint == state.fingerprint


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "a.txt").write_bytes(b"alpha!\n"),
        lambda t: (t / "a.txt").rename(t / "a2.txt"),
        lambda t: (t / "new.txt").write_bytes(b""),
        lambda t: (t / "pkg" / "sub" / "c.bin").unlink(),
        lambda t: (t / "pkg" / "b.py").chmod(0o755),
    ],
    ids=["content", "rename", "new-empty-file", "delete", "executable-bit"],
)
def test_any_change_of_state_changes_the_fingerprint(target: Path, change: object) -> None:
    before = fingerprint_target(target).fingerprint
    change(target)  # type: ignore[operator]
    assert fingerprint_target(target).fingerprint != before


def test_non_executable_mode_bits_and_empty_folders_are_not_state(target: Path) -> None:
    before = fingerprint_target(target).fingerprint
    (target / "a.txt").chmod(0o600)
    (target / "empty").mkdir()
    assert fingerprint_target(target).fingerprint == before


def test_a_link_is_recorded_by_what_it_says_and_never_followed_outside(tmp_path: Path, target: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret v1")
    (target / "link").symlink_to(outside)
    (target / "loop").symlink_to(target)  # a link to the target itself must not recurse
    state = fingerprint_target(target)
    assert state.links == 2 and state.files == 3
    outside.write_text("secret v2 changed")  # content behind the link is not part of the state
    assert fingerprint_target(target).fingerprint == state.fingerprint
    (target / "link").unlink()
    (target / "link").symlink_to(tmp_path / "other.txt")  # where it points is (a dangling link is fine)
    assert fingerprint_target(target).fingerprint != state.fingerprint


def test_a_link_is_not_the_same_state_as_the_file_it_points_to(tmp_path: Path) -> None:
    real = _tree(tmp_path / "real", {"f": b"x"})
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "f").symlink_to(real / "f")
    assert fingerprint_target(real).fingerprint != fingerprint_target(linked).fingerprint


def test_a_file_target_is_its_bytes_and_executable_bit_not_its_name(tmp_path: Path) -> None:
    one = tmp_path / "one.py"
    two = tmp_path / "two.py"
    one.write_bytes(b"x = 1\n")
    two.write_bytes(b"x = 1\n")
    assert fingerprint_target(one) == fingerprint_target(two)
    two.chmod(0o755)
    assert fingerprint_target(one).fingerprint != fingerprint_target(two).fingerprint
    folder = _tree(tmp_path / "folder", {"one.py": b"x = 1\n"})
    assert fingerprint_target(folder).fingerprint != fingerprint_target(one).fingerprint


def test_include_and_exclude_select_what_counts(target: Path) -> None:
    full = fingerprint_target(target)
    only_py = fingerprint_target(target, include=["*.py"])
    assert only_py.files == 1
    (target / "a.txt").write_bytes(b"changed")
    assert fingerprint_target(target, include=["*.py"]) == only_py
    assert fingerprint_target(target).fingerprint != full.fingerprint
    # a folder pattern excludes everything below it, at any depth when it has no '/'
    (target / "pkg" / "__pycache__").mkdir()
    (target / "pkg" / "__pycache__" / "b.pyc").write_bytes(b"junk")
    base = fingerprint_target(target, exclude=["__pycache__"])
    assert base.files == 3
    (target / "pkg" / "__pycache__" / "b.pyc").write_bytes(b"other junk")
    assert fingerprint_target(target, exclude=["__pycache__"]) == base
    assert fingerprint_target(target, include=["pkg"], exclude=["pkg/sub/**", "**/*.pyc"]).files == 1


@pytest.mark.parametrize(
    ("include", "exclude", "path", "selected"),
    [
        (["*.py"], [], "deep/down/x.py", True),
        (["src/*.py"], [], "src/a/x.py", False),
        (["src/**/*.py"], [], "src/a/x.py", True),
        (["src/**/*.py"], [], "src/x.py", True),
        ([], ["build"], "build/out/x.o", False),
        ([], ["build/"], "src/build.c", True),
        ([], ["?.txt"], "a.txt", False),
        ([], ["[ab].txt"], "c.txt", True),
        ([], ["[!ab].txt"], "a.txt", True),
    ],
)
def test_glob_rules(include: list[str], exclude: list[str], path: str, selected: bool) -> None:
    assert PathSelector(include, exclude).selects(path) is selected


@pytest.mark.parametrize("pattern", ["", "/abs/*", "../up", "a/../b", " padded", "back\\slash"])
def test_unsafe_globs_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        PathSelector([pattern])


def test_expected_state_computed_in_memory_matches_the_written_folder(tmp_path: Path) -> None:
    files = {"solution.py": b"def f():\n    return 1\n", "tests/test_f.py": b"from solution import f\n"}
    folder = _tree(tmp_path / "w", files)
    assert fingerprint_files(files) == fingerprint_target(folder)
    assert fingerprint_files(files, exclude=["tests"]) == fingerprint_target(folder, exclude=["tests"])
    (folder / "solution.py").chmod(0o755)
    assert fingerprint_files(files, executable=["solution.py"]) == fingerprint_target(folder)


def test_missing_or_odd_targets_are_unavailable(tmp_path: Path) -> None:
    with pytest.raises(TargetUnavailable, match="cannot be read"):
        fingerprint_target(tmp_path / "nope")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(TargetUnavailable, match="neither a file nor a folder"):
        fingerprint_target(fifo)


def test_a_fifo_inside_the_target_is_recorded_but_never_opened(tmp_path: Path) -> None:
    folder = _tree(tmp_path / "f", {"a": b"1"})
    os.mkfifo(folder / "pipe")
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(fingerprint_target(folder).fingerprint), daemon=True)
    worker.start()
    worker.join(5)
    assert done, "fingerprinting blocked on a FIFO"
    assert done[0] != fingerprint_target(folder, exclude=["pipe"]).fingerprint


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_makes_the_target_unavailable(target: Path) -> None:
    (target / "a.txt").chmod(0)
    try:
        with pytest.raises(TargetUnavailable, match=r"a\.txt"):
            fingerprint_target(target)
    finally:
        (target / "a.txt").chmod(0o644)
