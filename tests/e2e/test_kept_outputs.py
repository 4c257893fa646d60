"""A run keeps the outputs it scored (issue 30): with outputs in their own file (``task.path``, the layout the docs
recommend), ``view --examples``, the reports and ``explain`` show what was scored, never the file as it is now; a
kept store that was swapped or edited is refused, by ``verify`` and by every reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.e2e.project import Project, make_project

DATA = [{"id": f"ex-{i}", "question": f"is {i} odd?", "expected": "yes" if i % 2 else "no"} for i in range(1, 9)]
SCORED = [{"id": row["id"], "answer": "yes"} for row in DATA]  # the even examples fail


def outputs_project(root: Path) -> Project:
    project = make_project(root, task={"type": "recorded", "path": "outputs.jsonl", "field": "answer"})
    project.write_rows(DATA)
    write_outputs(project, SCORED)
    return project


def write_outputs(project: Project, rows: list[dict[str, str]]) -> None:
    (project.evals / "outputs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def kept_store(folder: Path) -> Path:
    (found,) = sorted((folder / "blobs").glob("*.jsonl.gz"))
    return found


def test_view_examples_shows_the_scored_output_after_the_outputs_file_changed(tmp_path: Path) -> None:
    """The issue's scenario: after the outputs file changed, `view` showed an example as `fail` next to the gold
    answer it never scored."""
    project = outputs_project(tmp_path)
    assert project.run().code == 0
    write_outputs(project, [{"id": row["id"], "answer": row["expected"]} for row in DATA])  # now all gold
    shown = project.cli("view", "--examples", "--format", "json")
    assert shown.code == 0, shown.err
    rows = {row["id"]: row for row in shown.json()["examples"]}
    assert set(rows) == {"ex-2", "ex-4", "ex-6", "ex-8"}
    assert all(row["state"] == "fail" and row["output"] == "yes" for row in rows.values())
    assert rows["ex-4"]["reference"] == "no"
    assert json.loads(rows["ex-4"]["input"]) == {"question": "is 4 odd?"}
    assert "as it is now" not in (shown.json()["outputs_from"] or "")
    text = project.cli("view", "--examples", "--width", "0")
    assert "output: yes" in text.out and "output: no" not in text.out


def test_the_outputs_file_may_be_gone_the_run_still_shows_what_it_scored(tmp_path: Path) -> None:
    project = outputs_project(tmp_path)
    assert project.run().code == 0
    (project.evals / "outputs.jsonl").unlink()
    rows = project.cli("view", "--examples", "--format", "json").json()["examples"]
    assert [row["output"] for row in rows] == ["yes"] * 4


def test_the_html_report_shows_the_scored_outputs_in_the_task_path_layout(tmp_path: Path) -> None:
    project = outputs_project(tmp_path)
    assert project.run("--out", "out").code == 0
    write_outputs(project, [{"id": row["id"], "answer": "CHANGED-LATER"} for row in DATA])
    assert project.cli("report", "out", "--out", "report.html").code == 0
    page = (tmp_path / "report.html").read_text()
    assert "(field absent)" not in page and "CHANGED-LATER" not in page
    assert "<pre>yes</pre>" in page and "is 4 odd?" in page


def test_a_swapped_outputs_store_is_refused_by_verify_and_every_reader(tmp_path: Path) -> None:
    """A kept store made to show the gold answer beside a failing example: its bytes no longer hash to what the run
    recorded, so nothing shows it as scored."""
    project = outputs_project(tmp_path)
    assert project.run("--out", "out").code == 0
    folder = tmp_path / "out"
    store = kept_store(folder)
    text = gzip.decompress(store.read_bytes()).decode().replace('"yes"', '"no"')
    store.write_bytes(gzip.compress(text.encode(), mtime=0))
    verified = project.cli("verify", "out")
    assert verified.code != 0 and store.name in verified.out + verified.err
    for command in (("view", "out", "--examples"), ("report", "out", "--out", "r.html"), ("explain", "--run", "out")):
        shown = project.cli(*command)
        assert shown.code == 2, (command, shown.out, shown.err)
        (line,) = shown.err.strip().splitlines()
        assert store.name in line and "verify" in line, line
        assert "Traceback" not in shown.err


def test_verify_says_what_it_proves_about_the_kept_outputs(tmp_path: Path) -> None:
    project = outputs_project(tmp_path)
    assert project.run("--out", "out").code == 0
    verified = project.cli("verify", "out")
    assert verified.code == 0, verified.out + verified.err
    assert "kept outputs" in verified.out and "8 examples" in verified.out


def test_inline_outputs_are_kept_too_and_read_back_through_the_history(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert project.run().code == 0
    project.write_rows([{**row, "output": "changed"} for row in json_rows(project)])
    (project.evals / "data.jsonl").unlink()
    rows = project.cli("view", "last", "--examples", "--format", "json").json()["examples"]
    assert rows and all(row["output"] == "yes" for row in rows)


def json_rows(project: Project) -> list[dict[str, str]]:
    return [json.loads(line) for line in (project.evals / "data.jsonl").read_text().splitlines()]


def test_a_live_lane_run_keeps_no_second_copy(tmp_path: Path) -> None:
    """A lane's outputs are already the run's own (outputs.jsonl): no recorded store is written beside them, and
    its run record is written as before (no `kept_outputs` key)."""
    project = make_project(tmp_path, task={"type": "python", "function": "app.py:answer"})
    (project.evals / "app.py").write_text("def answer(example):\n    return 'yes'\n")
    assert project.run("--out", "out").code == 0
    folder = tmp_path / "out"
    assert not (folder / "blobs").exists() and (folder / "outputs.jsonl").exists()
    assert "kept_outputs" not in json.loads((folder / "runrecord.json").read_text())
    rows = project.cli("view", "out", "--examples", "--format", "json").json()
    assert rows["outputs_from"] == "outputs.jsonl of the run" and rows["examples"][0]["output"] == "yes"
