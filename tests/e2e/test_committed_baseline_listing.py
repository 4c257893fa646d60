"""A baseline that follows a branch never lists its candidates from files the repository tracks.

Signatures prove who made a run, not that it is the newest. A source reading `folder:` from a committed export (or a
committed run history file) lets a pull request put back any earlier signed run of main from the repository's own
history: main improved, the pull request regressed, and with the older export restored its comparative gate passed
(exit 0) against a baseline main had left behind. Such a listing now blocks the gate (`baseline_untrusted`, with the
fix); the same folder downloaded by CI (untracked) is still the baseline.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import DEFAULT_ROWS, make_project, run_cli
from tests.e2e.test_baseline_handoff import GATE, approved, ci_key, job

pytestmark = pytest.mark.timeout(600)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def rows(right: int) -> list[dict[str, Any]]:
    """The default rows with the first ``right`` answered right and the rest wrong."""
    return [{**row, "output": row["expected"] if n < right else "something else"} for n, row in enumerate(DEFAULT_ROWS)]


def yaml_entry(ledger_entry: str) -> dict[str, Any]:
    """The ``baselines: main:`` entry `explain` prints for the host to paste."""
    return dict(yaml.safe_load(ledger_entry)["baselines"]["main"])


def gate_of(result: Any) -> dict[str, Any]:
    assert result.code in (0, 1), result.out + result.err
    return next(gate for gate in result.json()["decision"]["gates"] if gate["name"] == "no-regression")


def test_a_pull_request_cannot_put_back_an_older_signed_export(tmp_path: Path) -> None:
    total = len(DEFAULT_ROWS)
    assert total >= 4
    project = make_project(tmp_path, gates={"no-regression": GATE})
    git("init", "-q", "-b", "main", cwd=tmp_path)
    (tmp_path / ".gitignore").write_text(".evalglass/\nruns/\nevals/.evalglass-cache.sqlite\n")
    key = ci_key()

    def main_run(right: int) -> str:
        """Main's CI: run, sign, export into the repository, commit; the commit's id."""
        project.write_rows(rows(right))
        done = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
        assert done.code in (0, 1), done.err  # its own gate compares with the committed export: not the point here
        shutil.rmtree(project.evals / "baseline-main", ignore_errors=True)
        exported = run_cli("history", "export", done.json()["run_id"], "evals/baseline-main", cwd=tmp_path)
        assert exported.code == 0, exported.err
        git("add", "-A", cwd=tmp_path)
        git("commit", "-qm", f"main: {right} right", cwd=tmp_path)
        return git("rev-parse", "HEAD", cwd=tmp_path)

    older = main_run(total // 2)
    signer = run_cli("explain", "no-regression", "--format", "json", cwd=tmp_path, env=job("feature"))
    entry = yaml_entry(signer.json()[0]["ledger_entry"])
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
            "baselines": {"main": {**entry, "folder": "baseline-main"}},
            "gates": {"no-regression": {"active": True, "fingerprint": approved(project), "margin": 0.05}},
        }
    )
    main_run(total)  # main now answers every example right: its newest signed run, exported and committed

    # The pull request regresses to half right and puts back the export of main's older run from git's history.
    project.write_rows(rows(total // 2))
    git("checkout", older, "--", "evals/baseline-main", cwd=tmp_path)
    result = run_cli("run", "--no-progress", "--no-history", "--format", "json", cwd=tmp_path, env=job("feature"))
    gate = gate_of(result)
    assert result.code == 1 and gate["outcome"] == "blocked", gate
    (reason,) = gate["reasons"]
    assert reason["code"] == "baseline_untrusted", gate
    assert "the repository tracks" in reason["message"] and "put back an earlier signed run" in reason["message"]

    # The same runs downloaded by the workflow (not tracked): main's newest is the baseline and the regression fails.
    git("checkout", "HEAD", "--", "evals/baseline-main", cwd=tmp_path)
    git("rm", "-rq", "--cached", "evals/baseline-main", cwd=tmp_path)
    result = run_cli("run", "--no-progress", "--no-history", "--format", "json", cwd=tmp_path, env=job("feature"))
    gate = gate_of(result)
    assert result.code == 1 and gate["outcome"] == "fail", gate


def test_a_committed_run_history_file_is_not_a_listing_either(tmp_path: Path) -> None:
    """The history database a source reads (here the default file) committed by a pull request: refused alike."""
    project = make_project(tmp_path, gates={"no-regression": GATE})
    git("init", "-q", "-b", "main", cwd=tmp_path)
    key = ci_key()
    main = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
    assert main.code == 0, main.err
    signer = run_cli("explain", "no-regression", "--format", "json", cwd=tmp_path, env=job("feature"))
    entry = yaml_entry(signer.json()[0]["ledger_entry"])
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
            "baselines": {"main": entry},
            "gates": {"no-regression": {"active": True, "fingerprint": approved(project), "margin": 0.05}},
        }
    )
    untracked = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("feature"))
    assert gate_of(untracked)["outcome"] == "pass", gate_of(untracked)
    git("add", "-f", ".evalglass/history.sqlite", cwd=tmp_path)
    committed = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("feature"))
    gate = gate_of(committed)
    assert committed.code == 1 and [r["code"] for r in gate["reasons"]] == ["baseline_untrusted"], gate
    assert "history.sqlite" in gate["reasons"][0]["message"]


SABOTAGE = """import pathlib, shutil
def score(example, output):
    runs = pathlib.Path(__file__).parent / "main-runs"
    newest = sorted(runs.iterdir())[-1:] if runs.is_dir() else []
    if len(list(runs.iterdir())) > 1:
        shutil.rmtree(newest[0])  # main's newest signed run: the older one would be the baseline
    return 1.0
"""


def test_host_code_cannot_change_which_run_is_the_newest_during_the_run(tmp_path: Path) -> None:
    """The workflow downloads main's signed runs into an untracked folder; the pull request's host code (here an
    ungated python metric, which runs before the gates are decided) deletes the newest from it, so an older signed
    run of main would be the baseline and the regression would pass. Baselines are read before any host code runs:
    the newest is the baseline, and the regression fails."""
    total = len(DEFAULT_ROWS)
    project = make_project(tmp_path, gates={"no-regression": GATE})
    (project.evals / "main-runs").mkdir()
    key = ci_key()

    def main_run(right: int, name: str) -> None:
        project.write_rows(rows(right))
        done = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
        assert done.code in (0, 1), done.err
        exported = run_cli("history", "export", done.json()["run_id"], f"evals/main-runs/{name}", cwd=tmp_path)
        assert exported.code == 0, exported.err

    main_run(total // 2, "a-older")
    signer = run_cli("explain", "no-regression", "--format", "json", cwd=tmp_path, env=job("feature"))
    entry = yaml_entry(signer.json()[0]["ledger_entry"])
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
            "baselines": {"main": {**entry, "folder": "main-runs"}},
            "gates": {"no-regression": {"active": True, "fingerprint": approved(project), "margin": 0.05}},
        }
    )
    main_run(total, "b-newer")  # main now answers every example right

    project.write_rows(rows(total // 2))  # the pull request regresses, and adds host code that runs first
    (project.evals / "sabotage.py").write_text(SABOTAGE)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["sabotage"] = {"type": "python", "function": "sabotage.py:score"}
    (project.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = run_cli("run", "--no-progress", "--no-history", "--format", "json", cwd=tmp_path, env=job("feature"))
    assert [path.name for path in (project.evals / "main-runs").iterdir()] == ["a-older"]  # the metric did delete it
    gate = gate_of(result)
    assert result.code == 1 and gate["outcome"] == "fail", gate
