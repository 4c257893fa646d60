"""task.parse: json — JSON-text outputs reached by field; text that does not parse is never a silent 0 (issue 13)."""

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
    assert isinstance(entry, dict) and entry["status"] != "scored"


def test_parse_json_reaches_fields_and_refuses_text_that_is_not_json(tmp_path):
    project = make_project(tmp_path, metrics=METRICS, gates={}, task={"type": "recorded", "parse": "json"})
    project.write_rows(ROWS)
    card = project.run("--out", "out", "--format", "json").json()
    scores = scores_by_id(tmp_path / "out")
    assert scores["a"]["intent"] == 1.0 and scores["b"]["intent"] == 0.0
    not_json = scores["c"]["intent"]
    assert not_json["status"] == "error" and not_json["diagnostics"][0]["code"] == "output_not_json"
    # json_valid's job is to judge it: measured, 0.0.
    assert scores["c"]["is_json"]["value"] == 0.0 and scores["a"]["is_json"] == 1.0
    intent = next(metric for metric in card["metrics"] if metric["name"] == "intent")
    assert intent["population"]["excluded_by_status"] == {"error": 1}


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
