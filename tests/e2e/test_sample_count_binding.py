"""How many samples each example is reduced from is part of what a gate's approval binds when the reducer depends on
it (max, min, majority, at_least_k): under `max` a pull request that raised a lane's `epochs` raised the number and
turned a failing gate green with the ledger untouched. Through the real CLI, on real files, with a python lane that
answers right about half the time (seeded by example and sample, so every run is the same)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project, validated_gold

LANE = """\
import hashlib


def answer(example, sample):
    digest = hashlib.sha256(f"{example['id']}:{sample}".encode()).digest()
    return "yes" if digest[0] % 2 else "no"
"""

ROWS = [{"id": f"q{i}", "expected": "yes"} for i in range(40)]


def configure(project: Project, epochs: int, reducer: str = "max", **task: Any) -> None:
    metric: dict[str, Any] = {"type": "exact_match", "reference": "expected", "reducer": reducer}
    if reducer == "at_least_k":
        metric["k"] = 1
    project.write_config(
        base_config(
            task={"type": "python", "function": "lane.py:answer", "epochs": epochs, **task},
            metrics={"exact": metric},
            gates={"accuracy": {"metric": "exact", "proposed_threshold": 0.9}},
        )
    )


def decided(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    (gate,) = result.json()["decision"]["gates"]
    return result.code, gate


def fingerprint(project: Project) -> str:
    """The fingerprint a host approves, as `evalglass preflight` prints it (no run needed)."""
    (gate,) = json.loads(project.cli("preflight", "--format", "json").out)["gates"]
    return str(gate["fingerprint"])


def approve(project: Project) -> None:
    gate = {"active": True, "threshold": 0.9, "fingerprint": fingerprint(project)}
    project.write_ledger({"version": 1, "gates": {"accuracy": gate}, "datasets": validated_gold(project.evals)})


def codes(gate: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in gate["reasons"]]


@pytest.mark.parametrize(("approved", "raised"), [(1, 8), (2, 8)])
def test_raising_epochs_under_max_makes_the_approval_stale_never_green(tmp_path, approved, raised):
    project = make_project(tmp_path)
    (project.evals / "lane.py").write_text(LANE)
    project.write_rows(ROWS)
    configure(project, approved)
    approve(project)
    code, gate = decided(project)
    assert (code, gate["outcome"], codes(gate)) == (1, "fail", ["below_threshold"])
    assert gate["value"] < 0.9
    # A pull request raises epochs: under max the number rises past the threshold, and the approval no longer
    # covers the measurement.
    configure(project, raised)
    code, gate = decided(project)
    assert gate["value"] >= 0.9
    assert (code, gate["outcome"], codes(gate)) == (1, "blocked", ["approval_stale"])
    # Approving the new count is the host's move: the gate then decides on it.
    approve(project)
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (0, "pass")


def test_under_mean_epochs_is_precision_and_keeps_the_approval(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "lane.py").write_text(LANE)
    project.write_rows(ROWS)
    configure(project, 2, reducer="mean")
    before = fingerprint(project)
    configure(project, 8, reducer="mean")
    assert fingerprint(project) == before


def recorded(project: Project, epochs: int | None, samples: list[list[str]]) -> None:
    task: dict[str, Any] = {"type": "recorded", "field": "output", "samples": True}
    if epochs is not None:
        task["epochs"] = epochs
    project.write_config(
        base_config(
            task=task,
            metrics={"exact": {"type": "exact_match", "reference": "expected", "reducer": "max"}},
            gates={"accuracy": {"metric": "exact", "proposed_threshold": 0.9}},
        )
    )
    project.write_rows([{"id": f"r{i}", "expected": "yes", "output": out} for i, out in enumerate(samples)])


def test_recorded_samples_under_max_need_a_declared_count_which_each_example_must_hold(tmp_path):
    project = make_project(tmp_path)
    recorded(project, None, [["no", "yes"], ["no", "no"]])
    result = project.run()
    assert result.code == 2
    assert "evalglass.yaml:" in result.err and "reducer max depends on how many samples" in result.err
    assert "Traceback" not in result.err
    recorded(project, 2, [["no", "yes"], ["no", "no"]])
    approve(project)
    code, gate = decided(project)
    assert (code, gate["outcome"]) == (1, "fail")
    # More samples in the file (outputs, which gold leaves out) are not reduced: each such example is an error.
    recorded(project, 2, [["no", "yes"], ["no", "no", "no", "yes"]])
    code, gate = decided(project)
    assert (gate["outcome"], codes(gate)) == ("blocked", ["incomplete_measurement"])
    scores = (project.last_run() / "scores.jsonl").read_text()
    assert "sample_count" in scores and "holds 4 samples; task.epochs declares 2" in scores
    # Declaring the new count is a new approval.
    recorded(project, 4, [["no", "yes", "no", "no"], ["no", "no", "no", "yes"]])
    code, gate = decided(project)
    assert (gate["outcome"], codes(gate)) == ("blocked", ["approval_stale"])


def test_epochs_on_a_recorded_task_without_samples_is_refused(tmp_path):
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "epochs": 3})
    result = project.run()
    assert result.code == 2 and "task.epochs counts the recorded samples" in result.err


def test_an_approval_from_before_the_count_was_bound_goes_stale_once_and_says_why(tmp_path):
    from evalglass.core.fingerprint import fingerprint_of
    from evalglass.engine.spec.config import load_config

    project = make_project(tmp_path)
    (project.evals / "lane.py").write_text(LANE)
    project.write_rows(ROWS)
    configure(project, 3)
    loaded = load_config(project.evals / "evalglass.yaml")
    definition = loaded.config.gate_definition("accuracy", loaded.definition_files)
    assert definition.pop("samples_per_example") == 3
    gate = {"active": True, "threshold": 0.9, "fingerprint": fingerprint_of(definition)}  # as approved before
    project.write_ledger({"version": 1, "gates": {"accuracy": gate}, "datasets": validated_gold(project.evals)})
    _, found = decided(project)
    assert (found["outcome"], codes(found)) == ("blocked", ["approval_stale"])
    message = found["reasons"][0]["message"]
    assert "approved before EvalGlass bound how many samples each example is reduced from" in message
    assert "(max)" in message and "samples_per_example: 3" in message
