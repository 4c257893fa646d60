"""Artifacts, view, explain, verify, init and schema as a user meets them."""

from __future__ import annotations

import json
import stat
import subprocess

import yaml

from tests.e2e.project import make_project, run_cli
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_verdicts import approve


def test_quickstart_runs_with_no_setup_and_says_what_exit_0_means(tmp_path):
    result = run_cli("run", "--example", "quickstart", cwd=tmp_path)
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())
    assert "verdict: informational" in flat
    assert "does not mean quality was checked" in flat
    folder = tmp_path / (tmp_path / ".evalglass" / "last-run").read_text().strip()
    assert f"artifacts: {folder.relative_to(tmp_path)}" in flat or str(folder) in flat
    for name in ("scorecard.json", "runrecord.json", "scores.jsonl", "report.md"):
        mode = stat.S_IMODE((folder / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))
    card = json.loads((folder / "scorecard.json").read_text())
    record = json.loads((folder / "runrecord.json").read_text())
    assert card["schema_version"] == "evalglass.scorecard/1"
    assert record["schema_version"] == "evalglass.runrecord/1"
    assert "informational" in (folder / "report.md").read_text()
    assert not list(folder.glob(".*")), "no temporary files may remain"


def test_view_rerenders_the_last_run_without_recomputing(tmp_path):
    project = make_project(tmp_path)
    first = project.run("--format", "json").json()
    viewed = project.cli("view", "--format", "json").json()
    assert viewed == first
    # view reads the artifacts, not the dataset: deleting the dataset changes nothing
    (project.evals / "data.jsonl").unlink()
    assert project.cli("view", "--format", "json").json() == first
    text = project.cli("view")
    assert text.code == 0 and "accuracy" in text.out


def test_explain_names_the_ledger_entry_and_following_it_activates_the_gate(tmp_path):
    project = make_project(tmp_path)
    project.run()
    result = project.cli("explain", "accuracy")
    assert result.code == 0
    assert "informational" in result.out and "never writes the ledger" in result.out
    entry = project.cli("explain", "accuracy", "--format", "json").json()[0]["ledger_entry"]
    ledger = yaml.safe_load(entry)
    assert ledger["gates"]["accuracy"]["threshold"] == 0.7  # the proposal, for the host to review
    assert ledger["datasets"]["suite"]["validated_gold"] is True  # a reference metric needs validated gold
    project.write_ledger({"version": 1, **ledger})
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "pass"


def test_explain_a_blocked_gate_lists_every_reason_with_its_repair(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=None, gold=False))
    project.run()
    out = project.cli("explain", "accuracy").out
    assert "blocked" in out
    assert "no_approved_threshold" in out and "gold_not_validated" in out
    assert "validated gold" in out


def test_explain_a_metric_and_an_unknown_name(tmp_path):
    project = make_project(tmp_path)
    project.write_rows([{"id": "a", "output": "x"}, {"id": "b", "output": "y", "expected": "y"}])
    project.run()
    out = project.cli("explain", "exact").out
    assert "1 of 2 examples" in out and "reference_missing" in out
    unknown = project.cli("explain", "nope")
    assert unknown.code == 2 and "no gate or metric named 'nope'" in unknown.err


def test_verify_accepts_an_untouched_run(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.9))
    project.run("--out", "out")
    result = project.cli("verify", "out")
    assert result.code == 0 and "verified" in result.out


def test_verify_catches_a_consistently_forged_pass(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.9))
    assert project.run("--out", "out").code == 1
    path = tmp_path / "out" / "scorecard.json"
    card = json.loads(path.read_text())
    gate = card["decision"]["gates"][0]
    gate.update(outcome="pass", threshold=0.5, reasons=[])  # a passing gate carries no below_threshold reason
    card["decision"].update(verdict="pass", ci_should_fail=False, exit_code=0)
    path.write_text(json.dumps(card))
    # Unsealed, the edit is a file that is not the one digests.json lists: view names the file...
    refused = project.cli("view", "out")
    assert refused.code == 2 and "scorecard.json is not the file digests.json lists" in refused.err
    reseal(tmp_path / "out")
    # ...resealed, the forged payload is self-consistent, but it contradicts the run record's ledger snapshot
    # (threshold 0.9), so view refuses to show it, naming the field (issues 10 and 26; it used to show it with exit 0)...
    refused = project.cli("view", "out")
    assert refused.code == 2 and "decision.gates.accuracy.threshold: recorded 0.5; its files say 0.9" in refused.err
    # ...but verify re-derives it from the recorded scores and the ledger snapshot.
    result = project.cli("verify", "out", "--format", "json")
    assert result.code == 1
    fields = {item["field"] for item in result.json()["findings"]}
    assert {
        "scorecard.decision.verdict",
        "scorecard.decision.ci_should_fail",
        "scorecard.decision.exit_code",
        "scorecard.decision.gates[accuracy].outcome",
        "scorecard.decision.gates[accuracy].threshold",
        "scorecard.decision.gates[accuracy].reasons[0]",
    } <= fields


def test_verify_catches_an_edited_score(tmp_path):
    project = make_project(tmp_path)
    project.run("--out", "out")
    path = tmp_path / "out" / "scores.jsonl"
    lines = path.read_text().splitlines()
    block = json.loads(lines[0])
    block["scores"]["exact"][0] = 0.0 if block["scores"]["exact"][0] == 1.0 else 1.0
    lines[0] = json.dumps(block)
    path.write_text("\n".join(lines) + "\n")
    result = project.cli("verify", "out")
    assert result.code == 1
    assert "runrecord.scores_sha256" in result.out
    assert "scorecard.metrics[exact].estimate.point" in result.out


def test_verify_refuses_a_score_that_breaks_the_contract(tmp_path):
    project = make_project(tmp_path)
    project.run("--out", "out")
    path = tmp_path / "out" / "scores.jsonl"
    lines = path.read_text().splitlines()
    block = json.loads(lines[0])
    block["scores"]["exact"][0] = {
        "status": "error",
        "validity": "not_measured",
        "value": 0.0,
        "diagnostics": [{"code": "x", "message": "y"}],
    }
    lines[0] = json.dumps(block)
    path.write_text("\n".join(lines) + "\n")
    result = project.cli("verify", "out")
    assert result.code == 2
    assert "scores.jsonl:1" in result.err and "never 0.0" in result.err


def test_init_scaffolds_a_working_project_with_nothing_approved(tmp_path):
    result = run_cli("init", cwd=tmp_path)
    assert result.code == 0, result.err
    for name in ("evalglass.yaml", "dataset.jsonl", "authority.yaml"):
        assert (tmp_path / "evals" / name).exists()
    assert ".evalglass-cache.sqlite*" in (tmp_path / "evals" / ".gitignore").read_text().splitlines()
    ledger = yaml.safe_load((tmp_path / "evals" / "authority.yaml").read_text())
    # Every section is there with nothing under it, so `explain`'s entries paste beneath its key (no second key).
    assert ledger["gates"] is None and ledger["datasets"] is None and ledger["baselines"] is None
    run = run_cli("run", cwd=tmp_path)
    assert run.code == 0 and "informational" in run.out
    again = run_cli("init", cwd=tmp_path)
    assert again.code == 2 and "already exists" in again.err


def test_schema_prints_the_config_schema_and_the_committed_copies_are_current(tmp_path):
    from pathlib import Path

    result = run_cli("schema", cwd=tmp_path)
    schema = result.json()
    assert "dataset" in schema["properties"] and "metrics" in schema["properties"]
    # The committed copies are package data (the wheel ships them): compare the files in the source tree.
    committed = Path(__file__).resolve().parents[2] / "src" / "evalglass" / "schemas"
    names = ("config", "ledger", "scorecard", "runrecord", "scores", "comparison", "trace-record", "trajectory")
    assert sorted(path.name for path in committed.glob("*.schema.json")) == sorted(f"{n}.schema.json" for n in names)
    for name in names:
        printed = run_cli("schema", name, cwd=tmp_path).json()
        assert json.loads((committed / f"{name}.schema.json").read_text()) == printed, (
            f"src/evalglass/schemas/{name}.schema.json is stale: regenerate with "
            f"`evalglass schema {name} > src/evalglass/schemas/{name}.schema.json`"
        )


def test_config_schema_validates_the_bundled_configs(tmp_path):
    from importlib.resources import files

    import jsonschema

    schema = run_cli("schema", cwd=tmp_path).json()
    for path in ("examples/quickstart/evalglass.yaml", "templates/init/evalglass.yaml"):
        jsonschema.validate(yaml.safe_load((files("evalglass") / path).read_text()), schema)


def test_init_makes_git_ignore_the_run_folders_where_runs_start(tmp_path):
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    assert run_cli("init", cwd=tmp_path).code == 0
    assert (tmp_path / ".gitignore").read_text().splitlines()[0] == "node_modules/"  # added to, not replaced
    assert ".evalglass/" in (tmp_path / ".gitignore").read_text().splitlines()
    assert run_cli("run", cwd=tmp_path).code == 0
    assert (tmp_path / ".evalglass" / "runs").is_dir()  # the folder the entry covers is where runs are written
    git = subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=False)
    if git.returncode == 0:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        assert ".evalglass/" not in status and "evals/evalglass.yaml" in status
    assert run_cli("init", "--force", cwd=tmp_path).code == 0
    assert (tmp_path / ".gitignore").read_text().splitlines().count(".evalglass/") == 1  # never added twice
