"""A file or folder the user running evalglass may not read is bad input: one line naming it, exit 2, never an
"internal error". Python's ``Path.exists()`` raises ``PermissionError`` for a path inside a folder the user may not
search; config discovery and every command reading a run folder let it through as
``internal error: PermissionError: [Errno 13] ...`` with no fix.

Root reads through permissions, so as root the command runs with the two capabilities that allow it dropped
(``setpriv``), which is what any other user is subject to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.project import make_project

NO_OVERRIDE = ["-dac_override", "-dac_read_search"]


def as_a_user(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalglass", *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv (util-linux) reads through permissions")
        drop = ",".join(NO_OVERRIDE)
        command = [setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}", "--", *command]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def assert_one_permission_line(done: subprocess.CompletedProcess[str], where: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"error: {where}: "), lines
    assert "permission denied" in lines[0] and "internal error" not in lines[0], lines


def test_a_config_folder_that_cannot_be_searched_is_named_not_an_internal_error(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.evals.chmod(0o000)
    try:
        done = as_a_user("run", cwd=tmp_path)
    finally:
        project.evals.chmod(0o755)
    assert_one_permission_line(done, "evals/evalglass.yaml")
    assert "cannot read config" in done.stderr, done.stderr


@pytest.mark.parametrize("command", [["view", "locked/run"], ["compare", "locked/run", "locked/run"]])
def test_a_run_folder_that_cannot_be_searched_is_named_not_an_internal_error(
    tmp_path: Path, command: list[str]
) -> None:
    make_project(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o000)
    try:
        done = as_a_user(*command, cwd=tmp_path)
    finally:
        locked.chmod(0o755)
    assert_one_permission_line(done, "locked/run")
