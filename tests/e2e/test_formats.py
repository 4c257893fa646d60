"""CSV and Parquet datasets are read as what they are; other formats are refused by name (issue 13)."""

from __future__ import annotations

import csv
import json

import pytest

from tests.e2e.project import DEFAULT_ROWS, make_project


def csv_project(tmp_path, rows, header=("id", "expected", "output")):
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.csv"})
    with (project.evals / "data.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return project


def test_a_csv_dataset_is_read_row_by_row(tmp_path):
    project = csv_project(tmp_path, [[row["id"], row["expected"], row["output"]] for row in DEFAULT_ROWS])
    result = project.run("--format", "json")
    card = result.json()
    assert result.code == 0
    assert card["dataset"]["examples"] == 8 and card["dataset"]["malformed_lines"] == 0
    assert card["metrics"][0]["estimate"]["point"] == 0.75


def test_csv_values_are_strings_as_written(tmp_path):
    # Typed, "007" and "7" would be the same number; as text they differ, and so does "7.0".
    project = csv_project(tmp_path, [["a", "7", "007"], ["b", "7", "7"], ["c", "7", "7.0"]])
    card = project.run("--format", "json").json()
    assert card["metrics"][0]["estimate"]["point"] == pytest.approx(1 / 3)


def test_a_csv_row_with_the_wrong_number_of_cells_is_an_error_not_a_silent_pass(tmp_path):
    project = csv_project(tmp_path, [["a", "yes", "yes"], ["b", "yes", "yes", "surplus"]])
    project.write_ledger(
        {"version": 1, "gates": {"accuracy": {"active": True, "threshold": 0.5, "fingerprint": "sha256:" + "0" * 64}}}
    )
    result = project.run("--format", "json")
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 1
    assert card["metrics"][0]["population"]["excluded_by_status"] == {"error": 1}
    assert result.code == 1


@pytest.mark.parametrize("suffix", [".xlsx", ".tsv", ".json"])
def test_other_formats_are_refused_naming_the_supported_ones(tmp_path, suffix):
    project = make_project(tmp_path, dataset={"name": "suite", "path": f"data{suffix}"})
    (project.evals / f"data{suffix}").write_text("id\texpected\n")
    result = project.run()
    assert result.code == 2
    assert f"cannot read a {suffix} dataset" in result.err and "CSV (.csv)" in result.err and ".jsonl" in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_a_parquet_dataset_keeps_its_types(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"})
    rows = [{**row, "n": index} for index, row in enumerate(DEFAULT_ROWS)]
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    result = project.run("--format", "json", "--out", "out")
    card = result.json()
    assert result.code == 0 and card["dataset"]["examples"] == 8
    assert card["metrics"][0]["estimate"]["point"] == 0.75


def test_a_broken_parquet_file_is_one_line(tmp_path):
    pytest.importorskip("pyarrow")
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"})
    (project.evals / "data.parquet").write_text(json.dumps(DEFAULT_ROWS[0]) + "\n")
    result = project.run()
    assert result.code == 2 and "not a readable Parquet file" in result.err and "Traceback" not in result.err


def nan_project(tmp_path, column):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"})
    rows = [{"id": row["id"], "expected": 1.0, "output": 1.0, "n": 2.0} for row in DEFAULT_ROWS]
    rows[1][column] = float("nan")
    rows[2][column] = float("inf")
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    card = result.json()
    assert card["dataset"]["malformed_lines"] == 0, card["dataset"]
    # verify scores the run again from the outputs it kept: the same scores (a NaN answer kept as the object
    # orjson makes of its dataclass was another answer, re-scored 0.0 without its diagnostic)
    verified = project.cli("verify", str(project.last_run()))
    assert verified.code == 0 and verified.out.startswith("verified: "), verified.out + verified.err
    return card["metrics"][0]


def test_a_nan_in_a_parquet_output_is_the_systems_wrong_answer_never_a_null_nor_a_bad_row(tmp_path):
    """orjson writes a NaN as null; a bad row (``malformed_row``, an error) blocked every gate on the system's own
    answer. A recorded NaN answer is measured as a python lane's NaN answer is: the metric's worst value."""
    metric = nan_project(tmp_path, "output")
    assert metric["population"]["included"] == 8 and metric["estimate"]["point"] == 0.75, metric
    (diagnostic,) = metric["population"]["top_diagnostics"]
    assert diagnostic["code"] == "output_not_json" and diagnostic["count"] == 2, diagnostic
    assert "the output is not JSON (nan is not a JSON number)" in diagnostic["example"], diagnostic


def test_a_nan_in_a_parquet_reference_leaves_the_example_non_evaluable(tmp_path):
    """A reference JSON cannot hold is the gold's problem (``non_evaluable``, which a gate may tolerate), not an
    answer of the system's and not a bad row."""
    metric = nan_project(tmp_path, "expected")
    assert metric["population"]["included"] == 6 and metric["estimate"]["point"] == 1.0, metric
    assert metric["population"]["excluded_by_status"] == {"non_evaluable": 2}, metric["population"]
    (diagnostic,) = metric["population"]["top_diagnostics"]
    assert diagnostic["code"] == "reference_wrong_type" and "nan is not a JSON number" in diagnostic["example"]


def test_a_nan_in_another_parquet_column_is_kept_and_measures_nothing(tmp_path):
    """An input no metric reads as its reference is the number the file holds; the example is measured."""
    metric = nan_project(tmp_path, "n")
    assert metric["population"]["included"] == 8 and metric["estimate"]["point"] == 1.0, metric


def test_a_nan_input_is_never_handed_to_a_command_as_null(tmp_path):
    """orjson writes a NaN as null: the command would have answered another question than the file's. The example
    is the lane's failure naming the value (``task_input_unserialisable``), the others are answered."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import sys

    task = {"type": "command", "argv": [sys.executable, "answer.py"], "timeout": 30}
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"}, task=task)
    (project.evals / "answer.py").write_text("import json, sys\nprint(json.load(sys.stdin)['n'])\n")
    rows = [{"id": row["id"], "expected": "2.0", "n": 2.0} for row in DEFAULT_ROWS]
    rows[1]["n"] = float("nan")
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["population"]["included"] == 7 and metric["estimate"]["point"] == 1.0, metric
    (diagnostic,) = metric["population"]["top_diagnostics"]
    assert diagnostic["code"] == "task_input_unserialisable" and "nan is not a JSON number" in diagnostic["example"]


def test_a_parquet_gold_edited_from_nan_to_null_makes_the_approved_gold_stale(tmp_path):
    """orjson writes a NaN as null, so the gold fingerprint hashed a NaN reference as the null it is not: editing it
    to null kept an approval of the NaN gold. The fingerprint binds the gold as it is; a gold without a NaN or an
    infinity keeps the fingerprint it had."""
    from tests.e2e.test_verdicts import approve

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"})
    rows = [{"id": row["id"], "expected": 1.0, "output": 1.0} for row in DEFAULT_ROWS]
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    project.run()
    finite = project.dataset_fingerprint()
    from tests.engine.test_gold import documented

    assert finite == documented([{"id": row["id"], "expected": 1.0} for row in rows])  # as orjson writes them
    rows[1]["expected"] = float("nan")
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    project.write_ledger(approve(project, threshold=0.7))
    assert project.dataset_fingerprint() != finite

    def reasons() -> list[str]:
        (gate,) = project.run("--format", "json").json()["decision"]["gates"]
        return [reason["code"] for reason in gate["reasons"]]

    assert "gold_stale" not in reasons()
    rows[1]["expected"] = None
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    assert "gold_stale" in reasons()
