"""Recorded outputs in their own file, joined by id, and gold that new outputs never make stale (issue 13)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from tests.e2e.project import DEFAULT_ROWS, Project, base_config, make_project
from tests.e2e.test_verdicts import approve

GOLD = [{"id": row["id"], "expected": row["expected"]} for row in DEFAULT_ROWS]
OUTPUTS = [{"id": row["id"], "output": row["output"]} for row in DEFAULT_ROWS]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def apart(tmp_path: Path, outputs: list[dict[str, Any]] | None = None, **task: Any) -> Project:
    tmp_path.mkdir(parents=True, exist_ok=True)
    project = make_project(tmp_path, task={"type": "recorded", "path": "outputs.jsonl", "field": "output", **task})
    project.write_rows(GOLD)
    write_jsonl(project.evals / "outputs.jsonl", outputs if outputs is not None else OUTPUTS)
    return project


def scores(project: Project, folder: str = "out") -> dict[str, Any]:
    """Each example's exact-match entry from scores.jsonl (blocks of parallel lists)."""
    found: dict[str, Any] = {}
    for line in (project.root / folder / "scores.jsonl").read_bytes().splitlines():
        block = orjson.loads(line)
        ids = block.get("ids") or block.get("id")
        found.update(zip(ids, block["scores"]["exact"], strict=True))
    return found


def gate_reasons(card: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in card["decision"]["gates"][0]["reasons"]]


def test_outputs_in_their_own_file_are_joined_by_id_and_gate(tmp_path):
    project = apart(tmp_path)
    project.write_ledger(approve(project))
    result = project.run("--format", "json")
    card = result.json()
    assert result.code == 0 and card["decision"]["verdict"] == "pass"
    assert card["metrics"][0]["estimate"]["point"] == 0.75
    assert card["dataset"]["outputs"] == {
        "path": "outputs.jsonl",
        "outputs": 8,
        "unmatched": 0,
        "unmatched_ids": [],
    }


def test_new_outputs_never_make_gold_stale_but_an_edited_reference_does(tmp_path):
    project = apart(tmp_path)
    project.write_ledger(approve(project))
    # A new batch of outputs: every answer changes. Gold stays valid; the gate now fails on the number alone.
    write_jsonl(project.evals / "outputs.jsonl", [{**row, "output": "no"} for row in OUTPUTS])
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "fail" and gate_reasons(card) == ["below_threshold"]
    # An edited reference answer makes the validated gold stale.
    write_jsonl(project.evals / "outputs.jsonl", OUTPUTS)
    project.write_rows([{**GOLD[0], "expected": "maybe"}, *GOLD[1:]])
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "blocked" and gate_reasons(card) == ["gold_stale"]


def test_outputs_in_the_dataset_file_no_longer_make_gold_stale(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project))
    project.write_rows([{**row, "output": "no"} for row in DEFAULT_ROWS])  # outputs only
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "fail" and gate_reasons(card) == ["below_threshold"]
    # An added field (an input) is covered, like a reference.
    project.write_rows([{**row, "question": "why?"} for row in DEFAULT_ROWS])
    card = project.run("--format", "json").json()
    assert gate_reasons(card) == ["gold_stale"]


def test_pointing_the_output_field_elsewhere_does_not_hide_gold_edits(tmp_path):
    """A PR that points task.field at another field would leave that field out of gold. Onto a gated reference it
    is refused outright; onto any other field the gate's approved definition (which covers task.field) is stale."""
    project = make_project(tmp_path)
    project.write_rows([{**row, "question": f"q{i}"} for i, row in enumerate(DEFAULT_ROWS)])
    project.write_ledger(approve(project))
    project.write_config(base_config(task={"type": "recorded", "field": "expected"}))
    refused = project.run("--format", "json")
    assert refused.code == 2 and "task.field 'expected' overlaps the reference 'expected'" in refused.err
    project.write_config(base_config(task={"type": "recorded", "field": "question"}))
    project.write_rows([{**row, "question": "edited"} for row in DEFAULT_ROWS])
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "blocked" and "approval_stale" in gate_reasons(card)


def test_moving_outputs_out_of_the_dataset_keeps_the_gold_fingerprint(tmp_path):
    project = make_project(tmp_path)
    project.run()
    before = project.dataset_fingerprint()
    project.write_config(base_config(task={"type": "recorded", "path": "outputs.jsonl", "field": "output"}))
    project.write_rows(GOLD)
    write_jsonl(project.evals / "outputs.jsonl", OUTPUTS)
    assert project.run().code == 0
    assert project.dataset_fingerprint() == before


def test_outputs_in_another_order_join_the_same(tmp_path):
    in_order = apart(tmp_path / "a")
    in_order.run("--out", "out")
    shuffled = apart(tmp_path / "b", outputs=[*reversed(OUTPUTS[4:]), *OUTPUTS[:4]])
    shuffled.run("--out", "out")
    assert scores(shuffled) == scores(in_order)
    assert len(scores(in_order)) == 8


def test_an_example_without_an_output_is_blocked_output_missing(tmp_path):
    project = apart(tmp_path, outputs=[row for row in OUTPUTS if row["id"] != "ex-3"])
    project.run("--out", "out")
    entry = scores(project)["ex-3"]
    assert entry["status"] == "blocked" and entry["diagnostics"][0]["code"] == "output_missing"


def test_outputs_for_unknown_ids_are_counted_and_shown(tmp_path):
    project = apart(tmp_path, outputs=[*OUTPUTS, {"id": "ghost-1", "output": "yes"}, {"id": "ghost-2", "output": "x"}])
    result = project.run("--out", "out")
    assert result.code == 0
    assert "2 recorded output(s) in outputs.jsonl name an id not in the dataset" in result.out
    assert "ghost-1" in result.out
    card = json.loads((project.root / "out" / "scorecard.json").read_text())
    assert card["dataset"]["outputs"]["unmatched"] == 2
    assert "ghost-1" in (project.root / "out" / "report.md").read_text()


def test_strict_refuses_outputs_for_unknown_ids(tmp_path):
    project = apart(tmp_path, outputs=[*OUTPUTS, {"id": "ghost-1", "output": "yes"}], strict=True)
    result = project.run()
    assert result.code == 2
    assert "1 recorded output(s) name an id that is not in the dataset" in result.err and "'ghost-1'" in result.err
    assert "Traceback" not in result.err


def test_an_output_recorded_twice_is_refused_with_its_line(tmp_path):
    project = apart(tmp_path, outputs=[*OUTPUTS, OUTPUTS[2]])
    result = project.run()
    assert result.code == 2 and "outputs.jsonl:9" in result.err and "'ex-3' recorded twice" in result.err


def test_a_malformed_outputs_line_is_refused_with_its_line(tmp_path):
    project = apart(tmp_path)
    path = project.evals / "outputs.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    result = project.run()
    assert result.code == 2 and "outputs.jsonl:9" in result.err and "not valid JSON" in result.err


def test_a_missing_outputs_file_is_one_line(tmp_path):
    project = apart(tmp_path)
    (project.evals / "outputs.jsonl").unlink()
    result = project.run()
    assert result.code == 2 and "recorded outputs file not found" in result.err and "task.path" in result.err


def test_explain_says_what_gold_covers(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project))
    project.run()
    out = project.cli("explain", "accuracy").out
    assert "Gold: " in out and "covers every example's id and fields except the recorded output field 'output'" in out
    separate = apart(tmp_path / "apart")
    separate.run()
    assert "(the outputs are not in the dataset file)" in separate.cli("explain", "accuracy").out
