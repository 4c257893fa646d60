"""Comparisons decide "the same gold" by the gold fingerprint (issue 13 with issue 14): runs whose recorded outputs
differ but whose gold does not are comparable, with the outputs in the dataset file or in their own; an edited
reference is not; a run that took no gold fingerprint is compared by its dataset file only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.project import base_config, make_project

#: A gate on the reference metric, left informational: declaring it is what makes a run take the gold fingerprint.
REFERENCE_GATE = {"accuracy": {"metric": "exact", "proposed_threshold": 0.5}}


def rows(outputs: list[str], expected: str = "a") -> list[dict[str, Any]]:
    return [{"id": f"q{i:02d}", "expected": expected, "output": output} for i, output in enumerate(outputs)]


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))


BASE = ["a"] * 8 + ["b"] * 2
CAND = ["a"] * 6 + ["b"] * 4


def gold_codes(payload: dict[str, Any]) -> list[str]:
    return [item["message"] for item in payload["incomparable"] if item["code"] == "gold"]


def test_runs_whose_recorded_outputs_differ_but_gold_does_not_are_comparable(tmp_path):
    project = make_project(tmp_path, gates=REFERENCE_GATE)
    project.write_rows(rows(BASE))
    assert project.run("--out", "runs/base").code == 0
    project.write_rows(rows(CAND))  # new outputs in the same dataset file: its bytes changed, its gold did not
    assert project.run("--out", "runs/cand").code == 0
    result = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    payload = result.json()
    assert payload["incomparable"] == []
    assert payload["base"]["dataset_fingerprint"] != payload["candidate"]["dataset_fingerprint"]
    assert payload["base"]["gold_fingerprint"] == payload["candidate"]["gold_fingerprint"] is not None
    (exact,) = payload["metrics"]
    assert exact["flips"]["regressed"] == ["q06", "q07"]
    assert "not comparable" not in project.cli("compare", "runs/base", "runs/cand").out

    # An edited reference is different gold, and says so with both gold fingerprints.
    project.write_rows(rows(CAND, expected="A"))
    assert project.run("--out", "runs/edited").code == 0
    edited = project.cli("compare", "runs/base", "runs/edited", "--format", "json").json()
    (message,) = gold_codes(edited)
    assert message.startswith("the dataset's gold differs") and edited["candidate"]["gold_fingerprint"] in message
    assert "not comparable (gold" in project.cli("compare", "runs/base", "runs/edited").out


def test_outputs_in_their_own_file_compare_on_the_same_gold_file(tmp_path):
    project = make_project(tmp_path, gates={}, task={"type": "recorded", "path": "outputs.jsonl", "field": "output"})
    project.write_rows([{"id": row["id"], "expected": "a"} for row in rows(BASE)])
    for name, outputs in (("base", BASE), ("cand", CAND)):
        write_jsonl(project.evals / "outputs.jsonl", [{"id": r["id"], "output": r["output"]} for r in rows(outputs)])
        assert project.run("--out", f"runs/{name}").code == 0
    payload = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    assert payload["incomparable"] == [] and payload["paired"] == 10


def test_without_a_gold_fingerprint_only_the_same_file_is_the_same_gold(tmp_path):
    # No gate: neither run takes the gold fingerprint, so nothing shows that the changed file kept its gold.
    project = make_project(tmp_path, gates={})
    project.write_rows(rows(BASE))
    assert project.run("--out", "runs/base").code == 0
    project.write_rows(rows(CAND))
    assert project.run("--out", "runs/cand").code == 0
    payload = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    assert payload["base"]["gold_fingerprint"] is None
    (message,) = gold_codes(payload)
    assert "no gold fingerprint shows the gold is the same (none recorded by: baseline and candidate;" in message


def test_a_comparative_gate_passes_on_new_outputs_against_the_same_gold(tmp_path):
    """The daily loop with a baseline: main's run is approved, the pull request brings new outputs in the same
    dataset file (so the file's bytes differ), and the comparative gate decides on the numbers."""
    project = make_project(tmp_path, gates={})
    gates = {"no-regression": {"metric": "exact", "compare_to": "main", "direction": "higher_is_better"}}
    project.write_config(base_config(gates=gates))
    project.write_rows(rows(["a"] * 40))
    base = project.run("--out", "runs/base", "--format", "json")
    assert base.code == 0, base.err
    gold = base.json()["dataset"]["gold_fingerprint"]
    assert gold is not None  # a comparative gate takes it
    baseline = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    gate = next(g for g in base.json()["decision"]["gates"] if g["name"] == "no-regression")
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": gold}},
            "baselines": {"main": {"run": "../runs/base", "fingerprint": baseline}},
            "gates": {"no-regression": {"active": True, "fingerprint": gate["fingerprint"], "margin": 0.05}},
        }
    )
    project.write_rows(rows(["a"] * 39 + ["b"]))
    result = project.run("--out", "runs/cand", "--format", "json")
    card = result.json()
    gate = next(g for g in card["decision"]["gates"] if g["name"] == "no-regression")
    assert result.code == 0 and gate["outcome"] == "pass", gate["reasons"]
    assert card["dataset"]["fingerprint"] != base.json()["dataset"]["fingerprint"]
    assert project.cli("verify", "runs/cand").code == 0
    # The same pull request editing a reference answer is not comparable (and its gold is stale).
    project.write_rows([{**rows(["a"] * 40)[0], "expected": "z"}, *rows(["a"] * 40)[1:]])
    edited = project.run("--out", "runs/edited", "--format", "json").json()
    gate = next(g for g in edited["decision"]["gates"] if g["name"] == "no-regression")
    assert gate["outcome"] == "blocked"
    assert any(r["code"] == "not_comparable" and "gold differs" in r["message"] for r in gate["reasons"])
