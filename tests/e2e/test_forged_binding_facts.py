"""Binding facts a run records and its readers decide on, rewritten consistently by whoever can write an unsigned
run folder: the run record, the scorecard, report.md and digests.json all rewritten with the project's own code, so
nothing but the facts themselves betrays the edit.

- what a check runs that no input binds (a check metric's ``unbound_check_code``, a check result's
  ``unbound_inputs``): re-derived from the config snapshot by every reader (runners, ``-m`` modules, variables) and
  in full by ``verify`` when the config folder is at hand (the folders a command names); when it is not, ``verify``
  says in one line what it did not check;
- a check result's binding (``requested_fingerprint``): the state the config snapshot's gates ask for.

Through the real CLI, on real files and real check subprocesses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import CliResult, Project, base_config, make_project, run_cli, validated_gold
from tests.e2e.test_check_metric_binding import TEST

pytestmark = pytest.mark.timeout(300)

UNITTEST = {"command": ["{python}", "-m", "unittest", "discover", "-s", "tests"], "timeout": 60}


def forge_green(
    folder: Path, gate_name: str, edit: Callable[[dict[str, Any]], None], fingerprint: str | None = None
) -> None:
    """The attacker's rewrite: edit the run record, decide the gate green in the scorecard, render report.md from it
    and reseal every digest (unsigned), each with the project's own code."""
    from evalglass.core.runrecord import RunRecord
    from evalglass.core.scorecard import CheckSummary, Scorecard
    from evalglass.engine.explore.reportfile import report_markdown
    from evalglass.engine.runs.artifacts import model_bytes

    record = json.loads((folder / "runrecord.json").read_text())
    edit(record)
    (folder / "runrecord.json").write_bytes(model_bytes(RunRecord.model_validate(record).model_dump(mode="json")))
    card = json.loads((folder / "scorecard.json").read_text())
    card["dataset"] = record["dataset"]
    card["checks"] = [
        CheckSummary.of(name, RunRecord.model_validate(record).check_results[name]).model_dump(mode="json")
        for name in record.get("check_results", {})
    ]
    for gate in card["decision"]["gates"]:
        if gate["name"] == gate_name:
            gate.update(outcome="pass", reasons=[], threshold=gate.get("threshold") or 1.0)
            gate["fingerprint"] = fingerprint or gate["fingerprint"]
    card["decision"].update(verdict="pass", ci_should_fail=False, exit_code=0)
    scorecard = Scorecard.model_validate(card)
    (folder / "scorecard.json").write_bytes(model_bytes(scorecard.model_dump(mode="json")))
    (folder / "report.md").write_text(report_markdown(folder, scorecard))
    digests = json.loads((folder / "digests.json").read_text())
    digests["files"] = {
        name: "sha256:" + hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in digests["files"]
    }
    (folder / "digests.json").write_text(json.dumps(digests))


def approve(project: Project, gate: str, **entry: Any) -> None:
    probe = project.run("--format", "json")
    assert probe.code == 0, probe.err  # informational: nothing active yet
    fingerprint = next(g for g in probe.json()["decision"]["gates"] if g["name"] == gate)["fingerprint"]
    ledger: dict[str, Any] = {"version": 1, "gates": {gate: {"active": True, "fingerprint": fingerprint, **entry}}}
    if "threshold" in entry:  # a metric gate: it stands on the dataset's gold
        ledger["datasets"] = validated_gold(project.evals)
    project.write_ledger(ledger)


def blocked_run(project: Project, gate: str, code: str) -> Path:
    result = project.run("--format", "json")
    found = next(g for g in result.json()["decision"]["gates"] if g["name"] == gate)
    assert (result.code, found["outcome"], [r["code"] for r in found["reasons"]]) == (1, "blocked", [code])
    return project.last_run()


def findings(result: CliResult) -> list[str]:
    return [line.strip() for line in result.out.splitlines() if line.startswith("  runrecord.")]


def elsewhere(project: Project, *args: str) -> CliResult:
    """The CLI from a folder where the config the run read (by its recorded relative path) is not at hand."""
    away = project.root / "away"
    away.mkdir(exist_ok=True)
    return run_cli(*args, cwd=away)


def test_a_check_metric_forged_to_bind_its_code_is_refused_by_every_reader_and_verify(tmp_path):
    project = make_project(tmp_path, gates={})
    (project.evals / "tests").mkdir()
    (project.evals / "tests" / "test_output.py").write_text(TEST)
    project.write_rows([{"id": f"e{i}", "output": "ok"} for i in range(10)])
    config = base_config(
        metrics={"passes": {"type": "check", "check": "solution"}},
        gates={"solutions": {"metric": "passes", "proposed_threshold": 0.9}},
    )
    project.write_config({**config, "checks": {"solution": UNITTEST}})
    approve(project, "solutions", threshold=0.9)
    folder = blocked_run(project, "solutions", "check_inputs_unbound")
    assert project.cli("verify", str(folder)).code == 0

    def bound(record: dict[str, Any]) -> None:
        record["unbound_check_code"] = {"passes": {"solution": []}}

    forge_green(folder, "solutions", bound)
    # Every reader: the record alone shows the -m module; nothing else about the forgery fails to add up.
    for command in (("view", str(folder)), ("explain", "solutions", "--run", str(folder))):
        shown = project.cli(*command)
        assert shown.code == 2, shown.out
        assert (
            "does not add up: unbound_check_code.passes.solution: the run record says check 'solution' runs "
            "nothing unbound; its command runs module 'unittest' (-m)"
        ) in shown.err
        assert "more)" not in shown.err and "Traceback" not in shown.err
    # verify with the config folder at hand re-derives all of it, the folder the runner discovers included.
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    (finding,) = findings(verified)
    assert finding.startswith("runrecord.unbound_check_code.passes.solution: recorded ()")
    assert "check 'solution'" in finding and "folder 'tests', module 'unittest' (-m)" in finding
    assert "check code binding: what each check runs unbound re-derived in " in verified.out
    # Without it, from the record alone: still refused, and it says what it could not check.
    away = elsewhere(project, "verify", str(folder))
    assert away.code == 1, away.out
    (finding,) = findings(away)
    assert "module 'unittest' (-m)" in finding and "folder 'tests'" not in finding
    assert "the folders a check's command names were NOT checked" in away.out


def check_gate_project(tmp_path: Path, check: dict[str, Any]) -> Project:
    project = make_project(tmp_path, gates={"suite-ok": {"check": "suite"}})
    config = base_config(gates={"suite-ok": {"check": "suite"}})
    project.write_config({**config, "checks": {"suite": {"timeout": 60, **check}}})
    return project


def test_a_check_result_forged_to_bind_the_folder_it_runs_is_refused_by_verify_or_said(tmp_path):
    """Only the files show that a word of the command is a folder: the readers cannot see it (their line sends to
    verify), verify with the config folder at hand refuses it, and verify without it says it did not check."""
    project = check_gate_project(tmp_path, {"command": ["{python}", "-c", "import sys; sys.exit(0)", "tests"]})
    (project.evals / "tests").mkdir()
    approve(project, "suite-ok")
    folder = blocked_run(project, "suite-ok", "check_inputs_unbound")
    record = json.loads((folder / "runrecord.json").read_text())
    assert record["check_results"]["suite"]["unbound_inputs"] == ["folder 'tests'"]

    def bound(record: dict[str, Any]) -> None:
        del record["check_results"]["suite"]["unbound_inputs"]

    forge_green(folder, "suite-ok", bound)
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    (finding,) = findings(verified)
    assert finding.startswith("runrecord.check_results.suite.unbound_inputs: recorded ()")
    assert "check 'suite' runs nothing unbound; its command runs folder 'tests'" in finding
    away = elsewhere(project, "verify", str(folder))
    assert away.code == 0 and not findings(away), away.out
    (said,) = [line for line in away.out.splitlines() if "check code binding" in line]
    assert "re-derived from the run record alone" in said and "folders a check's command names were NOT" in said
    assert "check results: outcomes and target states are the run's word" in away.out
    shown = project.cli("view", str(folder))
    assert shown.code == 0 and "not re-derived" in shown.out + shown.err, shown.err


def test_a_check_result_forged_bound_to_a_state_no_gate_asks_for_is_refused(tmp_path):
    """The ledger requires a binding and the gate names no expect_state: the run is unbound and blocked. Rewritten
    as bound (requested = observed), it names a state the config snapshot's gates do not ask for."""
    project = check_gate_project(tmp_path, {"command": ["{python}", "-c", "pass"], "target": "src"})
    (project.evals / "src").mkdir()
    (project.evals / "src" / "app.py").write_text("VALUE = 1\n")
    approve(project, "suite-ok", require_binding=True)
    folder = blocked_run(project, "suite-ok", "check_unbound")

    def bound(record: dict[str, Any]) -> None:
        result = record["check_results"]["suite"]
        result.update(binding="bound", requested_fingerprint=result["observed_fingerprint"])

    forge_green(folder, "suite-ok", bound)
    shown = project.cli("view", str(folder))
    assert shown.code == 2 and "check_results.suite.requested_fingerprint: recorded " in shown.err, shown.err
    assert "the config snapshot declares None" in shown.err and "more)" not in shown.err
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    assert any("check_results.suite.requested_fingerprint" in line for line in findings(verified)), verified.out


def test_definition_files_forged_to_the_approved_hashes_do_not_verify_beside_the_files(tmp_path):
    """The checker changed after approval, so the run is stale. Rewritten with the hashes the approved run
    recorded (and its gate fingerprint), the run record re-derives its approved fingerprint: only the files beside
    the config the run read show it, and verify there names them."""
    project = check_gate_project(tmp_path, {"command": ["{python}", "check.py"]})
    (project.evals / "check.py").write_text("import sys\nsys.exit(0)\n")
    approve(project, "suite-ok")
    approved = json.loads((project.last_run() / "runrecord.json").read_text())
    (project.evals / "check.py").write_text("import sys\nsys.exit(0)  # hollowed\n")
    folder = blocked_run(project, "suite-ok", "approval_stale")

    def as_approved(record: dict[str, Any]) -> None:
        record["definition_files"] = approved["definition_files"]
        record["gate_fingerprints"] = approved["gate_fingerprints"]

    forge_green(folder, "suite-ok", as_approved, approved["gate_fingerprints"]["suite-ok"])
    verified = project.cli("verify", str(folder))
    # An earlier run keeps verifying on its own snapshot when a file changes later, and verify cannot tell that from
    # this rewrite: it says which files differ, in one line (a signature tells them apart).
    assert verified.code == 0, verified.out
    (said,) = [line for line in verified.out.splitlines() if line.startswith("  definition files:")]
    assert "NOT the ones the run hashed (check:suite in evals)" in said and "or the record rewritten" in said
    assert "folders a check's command names were NOT checked" in verified.out
    # `--strict`: the run must still stand on the files at hand, so the difference is a finding naming the file.
    strict = project.cli("verify", "--strict", str(folder))
    assert strict.code == 1, strict.out
    assert "NOT verified: 1 field(s) differ" in strict.out
    assert "anchor.definition_files.check:suite: recorded {'check.py': 'sha256:" in strict.out


def test_a_dataset_forged_to_the_approved_gold_does_not_verify_beside_the_file(tmp_path):
    """The pull request edits the gold answers to match the outputs, so the run blocks (`gold_stale`). Rewritten with
    the dataset fingerprints the approved run recorded, the run adds up; verify beside the dataset says so."""
    from tests.e2e.project import DEFAULT_ROWS
    from tests.e2e.test_verdicts import approve as approve_accuracy

    project = make_project(tmp_path)
    project.write_ledger(approve_accuracy(project, threshold=0.7))
    approved = json.loads((project.last_run() / "runrecord.json").read_text())["dataset"]
    project.write_rows([{**row, "expected": row["output"]} for row in DEFAULT_ROWS])
    folder = blocked_run(project, "accuracy", "gold_stale")

    def as_approved(record: dict[str, Any]) -> None:
        record["dataset"] = approved

    forge_green(folder, "accuracy", as_approved)
    verified = project.cli("verify", str(folder))
    assert verified.code == 0, verified.out  # said, as for definition files (above)
    (said,) = [line for line in verified.out.splitlines() if line.startswith("  dataset:")]
    assert "NOT the one the run read (its file and gold fingerprint differ)" in said and "rewritten" in said
    strict = project.cli("verify", "--strict", "--format", "json", str(folder))
    assert strict.code == 1, strict.out
    found = {item["field"]: item for item in json.loads(strict.out)["findings"]}
    assert set(found) == {"anchor.dataset.fingerprint", "anchor.dataset.gold_fingerprint"}
    assert found["anchor.dataset.gold_fingerprint"]["recorded"] == approved["gold_fingerprint"]


def test_verify_strict_counts_what_the_repository_no_longer_holds(tmp_path):
    """A green run, then the pull request edits a reference answer: the old run keeps verifying (its own snapshot,
    said in one line), while `--strict` asks that the run still stand on the files here, and names the dataset.
    From a folder where the config and ledger are not at hand, `--strict` counts them too."""
    from tests.e2e.project import DEFAULT_ROWS
    from tests.e2e.test_verdicts import approve as approve_accuracy

    project = make_project(tmp_path)
    project.write_ledger(approve_accuracy(project, threshold=0.5))
    green = project.run()
    assert green.code == 0, green.out
    folder = project.last_run()
    assert project.cli("verify", "--strict", str(folder)).code == 0
    project.write_rows([{**DEFAULT_ROWS[0], "expected": "edited"}, *DEFAULT_ROWS[1:]])
    assert project.cli("verify", str(folder)).code == 0
    strict = project.cli("verify", "--strict", str(folder))
    assert strict.code == 1, strict.out
    assert [line.split(":")[0].strip() for line in strict.out.splitlines() if line.startswith("  anchor.")] == [
        "anchor.dataset.fingerprint",
        "anchor.dataset.gold_fingerprint",
    ]
    away = elsewhere(project, "verify", "--strict", "--format", "json", str(folder))
    assert away.code == 1, away.out
    found = {item["field"]: item["derived"] for item in json.loads(away.out)["findings"]}
    assert found == {
        "anchor.config": "evals/evalglass.yaml: <not at hand>",
        "anchor.ledger": "evals/authority.yaml: <not at hand>",
    }


def test_a_check_with_a_target_forged_to_bind_what_its_runner_discovers_is_refused_by_every_reader(tmp_path):
    """A target binds what a runner discovers only when it holds the check's working folder; whether it does is
    read from the declaration (both paths relative to the config folder), so every reader and verify without the
    config folder re-derive it: a target `src` beside the working folder leaves `-m unittest` unbound."""
    command = ["{python}", "-m", "unittest", "discover", "-s", "src"]
    project = check_gate_project(tmp_path, {"command": command, "target": "src"})
    (project.evals / "src").mkdir()
    (project.evals / "src" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    approve(project, "suite-ok")
    folder = blocked_run(project, "suite-ok", "check_inputs_unbound")
    record = json.loads((folder / "runrecord.json").read_text())
    assert record["check_results"]["suite"]["unbound_inputs"] == ["module 'unittest' (-m)"]

    def bound(record: dict[str, Any]) -> None:
        del record["check_results"]["suite"]["unbound_inputs"]

    forge_green(folder, "suite-ok", bound)
    for command_line in (("view", str(folder)), ("explain", "suite-ok", "--run", str(folder))):
        shown = project.cli(*command_line)
        assert shown.code == 2, shown.out
        assert "check 'suite' runs nothing unbound; its command runs module 'unittest' (-m)" in shown.err, shown.err
    away = elsewhere(project, "verify", str(folder))
    assert away.code == 1, away.out
    (finding,) = findings(away)
    assert finding.startswith("runrecord.check_results.suite.unbound_inputs: recorded ()")
    assert "module 'unittest' (-m)" in finding


def test_a_target_holding_the_working_folder_binds_what_its_runner_discovers(tmp_path):
    """The other side of the rule: a target `.` holds the working folder `tests`, so the runner's discoveries are
    bound, in the run and for every reader (the gate passes, verify agrees away from the config folder)."""
    project = check_gate_project(
        tmp_path, {"command": ["{python}", "-m", "unittest", "discover", "-s", "."], "target": ".", "cwd": "tests"}
    )
    (project.evals / "tests").mkdir()
    (project.evals / "tests" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    approve(project, "suite-ok")
    result = project.run("--format", "json")
    assert result.code == 0, result.out + result.err
    folder = project.last_run()
    assert "unbound_inputs" not in json.loads((folder / "runrecord.json").read_text())["check_results"]["suite"]
    assert project.cli("view", str(folder)).code == 0
    assert elsewhere(project, "verify", str(folder)).code == 0
