"""A file saved as UTF-16 or UTF-32 ("Unicode" in Notepad, PowerShell 5's ``>`` and ``Out-File``) is not one bad line
but an unreadable file: read as UTF-8, every line of a JSON Lines dataset was a malformed example, with messages about
an unexpected character at column 1, and every active gate blocked (``incomplete_measurement``, ``gold_stale``), a red
that said nothing of what to do. The run now stops (exit 2) with one line naming the file, its encoding and the fix,
for every reader of such a file: the dataset (JSON Lines or CSV) and a recorded outputs file.

A CSV cell over the csv module's field size limit (128 KiB) made a valid file's row ``malformed_row``: an error that
blocked every active gate on a long document. It is read as the cell it is.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.e2e.project import make_project
from tests.e2e.test_verdicts import approve

ENCODINGS = ["utf-16", "utf-16-be", "utf-16-le", "utf-32", "utf-32-be", "utf-32-le"]  # with a mark, then without


def recode(path: Path, encoding: str) -> None:
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))


def assert_refused(result, file: str, encoding: str) -> None:
    lines = result.err.strip().splitlines()
    assert result.code == 2, result.out + result.err
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    name = "UTF-32" if "32" in encoding else "UTF-16"
    assert lines[0].startswith(f"error: evals/{file}: "), lines
    assert f"is {name} text, not UTF-8" in lines[0] and "save it as UTF-8" in lines[0], lines


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_dataset_saved_as_utf16_or_utf32_stops_the_run_naming_its_encoding(tmp_path: Path, encoding: str) -> None:
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.7))
    recode(project.evals / "data.jsonl", encoding)

    result = project.run()

    assert_refused(result, "data.jsonl", encoding)


def test_a_csv_dataset_saved_as_utf16_stops_the_run_naming_its_encoding(tmp_path: Path) -> None:
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.csv"})
    (project.evals / "data.csv").write_text("id,expected,output\nex-1,yes,yes\n", encoding="utf-16")

    assert_refused(project.run(), "data.csv", "utf-16")


def test_recorded_outputs_saved_as_utf16_stop_the_run_naming_their_file(tmp_path: Path) -> None:
    project = make_project(tmp_path, task={"type": "recorded", "field": "output", "path": "outputs.jsonl"})
    project.write_rows([{"id": "ex-1", "expected": "yes"}])
    (project.evals / "outputs.jsonl").write_text(json.dumps({"id": "ex-1", "output": "yes"}) + "\n", "utf-16")

    assert_refused(project.run(), "outputs.jsonl", "utf-16")


def test_a_dataset_in_utf8_with_a_nul_byte_inside_a_line_is_still_one_malformed_line(tmp_path: Path) -> None:
    """Only the file's start tells an encoding: a stray NUL later is that line's problem, as before."""
    project = make_project(tmp_path)
    project.write_rows(extra_lines=['{"id": "ex-9", "expected": "yes", "output": "y\x00es"}'])

    result = project.run("--format", "json")

    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["population"]["included"] == 8, metric["population"]


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_a_csv_cell_longer_than_128_kib_is_read_and_the_gate_decides(tmp_path: Path) -> None:
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.csv"})
    document = "A long retrieved document. " * 8_000  # 216,000 characters, over the csv module's 131,072
    rows = [{"id": f"ex-{i}", "context": document, "expected": "yes", "output": "yes"} for i in range(1, 9)]
    rows[0]["output"] = "no"
    write_csv(project.evals / "data.csv", rows)
    project.write_ledger(approve(project, threshold=0.8))  # 7 of 8: 0.875 meets 0.8

    result = project.run("--format", "json")

    card = result.json()
    assert (result.code, card["decision"]["verdict"]) == (0, "pass"), (card["decision"], result.err)
    metric = card["metrics"][0]
    assert (metric["population"]["included"], metric["estimate"]["point"]) == (8, 0.875), metric
