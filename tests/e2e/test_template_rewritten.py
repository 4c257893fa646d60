"""Host code cannot rewrite what the HTML report is rendered from: ``evalglass run --html`` renders the page in the
deciding process after a python lane ran (as the same user), from the package's templates, read only then. A lane
rewriting ``templates/report/report.html.j2`` decided what the page people read in PRs says (here a verdict of its
own; a template is code too). Now a template, script or style changed after host code could start is refused
(exit 2, naming it), as a module is: hostwatch.refuse_changed_data through report.htmlpage's loader.

The CLI runs in a real process of its own on a copy of the package (the copy is what the lane rewrites)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import evalglass
from tests.e2e.project import approve_as_is, make_project

LANE = """import os, pathlib
def answer(example):
    target = pathlib.Path(os.environ["ENGINE_COPY"]) / "evalglass" / "templates" / "report" / "report.html.j2"
    text = target.read_text()
    if "FORGED" not in text:
        target.write_text(text.replace("<body", "<p>FORGED: every gate passed</p><body", 1))
    return "wrong"
"""


def test_a_lane_rewriting_the_report_template_cannot_change_the_page(tmp_path: Path) -> None:
    copy = tmp_path / "engine"
    shutil.copytree(Path(evalglass.__file__).parent, copy / "evalglass", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", task={"type": "python", "function": "lane.py:answer"})
    (project.evals / "lane.py").write_text(LANE)
    approve_as_is(project, 0.7, ["accuracy"])
    page = tmp_path / "page.html"
    env = {**os.environ, "PYTHONPATH": str(copy), "ENGINE_COPY": str(copy), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "evalglass", "run", "--no-progress", "--no-history", "--html", str(page)],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "FORGED" in (copy / "evalglass" / "templates" / "report" / "report.html.j2").read_text()  # rewritten
    assert not page.exists() or "FORGED" not in page.read_text()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "report.html.j2 was changed while host code could run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
