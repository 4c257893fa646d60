"""A command forked from tests/cli_server.py's server behaves as `python -m evalglass` does: same exit code, same
output, the test's environment and working directory, and a real process whose end the test sees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import cli_server
from tests.e2e.project import make_project


def both(args: list[str], cwd: Path, **env: str) -> tuple[cli_server.Done, cli_server.Done]:
    full = {**os.environ, **env}
    forked = cli_server.run(args, cwd=cwd, env=full, timeout=120)
    new = cli_server.run(args, cwd=cwd, env={**full, cli_server.ALWAYS_NEW: "1"}, timeout=120)
    return forked, new


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    make_project(tmp_path)
    return tmp_path


def test_exit_codes_and_output_are_those_of_a_new_interpreter(project_dir: Path, monkeypatch) -> None:
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    forked, new = both(["run", "--bogus"], project_dir)
    assert forked == new and forked.returncode == 2 and "python -m evalglass run --help" in forked.stderr
    assert cli_server.run(["run"], cwd=project_dir, env=dict(os.environ), timeout=120).returncode == 0
    for args in (["view", "--format", "json"], ["explain", "accuracy"], ["--version"]):
        forked, new = both(args, project_dir, COLUMNS="200")
        assert forked == new and forked.returncode == 0, args


def test_each_command_gets_the_environment_and_folder_it_is_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    narrow, wide = tmp_path / "narrow", tmp_path / "wide"
    for folder in (narrow, wide):
        folder.mkdir()
        make_project(folder)
    narrow_run = cli_server.run(["run"], cwd=narrow, env={**os.environ, "COLUMNS": "60"}, timeout=120)
    wide_run = cli_server.run(["run"], cwd=wide, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    assert max(map(len, narrow_run.stdout.splitlines())) <= 60 < max(map(len, wide_run.stdout.splitlines()))
    assert len(list((narrow / ".evalglass" / "runs").iterdir())) == 1
    assert len(list((wide / ".evalglass" / "runs").iterdir())) == 1


def test_a_changed_startup_variable_gets_a_new_interpreter(project_dir: Path) -> None:
    """PYTHONPATH is read when Python starts: a forked command would not see a module it adds."""
    (project_dir / "extra").mkdir()
    (project_dir / "extra" / "sitecustomize.py").write_text("import sys; sys.stderr.write('sitecustomize ran\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(project_dir / "extra")}
    done = cli_server.run(["--version"], cwd=project_dir, env=env, timeout=120)
    assert "sitecustomize ran" in done.stderr
