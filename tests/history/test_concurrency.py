"""Two runs finishing at once into one database both record (distinct ids, no lost row), also when the database
is new and both meet its migration; a process killed while recording leaves no half-written run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from evalglass.history.session import open_history
from tests.e2e.project import make_project, run_cli

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(600)


def _start(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalglass", *args], cwd=cwd, env={**os.environ, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_runs_finishing_together_all_record(tmp_path: Path, db_url: str) -> None:
    rows = [{"id": f"e{i}", "expected": "yes", "output": "yes" if i % 3 else "no"} for i in range(20_000)]
    projects = []
    for index in range(3):
        (tmp_path / f"p{index}").mkdir()
        project = make_project(tmp_path / f"p{index}")
        project.write_rows(rows)
        projects.append(project)
    env = {"EVALGLASS_DB": db_url}
    started = [_start(["run", "--no-progress", "--format", "json"], p.root, env) for p in projects]
    results = [(proc.wait(timeout=300), *proc.communicate()) for proc in started]
    for code, _out, err in results:
        assert code == 0, err
        assert "warning" not in err, err
    run_ids = {json.loads(out)["run_id"] for _code, out, _err in results}
    assert len(run_ids) == 3
    listed = run_cli("history", "--format", "json", "--metric", "exact", cwd=tmp_path, env=env).json()
    assert {entry["run_id"] for entry in listed} == run_ids
    assert all(entry["examples"] == 20_000 for entry in listed)
    for run_id in run_ids:  # every file of every run is there and intact
        assert run_cli("verify", run_id, cwd=tmp_path, env=env).code == 0


def test_a_process_killed_while_recording_leaves_no_trace(tmp_path: Path, db_url: str) -> None:
    make_project(tmp_path)
    assert run_cli("run", "--no-progress", "--no-history", cwd=tmp_path).code == 0
    [folder] = (tmp_path / ".evalglass" / "runs").iterdir()
    # A large extra file (not in digests.json, so it is recorded as part of the folder) keeps the recording busy.
    with (folder / "bulk.bin").open("wb") as out:
        for _ in range(64):
            out.write(os.urandom(1 << 20))
    engine = create_engine(db_url)
    env = {"EVALGLASS_DB": db_url}
    engine.dispose()
    open_history(db_url).dispose()  # the schema exists before the race below
    engine = create_engine(db_url)
    proc = _start(["history", "import", str(folder)], tmp_path, env)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if _chunks_written(engine, db_url, tmp_path):
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the import never started writing")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    with engine.connect() as connection:
        for table in ("runs", "artifacts", "artifact_chunks", "metric_results", "gate_results"):
            assert connection.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0, table
    engine.dispose()
    assert run_cli("view", folder.name, cwd=tmp_path / "evals", env=env).code == 2
    retried = run_cli("history", "import", str(folder), cwd=tmp_path, env=env)
    assert retried.code == 0, retried.err
    assert run_cli("verify", folder.name, cwd=tmp_path, env=env).code == 0


def _chunks_written(engine: object, url: str, root: Path) -> bool:
    """Whether the importer is inside its transaction and has written chunks (seen from outside it)."""
    if url.startswith("sqlite"):
        wal = Path(url.removeprefix("sqlite:///") + "-wal")
        return wal.exists() and wal.stat().st_size > 8 << 20
    with engine.connect() as connection:  # type: ignore[attr-defined]
        return bool(
            connection.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE xact_start IS NOT NULL "
                    "AND query ILIKE '%artifact_chunks%' AND pid <> pg_backend_pid()"
                )
            ).scalar()
        )
