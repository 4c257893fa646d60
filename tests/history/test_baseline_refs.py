"""The ledger's approved baseline named by a run reference (`run: main@latest`): resolved through the history on
a machine without the baseline's folder, and still bound by its fingerprint, so a reference that now resolves to
another run is `baseline_stale`, never a silent substitution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_server
from tests.e2e.project import base_config, run_cli
from tests.e2e.test_comparative_gates import NO_CHANGE, gate_of, reasons, setup

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(600)


def test_a_baseline_named_main_at_latest_is_found_in_the_history_and_stays_bound(tmp_path: Path, db_url: str) -> None:
    project, ledger = setup(tmp_path / "p", NO_CHANGE)
    main = {"EVALGLASS_DB": db_url, "GITLAB_CI": "true", "CI_COMMIT_REF_NAME": "main"}
    imported = run_cli("history", "import", "runs/base", cwd=project.root, env=main)
    assert imported.code == 0, imported.err
    shutil.rmtree(project.root / "runs" / "base")  # only the history has the baseline now
    ledger["baselines"]["main"]["run"] = "main@latest"
    project.write_ledger(ledger)
    pr = {"EVALGLASS_DB": db_url, "GITLAB_CI": "true", "CI_COMMIT_REF_NAME": "feature"}
    result = run_cli("run", "--no-progress", "--out", "runs/cand", "--format", "json", cwd=project.root, env=pr)
    assert result.code == 0, result.err
    gate = gate_of(result)
    assert gate["outcome"] == "pass" and gate["comparison"]["metric"]["pairs"]["included"] == 50
    assert run_cli("verify", "runs/cand", cwd=project.root).code == 0  # the baseline's copy travels with the run

    # main moves on: a new run on main is now main@latest, and the ledger approved the old one
    project.write_config(base_config(gates={}, task={"type": "recorded", "field": "old"}))
    project.write_ledger({"version": 1})
    assert run_cli("run", "--no-progress", "--out", "runs/newer", cwd=project.root, env=main).code == 0
    project.write_ledger(ledger)
    project.write_config(
        base_config(
            gates={"no-regression": {"metric": "exact", "compare_to": "main", "direction": "higher_is_better"}},
            task={"type": "recorded", "field": "new"},
        )
    )
    stale = run_cli("run", "--no-progress", "--out", "runs/cand2", "--format", "json", cwd=project.root, env=pr)
    assert stale.code == 1, stale.err
    assert "baseline_stale" in reasons(gate_of(stale))


def test_a_reference_the_history_cannot_resolve_blocks_the_gate(tmp_path: Path, db_url: str) -> None:
    project, ledger = setup(tmp_path / "p", NO_CHANGE)
    ledger["baselines"]["main"]["run"] = "nobranch@latest"
    project.write_ledger(ledger)
    result = run_cli("run", "--no-progress", "--format", "json", cwd=project.root, env={"EVALGLASS_DB": db_url})
    assert result.code == 1, result.err
    assert gate_of(result)["outcome"] == "blocked"


PLUGIN_TEST = """
import json


def test_quality(evalglass_run):
    result = evalglass_run("evals/evalglass.yaml", out="runs/plugin")
    with open("plugin-gate.json", "w") as out:
        json.dump(result.gate("no-regression").model_dump(mode="json"), out)
    result.assert_passed()
"""

#: Three runs in one process through `evalglass.run()`: the database from the environment, another database given
#: as `db=`, then the environment's again. Each gate as JSON, one line each.
API_RUNS = """
import json, sys
import evalglass

config, empty, root = sys.argv[1:]
for out, db in (("api", None), ("elsewhere", empty), ("again", None)):
    result = evalglass.run(config, out=f"{root}/runs/{out}", db=db)
    print(json.dumps(result.gate("no-regression").model_dump(mode="json")))
"""


def test_the_cli_the_api_and_the_pytest_plugin_find_a_main_at_latest_baseline_alike(
    tmp_path: Path, db_url: str
) -> None:
    """One config whose ledger names its baseline `main@latest`, decided through the three ways a user runs it:
    the command line, `evalglass.run()` and the `evalglass_run` fixture (each in a process of its own, as users run
    them). The same database, the same decision; and the database is the run's option, not the process's."""
    root = tmp_path / "p"
    project, ledger = setup(root, NO_CHANGE)
    main = {"EVALGLASS_DB": db_url, "GITLAB_CI": "true", "CI_COMMIT_REF_NAME": "main"}
    assert run_cli("history", "import", "runs/base", cwd=root, env=main).code == 0
    shutil.rmtree(root / "runs" / "base")  # only the history has the baseline now
    ledger["baselines"]["main"]["run"] = "main@latest"
    project.write_ledger(ledger)
    env = {**os.environ, "EVALGLASS_DB": db_url}

    cli = run_cli("run", "--no-progress", "--no-history", "--out", "runs/cli", "--format", "json", cwd=root, env=env)
    assert cli.code == 0, cli.err
    by_cli = gate_of(cli)
    assert by_cli["outcome"] == "pass" and by_cli["comparison"]["metric"]["pairs"]["included"] == 50
    preview = run_cli("preflight", "--format", "json", cwd=root, env=env).json()["gates"][0]
    assert (preview["standing"], preview["reasons"]) == ("would_decide", [])

    empty = f"sqlite:///{root / 'empty.sqlite'}"
    config = str(project.evals / "evalglass.yaml")
    api = cli_server.run([config, empty, str(root)], cwd=root, env=env, timeout=300, code=API_RUNS)  # python -c
    assert api.returncode == 0, api.stderr
    by_api, elsewhere, again = (json.loads(line) for line in api.stdout.splitlines())

    (root / "test_quality.py").write_text(PLUGIN_TEST)
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_quality.py"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    by_plugin = json.loads((root / "plugin-gate.json").read_text())

    assert by_api == by_cli == by_plugin == again
    # Another database (with no such run) leaves the baseline missing for that run only.
    assert [reason["code"] for reason in elsewhere["reasons"]] == ["baseline_missing"]
