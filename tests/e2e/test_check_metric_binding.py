"""A gate on a `check` metric whose check runs code no input binds (a test folder a runner discovers) cannot earn
green: it is blocked (`check_inputs_unbound`), in the run, in `verify` and the readers, and in `preflight`, unless the
ledger accepts unbound code (`require_binding: false`). Declaring the code under `inputs:` is the repair.

The attacker's view: a pull request edits the config, the dataset and host code, never the ledger. Here it hollows
the test the per-example check runs, so that every output passes. Through the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project, validated_gold

pytestmark = pytest.mark.timeout(300)

TEST = """\
import os
import pathlib
import unittest


class Output(unittest.TestCase):
    def test_ok(self):
        text = (pathlib.Path(os.environ["EVALGLASS_TARGET"]) / "output.txt").read_text()
        self.assertEqual(text.strip(), "ok")
"""
HOLLOWED = TEST.replace('self.assertEqual(text.strip(), "ok")', "pass")
CHECK = {"command": ["{python}", "-m", "unittest", "discover", "-s", "tests"], "timeout": 60}


def config(check: dict[str, Any], gates: dict[str, Any]) -> dict[str, Any]:
    made = base_config(metrics={"passes": {"type": "check", "check": "solution"}}, gates=gates)
    made["checks"] = {"solution": check}
    return made


def project_with(tmp_path: Path, check: dict[str, Any] = CHECK) -> Project:
    """Ten outputs, half of them wrong: the strict test passes five."""
    project = make_project(tmp_path, gates={})
    (project.evals / "tests").mkdir()
    (project.evals / "tests" / "test_output.py").write_text(TEST)
    project.write_rows([{"id": f"e{i}", "output": "ok" if i % 2 else "bad"} for i in range(10)])
    project.write_config(config(check, {"solutions": {"metric": "passes", "proposed_threshold": 0.9}}))
    return project


def approve(project: Project, **entry: Any) -> None:
    probe = project.run("--format", "json")
    assert probe.code == 0, probe.err  # informational: nothing active yet
    fingerprint = next(g for g in probe.json()["decision"]["gates"] if g["name"] == "solutions")["fingerprint"]
    gate = {"active": True, "fingerprint": fingerprint, "threshold": 0.9, **entry}
    project.write_ledger({"version": 1, "gates": {"solutions": gate}, "datasets": validated_gold(project.evals)})


def decided(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    return result.code, next(g for g in result.json()["decision"]["gates"] if g["name"] == "solutions")


def codes(gate: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in gate["reasons"]]


def hollow(project: Project) -> None:
    (project.evals / "tests" / "test_output.py").write_text(HOLLOWED)


def preview(project: Project) -> dict[str, Any]:
    result = project.cli("preflight", "--format", "json")
    assert result.code in (0, 1), result.err
    return next(g for g in result.json()["gates"] if g["name"] == "solutions")  # type: ignore[no-any-return]


def test_a_hollowed_unbound_test_cannot_turn_a_check_metric_gate_green(tmp_path):
    project = project_with(tmp_path)
    approve(project)
    assert (preview(project)["standing"], codes(preview(project))) == ("blocked", ["check_inputs_unbound"])
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (1, "blocked")
    # Blocked before the attack too: the value is shown, but an unbound checker decides nothing.
    assert "check_inputs_unbound" in codes(gate) and gate["value"] == pytest.approx(0.5)
    hollow(project)
    code, gate = decided(project)
    assert (code, gate["outcome"], codes(gate)) == (1, "blocked", ["check_inputs_unbound"])
    assert gate["value"] == pytest.approx(1.0)  # what the hollowed test measures: everything passes
    (message,) = [reason["message"] for reason in gate["reasons"]]
    assert "check 'solution'" in message and "module 'unittest' (-m)" in message and "inputs:" in message
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert record["unbound_check_code"] == {"passes": {"solution": ["folder 'tests'", "module 'unittest' (-m)"]}}
    assert project.cli("verify", str(project.last_run())).code == 0  # verify re-derives the block
    shown = project.cli("view")
    assert shown.code == 0 and "check_inputs_unbound" in shown.out, shown.err


def test_a_record_edited_to_drop_the_unbound_code_does_not_verify(tmp_path):
    project = project_with(tmp_path)
    approve(project)
    hollow(project)
    decided(project)
    path = project.last_run() / "runrecord.json"
    record = json.loads(path.read_text())
    record["unbound_check_code"] = {"passes": {"solution": []}}
    path.write_text(json.dumps(record))
    result = project.cli("verify", str(project.last_run()))
    assert result.code == 1, result.out


def test_declaring_the_inputs_binds_the_test_and_the_attack_goes_stale(tmp_path):
    project = project_with(tmp_path, {**CHECK, "inputs": ["tests"]})
    approve(project)
    assert preview(project)["standing"] == "would_decide"
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (1, "fail") and gate["value"] == pytest.approx(0.5)
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert record["unbound_check_code"] == {"passes": {"solution": []}}
    hollow(project)
    code, gate = decided(project)
    assert (code, gate["outcome"], codes(gate)) == (1, "blocked", ["approval_stale"])


def test_a_ledger_that_accepts_unbound_code_decides_with_a_note(tmp_path):
    project = project_with(tmp_path)
    approve(project, require_binding=False)
    assert preview(project)["standing"] == "would_decide"
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (1, "fail")
    assert any("does not bind its test code" in note for note in gate["notes"])
    assert project.cli("verify", str(project.last_run())).code == 0


def test_require_binding_on_a_metric_that_runs_no_check_is_refused(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger({"version": 1, "gates": {"accuracy": {"active": True, "require_binding": False}}})
    result = project.run()
    assert result.code == 2 and "runs no check" in result.err and "Traceback" not in result.err


def _reseal(folder: Path, record: dict[str, Any]) -> None:
    """Write ``record`` back as the run wrote it and reseal the digests (unsigned): a consistent rewrite."""
    import hashlib

    from evalglass.core.runrecord import RunRecord
    from evalglass.engine.runs.artifacts import model_bytes

    path = folder / "runrecord.json"
    path.write_bytes(model_bytes(RunRecord.model_validate(record).model_dump(mode="json")))
    digests = json.loads((folder / "digests.json").read_text())
    digests["files"]["runrecord.json"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "digests.json").write_text(json.dumps(digests))


def test_a_record_without_its_unbound_code_entry_is_not_green_under_the_current_rules(tmp_path):
    """A record from before the rule keeps no `unbound_check_code`, and deleting it is a consistent rewrite that
    claims the older rule (nothing blocked on unbound code). It adds up as recorded, but the current rules cannot
    tell that the check's code was bound: verify and every reader refuse to call it green."""
    project = project_with(tmp_path, {**CHECK, "inputs": ["tests"]})
    project.write_rows([{"id": f"e{i}", "output": "ok"} for i in range(10)])
    approve(project)
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (0, "pass")
    folder = project.last_run()
    assert project.cli("verify", str(folder)).code == 0
    record = json.loads((folder / "runrecord.json").read_text())
    del record["unbound_check_code"]
    _reseal(folder, record)
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    (finding,) = [line for line in verified.out.splitlines() if line.startswith("  runrecord.")]
    assert finding.startswith("  runrecord.unbound_check_code: recorded ")
    assert "the run record says it was decided before a check metric's unbound check code blocked" in finding
    assert "gate 'solutions' is blocked: check_inputs_unbound" in finding
    for command in (("view", str(folder)), ("explain", "solutions", "--run", str(folder))):
        shown = project.cli(*command)
        assert shown.code == 2 and "runrecord.unbound_check_code" in shown.err, shown.err
