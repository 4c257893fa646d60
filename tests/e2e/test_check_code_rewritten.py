"""The system under test runs while the measurement does: a lane is host code a pull request edits freely, and it runs
before the checks the gates stand on. A lane that rewrites the checker script (or a helper it imports) after the run
hashed it at load must not get the rewritten code's verdict under an approval of the old bytes: the check is ERROR
(`code_modified`, naming the file), its gate blocked, never pass.

Through the real CLI: a `command` lane (and a `python` lane) rewrite the code of a standalone check and of a
per-example check (a `check` metric).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project, validated_gold

pytestmark = pytest.mark.timeout(300)

#: The approved checker: it finds the work wanting (exit 1).
STRICT = "import sys\n\nfrom verdict import ok\n\nsys.exit(0 if ok() else 1)\n"
HELPER = "def ok():\n    return False\n"
#: What the lane writes over it: everything passes.
LAX = "import sys\n\nsys.exit(0)\n"
LAX_HELPER = "def ok():\n    return True\n"

COMMAND_LANE = """\
import json
import pathlib
import sys

json.load(sys.stdin)
here = pathlib.Path({folder!r})
if (here / "attack").exists():
    (here / {file!r}).write_text({text!r})
print("yes")
"""

PYTHON_LANE = """\
import pathlib


def answer(example):
    here = pathlib.Path(__file__).parent
    if (here / "attack").exists():
        (here / {file!r}).write_text({text!r})
    return "yes"
"""


def lane_task(project: Project, kind: str, file: str, text: str) -> dict[str, Any]:
    if kind == "command":
        (project.evals / "lane.py").write_text(COMMAND_LANE.format(folder=str(project.evals), file=file, text=text))
        return {"type": "command", "argv": [sys.executable, "lane.py"], "timeout": 60}
    (project.evals / "lane_app.py").write_text(PYTHON_LANE.format(file=file, text=text))
    return {"type": "python", "function": "lane_app.py:answer"}


def setup(tmp_path: Path, config: dict[str, Any]) -> Project:
    project = make_project(tmp_path)
    (project.evals / "check.py").write_text(STRICT)
    (project.evals / "verdict.py").write_text(HELPER)
    project.write_config(config)
    return project


def attack(project: Project) -> None:
    """From now on the lane rewrites the file, during the run: on disk at load, the approved bytes."""
    (project.evals / "attack").touch()


def approve(project: Project, gate: str, **entry: Any) -> None:
    assert project.run().code in (0, 1)
    fingerprint = project.gate_fingerprint(gate)
    ledger: dict[str, Any] = {"version": 1, "gates": {gate: {"active": True, "fingerprint": fingerprint, **entry}}}
    if "threshold" in entry:
        ledger["datasets"] = validated_gold(project.evals)
    project.write_ledger(ledger)


def decided(project: Project, gate: str) -> dict[str, Any]:
    result = project.run("--format", "json")
    assert result.code == 1, (result.code, result.out, result.err)
    found: dict[str, Any] = next(g for g in result.json()["decision"]["gates"] if g["name"] == gate)
    return found


@pytest.mark.parametrize("kind", ["command", "python"])
@pytest.mark.parametrize(("file", "text"), [("check.py", LAX), ("verdict.py", LAX_HELPER)])
def test_a_lane_rewriting_a_standalone_checks_code_cannot_pass_its_gate(tmp_path, kind, file, text):
    config = base_config(
        checks={"suite": {"command": ["{python}", "check.py"], "timeout": 60}}, gates={"suite-ok": {"check": "suite"}}
    )
    project = setup(tmp_path, config)
    project.write_config({**config, "task": lane_task(project, kind, file, text)})
    approve(project, "suite-ok")
    assert decided(project, "suite-ok")["outcome"] == "fail"  # the approved checker, as approved
    attack(project)
    gate = decided(project, "suite-ok")
    assert gate["outcome"] == "blocked", gate
    assert (project.evals / file).read_text() == text  # the lane did rewrite it, during the run
    messages = " ".join(reason["message"] for reason in gate["reasons"])
    assert "ERROR (code_modified)" in messages, messages
    record = (project.last_run() / "runrecord.json").read_text()
    assert f"{file!r} was rewritten after the run hashed it at load" in record, record


@pytest.mark.parametrize("kind", ["command", "python"])
def test_a_lane_rewriting_a_per_example_checker_cannot_pass_its_gate(tmp_path, kind):
    config = base_config(
        checks={"solution": {"command": ["{python}", "check.py", "{target}"], "timeout": 60}},
        metrics={"passes": {"type": "check", "check": "solution"}},
        gates={"solutions": {"metric": "passes", "proposed_threshold": 0.5}},
    )
    project = setup(tmp_path, config)
    project.write_config({**config, "task": lane_task(project, kind, "check.py", LAX)})
    approve(project, "solutions", threshold=0.5)
    assert decided(project, "solutions")["outcome"] == "fail"  # every output fails the approved checker
    attack(project)
    gate = decided(project, "solutions")
    assert gate["outcome"] == "blocked", gate
    assert "incomplete_measurement" in [reason["code"] for reason in gate["reasons"]], gate
    assert (project.evals / "check.py").read_text() == LAX
    checks = (project.last_run() / "checks.jsonl").read_text()
    assert checks.count('"reason":"code_modified"') == 8 and "'check.py' was rewritten" in checks, checks


METRIC = """\
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def score(output):
    import judged  # imported when first called: after the lane has run

    return judged.value(output)
"""
JUDGED = "def value(output):\n    return 0.0\n"
LAX_JUDGED = "def value(output):\n    return 1.0\n"


@pytest.mark.parametrize("kind", ["command", "python"])
def test_a_lane_rewriting_a_module_a_python_metric_imports_lazily_ends_the_run_undecided(tmp_path, kind):
    """A python metric's module is imported before any lane runs; a module it imports when first called is not, so
    a lane could rewrite it. The run compares every bound file again at its end and decides nothing (exit 2)."""
    config = base_config(
        metrics={"judged": {"type": "python", "function": "metric.py:score"}},
        gates={"judged-ok": {"metric": "judged", "proposed_threshold": 0.5}},
    )
    project = setup(tmp_path, config)
    (project.evals / "metric.py").write_text(METRIC)
    (project.evals / "judged.py").write_text(JUDGED)
    project.write_config({**config, "task": lane_task(project, kind, "judged.py", LAX_JUDGED)})
    approve(project, "judged-ok", threshold=0.5)
    assert decided(project, "judged-ok")["outcome"] == "fail"
    attack(project)
    result = project.run("--format", "json")
    assert result.code == 2, (result.code, result.out, result.err)
    assert "'judged.py'" in result.err and "changed while the run ran" in result.err, result.err
    assert (project.evals / "judged.py").read_text() == LAX_JUDGED
