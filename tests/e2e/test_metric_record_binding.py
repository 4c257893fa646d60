"""What a `python` metric may read of the record is what an approval binds (red team: a pull request edits what is
not bound to turn a gate green).

The gold fingerprint leaves out every recorded output field (each variant's answers are outputs, re-recorded
freely), so a metric that could read another variant's recorded answer would decide on a value a pull request edits
with gold and every approval unchanged. A `python` metric is therefore handed the record as gold sees it, plus its
own recorded output field (the answer it measures): never another variant's.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from tests.e2e.project import Project, make_project
from tests.e2e.test_variants_cli import approve, card_of, gate

#: The host's metric: does variant a answer as the incumbent b did? (It reads b's answer from the record.) And a
#: metric that reads a gold field beside its own answer, which must keep working.
METRICS = textwrap.dedent(
    """
    def agrees(output, record):
        return 1.0 if output == record.get("out_b") else 0.0

    def own(output, record, example):
        assert record["out_a"] == output == example.record["out_a"]
        return 1.0 if record["meta"]["ok"] else 0.0
    """
)
ROWS = [
    {"id": f"ex-{i}", "question": f"q{i}", "meta": {"ok": True}, "out_a": "yes", "out_b": "no" if i % 2 else "yes"}
    for i in range(20)
]


def config(gates: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "recorded", "field": "out_a"},
        "variants": {"a": {}, "b": {"field": "out_b"}},
        "metrics": {
            "agree": {"type": "python", "function": "metrics.py:agrees"},
            "own": {"type": "python", "function": "metrics.py:own"},
        },
        "gates": gates,
    }


def project_of(tmp_path: Path, gates: dict[str, Any]) -> Project:
    project = make_project(tmp_path)
    (project.evals / "metrics.py").write_text(METRICS)
    project.write_rows(ROWS)
    project.write_config(config(gates))
    return project


def approved(tmp_path: Path, name: str, metric: str) -> tuple[Project, int, dict[str, Any]]:
    """A project whose gate ``name`` on variant a's ``metric`` the host approved, and its first run after."""
    project = project_of(tmp_path, {name: {"metric": metric, "variant": "a", "proposed_threshold": 0.9}})
    project.run()
    approve(project, name)
    code, card = card_of(project)
    return project, code, card


def points_of(card: dict[str, Any]) -> dict[str, float | None]:
    return {metric["name"]: (metric["estimate"] or {}).get("point") for metric in card["metrics"]}


def test_another_variants_recorded_answer_edited_in_a_pull_request_cannot_turn_a_gate_green(tmp_path: Path) -> None:
    project, code, card = approved(tmp_path, "a-agrees", "agree")
    assert code == 1 and gate(card, "a-agrees")["outcome"] == "fail", gate(card, "a-agrees")
    gold = card["dataset"]["gold_fingerprint"]

    # The pull request: b's recorded answers rewritten to a's. Gold leaves b's field out, so gold is unchanged ...
    project.write_rows([{**row, "out_b": row["out_a"]} for row in ROWS])
    code, card = card_of(project)
    assert card["dataset"]["gold_fingerprint"] == gold
    # ... and the metric never saw b's answer: it measures a alone, so nothing the edit touched can turn it green.
    assert code == 1 and gate(card, "a-agrees")["outcome"] != "pass", gate(card, "a-agrees")
    points = points_of(card)
    # b's own answer is in its record (the answer it measures), never a's in b's nor b's in a's.
    assert points["agree@a"] == 0.0 and points["agree@b"] == 1.0, points


def test_a_python_metric_still_reads_gold_and_its_own_answer_and_an_edited_gold_field_is_stale(tmp_path: Path) -> None:
    project, code, card = approved(tmp_path, "a-own", "own")
    assert code == 0 and gate(card, "a-own")["outcome"] == "pass", gate(card, "a-own")
    points = points_of(card)
    assert points["own@a"] == 1.0, points
    # Variant b's metric asserts a's answer is its own: b is never shown a's answer, so it errs (never a silent 0).
    assert points["own@b"] is None, points

    # A field only a python metric reads (meta) is gold: editing it is gold_stale, never a quiet change of score.
    project.write_rows([{**row, "meta": {"ok": False}} for row in ROWS])
    code, card = card_of(project)
    blocked = gate(card, "a-own")
    assert code == 1 and blocked["outcome"] == "blocked" and "gold_stale" in str(blocked), blocked
