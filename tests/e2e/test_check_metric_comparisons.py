"""A `check` metric measured by other checker code is another metric: two runs whose checks run different code are
not compared as if they measured the same thing, neither by `evalglass compare` nor by a comparative gate; the
reason names the changed file.

The attacker's view: a pull request may edit the config, the dataset and host code (the checker, what it imports),
never the ledger. Through the real CLI, in a repository laid out as projects are (the checker lies outside the
config folder, in `tools/`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project

pytestmark = pytest.mark.timeout(300)

CHECKER = "import pathlib, sys\n\nfrom verdicts import ok\n\nsys.exit(0 if ok(pathlib.Path(sys.argv[1]).read_text()) else 1)\n"
STRICT = "def ok(text):\n    return text.strip() == 'ok'\n"
#: What a pull request would write: the helper accepts every output.
LAX = "def ok(text):\n    return True\n"
CHECK = {"command": ["{python}", "../tools/check.py", "{target}/output.txt"], "timeout": 60}
GATE = {"metric": "passes", "compare_to": "main", "direction": "higher_is_better"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def config(field: str, gates: dict[str, Any] | None = None) -> dict[str, Any]:
    made = base_config(
        task={"type": "recorded", "field": field},
        metrics={"passes": {"type": "check", "check": "solution"}},
        gates=gates or {},
    )
    made["checks"] = {"solution": CHECK}
    return made


def checked_project(tmp_path: Path) -> tuple[Project, Path]:
    """Ten examples: the baseline's outputs (`old`) all pass the strict checker; the candidate's (`new`) half do."""
    project = make_project(tmp_path, gates={})
    (tmp_path / ".git").mkdir()
    write(tmp_path / "tools" / "check.py", CHECKER)
    helper = write(tmp_path / "tools" / "verdicts.py", STRICT)
    project.write_rows([{"id": f"e{i}", "old": "ok", "new": "ok" if i % 2 else "bad"} for i in range(10)])
    return project, helper


def run(project: Project, out: str) -> dict[str, Any]:
    result = project.run("--out", out, "--format", "json")
    assert result.code in (0, 1), result.err
    return result.json()  # type: ignore[no-any-return]


def test_compare_refuses_to_call_runs_with_different_checker_code_the_same_metric(tmp_path):
    project, helper = checked_project(tmp_path)
    project.write_config(config("old"))
    run(project, "runs/base")
    helper.write_text(LAX)  # the pull request: the checker's helper now accepts everything
    project.write_config(config("new"))
    run(project, "runs/cand")
    result = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    (metric,) = result.json()["metrics"]
    (difference,) = metric["incomparable"]
    assert difference["code"] == "metric_definition"
    assert "check_code.solution.../tools/verdicts.py" in difference["message"]
    assert "\n" not in difference["message"]
    text = project.cli("compare", "runs/base", "runs/cand")
    assert text.code == 0 and "../tools/verdicts.py" in text.out, text.out
    # the same code on both sides: comparable
    helper.write_text(STRICT)
    run(project, "runs/cand2")
    (same,) = project.cli("compare", "runs/base", "runs/cand2", "--format", "json").json()["metrics"]
    assert same["incomparable"] == []


def approved_gate(project: Project) -> dict[str, Any]:
    """The host pins the baseline `runs/base` and approves the comparative gate as the config stands now."""
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    project.write_config(config("new", {"no-regression": GATE}))
    gate_fp = next(g for g in run(project, "runs/probe")["decision"]["gates"] if g["name"] == "no-regression")
    ledger = {
        "version": 1,
        "baselines": {"main": {"run": "../runs/base", "fingerprint": fingerprint}},
        "gates": {"no-regression": {"active": True, "fingerprint": gate_fp["fingerprint"], "margin": 0.05}},
    }
    project.write_ledger(ledger)
    return ledger


def gate_of(card: dict[str, Any]) -> dict[str, Any]:
    return next(g for g in card["decision"]["gates"] if g["name"] == "no-regression")


def test_a_comparative_gate_on_a_check_metric_blocks_when_the_baseline_ran_other_checker_code(tmp_path):
    """The baseline was measured by a strict checker; the gate (approved as it stands) runs a lax one. Without the
    check's code in the metric's definition the lax candidate would compare as no worse and pass."""
    project, helper = checked_project(tmp_path)
    project.write_config(config("old"))
    run(project, "runs/base")
    helper.write_text(LAX)
    approved_gate(project)
    card = run(project, "runs/cand")
    gate = gate_of(card)
    assert gate["outcome"] == "blocked", gate
    (reason,) = gate["reasons"]
    assert reason["code"] == "not_comparable"
    assert reason["message"].startswith("metric_definition:")
    assert "check_code.solution.../tools/verdicts.py" in reason["message"]
    assert project.cli("verify", "runs/cand").code == 0  # verify re-derives the same block
    preflight = project.cli("preflight", "--format", "json")
    (preview,) = [g for g in preflight.json()["gates"] if g["name"] == "no-regression"]
    assert preview["standing"] == "blocked" and "../tools/verdicts.py" in " ".join(preview["reasons"][0].values())


def test_the_approval_of_a_comparative_gate_on_a_check_metric_binds_the_checker_code(tmp_path):
    """Approved with the strict checker the baseline ran: the candidate's regression fails the gate; the pull
    request that makes the checker lax leaves the approval stale, and can never turn the gate green."""
    project, helper = checked_project(tmp_path)
    project.write_config(config("old"))
    run(project, "runs/base")
    approved_gate(project)
    gate = gate_of(run(project, "runs/cand"))
    assert gate["outcome"] == "fail", gate
    helper.write_text(LAX)
    result = project.run("--out", "runs/attack", "--format", "json")
    assert result.code == 1
    gate = gate_of(result.json())
    assert gate["outcome"] == "blocked"
    assert {reason["code"] for reason in gate["reasons"]} >= {"approval_stale", "not_comparable"}
