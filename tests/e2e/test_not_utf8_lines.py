"""A JSON line that is not UTF-8 says so, and at which byte of which line, in every JSON-lines reader that has the
line's bytes (dataset, recorded outputs file), instead of orjson's "surrogates not allowed ... column 1"."""

from __future__ import annotations

import json

from tests.e2e.project import DEFAULT_ROWS, make_project
from tests.e2e.test_hostile_inputs import one_line_error

BAD = b'{"id": "ex-9", "expected": "yes", "output": "y\xff\xfes"}'


def test_a_dataset_line_that_is_not_utf8_is_one_error_naming_its_byte(tmp_path):
    project = make_project(tmp_path)
    lines = [json.dumps(row).encode() for row in DEFAULT_ROWS]
    (project.evals / "data.jsonl").write_bytes(b"\n".join([*lines, BAD]) + b"\n")
    result = project.run("--format", "json")
    assert result.code == 0, result.err  # informational: one example excluded, the others measured
    metric = result.json()["metrics"][0]
    assert (metric["population"]["included"], metric["population"]["excluded_total"]) == (8, 1)
    (diagnostic,) = metric["population"]["top_diagnostics"]
    position = BAD.index(b"\xff") + 1
    assert diagnostic["code"] == "malformed_json"
    assert (
        f"data.jsonl:9: not valid JSON: not UTF-8 text at 0xff (byte {position} of the line)" in diagnostic["example"]
    )
    assert "surrogates" not in diagnostic["example"]


def test_an_outputs_file_line_that_is_not_utf8_is_one_line_naming_it(tmp_path):
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "path": "outputs.jsonl"})
    project.write_rows([{key: value for key, value in row.items() if key != "output"} for row in DEFAULT_ROWS])
    outputs = [json.dumps({"id": row["id"], "output": row["output"]}).encode() for row in DEFAULT_ROWS[:-1]]
    bad = b'{"id": "ex-8", "output": "\xc3("}'
    (project.evals / "outputs.jsonl").write_bytes(b"\n".join([*outputs, bad]) + b"\n")
    one_line_error(project.run(), "outputs.jsonl:8:", "not UTF-8 text at 0xc3 (byte 27 of the line)", "UTF-8")
