"""``view --examples`` shows each example's input for a CSV dataset as for JSON Lines.

The inputs were joined to the listed examples by reading the dataset's lines as JSON: a CSV row is no JSON, so a
CSV run's examples were listed with no input at all. They are now read back through the run's own reader (by the
dataset's format), as trace files and other tools' results already were.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import make_project


def test_view_examples_shows_the_inputs_of_a_csv_run(tmp_path: Path) -> None:
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.csv"})
    (project.evals / "data.csv").write_text(
        "id,question,expected,output\n"
        "ex-1,what colour is the sky,blue,blue\n"
        "ex-2,how many legs has a spider,eight,six\n"
    )
    assert project.run().code == 0  # nothing approved yet: informational

    shown = project.cli("view", "--examples", "--state", "all", "--width", "0")

    assert shown.code == 0, shown.err
    # Before: each example was listed without its input (the CSV lines were parsed as JSON, and none is).
    assert 'input: {"question":"what colour is the sky"}' in shown.out, shown.out
    assert "how many legs has a spider" in shown.out and "reference: eight" in shown.out, shown.out


def test_the_html_report_shows_the_inputs_of_a_csv_run(tmp_path: Path) -> None:
    """The HTML report's example table joined inputs the same way: a CSV line is no JSON, so each example's input was
    its raw line (``ex-1,what colour is the sky,blue,blue``: the id, the reference and the output with it)."""
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.csv"})
    (project.evals / "data.csv").write_text(
        "id,question,expected,output\nex-1,what colour is the sky,blue,blue\nex-2,how many legs has a spider,eight,six\n"
    )
    assert project.run().code == 0
    page = project.root / "page.html"

    written = project.cli("report", "--out", str(page))

    assert written.code == 0, written.err
    html = page.read_text()
    assert "&#34;question&#34;: &#34;what colour is the sky&#34;" in html, html
    assert "&#34;question&#34;: &#34;how many legs has a spider&#34;" in html
    assert "what colour is the sky,blue" not in html and "could not be read back" not in html
