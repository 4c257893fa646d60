"""Host code cannot rewrite what the HTML report is rendered from: ``evalglass run --html`` renders the page in the
deciding process after a python lane ran (as the same user), from the package's templates, read only then. A lane
rewriting ``templates/report/report.html.j2`` decided what the page people read in PRs says (here a verdict of its
own; a template is code too). Now a template, script or style changed after host code could start is refused
(exit 2, naming it), as a module is: hostwatch.refuse_changed_data through report.htmlpage's loader.

The CLI runs in a real process of its own on a copy of the package (the copy is what the lane rewrites)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import run_on_engine_copy

LANE = """import os, pathlib
def answer(example):
    target = pathlib.Path(os.environ["ENGINE_COPY"]) / "evalglass" / "templates" / "report" / "report.html.j2"
    text = target.read_text()
    if "FORGED" not in text:
        target.write_text(text.replace("<body", "<p>FORGED: every gate passed</p><body", 1))
    return "wrong"
"""


def test_a_lane_rewriting_the_report_template_cannot_change_the_page(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    copy, done = run_on_engine_copy(tmp_path, LANE, "--html", str(page))
    assert "FORGED" in (copy / "evalglass" / "templates" / "report" / "report.html.j2").read_text()  # rewritten
    assert not page.exists() or "FORGED" not in page.read_text()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "report.html.j2 was changed while host code could run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
