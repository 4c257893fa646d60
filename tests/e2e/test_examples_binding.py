"""Which examples a gate measures is approved with it: a gate on a metric without a reference (here `loop` on agent
trajectories) stands on the dataset's validated gold as a reference metric's does. Before, a pull request could
delete the failing examples from the dataset, or point `dataset.path` at a friendlier file, and turn the gate green
with the ledger untouched. Through the real CLI, on real files."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.project import Project, make_project

LOOPING = {"messages": [], "tool_calls": [{"name": "w", "arguments": {"c": "x"}}] * 2}
ONCE = {"messages": [], "tool_calls": [{"name": "w", "arguments": {"c": "x"}}]}
ROWS = [{"id": f"e{i}", "request": f"r{i}", "traj": LOOPING if i < 3 else ONCE} for i in range(10)]
CONFIG = {
    "version": 1,
    "dataset": {"name": "trips", "path": "data.jsonl"},
    "task": {"type": "recorded", "field": "traj"},
    "metrics": {"no_loops": {"type": "loop", "repeats": 2}},
    "gates": {"loops": {"metric": "no_loops", "proposed_threshold": 0.9}},
}


def decided(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    (gate,) = result.json()["decision"]["gates"]
    return result.code, gate


def reasons(gate: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in gate["reasons"]]


def test_dropping_the_failing_examples_never_turns_a_gate_without_a_reference_green(tmp_path):
    project = make_project(tmp_path)
    project.write_config(CONFIG)
    project.write_rows(ROWS)
    assert decided(project)[1]["outcome"] == "informational"
    gate_entry = {"active": True, "threshold": 0.9, "fingerprint": project.gate_fingerprint("loops")}
    project.write_ledger({"version": 1, "gates": {"loops": gate_entry}})
    code, gate = decided(project)
    # The gate itself is approved, the examples it measures are not: blocked, and explain prints the entry.
    assert (code, gate["outcome"], reasons(gate)) == (1, "blocked", ["gold_not_validated"])
    assert "the gate measures the examples of dataset 'trips'" in gate["reasons"][0]["message"]
    explained = project.cli("explain", "loops")
    assert "Gold: which examples the gate measures is approved with it" in explained.out
    assert "validated_gold: true" in explained.out and "except the recorded output field 'traj'" in explained.out
    gold = project.dataset_fingerprint()
    ledger = {
        "version": 1,
        "gates": {"loops": gate_entry},
        "datasets": {"trips": {"validated_gold": True, "fingerprint": gold}},
    }
    project.write_ledger(ledger)
    code, gate = decided(project)
    assert (code, gate["outcome"], gate["value"]) == (1, "fail", 0.7)  # three of ten loop
    verified = project.cli("verify", str(project.last_run()))
    assert verified.code == 0, verified.out

    # New outputs of the same examples keep the gold (the output field is left out): the gate decides on them.
    project.write_rows([{**row, "traj": ONCE} for row in ROWS])
    code, gate = decided(project)
    assert (code, gate["outcome"], gate["value"]) == (0, "pass", 1.0)

    # The pull request drops the three looping examples: same config, same ledger, not green.
    project.write_rows(ROWS[3:])
    code, gate = decided(project)
    assert (code, gate["outcome"], reasons(gate)) == (1, "blocked", ["gold_stale"])

    # Or keeps the dataset and points the config at a friendlier file: the ledger still binds the examples.
    project.write_rows(ROWS)
    (project.evals / "easy.jsonl").write_text("\n".join(json.dumps(row) for row in ROWS[3:]) + "\n")
    project.write_config({**CONFIG, "dataset": {"name": "trips", "path": "easy.jsonl"}})
    code, gate = decided(project)
    assert (code, gate["outcome"], reasons(gate)) == (1, "blocked", ["gold_stale"])


def test_a_run_green_before_the_examples_were_bound_is_not_shown_green(tmp_path):
    """A run recorded before the rule (no `gold_gates` marker) passed on examples no ledger entry bound: verify and
    every reader decide it again under the current rules, which block it; deleting the marker from a new run is the
    same claim."""
    from tests.e2e.test_forged_binding_facts import forge_green

    project = make_project(tmp_path)
    project.write_config(CONFIG)
    project.write_rows(ROWS[3:])
    project.run()
    gate_entry = {"active": True, "threshold": 0.9, "fingerprint": project.gate_fingerprint("loops")}
    project.write_ledger({"version": 1, "gates": {"loops": gate_entry}})
    code, gate = decided(project)
    assert (code, reasons(gate)) == (1, ["gold_not_validated"])
    folder = project.last_run()
    assert json.loads((folder / "runrecord.json").read_text())["gold_gates"] == "every"

    def before_the_rule(record: dict[str, Any]) -> None:
        del record["gold_gates"]

    forge_green(folder, "loops", before_the_rule)
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    assert "runrecord.gold_gates: recorded 'the run record says it was decided before every metric gate" in verified.out
    assert "under the current rules gate 'loops' is blocked: gold_not_validated" in verified.out
    shown = project.cli("view", str(folder))
    assert shown.code == 2 and "gold_not_validated" in shown.err, shown.err
