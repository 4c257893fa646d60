"""`evalglass history` over rows edited to what no EvalGlass writes (a stored chunk set to text or to bytes zlib refuses, a chunk
or a file's row gone): the run is listed `refused` with a one-line reason, never a traceback and never its stored
verdict, and `view` refuses it in one line naming the edited file. A real CLI process and a real SQLite file (SQLite keeps whatever type a row is edited to)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.e2e.project import make_project, run_cli

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("UPDATE artifact_chunks SET data = 'plain text' WHERE name = 'runrecord.json'", "does not decompress"),
        ("UPDATE artifact_chunks SET data = x'00ff' WHERE name = 'runrecord.json'", "does not decompress"),
        ("DELETE FROM artifact_chunks WHERE name = 'scorecard.json'", "is not the file recorded"),
        ("DELETE FROM artifacts WHERE name = 'runrecord.json'", "the history stores no runrecord.json"),
    ],
)
def test_a_tampered_row_is_listed_refused_in_one_line(tmp_path: Path, statement: str, reason: str) -> None:
    make_project(tmp_path)
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    env = {"EVALGLASS_DB": url}
    done = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=env)
    assert done.code in (0, 1), done.err
    run_id = str(done.json()["run_id"])
    engine = create_engine(url)
    with engine.begin() as connection:
        assert connection.execute(text(statement)).rowcount >= 1
    engine.dispose()
    listed = run_cli("history", "--format", "json", cwd=tmp_path, env=env)
    assert listed.code == 0 and "Traceback" not in listed.err, listed.err
    (entry,) = listed.json()
    assert (entry["verdict"], entry["exit_code"]) == ("refused", 2)
    assert reason in entry["refused"] and "\n" not in entry["refused"], entry["refused"]
    table = run_cli("history", cwd=tmp_path, env=env)
    assert table.code == 0 and "Traceback" not in table.err and "refused" in table.out, table.err
    # The reader of the run refuses it in one line that says what was edited, never an internal error.
    viewed = run_cli("view", run_id, cwd=tmp_path, env=env)
    assert viewed.code == 2 and "internal error" not in viewed.err, viewed.err
    (line,) = viewed.err.strip().splitlines()
    assert "runrecord.json" in line or "scorecard.json" in line, line
