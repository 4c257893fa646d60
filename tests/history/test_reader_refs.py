"""Which run `view`, `explain`, `report`, `verify` and `compare` read: `--db` on every reader, and `last` meaning
this project's last run when its folder is here (the history's newest run otherwise), through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.project import Project, make_project, run_cli

pytestmark = pytest.mark.timeout(600)


def _project(root: Path) -> Project:
    root.mkdir()
    return make_project(root)


def _run_id(project_root: Path) -> str:
    pointed = Path((project_root / ".evalglass" / "last-run").read_text().strip())
    folder = pointed if pointed.is_absolute() else project_root / pointed
    return folder.name


def test_every_reader_takes_db_and_reads_the_run_from_that_history(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'team.sqlite'}"
    project = _project(tmp_path / "p")
    assert project.run("--no-progress", "--db", url).code == 0
    run_id = _run_id(project.root)
    shutil.rmtree(project.root / ".evalglass")  # as on another machine: no folder, no pointer, no local history
    env = {"EVALGLASS_DB": ""}
    assert run_cli("view", "last", cwd=project.root, env=env).code == 2  # the local history does not exist
    viewed = run_cli("view", "--db", url, "--format", "json", cwd=project.root, env=env)
    assert viewed.code == 0, viewed.err
    assert viewed.json()["run_id"] == run_id  # alone, --db reads that history's newest run
    assert (
        run_cli("view", run_id, "--db", url, "--format", "json", cwd=project.root, env=env).json()["run_id"] == run_id
    )
    explained = run_cli(
        "explain", "accuracy", "--run", "last", "--db", url, "--format", "json", cwd=project.root, env=env
    )
    assert explained.code == 0 and explained.json()[0]["subject"] == "accuracy", explained.err
    reported = run_cli("report", "--db", url, cwd=project.root, env=env)
    assert reported.code == 0, reported.err
    assert run_id in (project.root / f"report-{run_id}.html").read_text()
    verified = run_cli("verify", "last", "--db", url, cwd=project.root, env=env)
    assert verified.code == 0 and "verified:" in verified.out, verified.out + verified.err
    compared = run_cli("compare", run_id, "last", "--db", url, "--format", "json", cwd=project.root, env=env)
    assert compared.code == 0, compared.err


def test_last_is_this_projects_last_run_when_its_folder_is_here(tmp_path: Path) -> None:
    """A shared history holds other machines' runs: `last` (and naming nothing) reads the run this project last
    made, whose report goes beside it, as `view` always did; `--db` asks the history; once the folder is gone,
    `last` is the history's newest run."""
    url = f"sqlite:///{tmp_path / 'team.sqlite'}"
    env = {"EVALGLASS_DB": url}
    mine = _project(tmp_path / "mine")
    assert run_cli("run", "--no-progress", cwd=mine.root, env=env).code == 0
    my_run = _run_id(mine.root)
    other = _project(tmp_path / "other")
    assert run_cli("run", "--no-progress", cwd=other.root, env=env).code == 0  # newer, recorded elsewhere
    their_run = _run_id(other.root)
    assert their_run != my_run
    folder = mine.root / ".evalglass" / "runs" / my_run
    for args in (["view"], ["view", "last"]):
        shown = run_cli(*args, "--format", "json", cwd=mine.root, env=env)
        assert shown.code == 0 and shown.json()["run_id"] == my_run, (args, shown.err)
    assert run_cli("explain", "accuracy", "--run", "last", cwd=mine.root, env=env).code == 0
    for args in (["report"], ["report", "last"]):
        reported = run_cli(*args, cwd=mine.root, env=env)
        assert reported.code == 0 and reported.out.splitlines()[0] == f"wrote {folder / 'report.html'}", reported.out
        assert not list(mine.root.glob("report-*.html"))
    assert run_cli("verify", "last", cwd=mine.root, env=env).code == 0
    # --db asks the history: its newest run is the other project's.
    assert run_cli("view", "last", "--db", url, "--format", "json", cwd=mine.root).json()["run_id"] == their_run
    reported = run_cli("report", "last", "--db", url, cwd=mine.root)
    assert reported.code == 0 and (mine.root / f"report-{their_run}.html").is_file(), reported.err
    # The folder gone, `last` falls back to the history's newest run.
    shutil.rmtree(folder)
    assert run_cli("view", "last", "--format", "json", cwd=mine.root, env=env).json()["run_id"] == their_run
    assert run_cli("view", cwd=mine.root, env=env).code == 2  # naming nothing still means the pointer's folder
