"""The history never changes a run's verdict or exit code: when the database cannot be reached the folder is
written, one warning line says so (without the URL's password), and `history import` adds the run later."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.e2e.project import make_project, run_cli
from tests.e2e.test_verdicts import approve

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(600)

PASSWORD = "s3cret-pw-x9"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens once it is closed


@pytest.mark.parametrize(("threshold", "code"), [(0.7, 0), (0.9, 1)])
def test_an_unreachable_database_changes_nothing_but_one_warning(
    tmp_path: Path, threshold: float, code: int, db_url: str
) -> None:
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=threshold))
    bad = f"postgresql+psycopg://alice:{PASSWORD}@127.0.0.1:{_closed_port()}/history"
    done = run_cli("run", "--no-progress", "--db", bad, cwd=tmp_path)
    assert done.code == code, done.err
    warnings = [line for line in done.err.splitlines() if "history" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: the run history")
    assert "history import" in warnings[0]
    assert PASSWORD not in done.err + done.out
    folder = next(p for p in (tmp_path / ".evalglass" / "runs").iterdir() if p.name in done.err)
    for path in folder.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path
    imported = run_cli("history", "import", str(folder), "--db", db_url, cwd=tmp_path)
    assert imported.code == 0, imported.err
    [entry] = run_cli("history", "--db", db_url, "--format", "json", cwd=tmp_path).json()
    assert entry["run_id"] == folder.name and entry["exit_code"] == code and entry["source"] == "import"
    again = run_cli("history", "import", str(folder), "--db", db_url, cwd=tmp_path)
    assert again.code == 0 and "already in the history" in again.out


def test_a_password_in_the_environment_url_never_reaches_artifacts_or_messages(tmp_path: Path) -> None:
    make_project(tmp_path)
    bad = f"postgresql+psycopg://alice:{PASSWORD}@127.0.0.1:{_closed_port()}/history"
    env = {"EVALGLASS_DB": bad}
    done = run_cli("run", "--no-progress", cwd=tmp_path, env=env)
    assert done.code == 0 and PASSWORD not in done.err + done.out
    assert "alice:<redacted>@127.0.0.1" in done.err
    for args in (["history"], ["view", "main@latest"], ["history", "export", "last", "x"], ["verify", "someid"]):
        other = run_cli(*args, cwd=tmp_path, env=env)
        assert other.code == 2, (args, other.err)
        assert PASSWORD not in other.err + other.out
        assert len(other.err.strip().splitlines()) == 1, other.err
    for path in (tmp_path / ".evalglass").rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_a_url_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    make_project(tmp_path)
    done = run_cli("history", "--db", "nosuchdriver://x:pw123456@h/db", cwd=tmp_path)
    assert done.code == 2 and "pw123456" not in done.err
    assert len(done.err.strip().splitlines()) == 1 and "Traceback" not in done.err
