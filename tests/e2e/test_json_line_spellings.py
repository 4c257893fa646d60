"""Spellings of a JSON line that are not malformed data, read as a careful user expects, end to end: a lone
surrogate escape (valid JSON by RFC 8259's grammar; JavaScript writes one when it cuts an emoji in half) is read as
U+FFFD with a warning at its file:line, not excluded as ``malformed_json``; a JSONL file whose lines end with CR only
says so at its line; and every threshold spelling the ledger refuses (``70%``, ``1e400``) says how to write it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import DEFAULT_ROWS, make_project, run_cli
from tests.e2e.test_hostile_inputs import one_line_error
from tests.e2e.test_verdicts import approve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
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


def _other_tool_run(root: Path, dataset: dict[str, Any], metrics: dict[str, Any]) -> Any:
    evals = root / "evals"
    config = {"version": 1, "dataset": {"name": "imported", **dataset}, "metrics": metrics}
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (evals / "authority.yaml").write_text("version: 1\n")
    return run_cli("run", "--no-history", "--format", "json", cwd=root)


def test_an_otlp_span_attribute_with_a_lone_surrogate_is_read_with_a_warning_at_its_line(tmp_path: Path) -> None:
    from tests.traces.otel import chat_span, recording, write_json

    with recording() as (tracer, finished):
        for index in range(6):
            chat_span(tracer, f"Can I return item {index}?", "Yes, within 30 days." if index else "Maybe.")
        spans = finished()
    (tmp_path / "evals").mkdir()
    path = write_json(spans, tmp_path / "evals" / "traces.jsonl")
    lines = path.read_bytes().split(b"\n")
    assert b"Can I return item 3?" in lines[3]
    lines[3] = lines[3].replace(b"Can I return item 3?", b"Can I return item 3? \\ud83d")
    path.write_bytes(b"\n".join(lines))
    dataset = {"path": "traces.jsonl", "format": "otlp"}
    result = _other_tool_run(tmp_path, dataset, {"cites": {"type": "contains", "field": "text", "value": "30 days"}})

    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 0, card["dataset"]
    assert card["metrics"][0]["population"]["included"] == 6, card["metrics"][0]
    assert card["metrics"][0]["estimate"]["point"] == pytest.approx(5 / 6)
    assert "traces.jsonl:4: 1 lone surrogate escape" in result.err, result.err
    assert "U+FFFD" in result.err


def test_an_openai_evals_log_line_with_a_lone_surrogate_is_read_with_a_warning_at_its_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "openai-evals" / "capitals.jsonl").read_bytes().split(b"\n")
    plain = _other_tool_run_file(tmp_path / "plain", lines)
    assert b'"sampled": "This is a dummy response."' in lines[2]
    lines[2] = lines[2].replace(b'"sampled": "This is a dummy response."', b'"sampled": "cut \\ud83d"')
    result = _other_tool_run_file(tmp_path / "cut", lines)

    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 0, card["dataset"]
    assert card["metrics"][0]["population"] == plain.json()["metrics"][0]["population"]
    assert card["metrics"][0]["population"]["included"] > 0
    assert "capitals.jsonl:3: 1 lone surrogate escape" in result.err, result.err
    assert "lone surrogate" not in plain.err


def _other_tool_run_file(root: Path, lines: list[bytes]) -> Any:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "capitals.jsonl").write_bytes(b"\n".join(lines))
    dataset = {"path": "capitals.jsonl", "format": "openai-evals"}
    return _other_tool_run(root, dataset, {"tool": {"type": "recorded_score", "scorer": "match"}})
