"""Which examples the report embeds, and what each row says, read from a real run's artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalglass.engine.explore.explorer import cell_of, html_report, load_explorer
from evalglass.engine.runs.artifacts import load_runrecord
from tests.e2e.reports import report_project

ROWS = 120
NEEDS_LOOK = 43  # 40 answer "no", the hostile output, the needle, the example without a reference


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("explorer")
    report_project(root, ROWS, approved=False)
    return root / "out"


def test_below_the_cap_every_example_is_embedded_those_needing_a_look_first(run_folder: Path) -> None:
    explorer = load_explorer(run_folder, load_runrecord(run_folder), ("exact", "affirmative"))
    assert (explorer.total, explorer.needs_look_total, len(explorer.rows)) == (ROWS, NEEDS_LOOK, ROWS)
    flags = [row.needs_look for row in explorer.rows]
    assert flags == [True] * NEEDS_LOOK + [False] * (ROWS - NEEDS_LOOK)
    assert [row.line for row in explorer.rows[:3]] == [2, 3, 5]  # dataset order within each group
    by_id = {row.id: row for row in explorer.rows}
    assert by_id["ex-0003"].input is not None and "question number 3" in by_id["ex-0003"].input
    assert by_id["ex-0003"].output == "no" and by_id["ex-0003"].reference == "yes"
    assert by_id["ex-0005"].reference == "(field absent)"
    assert by_id["ex-0005"].cells[0].states == ("non_evaluable",)
    assert by_id["ex-0005"].cells[0].diagnostics[0].code == "reference_missing"


def test_the_cap_keeps_the_first_that_need_a_look_and_says_so(run_folder: Path) -> None:
    explorer = load_explorer(run_folder, load_runrecord(run_folder), ("exact", "affirmative"), cap=10)
    assert len(explorer.rows) == 10 and all(row.needs_look for row in explorer.rows)
    assert explorer.sampled == 0
    page, _ = html_report(run_folder, cap=10)
    assert "embeds 10 of 120 examples" in page and "the first 10 of 43" in page


def test_room_left_under_the_cap_is_an_even_sample_of_the_rest(run_folder: Path) -> None:
    explorer = load_explorer(run_folder, load_runrecord(run_folder), ("exact", "affirmative"), cap=60)
    sampled = [row for row in explorer.rows if not row.needs_look]
    assert len(explorer.rows) == 60 and len(sampled) == 60 - NEEDS_LOOK == explorer.sampled
    lines = [row.line for row in sampled]
    assert lines == sorted(lines) and lines[-1] - lines[0] > ROWS // 2  # spread over the run, not its head
    page, _ = html_report(run_folder, cap=60)
    assert "all 43" in page and "17 sampled evenly from the rest" in page


@pytest.mark.parametrize(
    ("entry", "states", "values", "look"),
    [
        (1.0, ("included",), (1.0,), False),
        (0, ("included",), (0.0,), True),
        (None, ("missing",), (None,), True),
        (
            {"status": "scored", "validity": "invalid", "value": 3, "diagnostics": [{"code": "x", "message": "m"}]},
            ("invalid",),
            (3.0,),
            True,
        ),
        (
            {"status": "error", "validity": "not_measured", "diagnostics": [{"code": "x", "message": "m"}]},
            ("error",),
            (None,),
            True,
        ),
        ([1.0, {"status": "skipped", "validity": "not_measured"}], ("included", "skipped"), (1.0, None), True),
        ("garbage", ("unreadable",), (None,), True),
        (True, ("unreadable",), (None,), True),
    ],
)
def test_a_recorded_entry_becomes_a_cell(
    entry: object, states: tuple[str, ...], values: tuple[float | None, ...], look: bool
) -> None:
    cell = cell_of("m", entry)
    assert (cell.states, cell.values, cell.needs_look) == (states, values, look)


def test_the_page_reads_of_the_explorer_only_what_its_protocol_names() -> None:
    """report/html.py takes the explorer as an ``ExampleRows`` (report imports no engine module): an attribute the
    template reads that the protocol does not name would break the page for any other source of rows, unseen by
    the type checker (Jinja2 reads it at render time)."""
    import re

    from evalglass.engine.explore.explorer import Explorer
    from evalglass.report.html import ExampleRows

    templates = Path(__file__).resolve().parents[2] / "src/evalglass/templates/report"
    read = {name for path in templates.glob("*.j2") for name in re.findall(r"\bexplorer\.(\w+)", path.read_text())}
    named = {name for name in dir(ExampleRows) if not name.startswith("_")}
    assert read and sorted(read - named) == []
    fields = Explorer.__dataclass_fields__
    assert [name for name in sorted(named) if not hasattr(Explorer, name) and name not in fields] == []
