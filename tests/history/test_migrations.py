"""The history's schema is Alembic's: a new database is migrated on first use, a database made by the previous
revision is upgraded in place (its runs kept), one newer than this code is refused, and the migrations build
exactly the tables the models declare."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, text

from evalglass.history.migrate import current_revision, upgrade_to
from evalglass.history.schema import HEAD_REVISION, Base
from evalglass.history.store import open_engine
from tests.e2e.project import make_project, run_cli

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(600)

OLD_RUN = {
    "run_id": "20261101T000000Z-aaaaaa",
    "created_at": datetime(2026, 11, 1),
    "recorded_at": datetime(2026, 11, 1, 0, 1),
    "source": "run",
    "tool_version": "0.1.0",
    "config_path": "evals/evalglass.yaml",
    "config_fingerprint": "sha256:c",
    "ledger_fingerprint": "sha256:l",
    "dataset_name": "suite",
    "dataset_fingerprint": "sha256:d",
    "definitions_fingerprint": "sha256:f",
    "scores_sha256": "sha256:s",
    "examples": 8,
    "verdict": "pass",
    "exit_code": 0,
    "git_commit": "abc",
    "git_branch": "main",
    "git_dirty": False,
}


def test_a_database_of_the_previous_revision_is_upgraded_on_first_use(tmp_path: Path, db_url: str) -> None:
    engine = open_engine(db_url)
    with engine.begin() as connection:
        upgrade_to(connection, "0001")
        columns = ", ".join(OLD_RUN)
        values = ", ".join(f":{name}" for name in OLD_RUN)
        connection.execute(text(f"INSERT INTO runs ({columns}) VALUES ({values})"), OLD_RUN)
        connection.execute(
            text(
                "INSERT INTO metric_results (run_pk, name, point, low, high, level, method, included, excluded) "
                "SELECT pk, 'exact', 0.75, 0.4, 0.9, 0.95, 'wilson', 8, 0 FROM runs"
            )
        )
    with engine.connect() as connection:
        assert current_revision(connection) == "0001"
    make_project(tmp_path)
    env = {"EVALGLASS_DB": db_url, "GITLAB_CI": "true", "CI_JOB_URL": "https://ci.example/9"}
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=env).code == 0
    with engine.connect() as connection:
        assert current_revision(connection) == HEAD_REVISION
    listed = run_cli("history", "--metric", "exact", "--format", "json", cwd=tmp_path, env=env).json()
    old = next(entry for entry in listed if entry["run_id"] == OLD_RUN["run_id"])
    assert old["ci_provider"] is None and old["metric"]["point"] == 0.75 and old["branch"] == "main"
    new = next(entry for entry in listed if entry["run_id"] != OLD_RUN["run_id"])
    assert new["ci_provider"] == "gitlab" and new["ci_job_url"] == "https://ci.example/9"
    engine.dispose()


def test_the_migrations_build_exactly_the_models_tables(db_url: str) -> None:
    engine = open_engine(db_url)
    with engine.begin() as connection:
        upgrade_to(connection, HEAD_REVISION)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    engine.dispose()
    assert differences == []


def test_a_database_from_a_newer_version_is_refused_and_runs_still_finish(tmp_path: Path, db_url: str) -> None:
    make_project(tmp_path)
    env = {"EVALGLASS_DB": db_url}
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=env).code == 0
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    engine.dispose()
    listed = run_cli("history", cwd=tmp_path, env=env)
    assert listed.code == 2 and "revision 0999" in listed.err and "upgrade evalglass" in listed.err
    done = run_cli("run", "--no-progress", cwd=tmp_path, env=env)
    assert done.code == 0 and "revision 0999" in done.err


def test_a_new_database_created_at_head_matches_one_migrated_step_by_step(tmp_path: Path) -> None:
    """Both ways to reach the head give the same tables, indexes and stamp."""
    from sqlalchemy import inspect

    from evalglass.history.migrate import ensure_schema

    direct, stepped = (open_engine(f"sqlite:///{tmp_path / name}") for name in ("direct.sqlite", "stepped.sqlite"))
    ensure_schema(direct, "direct")
    with stepped.begin() as connection:
        upgrade_to(connection, HEAD_REVISION)
    shapes = []
    for engine in (direct, stepped):
        with engine.connect() as connection:
            inspector = inspect(connection)
            shapes.append(
                {
                    table: (
                        sorted((c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)),
                        sorted((i["name"], tuple(i["column_names"])) for i in inspector.get_indexes(table)),
                        inspector.get_pk_constraint(table)["constrained_columns"],
                    )
                    for table in inspector.get_table_names()
                }
            )
            assert current_revision(connection) == HEAD_REVISION
        engine.dispose()
    assert shapes[0] == shapes[1]
