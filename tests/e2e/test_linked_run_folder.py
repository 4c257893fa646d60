"""A run folder that a store keeping files as links restored (git-annex, DVC) is refused, since a link is never
followed (its target lies outside the folder, bound to no run), but the one line says how to restore regular files
(`git annex unlock`, DVC's `--relink` with copies, `cp -rL`) instead of calling it damaged and saying to copy it
again, which restores the same links. The same bytes as regular files are read as the run. Through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.e2e.project import make_project


def annexed(folder: Path, store: Path) -> None:
    """Every artifact of ``folder`` moved into ``store`` and linked back, as `git annex add` leaves a folder."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        target = store / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, target)
        path.symlink_to(target)


def unlocked(folder: Path) -> None:
    """What `git annex unlock` does: each link replaced by a regular file holding its bytes."""
    for path in sorted(p for p in folder.rglob("*") if p.is_symlink()):
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)


def test_a_run_folder_restored_as_links_is_refused_saying_how_to_restore_it(tmp_path):
    project = make_project(tmp_path)
    assert project.run("--out", "runs/a", "--no-history").code == 0
    assert project.run("--out", "runs/b", "--no-history").code == 0
    annexed(project.root / "runs" / "a", project.root / ".git" / "annex" / "objects")
    for args in (("view", "runs/a"), ("compare", "runs/a", "runs/b")):
        result = project.cli(*args)
        assert result.code == 2, result.out + result.err
        assert "is a symbolic link" in result.err, result.err
        assert "git annex unlock runs/a" in result.err, result.err  # on main: "copy the whole folder again"
        assert "dvc checkout --relink" in result.err and "Traceback" not in result.err
    unlocked(project.root / "runs" / "a")
    assert project.cli("view", "runs/a").code == 0
    assert project.cli("compare", "runs/a", "runs/b").code == 0
