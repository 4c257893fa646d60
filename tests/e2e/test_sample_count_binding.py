"""How many samples each example is reduced from is part of what a gate's approval binds when the reducer depends on
it (max, min, majority, at_least_k): under `max` a pull request that raised a lane's `epochs` raised the number and
turned a failing gate green with the ledger untouched. Through the real CLI, on real files, with a python lane that
answers right about half the time (seeded by example and sample, so every run is the same)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def approved_before_the_rule(tmp_path: Path, threshold: float) -> Project:
    """A gate on `max` over 3 epochs whose ledger approves the fingerprint it had before the count was bound (its
    definition without `samples_per_example`), as a host approved it then."""
    from evalglass.core.fingerprint import fingerprint_of
    from evalglass.engine.spec.config import load_config

    project = make_project(tmp_path)
    (project.evals / "lane.py").write_text(LANE)
    project.write_rows(ROWS)
    configure(project, 3)
    loaded = load_config(project.evals / "evalglass.yaml")
    definition = loaded.config.gate_definition("accuracy", loaded.definition_files)
    assert definition.pop("samples_per_example") == 3
    gate = {"active": True, "threshold": threshold, "fingerprint": fingerprint_of(definition)}
    project.write_ledger({"version": 1, "gates": {"accuracy": gate}, "datasets": validated_gold(project.evals)})
    return project


def test_an_approval_from_before_the_count_was_bound_goes_stale_once_and_says_why(tmp_path):
    project = approved_before_the_rule(tmp_path, threshold=0.9)
    _, found = decided(project)
    assert (found["outcome"], codes(found)) == ("blocked", ["approval_stale"])
    message = found["reasons"][0]["message"]
    assert "approved before EvalGlass bound how many samples each example is reduced from" in message
    assert "(max)" in message and "samples_per_example: 3" in message


def test_a_run_green_before_the_count_was_bound_is_not_shown_green(tmp_path):
    """A run recorded before the rule (no `sample_counts` marker, its gate fingerprint without the count) passed on
    an approval that never covered its epochs: verify re-derives it as recorded (it adds up) and decides it again
    under the current rules, which read the approval as stale; every reader refuses it. A run without such a gate
    writes no marker."""
    from tests.e2e.test_forged_binding_facts import forge_green

    project = approved_before_the_rule(tmp_path, threshold=0.5)
    old = yaml.safe_load((project.evals / "authority.yaml").read_text())["gates"]["accuracy"]["fingerprint"]
    _, found = decided(project)
    assert codes(found) == ["approval_stale"]
    folder = project.last_run()
    assert json.loads((folder / "runrecord.json").read_text())["sample_counts"] == "bound"
    assert project.cli("verify", str(folder)).code == 0

    def before_the_rule(record: dict[str, Any]) -> None:
        del record["sample_counts"]
        record["gate_fingerprints"]["accuracy"] = old

    forge_green(folder, "accuracy", before_the_rule, fingerprint=old)
    verified = project.cli("verify", str(folder))
    assert verified.code == 1, verified.out
    assert "runrecord.sample_counts: recorded 'the run record says it was decided before a gate bound" in verified.out
    assert "under the current rules gate 'accuracy' is blocked: approval_stale" in verified.out
    assert "gate_fingerprints" not in verified.out  # re-derived as the record's rules took it: it adds up
    shown = project.cli("view", str(folder))
    assert shown.code == 2 and "approval_stale" in shown.err, shown.err
    # Under mean nothing is bound, and the record keeps its bytes: no marker.
    configure(project, 3, reducer="mean")
    project.run()
    assert "sample_counts" not in json.loads((project.last_run() / "runrecord.json").read_text())
