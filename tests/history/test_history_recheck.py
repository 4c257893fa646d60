"""`evalglass history` never lists green a run its readers would refuse: each listed run is checked again from the
files the history stores (history/recheck.py), under the current rules.

Two ways a stored verdict can be wrong: a row recorded by an EvalGlass from before a rule (here the form an older
EvalGlass wrote of a run with a gate on a `check` metric: no `unbound_check_code`, which the current rules read as
code not known to be bound), and a row edited in the database. Real CLI processes, real SQLite files and a real
PostgreSQL server.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.e2e.project import base_config, make_project, run_cli, validated_gold

pytestmark = pytest.mark.timeout(600)

CHECKER = "import sys, pathlib; sys.exit(0 if 'ok' in pathlib.Path(sys.argv[1]).read_text() else 1)"


def _green_check_metric_run(tmp_path: Path, url: str) -> str:
    """A run whose active gate on a `check` metric passes (its checker is inline code: all bound), recorded."""
    project = make_project(tmp_path, gates={})
    project.write_rows([{"id": f"e{i}", "output": "ok"} for i in range(6)])
    config = base_config(
        metrics={"passes": {"type": "check", "check": "solution"}},
        gates={"solutions": {"metric": "passes", "proposed_threshold": 0.9}},
    )
    config["checks"] = {"solution": {"command": ["{python}", "-c", CHECKER, "{target}/output.txt"], "timeout": 60}}
    project.write_config(config)
    env = {"EVALGLASS_DB": url}
    probe = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path, env=env)
    assert probe.code == 0, probe.err
    fingerprint = probe.json()["decision"]["gates"][0]["fingerprint"]
    gate = {"active": True, "fingerprint": fingerprint, "threshold": 0.9}
    project.write_ledger({"version": 1, "gates": {"solutions": gate}, "datasets": validated_gold(project.evals)})
    done = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=env)
    assert done.code == 0 and done.json()["decision"]["verdict"] == "pass", done.err
    return str(done.json()["run_id"])


def _store(url: str, name: str, data: bytes) -> None:
    """Replace a stored file of the one recorded run, with its hash and size: as an older EvalGlass stored it."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM artifact_chunks WHERE name = :n"), {"n": name})
        pk = connection.execute(text("SELECT pk FROM runs")).scalar_one()
        connection.execute(
            text("INSERT INTO artifact_chunks (run_pk, name, seq, data) VALUES (:pk, :n, 0, :d)"),
            {"pk": pk, "n": name, "d": zlib.compress(data)},
        )
        connection.execute(
            text("UPDATE artifacts SET sha256 = :h, size = :s, chunks = 1 WHERE name = :n"),
            {"h": "sha256:" + hashlib.sha256(data).hexdigest(), "s": len(data), "n": name},
        )
    engine.dispose()


def _stored(url: str, name: str) -> bytes:
    engine = create_engine(url)
    with engine.connect() as connection:
        pieces = connection.execute(
            text("SELECT data FROM artifact_chunks WHERE name = :n ORDER BY seq"), {"n": name}
        ).scalars()
        data = b"".join(zlib.decompress(piece) for piece in pieces)
    engine.dispose()
    return data


def _listed(tmp_path: Path, url: str, *args: str) -> list[dict[str, Any]]:
    result = run_cli("history", "--format", "json", *args, cwd=tmp_path, env={"EVALGLASS_DB": url})
    assert result.code == 0, result.err
    return result.json()  # type: ignore[no-any-return]


def test_a_row_recorded_before_a_rule_is_not_listed_green(tmp_path: Path, db_url: str) -> None:
    run_id = _green_check_metric_run(tmp_path, db_url)
    (honest,) = _listed(tmp_path, db_url)
    assert (honest["verdict"], honest["exit_code"]) == ("pass", 0) and "refused" not in honest

    # The run record as an EvalGlass from before the rule wrote it, with the digests that list it.
    record = json.loads(_stored(db_url, "runrecord.json"))
    del record["unbound_check_code"]
    older = json.dumps(record, indent=2).encode()
    digests = json.loads(_stored(db_url, "digests.json"))
    digests["files"]["runrecord.json"] = "sha256:" + hashlib.sha256(older).hexdigest()
    _store(db_url, "runrecord.json", older)
    _store(db_url, "digests.json", json.dumps(digests).encode())

    (listed,) = _listed(tmp_path, db_url)
    assert (listed["verdict"], listed["exit_code"]) == ("refused", 2)
    assert "runrecord.unbound_check_code" in listed["refused"] and "check_inputs_unbound" in listed["refused"]
    (gate,) = [entry["gate"] for entry in _listed(tmp_path, db_url, "--gate", "solutions")]
    assert gate["outcome"] == "refused"
    table = run_cli("history", cwd=tmp_path, env={"EVALGLASS_DB": db_url})
    assert table.code == 0 and f"refused: run {run_id}:" in table.out, table.out
    assert " pass " not in table.out
    # The reader refuses it for the same reason the listing gives.
    viewed = run_cli("view", run_id, cwd=tmp_path, env={"EVALGLASS_DB": db_url})
    assert viewed.code == 2 and "runrecord.unbound_check_code" in viewed.err, viewed.err


@pytest.mark.parametrize(
    ("statement", "field"),
    [
        ("UPDATE runs SET verdict = 'pass'", "history.runs.verdict"),
        ("UPDATE gate_results SET outcome = 'pass', reasons = ''", "history.gate_results.accuracy.outcome"),
    ],
)
def test_a_row_edited_green_in_the_database_is_listed_refused(
    tmp_path: Path, db_url: str, statement: str, field: str
) -> None:
    make_project(tmp_path)  # the ledger activates nothing: add an approval the gate misses
    (tmp_path / "evals" / "authority.yaml").write_text(
        "version: 1\ngates:\n  accuracy: {active: true, threshold: 0.9}\n"  # no fingerprint: blocked
    )
    env = {"EVALGLASS_DB": db_url}
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=env).code == 1
    (before,) = _listed(tmp_path, db_url, "--gate", "accuracy")
    assert before["verdict"] == "blocked" and before["gate"]["outcome"] == "blocked"
    engine = create_engine(db_url)
    with engine.begin() as connection:
        assert connection.execute(text(statement)).rowcount == 1
    engine.dispose()
    (listed,) = _listed(tmp_path, db_url, "--gate", "accuracy")
    assert (listed["verdict"], listed["gate"]["outcome"]) == ("refused", "refused")
    assert listed["refused"].startswith(f"edited in the history database: {field}")
