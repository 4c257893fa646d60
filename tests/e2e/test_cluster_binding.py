"""Which field groups the examples (`dataset.cluster_field`) is part of what a `lower_bound` gate's approval binds:
a cluster-robust interval's width depends on it, so pointing it at a field that makes each example its own group
used to turn an undecided gate green with the ledger untouched. Through the real CLI, on real files."""

from __future__ import annotations

from typing import Any

from tests.e2e.project import Project, base_config, make_project, validated_gold

# Six documents of five examples; every answer of the first document is wrong: 25/30 = 0.833.
ROWS = [
    {"id": f"d{doc}-{i}", "doc": f"doc{doc}", "expected": "yes", "output": "yes" if doc else "no"}
    for doc in range(6)
    for i in range(5)
]


def configure(project: Project, cluster_field: str) -> None:
    project.write_config(
        base_config(
            dataset={"name": "suite", "path": "data.jsonl", "cluster_field": cluster_field},
            gates={"accuracy": {"metric": "exact", "rule": "lower_bound", "proposed_threshold": 0.7}},
        )
    )


def decided(project: Project) -> dict[str, Any]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    (gate,) = result.json()["decision"]["gates"]
    return gate


def test_regrouping_the_examples_never_turns_a_lower_bound_gate_green(tmp_path):
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    configure(project, "doc")
    assert project.run().code == 0  # informational: nothing approved yet
    gate = {"active": True, "threshold": 0.7, "fingerprint": project.gate_fingerprint("accuracy")}
    project.write_ledger({"version": 1, "gates": {"accuracy": gate}, "datasets": validated_gold(project.evals)})
    found = decided(project)
    assert (found["outcome"], found["bound_method"]) == ("blocked", "cluster_t")
    assert [reason["code"] for reason in found["reasons"]] == ["undecided"]
    # Each example its own group: the same method, a narrower interval, and the approval no longer covers it.
    configure(project, "id")
    found = decided(project)
    assert (found["outcome"], [reason["code"] for reason in found["reasons"]]) == ("blocked", ["approval_stale"])
    explained = project.cli("explain", "accuracy")
    assert "clusters" in explained.out
