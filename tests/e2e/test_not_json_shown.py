"""An answer JSON cannot hold (a Parquet NaN or infinity recorded as the output, a python lane's set) is shown by
``view --examples`` and the HTML report as the system gave it (``nan``, the set's repr) with the not-JSON marker,
never as the fields it is stored as (``{"text": …, "message": …, "declared": …}``); a hostile repr stays text."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from evalglass.core.outputparse import NOT_JSON_MARK
from tests.e2e.project import DEFAULT_ROWS, Project, make_project

WRAPPER_KEYS = ('"message"', '"declared"', "&#34;message&#34;", "&quot;message&quot;")


def shown_everywhere(project: Project) -> tuple[dict[str, str], str, str]:
    """Each example's output in `view --examples --format json`, the text view, and the HTML report's page."""
    listed = project.cli("view", "out", "--examples", "--state", "all", "--format", "json")
    assert listed.code == 0, listed.err
    text = project.cli("view", "out", "--examples", "--state", "all", "--width", "0")
    assert text.code == 0, text.err
    page = project.root / "page.html"
    made = project.cli("report", "out", "--out", str(page))
    assert made.code == 0, made.err
    outputs = {row["id"]: row["output"] for row in listed.json()["examples"]}
    return outputs, text.out, page.read_text()


def test_a_parquet_nan_output_is_shown_as_nan_marked_not_json(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.parquet"})
    rows = [{"id": row["id"], "expected": 1.0, "output": 1.0} for row in DEFAULT_ROWS]
    rows[1]["output"], rows[2]["output"] = float("nan"), float("inf")
    pq.write_table(pa.Table.from_pylist(rows), project.evals / "data.parquet")
    assert project.run("--out", "out").code == 0
    outputs, text, page = shown_everywhere(project)
    nan_id, inf_id = rows[1]["id"], rows[2]["id"]
    assert outputs[nan_id] == f"nan {NOT_JSON_MARK}" and outputs[inf_id] == f"inf {NOT_JSON_MARK}", outputs
    for shown in (text, page):
        assert f"nan {NOT_JSON_MARK}" in shown and f"inf {NOT_JSON_MARK}" in shown
        assert not any(key in shown for key in WRAPPER_KEYS), shown


HOSTILE = "<script>alert(1)</script>"


def test_a_python_lane_set_answer_is_shown_as_its_repr_marked_not_json_and_escaped(tmp_path: Path) -> None:
    project = make_project(tmp_path, task={"type": "python", "function": "app.py:answer"})
    (project.evals / "app.py").write_text(
        f"def answer(example):\n    return {{'b', 'a', {HOSTILE!r}}} if example['id'] == 'e2' else 'yes'\n"
    )
    project.write_rows([{"id": f"e{i}", "expected": "yes"} for i in range(1, 5)])
    assert project.run("--out", "out").code == 0
    stored = [json.loads(line) for line in (tmp_path / "out" / "outputs.jsonl").read_text().splitlines()]
    (text_kept,) = [row["samples"][0]["output"] for row in stored if row["id"] == "e2"]
    outputs, text, page = shown_everywhere(project)
    assert outputs["e2"] == f"{text_kept} {NOT_JSON_MARK}" and "'a'" in text_kept, outputs
    assert outputs["e1"] == "yes"  # an answer that is JSON is shown unmarked
    assert f"{text_kept} {NOT_JSON_MARK}" in text
    escaped = html.escape(f"{text_kept} {NOT_JSON_MARK}").replace("&#x27;", "&#39;")  # Jinja2's quote escape
    assert f"<pre>{escaped}</pre>" in page, page
    assert HOSTILE not in page  # the repr is text on the page, never markup
    assert not any(key in shown for shown in (text, page) for key in WRAPPER_KEYS)
