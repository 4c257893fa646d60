"""task.parse: json — JSON-text outputs reached by field (issue 13); text that does not parse is a wrong answer,
measured as the metric's worst value with its diagnostic kept and counted, or left out with on_invalid_output:
exclude (issue 27)."""

from __future__ import annotations

import json

from tests.e2e.project import base_config, make_project

ROWS = [
    {"id": "a", "intent": "refund", "output": json.dumps({"intent": "refund"})},
    {"id": "b", "intent": "cancel", "output": json.dumps({"intent": "refund"})},
    {"id": "c", "intent": "refund", "output": "Sure! {not json"},
]
METRICS = {
    "intent": {"type": "exact_match", "field": "intent", "reference": "intent"},
    "is_json": {"type": "json_valid"},
}


def scores_by_id(folder):
    found = {}
    for line in (folder / "scores.jsonl").read_text().splitlines():
        block = json.loads(line)
        for index, example_id in enumerate(block["ids"]):
            found[example_id] = {name: entries[index] for name, entries in block["scores"].items()}
    return found


def test_without_parse_a_field_of_json_text_is_not_reachable(tmp_path):
    project = make_project(tmp_path, metrics=METRICS, gates={})
    project.write_rows(ROWS)
    project.run("--out", "out")
    entry = scores_by_id(tmp_path / "out")["a"]["intent"]
    # Text has no field: the answer lacks what the metric reads, and the diagnostic says how to parse it.
    assert entry["status"] == "scored" and entry["value"] == 0.0
    assert entry["diagnostics"][0]["code"] == "output_field_missing"
    assert "task.parse: json" in entry["diagnostics"][0]["message"]


def test_parse_json_reaches_fields_and_refuses_text_that_is_not_json(tmp_path):
    project = make_project(tmp_path, metrics=METRICS, gates={}, task={"type": "recorded", "parse": "json"})
    project.write_rows(ROWS)
    card = project.run("--out", "out", "--format", "json").json()
    scores = scores_by_id(tmp_path / "out")
    assert scores["a"]["intent"] == 1.0 and scores["b"]["intent"] == 0.0
    not_json = scores["c"]["intent"]
    # A wrong answer is a measurement: the metric's worst value, with the diagnostic kept.
    assert not_json["status"] == "scored" and not_json["validity"] == "valid" and not_json["value"] == 0.0
    assert not_json["diagnostics"][0]["code"] == "output_not_json"
    assert "Sure! {not json" in not_json["diagnostics"][0]["detail"]
    # json_valid's job is to judge it: measured, 0.0, with the parser's note.
    assert scores["c"]["is_json"]["value"] == 0.0 and scores["a"]["is_json"] == 1.0
    assert scores["c"]["is_json"]["diagnostics"][0]["code"] == "invalid_json"
    intent = next(metric for metric in card["metrics"] if metric["name"] == "intent")
    assert intent["population"]["included"] == 3 and intent["population"]["excluded_total"] == 0
    assert intent["estimate"]["point"] == 1 / 3
    (counted,) = intent["population"]["top_diagnostics"]
    assert (counted["code"], counted["count"], counted["included"]) == ("output_not_json", 1, 1)


def test_on_invalid_output_exclude_leaves_the_wrong_answer_out(tmp_path):
    metrics = {
        "intent": {**METRICS["intent"], "on_invalid_output": "exclude"},
        "is_json": {"type": "json_valid", "on_invalid_output": "exclude"},
    }
    project = make_project(tmp_path, metrics=metrics, gates={}, task={"type": "recorded", "parse": "json"})
    project.write_rows(ROWS)
    card = project.run("--out", "out", "--format", "json").json()
    scores = scores_by_id(tmp_path / "out")
    assert scores["c"]["intent"]["status"] == "error"
    assert scores["c"]["intent"]["diagnostics"][0]["code"] == "output_not_json"
    # Whether text is JSON is what json_valid measures: the option does not make it look away.
    assert scores["c"]["is_json"]["value"] == 0.0
    intent = next(metric for metric in card["metrics"] if metric["name"] == "intent")
    assert intent["population"]["excluded_by_status"] == {"error": 1}
    assert intent["population"]["top_diagnostics"][0]["included"] == 0


def test_parse_json_on_a_live_python_lane(tmp_path):
    project = make_project(
        tmp_path,
        metrics=METRICS,
        gates={},
        task={"type": "python", "function": "lane.py:answer", "parse": "json"},
    )
    project.write_rows([{"id": row["id"], "intent": row["intent"]} for row in ROWS])
    (project.evals / "lane.py").write_text(
        "import json\n"
        "def answer(fields):\n"
        "    return 'oops' if fields['id'] == 'c' else json.dumps({'intent': 'refund'})\n"
    )
    result = project.run("--out", "out")
    assert result.code == 0, result.err
    scores = scores_by_id(tmp_path / "out")
    assert scores["a"]["intent"] == 1.0 and scores["b"]["intent"] == 0.0
    assert scores["c"]["intent"]["diagnostics"][0]["code"] == "output_not_json"
    assert scores["c"]["intent"]["value"] == 0.0
    assert scores["c"]["is_json"]["value"] == 0.0
    recorded = [json.loads(line) for line in (tmp_path / "out" / "outputs.jsonl").read_text().splitlines()]
    assert recorded[2]["samples"][0]["output"] == "oops"  # outputs.jsonl keeps the text as produced


def test_parse_json_is_part_of_what_an_approval_covers(tmp_path):
    project = make_project(tmp_path)
    project.run()
    before = project.gate_fingerprint("accuracy")
    project.write_config(base_config(task={"type": "recorded", "parse": "json"}))
    project.run()
    assert project.gate_fingerprint("accuracy") != before
