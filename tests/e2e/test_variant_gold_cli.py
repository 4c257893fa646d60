"""Validated gold in a run with variants: the gold fingerprint leaves out every variant's recorded output field
(``core.goldfields``), so re-recording any variant's outputs (what a run with variants is for) keeps an approved
gold fresh, while an edited reference still makes it stale; and an output field that is a gated reference is
refused at its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, make_project
from tests.e2e.test_variants_cli import approve, card_of, gate

ROWS = [
    {"id": f"ex-{i}", "question": f"q{i}", "expected": "yes", "out_a": "yes", "out_b": "yes" if i % 2 else "no"}
    for i in range(20)
]


def config(task: dict[str, Any], variants: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": task,
        "variants": variants,
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
        "gates": {"a-accuracy": {"metric": "exact", "variant": "a", "proposed_threshold": 0.9}},
    }


RECORDED = config({"type": "recorded", "field": "out_a"}, {"a": {}, "b": {"field": "out_b"}})
#: Only the second variant's outputs are in the dataset file: before, the run left out the first variant's field.
SECOND = config(
    {"type": "recorded", "field": "out_a", "path": "outputs.jsonl"},
    {"a": {}, "b": {"field": "out_b", "path": None}},
)


def project_of(tmp_path: Path, written: dict[str, Any], rows: list[dict[str, Any]] = ROWS) -> Project:
    project = make_project(tmp_path)
    project.write_rows(rows)
    outputs = "".join(f'{{"id": "{row["id"]}", "out_a": "{row["out_a"]}"}}\n' for row in rows)
    (project.evals / "outputs.jsonl").write_text(outputs)
    project.write_config(written)
    return project


def edited(rows: list[dict[str, Any]], field: str, value: str) -> list[dict[str, Any]]:
    return [{**row, field: value} if index % 3 == 0 else row for index, row in enumerate(rows)]


@pytest.mark.parametrize("written", [RECORDED, SECOND], ids=["recorded", "second"])
def test_new_outputs_of_any_variant_keep_gold_fresh_and_an_edited_reference_does_not(
    tmp_path: Path, written: dict[str, Any]
) -> None:
    project = project_of(tmp_path, written)
    project.run()
    approve(project, "a-accuracy")
    code, card = card_of(project)
    assert code == 0 and gate(card, "a-accuracy")["outcome"] == "pass", gate(card, "a-accuracy")
    gold = card["dataset"]["gold_fingerprint"]
    explained = project.cli("explain", "a-accuracy").out
    left_out = "'out_a', 'out_b'" if written is RECORDED else "field 'out_b'"
    assert "covers every example's id and fields except the" in explained and left_out in explained, explained

    # Variant b's outputs re-recorded (and a's, where they are in the dataset file): gold unchanged, still green.
    rows = edited(ROWS, "out_b", "changed")
    if written is RECORDED:
        rows = edited(rows, "out_a", "yes")  # a's outputs rewritten as they were: a's field too is left out
    project.write_rows(rows)
    preflight = project.cli("preflight")
    assert preflight.code == 0 and "gold" not in preflight.out.lower().replace("gold_", ""), preflight.out
    code, card = card_of(project)
    assert card["dataset"]["gold_fingerprint"] == gold
    assert code == 0 and gate(card, "a-accuracy")["outcome"] == "pass", gate(card, "a-accuracy")
    verified = project.cli("verify", str(project.last_run()))
    assert verified.code == 0, verified.out + verified.err

    # An edited reference (gold) makes the approved gold stale: blocked, and preflight says so beforehand.
    project.write_rows(edited(rows, "expected", "no"))
    assert "gold_stale" in project.cli("preflight").out
    code, card = card_of(project)
    assert code == 1 and card["dataset"]["gold_fingerprint"] != gold
    blocked = gate(card, "a-accuracy")
    assert blocked["outcome"] == "blocked" and "gold_stale" in str(blocked), blocked

    # So does an edited input.
    project.write_rows(edited(rows, "question", "edited"))
    code, card = card_of(project)
    assert code == 1 and "gold_stale" in str(gate(card, "a-accuracy"))


def test_a_variant_recording_its_outputs_in_a_gated_reference_is_refused_at_its_line(tmp_path: Path) -> None:
    """The gold fingerprint leaves every output field out, so an output field may never be gold a gate decides on
    (an output compared with itself would pass whatever the model answered, in any variant)."""
    written = config({"type": "recorded", "field": "out_a"}, {"a": {}, "b": {"field": "expected"}})
    result = project_of(tmp_path, written).run()
    assert result.code == 2 and "Traceback" not in result.err
    assert "variants.b.field 'expected' overlaps the reference 'expected' of metric 'exact'" in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err


def test_a_recorded_variant_and_a_live_one_are_compared_when_each_takes_one_sample(tmp_path: Path) -> None:
    """A recorded output is one sample per example, as a lane without epochs gives: the two compare (they were
    refused, a recorded variant counted as 0 samples), and gold leaves out the recorded variant's field."""
    written = config(
        {"type": "python", "function": "app.py:good"}, {"a": {}, "b": {"type": "recorded", "field": "out_b"}}
    )
    project = project_of(tmp_path, written)
    (project.evals / "app.py").write_text("def good(example):\n    return example['expected']\n")
    project.run()
    approve(project, "a-accuracy")
    code, card = card_of(project)
    assert code == 0 and gate(card, "a-accuracy")["outcome"] == "pass", card["decision"]
    assert {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]} == {
        "exact@a": 1.0,
        "exact@b": 0.5,
    }
    project.write_rows(edited(ROWS, "out_b", "changed"))
    code, again = card_of(project)
    assert code == 0 and again["dataset"]["gold_fingerprint"] == card["dataset"]["gold_fingerprint"]
    # A recorded list of samples is not one sample: refused beside a lane without epochs, at its line.
    samples = {"a": {}, "b": {"type": "recorded", "field": "out_b", "samples": True}}
    project.write_config(config({"type": "python", "function": "app.py:good"}, samples))
    refused = project.run()
    assert refused.code == 2 and "every variant takes the same samples per example" in refused.err, refused.err
