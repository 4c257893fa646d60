"""Every `evalglass run` records itself; `history` lists it; a recorded run is viewed, verified and exported
from the database on a machine that no longer has its folder (SQLite and a real PostgreSQL server)."""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.project import make_project, run_cli

# Every test drives the real CLI several times, in subprocesses: on a loaded shared machine that takes a while.
pytestmark = pytest.mark.timeout(600)


def _env(url: str, **extra: str) -> dict[str, str]:
    return {"EVALGLASS_DB": url, **extra}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_run_is_recorded_with_its_metadata_results_and_provenance(tmp_path: Path, db_url: str) -> None:
    project = make_project(tmp_path)
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    commit = _git(tmp_path, "rev-parse", "HEAD")
    (project.evals / "data.jsonl").write_text((project.evals / "data.jsonl").read_text())  # unchanged bytes: clean
    ci = {"GITLAB_CI": "true", "CI_JOB_URL": "https://gitlab.example/j/7", "CI_COMMIT_REF_NAME": "feature/x"}
    done = run_cli("run", "--no-progress", cwd=tmp_path, env=_env(db_url, **ci))
    assert done.code == 0, done.err
    assert "history" not in done.err
    listed = run_cli(
        "history", "--metric", "exact", "--gate", "accuracy", "--format", "json", cwd=tmp_path, env=_env(db_url)
    )
    assert listed.code == 0, listed.err
    [entry] = listed.json()
    card = json.loads(next((tmp_path / ".evalglass" / "runs").iterdir()).joinpath("scorecard.json").read_text())
    assert entry["run_id"] == card["run_id"]
    assert entry["verdict"] == "informational" and entry["exit_code"] == 0 and entry["examples"] == 8
    assert entry["commit"] == commit and entry["dirty"] is False
    assert entry["branch"] == "feature/x"  # CI's branch wins over the detached or local HEAD
    assert entry["ci_provider"] == "gitlab" and entry["ci_job_url"] == "https://gitlab.example/j/7"
    [metric] = card["metrics"]
    interval = metric["estimate"]["interval"]
    assert entry["metric"]["point"] == 0.75 and entry["metric"]["included"] == 8
    assert (entry["metric"]["low"], entry["metric"]["high"]) == (interval["low"], interval["high"])
    assert entry["gate"]["outcome"] == "informational" and entry["gate"]["active"] is False


def test_a_dirty_work_tree_and_no_ci_are_recorded_as_such(tmp_path: Path, db_url: str) -> None:
    project = make_project(tmp_path)
    _git(tmp_path, "init", "-q", "-b", "trunk")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    project.write_rows([{"id": "a", "expected": "yes", "output": "yes"}])
    env = {name: "" for name in ("GITLAB_CI", "CI", "BUILDKITE", "CIRCLECI", "JENKINS_URL")}
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=_env(db_url, **env)).code == 0
    [entry] = run_cli("history", "--format", "json", cwd=tmp_path, env=_env(db_url)).json()
    assert (entry["branch"], entry["dirty"], entry["ci_provider"]) == ("trunk", True, None)


def _recorded_elsewhere(tmp_path: Path, db_url: str) -> tuple[str, Path]:
    """A run recorded on branch main whose folder (and last-run pointer) is then gone, as on another machine; the
    original folder is kept aside for comparison."""
    make_project(tmp_path)
    _git(tmp_path, "init", "-q", "-b", "main")
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=_env(db_url)).code == 0
    [folder] = (tmp_path / ".evalglass" / "runs").iterdir()
    keep = tmp_path.parent / f"{tmp_path.name}-original"
    shutil.copytree(folder, keep)
    shutil.rmtree(tmp_path / ".evalglass")
    return folder.name, keep


def test_a_recorded_run_is_viewed_and_verified_by_every_kind_of_reference(tmp_path: Path, db_url: str) -> None:
    run_id, _ = _recorded_elsewhere(tmp_path, db_url)
    today = run_id[:4] + "-" + run_id[4:6] + "-" + run_id[6:8]
    for ref in (run_id, "last", "main@latest", f"main@{today}"):
        viewed = run_cli("view", ref, "--format", "json", cwd=tmp_path, env=_env(db_url))
        assert viewed.code == 0, (ref, viewed.err)
        assert viewed.json()["run_id"] == run_id
    verified = run_cli("verify", "main@latest", cwd=tmp_path, env=_env(db_url))
    assert verified.code == 0, (verified.out, verified.err)
    assert "verified:" in verified.out
    assert run_cli("view", "main@2000-01-01", cwd=tmp_path, env=_env(db_url)).code == 2
    assert run_cli("view", "other@latest", cwd=tmp_path, env=_env(db_url)).code == 2


def test_a_recorded_run_is_exported_byte_for_byte_explained_and_reported(tmp_path: Path, db_url: str) -> None:
    run_id, keep = _recorded_elsewhere(tmp_path, db_url)
    exported = run_cli("history", "export", "main@latest", "copy", cwd=tmp_path, env=_env(db_url))
    assert exported.code == 0, exported.err
    assert _files(tmp_path / "copy") == _files(keep)
    match, mismatch, errors = filecmp.cmpfiles(keep, tmp_path / "copy", _files(keep), shallow=False)
    assert mismatch == [] and errors == [] and len(match) >= 5
    assert run_cli("verify", "copy", cwd=tmp_path).code == 0
    explained = run_cli("explain", "accuracy", "--run", "last", "--format", "json", cwd=tmp_path, env=_env(db_url))
    assert explained.code == 0 and explained.json()[0]["subject"] == "accuracy", explained.err
    reported = run_cli("report", "main@latest", cwd=tmp_path, env=_env(db_url))
    assert reported.code == 0, reported.err
    assert run_id in (tmp_path / f"report-{run_id}.html").read_text()


def test_no_history_records_nothing(tmp_path: Path) -> None:
    make_project(tmp_path)
    done = run_cli("run", "--no-progress", "--no-history", cwd=tmp_path)
    assert done.code == 0, done.err
    assert not (tmp_path / ".evalglass" / "history.sqlite").exists()
    assert run_cli("run", "--no-progress", cwd=tmp_path).code == 0
    assert (tmp_path / ".evalglass" / "history.sqlite").stat().st_mode & 0o077 == 0  # private, like the runs
    assert len(run_cli("history", "--format", "json", cwd=tmp_path).json()) == 1


def test_history_filters_by_branch_metric_and_limit(tmp_path: Path, db_url: str) -> None:
    make_project(tmp_path)
    for branch in ("main", "main", "dev"):
        env = _env(db_url, GITLAB_CI="true", CI_COMMIT_REF_NAME=branch)
        assert run_cli("run", "--no-progress", cwd=tmp_path, env=env).code == 0
    listed = lambda *a: run_cli("history", *a, "--format", "json", cwd=tmp_path, env=_env(db_url))  # noqa: E731
    everything = listed().json()
    assert [e["branch"] for e in everything] == ["dev", "main", "main"]  # newest first
    assert [e["branch"] for e in listed("--branch", "main").json()] == ["main", "main"]
    assert len(listed("--limit", "1").json()) == 1
    assert listed("--metric", "no_such_metric").json() == []
    text = run_cli("history", "--metric", "exact", cwd=tmp_path, env=_env(db_url))
    assert text.code == 0 and "exact in suite 'suite', oldest to newest:" in text.out and "0.75" in text.out
    dev = run_cli("view", "dev@latest", "--format", "json", cwd=tmp_path, env=_env(db_url)).json()
    assert dev["run_id"] == everything[0]["run_id"]
