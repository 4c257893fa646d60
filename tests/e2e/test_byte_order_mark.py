"""A file saved with a UTF-8 byte order mark (Notepad, Excel's "CSV UTF-8", PowerShell's ``Out-File``) is the same
data as without it: RFC 8259 lets a JSON reader ignore the mark, and every reader of JSON lines here does. Read as
part of the first line, it made that example an ``error`` (``malformed_json``), which blocks every active gate
(``incomplete_measurement``): a red build for an encoding detail, not for anything measured.

Each test runs the real CLI on files written with the mark (and Windows line ends) and asserts the run says exactly
what it says for the same files without it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import make_project, run_cli
from tests.e2e.test_verdicts import approve

BOM = b"\xef\xbb\xbf"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def with_bom(path: Path, *, crlf: bool = True) -> None:
    data = path.read_bytes()
    path.write_bytes(BOM + (data.replace(b"\n", b"\r\n") if crlf else data))


def metric_summary(card: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(m["name"], m["estimate"]["point"], m["population"]) for m in card["metrics"]]


def test_a_dataset_with_a_byte_order_mark_passes_the_gate_it_passes_without_one(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.7))  # 6 of 8 exact: 0.75 meets 0.7
    plain = project.run("--format", "json")
    assert plain.code == 0 and plain.json()["decision"]["verdict"] == "pass", plain.out

    with_bom(project.evals / "data.jsonl")
    marked = project.run("--format", "json")

    card = marked.json()
    assert marked.code == 0, card["decision"]
    assert card["decision"]["verdict"] == "pass"
    assert metric_summary(card) == metric_summary(plain.json())
    # The mark is not content: the gold the ledger validated is the same gold.
    assert card["dataset"]["gold_fingerprint"] == plain.json()["dataset"]["gold_fingerprint"]


def test_recorded_outputs_in_their_own_file_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "path": "outputs.jsonl"})
    rows = [{"id": f"ex-{i}", "expected": "yes" if i % 4 else "no"} for i in range(1, 9)]
    project.write_rows(rows)
    outputs = "".join(json.dumps({"id": row["id"], "output": "yes"}) + "\n" for row in rows)
    (project.evals / "outputs.jsonl").write_text(outputs)
    plain = project.run("--format", "json")
    assert plain.code == 0, plain.err

    with_bom(project.evals / "outputs.jsonl")
    marked = project.run("--format", "json")

    assert marked.code == 0, marked.err
    assert metric_summary(marked.json()) == metric_summary(plain.json())


def test_view_examples_shows_the_first_line_s_input_from_a_dataset_with_a_byte_order_mark(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    rows = [{"id": "ex-1", "question": "first question", "expected": "no", "output": "yes"}]
    project.write_rows(rows)
    with_bom(project.evals / "data.jsonl")
    assert project.run().code == 0

    shown = project.cli("view", "--examples", "--state", "all", "--width", "0")

    assert shown.code == 0, shown.err
    assert "first question" in shown.out, shown.out


def _tool_run(tmp_path: Path, files: list[Path], fmt: str, metrics: dict[str, Any], mark: Path | None) -> Any:
    evals = tmp_path / "evals"
    evals.mkdir(parents=True)
    for file in files:
        shutil.copyfile(file, evals / file.name)
    if mark is not None:
        with_bom(evals / mark.name, crlf=False)
    document = {"version": 1, "dataset": {"name": "imported", "path": files[0].name, "format": fmt}, "metrics": metrics}
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    (evals / "authority.yaml").write_text("version: 1\n")
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    return result.json()


LM_EVAL = sorted((FIXTURES / "lm-eval").glob("samples_capitals_gen_*.jsonl"))[0]
LM_EVAL_RESULTS = sorted((FIXTURES / "lm-eval").glob("results_*.json"))[0]


@pytest.mark.parametrize(
    ("fmt", "files", "marked", "scorer"),
    [
        ("promptfoo", [FIXTURES / "promptfoo" / "capitals.json"], 0, "promptfoo"),
        ("openai-evals", [FIXTURES / "openai-evals" / "capitals.jsonl"], 0, "match"),
        ("lm-eval", [LM_EVAL, LM_EVAL_RESULTS], 0, "exact_match"),
        ("lm-eval", [LM_EVAL, LM_EVAL_RESULTS], 1, "exact_match"),
    ],
    ids=["promptfoo", "openai-evals", "lm-eval-samples", "lm-eval-results"],
)
def test_another_tool_s_results_file_with_a_byte_order_mark_reads_as_without_one(
    tmp_path: Path, fmt: str, files: list[Path], marked: int, scorer: str
) -> None:
    metrics = {"tool": {"type": "recorded_score", "scorer": scorer}}
    plain = _tool_run(tmp_path / "plain", files, fmt, metrics, None)
    with_mark = _tool_run(tmp_path / "marked", files, fmt, metrics, files[marked])
    assert metric_summary(with_mark) == metric_summary(plain)
    assert metric_summary(plain)[0][2]["included"] > 0


def test_an_otlp_json_lines_trace_file_with_a_byte_order_mark_reads_as_without_one(tmp_path: Path) -> None:
    from tests.traces.otel import chat_span, recording, write_json

    with recording() as (tracer, finished):
        for index in range(6):
            chat_span(tracer, f"Can I return item {index}?", "Yes, within 30 days." if index else "Maybe.")
        spans = finished()
    config = {
        "version": 1,
        "dataset": {"name": "traces", "path": "traces.jsonl", "format": "otlp"},
        "metrics": {"cites": {"type": "contains", "field": "text", "value": "30 days"}},
    }
    cards = []
    for name in ("plain", "marked"):
        evals = tmp_path / name / "evals"
        evals.mkdir(parents=True)
        write_json(spans, evals / "traces.jsonl", per_line=4)
        if name == "marked":
            with_bom(evals / "traces.jsonl", crlf=False)
        (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        (evals / "authority.yaml").write_text("version: 1\n")
        result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path / name)
        assert result.code == 0, result.err
        cards.append(result.json())
    assert metric_summary(cards[1]) == metric_summary(cards[0])
    assert metric_summary(cards[0])[0][1] == pytest.approx(5 / 6)
