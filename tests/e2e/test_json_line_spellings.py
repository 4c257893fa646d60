"""Spellings of a JSON line that are not malformed data, read as a careful user expects, end to end: a lone
surrogate escape (valid JSON by RFC 8259's grammar; JavaScript writes one when it cuts an emoji in half) is read as
U+FFFD with a warning at its file:line, not excluded as ``malformed_json``; a JSONL file whose lines end with CR only
says so at its line; and every threshold spelling the ledger refuses (``70%``, ``1e400``) says how to write it."""

from __future__ import annotations

import json

import pytest

from tests.e2e.project import DEFAULT_ROWS, make_project
from tests.e2e.test_hostile_inputs import one_line_error
from tests.e2e.test_verdicts import approve

CUT = b'{"id": "ex-9", "expected": "yes", "output": "yes", "note": "smile \\ud83d"}'


def test_a_dataset_line_with_a_lone_surrogate_is_read_with_a_warning_at_its_line(tmp_path):
    project = make_project(tmp_path)
    lines = [json.dumps(row).encode() for row in DEFAULT_ROWS]
    (project.evals / "data.jsonl").write_bytes(b"\n".join([*lines, CUT]) + b"\n")
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert (metric["population"]["included"], metric["population"]["excluded_total"]) == (9, 0), metric
    assert result.json()["dataset"]["malformed_lines"] == 0
    assert "data.jsonl:9: 1 lone surrogate escape" in result.err, result.err
    assert "U+FFFD" in result.err


def test_an_outputs_line_with_a_lone_surrogate_is_read_with_a_warning_at_its_line(tmp_path):
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "path": "outputs.jsonl"})
    project.write_rows([{key: value for key, value in row.items() if key != "output"} for row in DEFAULT_ROWS])
    outputs = [json.dumps({"id": row["id"], "output": row["output"]}).encode() for row in DEFAULT_ROWS[:-1]]
    cut = b'{"id": "ex-8", "output": "yes", "why": "\\udc00 and \\ud83d\\ude00"}'
    (project.evals / "outputs.jsonl").write_bytes(b"\n".join([*outputs, cut]) + b"\n")
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["population"]["included"] == 8, metric
    assert "outputs.jsonl:8: 1 lone surrogate escape" in result.err, result.err
    assert result.err.count("lone surrogate") == 1, result.err  # the paired escape is the emoji it spells


def test_a_jsonl_file_with_cr_only_line_ends_says_so_at_its_line(tmp_path):
    project = make_project(tmp_path)
    lines = [json.dumps(row).encode() for row in DEFAULT_ROWS]
    (project.evals / "data.jsonl").write_bytes(b"\r".join(lines) + b"\r")
    result = project.run("--format", "json")
    diagnostic = result.json()["metrics"][0]["population"]["top_diagnostics"][0]
    assert diagnostic["code"] == "malformed_json"
    assert (
        "data.jsonl:1: not valid JSON: lines end with CR only; save with LF or CRLF line ends"
        in (diagnostic["example"])
    )


@pytest.mark.parametrize(
    ("written", "said", "fix"),
    [
        ("70%", "'70%' is a percentage", "write the fraction 0.7 in the authority ledger"),
        ("1e400", "'1e400' is out of range", "write a number within range"),
        ("1.0e+400", "inf is not a finite number", "write a real number"),  # YAML reads it as a float: inf
    ],
)
def test_every_refused_threshold_spelling_says_how_to_fix_it_at_its_line(tmp_path, written, said, fix):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.123))
    text = (project.evals / "authority.yaml").read_text()
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "threshold: 0.123" in row)
    (project.evals / "authority.yaml").write_text(text.replace("threshold: 0.123", f"threshold: {written}"))
    message = one_line_error(project.run(), f"authority.yaml:{line}:", "gates.accuracy.threshold", said, fix)
    assert "valid number" not in message
