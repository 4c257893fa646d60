"""What `view --examples` shows of a run with variants (issues 33 and 30): per example, each variant's output, read
from `variants/NAME/outputs.jsonl` in the run folder and checked against `digests.json`, with its input and
reference; an edited outputs file is refused, never shown as what a variant produced."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.e2e.project import Project, make_project

#: ``long`` answers with more than the 1,200 characters the HTML report shows unexpanded and the 200 the terminal
#: shows by default, so "whole" is tested, not assumed.
APP = textwrap.dedent(
    """
    def good(example):
        return example["expected"]

    def long(example):
        return "answer " + example["id"] + " " + "x" * 3000

    def wrong(example):
        return "no " + example["id"]
    """
)
ROWS = [{"id": f"ex-{i}", "question": f"what is {i}?", "expected": f"yes {i}"} for i in range(8)]


def long_output(example_id: str) -> str:
    return "answer " + example_id + " " + "x" * 3000


VARIANTS = {"good": {}, "long": {"function": "app.py:long"}, "wrong": {"function": "app.py:wrong"}}


def suite(task: dict[str, Any], variants: dict[str, Any] | None) -> dict[str, Any]:
    config = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": task,
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
    }
    return config if variants is None else {**config, "variants": variants}


def variant_project(tmp_path: Path, task: str = "app.py:good", variants: dict[str, Any] | None = VARIANTS) -> Project:
    """The app, the rows, and a config of ``task`` (a python function) with ``variants`` (None: none)."""
    project = make_project(tmp_path)
    (project.evals / "app.py").write_text(APP)
    project.write_rows(ROWS)
    project.write_config(suite({"type": "python", "function": task}, variants))
    return project


def examples_json(project: Project, *args: str) -> dict[str, Any]:
    result = project.cli("view", "--examples", "--format", "json", *args)
    assert result.code == 0, result.err
    loaded: dict[str, Any] = result.json()
    return loaded


def test_view_examples_json_holds_every_variants_output_whole(tmp_path: Path) -> None:
    project = variant_project(tmp_path)
    assert project.run().code == 0
    listing = examples_json(project, "--state", "all", "--limit", "100")
    rows = listing["examples"]
    assert {row["metric"] for row in rows} == {"exact@good", "exact@long", "exact@wrong"}
    assert len(rows) == 3 * len(ROWS)
    for row in rows:
        example_id = row["id"]
        number = int(example_id[3:])
        assert row["outputs"] == {"good": f"yes {number}", "long": long_output(example_id), "wrong": f"no {example_id}"}
        assert row["output"] == row["outputs"][row["metric"].split("@")[1]]
        assert row["reference"] == f"yes {number}"
        assert f"what is {number}?" in row["input"]
    assert "outputs.jsonl" in listing["outputs_from"]


def test_view_examples_shows_each_variants_output_once_per_row(tmp_path: Path) -> None:
    project = variant_project(tmp_path)
    assert project.run().code == 0
    result = project.cli("view", "--examples", "--metric", "exact@wrong", "--limit", "1", "--width", "0")
    assert result.code == 0, result.err
    block = result.out.split("\n\n")[0]
    assert "output of good: yes 0" in block
    assert "output of wrong: no ex-0" in block
    # Whole with --width 0: folded to the terminal's width, never cut.
    assert "".join(f"output of long: {long_output('ex-0')}".split()) in "".join(block.split())
    assert "reference: yes 0" in block and "what is 0?" in block


def test_an_edited_variant_outputs_file_is_refused(tmp_path: Path) -> None:
    project = variant_project(tmp_path)
    assert project.run().code == 0
    outputs = project.last_run() / "variants" / "wrong" / "outputs.jsonl"
    outputs.write_text(outputs.read_text().replace('"no ex-0"', '"yes 0"'))
    result = project.cli("view", "--examples", "--format", "json")
    assert result.code == 2
    assert "variants/wrong/outputs.jsonl is not the file digests.json lists" in result.err
    assert "yes 0" not in result.out
    report = project.cli("report")
    assert report.code == 2 and "variants/wrong/outputs.jsonl" in report.err


def test_a_run_without_variants_lists_no_outputs_by_variant(tmp_path: Path) -> None:
    project = variant_project(tmp_path, task="app.py:wrong", variants=None)
    assert project.run().code == 0
    rows = examples_json(project)["examples"]
    assert rows and all("outputs" not in row for row in rows)
    assert json.dumps(rows[0]["output"]) == json.dumps("no ex-0")
    # The page of a run without variants is the page it always was: one output, on its line before the reference.
    assert project.cli("report").code == 0
    page = (project.last_run() / "report.html").read_text()
    assert page.count('<div class="io-output"><h4>Output</h4><pre>no ex-') == len(ROWS)
    assert '</div>\n<div class="io-reference">' in page and "data-variant" not in page


def test_variants_of_recorded_outputs_keep_no_outputs_file_and_are_still_listed(tmp_path: Path) -> None:
    """Recorded variants write no outputs file (nothing for digests.json to list): the examples are listed with
    their input and reference, and no output is made up."""
    project = variant_project(tmp_path)
    # Each variant's outputs in a field of their own (a reference or an input there is refused: core.goldfields).
    project.write_rows([{**row, "out_a": row["expected"], "out_b": row["question"]} for row in ROWS])
    project.write_config(suite({"type": "recorded", "field": "out_a"}, {"a": {}, "b": {"field": "out_b"}}))
    assert project.run().code == 0
    rows = examples_json(project, "--state", "all")["examples"]
    assert rows and all(row["output"] is None and "outputs" not in row for row in rows)
    assert rows[0]["reference"] == "yes 0"
    assert project.cli("report").code == 0


def test_outputs_are_found_for_ids_with_quotes_commas_and_accents(tmp_path: Path) -> None:
    """The reader skips unwanted lines by their id's bytes: ids JSON escapes, or whose text looks like the line's
    next key, are found all the same."""
    project = variant_project(tmp_path)
    ids = ['say "hi"', 'a,"line":2', "café-é", "back\\slash"]
    project.write_rows([{"id": example_id, "question": "q", "expected": "e"} for example_id in ids])
    assert project.run().code == 0
    rows = examples_json(project, "--state", "all", "--metric", "exact@wrong", "--limit", "100")["examples"]
    assert {row["id"]: row["outputs"]["wrong"] for row in rows} == {
        example_id: f"no {example_id}" for example_id in ids
    }
    assert all(row["outputs"]["good"] == "e" for row in rows)
