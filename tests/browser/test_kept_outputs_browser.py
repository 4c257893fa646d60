"""The HTML report shows every example's output, reference and input in the ``task.path`` layout (outputs in their
own file, the layout the docs recommend), from what the run kept, in a real browser (issue 30)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import make_project

LONG = " ".join(f"word{i}" for i in range(900))  # about 7,000 characters: shown cut, expandable to the whole


@pytest.fixture(scope="module")
def task_path_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("task-path")
    project = make_project(root, task={"type": "recorded", "path": "outputs.jsonl", "field": "answer"})
    rows = [{"id": f"ex-{i}", "question": f"is {i} odd?", "expected": "yes" if i % 2 else "no"} for i in range(1, 7)]
    project.write_rows(rows)
    outputs = [{"id": row["id"], "answer": LONG if row["id"] == "ex-6" else "yes"} for row in rows]
    scored = project.evals / "outputs.jsonl"
    scored.write_text("".join(json.dumps(row) + "\n" for row in outputs))
    assert project.run("--out", "out").code == 0
    scored.write_text("".join(json.dumps({"id": row["id"], "answer": "CHANGED"}) + "\n" for row in rows))
    assert project.cli("report", "out", "--out", "report.html").code == 0
    return root / "report.html"


def card(page: Any, example_id: str) -> Any:
    item = page.locator("#ex-list > li", has=page.locator(".ex-id", has_text=example_id)).first
    item.locator("summary").first.click()
    return item


def test_every_example_shows_its_scored_output_reference_and_input(open_page: Any, task_path_page: Path) -> None:
    watched = open_page()
    page = watched.open(task_path_page)
    for number in range(1, 6):
        item = card(page, f"ex-{number}")
        assert item.locator(".io-output pre").inner_text() == "yes"
        assert item.locator(".io-reference pre").inner_text() == ("yes" if number % 2 else "no")
        assert f"is {number} odd?" in item.locator(".io-input pre").inner_text()
    body = page.locator("body").inner_text()
    assert "(field absent)" not in body and "CHANGED" not in body and "not available" not in body
    watched.shot("task-path")


def test_a_long_output_is_cut_and_expands_to_the_whole(open_page: Any, task_path_page: Path) -> None:
    page = open_page().open(task_path_page)
    item = card(page, "ex-6")
    toggle = item.locator(".io-output details.long > summary")
    assert f"show all {len(LONG):,} characters" in toggle.inner_text()
    assert "word899" not in item.locator(".io-output").inner_text()
    toggle.click()
    assert item.locator(".io-output details.long > pre").inner_text() == LONG
