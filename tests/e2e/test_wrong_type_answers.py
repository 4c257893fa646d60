"""An answer of the wrong type is a measurement of the system, not a metric error, through the real CLI.

A scoring bot answers a probability per example. One answer among 40 is the text ``"0.9"`` where the contract says a
number: ``numeric_bounds`` used to make it an ``error`` ``wrong_type`` that blocked the gate for good, on a mistake
only the system could mend. It now scores the worst value with the note, so the gate decides by the data. A mis-set
``field`` (absent from every answer) must still never pass.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.project import Project, make_project

EXAMPLES = 40


def probability_project(tmp_path, field: str = "p", threshold: float = 0.9) -> Project:
    project = make_project(
        tmp_path,
        task={"type": "recorded", "parse": "json"},
        metrics={"in_range": {"type": "numeric_bounds", "field": field, "min": 0, "max": 1}},
        gates={"probability_in_range": {"metric": "in_range", "proposed_threshold": threshold}},
    )
    rows: list[dict[str, Any]] = [{"id": f"e{index:02d}", "output": f'{{"p": {index / 100}}}'} for index in range(39)]
    rows.append({"id": "e39", "output": '{"p": "0.9"}'})
    project.write_rows(rows)
    return project


def approve(project: Project, threshold: float) -> None:
    project.run()
    project.write_ledger(
        {
            "version": 1,
            "gates": {
                "probability_in_range": {
                    "active": True,
                    "threshold": threshold,
                    "fingerprint": project.gate_fingerprint("probability_in_range"),
                }
            },
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
        }
    )


@pytest.mark.parametrize(("threshold", "outcome", "code"), [(0.9, "pass", 0), (0.99, "fail", 1)])
def test_a_number_written_as_text_is_a_wrong_answer_and_the_gate_decides(tmp_path, threshold, outcome, code):
    project = probability_project(tmp_path, threshold=threshold)
    approve(project, threshold)
    result = project.run("--out", "out", "--format", "json")
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert gate["outcome"] == outcome, gate
    assert result.code == code
    (metric,) = card["metrics"]
    assert metric["estimate"]["point"] == (EXAMPLES - 1) / EXAMPLES  # the text answer counts, as 0.0
    population = metric["population"]
    assert population["included"] == EXAMPLES and population["excluded_total"] == 0
    counted = {item["code"]: item for item in population["top_diagnostics"]}["wrong_type"]
    assert (counted["count"], counted["included"]) == (1, 1)
    assert "×1 (in value)" in project.cli("view", "out").out


def test_a_field_absent_from_every_answer_never_passes(tmp_path):
    """The misconfiguration side: `field: prob` where the answers hold `p` is no wrong type but a missing field,
    scored worst on every example, so the gate fails (it can never pass silently)."""
    project = probability_project(tmp_path, field="prob", threshold=0.5)
    approve(project, 0.5)
    result = project.run("--format", "json")
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert gate["outcome"] == "fail" and result.code == 1
    (metric,) = card["metrics"]
    assert metric["estimate"]["point"] == 0.0
    codes = {item["code"] for item in metric["population"]["top_diagnostics"]}
    assert codes == {"output_field_missing"}


def json_project(tmp_path, threshold: float) -> Project:
    """A bot asked for JSON answers `42`, `true`, `null`, an object and, once, prose. Under `parse: json` the first
    three parse to a bare number, boolean and null: valid JSON text, which json_valid@2 made `error` `wrong_type`
    (the gate blocked, exit 1, on a system that answered what was asked)."""
    project = make_project(
        tmp_path,
        task={"type": "recorded", "parse": "json"},
        metrics={"emits_json": {"type": "json_valid"}},
        gates={"valid_json": {"metric": "emits_json", "proposed_threshold": threshold}},
    )
    answers = ["42", "true", "null", '{"answer": 1}', "Sure! Here it is: {answer: 1}"]
    project.write_rows([{"id": f"e{index}", "output": text} for index, text in enumerate(answers)])
    from tests.e2e.project import approve_as_is

    approve_as_is(project, threshold, ["valid_json"])
    return project


@pytest.mark.parametrize(("threshold", "outcome", "code"), [(0.8, "pass", 0), (0.9, "fail", 1)])
def test_a_bare_json_scalar_is_valid_json_and_prose_is_not(tmp_path, threshold, outcome, code):
    project = json_project(tmp_path, threshold)
    result = project.run("--format", "json")
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert (gate["outcome"], result.code) == (outcome, code), (gate, result.err)
    (metric,) = card["metrics"]
    assert metric["estimate"]["point"] == 0.8  # four valid documents; the prose scores 0.0
    assert metric["population"]["excluded_total"] == 0


LANE = """
def answer(example):
    if example["kind"] == "set":
        return {"b", "a"}
    if example["kind"] == "nan":
        return float("nan")
    return example["expected"]
"""


@pytest.mark.parametrize(("threshold", "outcome", "code"), [(0.8, "pass", 0), (0.9, "fail", 1)])
def test_a_python_lanes_answer_json_cannot_hold_is_its_wrong_answer(tmp_path, threshold, outcome, code):
    """A python lane returning a set (or NaN, which orjson alone wrote as null) for 2 of 10 examples: on main the set
    was `task_output_unserialisable`, an error blocking the gate (exit 1 however good the other eight). It is the
    system's answer, not JSON: each metric's worst value (`output_not_json`), and the gate decides."""
    project = make_project(
        tmp_path,
        task={"type": "python", "function": "app.py:answer"},
        metrics={"exact": {"type": "exact_match", "reference": "expected"}, "emits_json": {"type": "json_valid"}},
        gates={"accuracy": {"metric": "exact", "proposed_threshold": threshold}},
    )
    (project.evals / "app.py").write_text(LANE)
    kinds = ["set", "nan"] + ["fine"] * 8
    project.write_rows([{"id": f"e{i}", "kind": kind, "expected": i} for i, kind in enumerate(kinds)])
    from tests.e2e.project import approve_as_is

    approve_as_is(project, threshold, ["accuracy"])
    result = project.run("--out", "out", "--format", "json")
    card = result.json()
    (gate,) = card["decision"]["gates"]
    assert (gate["outcome"], result.code) == (outcome, code), (gate, result.err)
    points = {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]}
    assert points == {"exact": 0.8, "emits_json": 0.8}
    rows = [line for line in (tmp_path / "out" / "outputs.jsonl").read_text().splitlines()]
    assert '"output":"{\'a\', \'b\'}","not_json"' in rows[0] and '"output":"nan","not_json"' in rows[1]
    assert project.cli("verify", "out").code == 0


def test_a_recorded_trajectory_cut_off_at_its_token_limit_is_noted_as_a_live_one_is(tmp_path):
    """A recorded agent trajectory (or trace) whose final answer stopped at the token limit (`finish: length`,
    `finish_reasons: ["max_tokens"]`) was scored with no trace of it; a live chat lane's is noted `output_truncated`.
    The value is unchanged (a measurement); an answer that merely holds a `finish` key is not read as one."""
    project = make_project(
        tmp_path,
        task={"type": "recorded", "field": "output"},
        metrics={"echoed": {"type": "contains", "field": "text", "reference": "expected"}},
        gates={},
    )

    def trajectory(text: str, **finish: Any) -> dict[str, Any]:
        return {"messages": [{"role": "assistant", "content": text}], "text": text, **finish}

    project.write_rows(
        [
            {"id": "whole", "expected": "yes", "output": trajectory("yes", finish="stop")},
            {"id": "cut", "expected": "everything", "output": trajectory("every", finish="length")},
            {"id": "trace", "expected": "all", "output": trajectory("al", finish_reasons=["max_tokens"])},
            {"id": "own", "expected": "length", "output": {"text": "length", "finish": "length"}},
        ]
    )
    result = project.run("--out", "out")
    assert result.code == 0, result.err
    from evalglass.engine.runs.artifacts import score_rows

    rows = {row["id"]: row["scores"]["echoed"] for row in score_rows(tmp_path / "out" / "scores.jsonl")}
    for cut, reason in (("cut", "length"), ("trace", "max_tokens")):
        assert (rows[cut]["status"], rows[cut]["value"]) == ("scored", 0.0), rows[cut]
        assert [d["code"] for d in rows[cut]["diagnostics"]] == ["output_truncated"]
        assert reason in rows[cut]["diagnostics"][0]["message"]
    assert rows["whole"] == 1.0 and rows["own"] == 1.0
    assert project.cli("verify", "out").code == 0
