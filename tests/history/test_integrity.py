"""A recorded run carries its files' SHA-256: a stored file or a summary row edited by hand in the database is
named by `verify` (exit 1) and refused by every other reader (exit 2), as an edited run folder is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.e2e.project import make_project, run_cli

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(600)


def _recorded(tmp_path: Path, url: str) -> str:
    make_project(tmp_path)
    assert run_cli("run", "--no-progress", cwd=tmp_path, env={"EVALGLASS_DB": url}).code == 0
    [folder] = (tmp_path / ".evalglass" / "runs").iterdir()
    shutil.rmtree(tmp_path / ".evalglass" / "runs")
    return folder.name


def _edit(url: str, statement: str, **params: object) -> None:
    engine = create_engine(url)
    with engine.begin() as connection:
        assert connection.execute(text(statement), params).rowcount >= 1
    engine.dispose()


EDITS = {
    "a metric's point": ("UPDATE metric_results SET point = 0.99", "history.metric_results.exact.point"),
    "the verdict": ("UPDATE runs SET verdict = 'pass'", "history.runs.verdict"),
    "a gate's outcome": ("UPDATE gate_results SET outcome = 'pass', active = true", "history.gate_results.accuracy"),
    "a metric row removed": ("DELETE FROM metric_results", "history.metric_results.exact"),
    "the dataset fingerprint": (
        "UPDATE runs SET dataset_fingerprint = 'sha256:00'",
        "history.runs.dataset_fingerprint",
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_summary_row_is_caught(tmp_path: Path, db_url: str, edit: str) -> None:
    run_id = _recorded(tmp_path, db_url)
    statement, field = EDITS[edit]
    _edit(db_url, statement)
    env = {"EVALGLASS_DB": db_url}
    verified = run_cli("verify", run_id, cwd=tmp_path, env=env)
    assert verified.code == 1, verified.out + verified.err
    assert field in verified.out
    viewed = run_cli("view", run_id, cwd=tmp_path, env=env)
    assert viewed.code == 2 and "was edited in the history database" in viewed.err
    assert len(viewed.err.strip().splitlines()) == 1


@pytest.mark.parametrize("artifact", ["scorecard.json", "scores.jsonl"])
def test_an_edited_stored_file_is_caught(tmp_path: Path, db_url: str, artifact: str) -> None:
    import zlib

    run_id = _recorded(tmp_path, db_url)
    engine = create_engine(db_url)
    with engine.begin() as connection:
        stored = connection.execute(
            text("SELECT data FROM artifact_chunks WHERE name = :n AND seq = 0"), {"n": artifact}
        ).scalar_one()
        edited = zlib.decompress(stored).replace(b"0.75", b"0.95").replace(b"0.0]", b"1.0]")
        assert edited != zlib.decompress(stored)
        connection.execute(
            text("UPDATE artifact_chunks SET data = :d WHERE name = :n AND seq = 0"),
            {"d": zlib.compress(edited), "n": artifact},
        )
    engine.dispose()
    env = {"EVALGLASS_DB": db_url}
    verified = run_cli("verify", run_id, "--format", "json", cwd=tmp_path, env=env)
    assert verified.code == 1, verified.err
    assert [item["field"] for item in verified.json()["findings"]] == [f"history.artifacts.{artifact}"]
    assert run_cli("view", run_id, cwd=tmp_path, env=env).code == 2
    exported = run_cli("history", "export", run_id, "out", cwd=tmp_path, env=env)
    assert exported.code == 2 and artifact in exported.err
    assert not (tmp_path / "out").exists()


def test_an_edited_folder_is_not_imported(tmp_path: Path, db_url: str) -> None:
    make_project(tmp_path)
    assert run_cli("run", "--no-progress", "--no-history", cwd=tmp_path).code == 0
    [folder] = (tmp_path / ".evalglass" / "runs").iterdir()
    card = folder / "scorecard.json"
    card.write_text(card.read_text().replace('"informational"', '"informational" '))
    env = {"EVALGLASS_DB": db_url}
    done = run_cli("history", "import", str(folder), cwd=tmp_path, env=env)
    assert done.code == 2 and "scorecard.json is not the file digests.json lists" in done.err
    assert run_cli("history", "--format", "json", cwd=tmp_path, env=env).json() == []
