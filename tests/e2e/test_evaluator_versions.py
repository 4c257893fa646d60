"""Evaluator versions in gate fingerprints, through the real CLI.

A later EvalGlass release that changes what a builtin computes bumps its version. These tests run the real CLI
under such a release by starting it with the registry's version raised (`bumped`: `python -c` code that raises it
before the command line runs, forked from tests/cli_server.py's server), as a release would ship it, and check that
approvals made under the old version go stale and say which evaluator changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from evalglass.engine.spec.config import load_config
from evalglass.metrics.versions import METRIC_VERSIONS
from tests import cli_server
from tests.e2e.project import CliResult, Project, make_project

#: exact_match's version in this release, and the one a later release that changed it would have.
NOW = METRIC_VERSIONS["exact_match"]
LATER = NOW + 1


def bumped(project: Project, *args: str, versions: dict[str, int]) -> CliResult:
    """The CLI of an EvalGlass whose registry has ``versions`` (``metric:exact_match`` → 2, ...)."""
    tables = {
        "metric": "METRIC_VERSIONS",
        "reducer": "REDUCER_VERSIONS",
        "interval": "INTERVAL_VERSIONS",
        "paired": "PAIRED_VERSIONS",
        "rule": "RULE_VERSIONS",
    }
    patch = "; ".join(
        f"v.{tables[key.split(':')[0]]} = {{**v.{tables[key.split(':')[0]]}, {_member(key)}: {version}}}"
        for key, version in versions.items()
    )
    code = (
        f"import sys; import evalglass.metrics.versions as v; from evalglass.core.stats import Method, Reducer; "
        f"{patch}; from evalglass.cli import main; sys.argv = ['evalglass', *sys.argv[1:]]; main()"
    )
    proc = cli_server.run(list(args), cwd=project.root, env={**os.environ, "COLUMNS": "200"}, timeout=120, code=code)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def _member(key: str) -> str:
    kind, name = key.split(":")
    if kind == "reducer":
        return f"Reducer({name!r})"
    if kind == "interval":
        return f"Method({name!r})"
    return repr(name)


def approve(project: Project, fingerprint: str | None = None, **gate: Any) -> None:
    project.run()
    project.write_ledger(
        {
            "version": 1,
            "gates": {
                "accuracy": {
                    "active": True,
                    "threshold": 0.7,
                    "fingerprint": fingerprint or project.gate_fingerprint("accuracy"),
                    **gate,
                }
            },
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
        }
    )


def stale_message(result: CliResult) -> str:
    return stale_message_of(json.loads(result.out)["decision"]["gates"][0])


def test_an_approval_made_under_another_metric_version_is_stale_and_names_it(tmp_path):
    project = make_project(tmp_path)
    approve(project)
    assert project.run().code == 0  # 0.75 >= 0.7 under this release's exact_match
    under_later = bumped(project, "run", "--format", "json", versions={"metric:exact_match": LATER})
    assert under_later.code == 1
    message = stale_message(under_later)
    assert f"exact_match@{NOW} → exact_match@{LATER}" in message
    explained = bumped(project, "explain", "accuracy", versions={"metric:exact_match": LATER})
    assert f"exact_match@{NOW} → exact_match@{LATER}" in explained.out and "approval_stale" in explained.out
    # The host re-approves the fingerprint explain now prints; the gate decides again under the later version.
    printed = bumped(project, "explain", "accuracy", "--format", "json", versions={"metric:exact_match": LATER})
    entry = yaml.safe_load(json.loads(printed.out)[0]["ledger_entry"])
    ledger = yaml.safe_load((project.evals / "authority.yaml").read_text())
    ledger["gates"]["accuracy"]["fingerprint"] = entry["gates"]["accuracy"]["fingerprint"]
    project.write_ledger(ledger)
    assert bumped(project, "run", versions={"metric:exact_match": LATER}).code == 0
    # ...and that approval is stale again under the old release.
    assert project.run().code == 1
    folder = project.last_run()
    assert project.cli("verify", str(folder)).code == 0


def test_a_version_bump_of_an_evaluator_the_gate_does_not_use_changes_nothing(tmp_path):
    project = make_project(tmp_path)
    approve(project)
    # Point gate, one sample per example: no interval method and no reducer enters the decision.
    result = bumped(
        project,
        "run",
        versions={"interval:wilson": 5, "reducer:mean": 3, "metric:contains": METRIC_VERSIONS["contains"] + 1},
    )
    assert result.code == 0, result.out


def test_lower_bound_gates_depend_on_their_interval_method(tmp_path):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "rule": "lower_bound", "level": 0.6}})
    approve(project, threshold=0.5)
    first = project.run("--format", "json")
    assert json.loads(first.out)["decision"]["gates"][0]["outcome"] in ("pass", "fail")
    result = bumped(project, "run", "--format", "json", versions={"interval:wilson": 2})
    assert "wilson@1 → wilson@2" in stale_message(result)


def test_an_approval_made_under_the_two_way_lower_bound_rule_is_stale_and_says_so(tmp_path):
    """lower_bound@2 decides three ways; an approval made before (when fingerprints named no rule) goes stale."""
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "rule": "lower_bound", "level": 0.6}})
    loaded = load_config(project.evals / "evalglass.yaml")
    config, files = loaded.config, loaded.definition_files
    current = config.gate_evaluators("accuracy")
    assert current["rule:lower_bound"] == 2
    before = {key: version for key, version in current.items() if not key.startswith("rule:")}
    approved_then = config.gate_fingerprint("accuracy", files, versions=before)
    assert approved_then == config.gate_fingerprint("accuracy", files, versions={**before, "rule:lower_bound": 1})
    assert approved_then != config.gate_fingerprint("accuracy", files)
    approve(project, fingerprint=approved_then, threshold=0.5)
    message = stale_message(project.run("--format", "json"))
    assert "lower_bound@1 → lower_bound@2" in message


def test_sampled_gates_depend_on_their_reducer(tmp_path):
    rows = [{"id": f"e{i}", "expected": "yes", "output": ["yes", "no", "yes"]} for i in range(4)]
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "samples": True})
    project.write_rows(rows)
    approve(project)
    result = bumped(project, "run", "--format", "json", versions={"reducer:mean": 2, "metric:exact_match": NOW + 2})
    message = stale_message(result)
    assert "mean@1 → mean@2" in message and f"exact_match@{NOW} → exact_match@{NOW + 2}" in message


def test_an_approval_from_before_versions_says_so(tmp_path):
    """Approvals written before evaluators were versioned carry the fingerprint without them: stale, and the
    reason says the definition is unchanged and only the versions were added."""
    project = make_project(tmp_path)
    loaded = load_config(project.evals / "evalglass.yaml")
    legacy = loaded.config.gate_fingerprint("accuracy", loaded.definition_files, versions={})
    approve(project, fingerprint=legacy)
    result = project.run("--format", "json")
    assert result.code == 1
    message = stale_message(result)
    assert "before EvalGlass versioned its evaluators" in message and f"exact_match@{NOW}" in message


def test_an_edited_definition_is_not_blamed_on_a_version(tmp_path):
    project = make_project(tmp_path)
    approve(project)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["exact"]["normalize"] = {"case": True}
    project.write_config(config)
    message = stale_message(project.run("--format", "json"))
    assert "definition changed" in message and "@" not in message.split("(approved")[0]


def test_the_golden_recorder_is_a_module(tmp_path):
    assert (Path(__file__).parents[1] / "golden" / "record.py").is_file()


def test_comparative_gates_depend_on_the_paired_difference_and_its_methods(tmp_path):
    from tests.e2e.test_comparative_gates import NO_CHANGE, gate_of, setup

    project, _ = setup(tmp_path, NO_CHANGE)
    assert project.run().code == 0
    point = bumped(project, "run", "--format", "json", versions={"paired:paired_difference": 5})
    assert "paired_difference@4 → paired_difference@5" in stale_message_of(gate_of(point))
    # A point comparative gate compares the point difference: no interval method enters it...
    assert bumped(project, "run", versions={"interval:newcombe_paired": 2}).code == 0
    # ...a lower_bound one compares the bound of the paired interval, whose methods do.
    project, _ = setup(tmp_path / "lb", NO_CHANGE, rule="lower_bound", margin=0.2)
    result = bumped(project, "run", "--format", "json", versions={"interval:newcombe_paired": 2})
    assert "newcombe_paired@1 → newcombe_paired@2" in stale_message_of(gate_of(result))


def stale_message_of(gate: dict[str, Any]) -> str:
    assert gate["outcome"] == "blocked", gate
    (reason,) = [r for r in gate["reasons"] if r["code"] == "approval_stale"]
    return reason["message"]


# --- The run record keeps the versions that decided: a travelling folder says so under any release ---------------


def _record(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "runrecord.json").read_text())


def test_the_run_record_keeps_the_versions_that_decided_and_explain_shows_them(tmp_path):
    project = make_project(
        tmp_path,
        gates={"accuracy": {"metric": "exact", "rule": "lower_bound", "level": 0.6, "proposed_threshold": 0.5}},
    )
    approve(project, threshold=0.5)
    assert project.run("--out", "out").code in (0, 1)
    expected = {"metric:exact_match": NOW, "interval:wilson": 1, "interval:student_t": 3, "rule:lower_bound": 2}
    assert _record(tmp_path / "out")["gate_evaluators"] == {"accuracy": expected}
    explained = project.cli("explain", "accuracy", "--run", "out")
    decided = f"exact_match@{NOW}, wilson@1, student_t@3, lower_bound@2"
    assert f"Evaluators: {decided} decided this run" in explained.out, explained.out
    details = project.cli("explain", "accuracy", "--run", "out", "--format", "json").json()[0]["details"]
    assert any(decided in line for line in details)
    assert project.cli("verify", "out").code == 0


def test_a_travelling_run_says_which_versions_decided_under_a_later_release(tmp_path):
    project = make_project(tmp_path)
    approve(project)
    assert project.run("--out", "out").code == 0
    # The folder travels to a machine whose EvalGlass changed what exact_match computes.
    later = {"metric:exact_match": LATER}
    verified = bumped(project, "verify", "out", "--format", "json", versions=later)
    assert verified.code == 1
    findings = {item["field"]: item for item in json.loads(verified.out)["findings"]}
    changed = findings["runrecord.gate_evaluators.accuracy.metric:exact_match"]
    assert (changed["recorded"], changed["derived"]) == (NOW, LATER)
    explained = bumped(project, "explain", "accuracy", "--run", "out", versions=later)
    assert f"exact_match@{NOW} decided this run" in explained.out, explained.out


def test_the_definition_explain_prints_hashes_to_the_runs_fingerprint_under_a_later_release(tmp_path):
    """The ledger entry explain prints for a run pastes a definition that is the run's, evaluator versions included,
    not the one a later release would derive: it hashes to the fingerprint printed beside it."""
    from evalglass.core.fingerprint import fingerprint_of

    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0  # informational: explain prints the entry to write
    printed = bumped(
        project, "explain", "accuracy", "--run", "out", "--format", "json", versions={"metric:exact_match": LATER}
    )
    entry = yaml.safe_load(json.loads(printed.out)[0]["ledger_entry"])["gates"]["accuracy"]
    assert entry["fingerprint"] == _record(tmp_path / "out")["gate_fingerprints"]["accuracy"]
    assert entry["definition"]["evaluators"] == {"metric:exact_match": NOW}
    assert fingerprint_of(entry["definition"]) == entry["fingerprint"]


def test_edited_versions_in_the_run_record_do_not_verify_even_resealed(tmp_path):
    from tests.e2e.test_forgery import _reseal

    project = make_project(tmp_path)
    approve(project)
    assert project.run("--out", "out").code == 0
    path = tmp_path / "out" / "runrecord.json"
    record = _record(tmp_path / "out")
    record["gate_evaluators"] = {"accuracy": {"metric:exact_match": 7}}
    path.write_text(json.dumps(record, indent=2) + "\n")
    _reseal(tmp_path / "out")
    result = project.cli("verify", "out", "--format", "json")
    assert result.code == 1
    findings = {item["field"]: item for item in result.json()["findings"]}
    assert findings["runrecord.gate_evaluators.accuracy.metric:exact_match"]["derived"] == NOW


def test_a_run_record_from_before_versions_were_recorded_says_so(tmp_path):
    from tests.e2e.test_forgery import _reseal

    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    path = tmp_path / "out" / "runrecord.json"
    record = _record(tmp_path / "out")
    del record["gate_evaluators"]
    path.write_text(json.dumps(record, indent=2) + "\n")
    _reseal(tmp_path / "out")  # such a run's digests listed its record as it was
    explained = project.cli("explain", "accuracy", "--run", "out")
    assert explained.code == 0, explained.err
    assert "does not say which versions decided" in explained.out
    assert "gate_evaluators" in {
        item["field"].split(".")[1]
        for item in project.cli("verify", "out", "--format", "json").json()["findings"]
        if item["field"].startswith("runrecord.")
    }
