"""A CSV cell is text: the reader guesses no types (docs/config.md, Dataset formats). A recorded output read from a
CSV dataset is therefore never a number and never has fields, so ``numeric_bounds`` without ``coerce`` scored every
example its worst value (``wrong_type``) and a ``field`` inside the output was missing on every example
(``output_field_missing``): an approved gate failed on the file format, a red nothing the system answers could
mend. Such a metric is refused with the config, one line at its entry, saying what to set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.project import Project, make_project
from tests.e2e.test_setup_errors import assert_one_line_error


def csv_project(tmp_path: Path, metric: dict[str, Any], cells: list[str], **task: Any) -> Project:
    project = make_project(
        tmp_path,
        dataset={"name": "suite", "path": "data.csv"},
        task={"type": "recorded", "field": "output", **task},
        metrics={"score": metric},
        gates={"accuracy": {"metric": "score", "proposed_threshold": 0.7}},
    )
    rows = "".join(f'ex-{i},"{cell.replace(chr(34), chr(34) * 2)}"\n' for i, cell in enumerate(cells))
    (project.evals / "data.csv").write_text("id,output\n" + rows)
    return project


def line_of(project: Project, needle: str) -> int:
    rows = (project.evals / "evalglass.yaml").read_text().splitlines()
    return next(i for i, row in enumerate(rows, start=1) if needle in row)


def test_numeric_bounds_on_csv_cells_without_coerce_is_refused_saying_to_set_it(tmp_path: Path) -> None:
    project = csv_project(tmp_path, {"type": "numeric_bounds", "min": 0, "max": 1}, ["0.5", "0.9", "0.7"])
    result = project.run()
    assert_one_line_error(
        result, f"evalglass.yaml:{line_of(project, 'score:')}: ", "CSV cell's text", "set `coerce: true`"
    )


def test_numeric_bounds_on_csv_cells_with_coerce_measures_the_numbers(tmp_path: Path) -> None:
    metric = {"type": "numeric_bounds", "min": 0, "max": 1, "coerce": True}
    project = csv_project(tmp_path, metric, ["0.5", "0.9", "1.7"])
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    assert result.json()["metrics"][0]["estimate"]["point"] == 2 / 3


def test_a_field_inside_a_csv_cell_is_refused_unless_the_cells_are_parsed_as_json(tmp_path: Path) -> None:
    metric = {"type": "exact_match", "field": "label", "expected": "ok"}
    cells = ['{"label": "ok"}', '{"label": "ok"}', '{"label": "bad"}']
    project = csv_project(tmp_path, metric, cells)
    assert_one_line_error(
        project.run(), f"evalglass.yaml:{line_of(project, 'field: label')}: ", "has no fields", "task.parse: json"
    )

    (tmp_path / "parsed").mkdir()
    parsed = csv_project(tmp_path / "parsed", metric, cells, parse="json")
    result = parsed.run("--format", "json")
    assert result.code == 0, result.err
    assert result.json()["metrics"][0]["estimate"]["point"] == 2 / 3
