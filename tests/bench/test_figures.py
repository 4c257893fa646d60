"""The figures table BENCHMARKS.md opens with (benchmarks/figures.py): its columns, what "met" means for each kind of
target, and that writing it again replaces only the text between its markers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from benchmarks.figures import BEGIN, COLUMNS, END, Context, On, Row, Target, Timing, render, replace_section

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = Context(
    command="python benchmarks/run.py --all",
    commit="abc1234",
    machine="x86_64, 2 CPUs",
    date="2026-12-03 12:00 UTC",
    load_start=0.5,
    load_end=1.25,
    minutes=14,
)


def table_rows(section: str) -> list[list[str]]:
    """The cells of each line of the section's table (header and separator included), ``\\|`` kept inside a cell."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.replace("\\|", "\x00")[1:-1].split("|")] for line in lines]


def test_the_table_has_one_row_per_figure_under_its_columns_and_names_the_conditions():
    rows = [
        Row("case 1", Target(On.WALL_RATIO, 2.0), Timing(1.93, 1.90, 108), "`floor.py`", Timing(1.10, 1.08)),
        Row("`view`", Target(On.WALL_SECONDS, 1.5), Timing(0.25, 0.24), "the interpreter's start", Timing(0.02, 0.02)),
    ]
    section = render(rows, CONTEXT)
    cells = table_rows(section)
    assert cells[0] == list(COLUMNS)
    assert cells[1] == ["---"] * len(COLUMNS)
    assert cells[2] == ["case 1", "1.93 s / 1.90 s", "108 MB", "`floor.py`", "1.10 s / 1.08 s", "1.75× (1.76×)",
                        "≤ 2× floor", "yes"]  # fmt: skip
    assert cells[3][0] == "`view`" and cells[3][1] == "250 ms / 240 ms" and cells[3][-2:] == ["< 1.5 s", "yes"]
    assert len(cells) == 4
    head = section.splitlines()[0]
    for fact in ("python benchmarks/run.py --all", "`abc1234`", "x86_64, 2 CPUs", "2026-12-03 12:00 UTC", "0.50",
                 "1.25", "2 figures, 0 targets missed"):  # fmt: skip
        assert fact in head, fact
    assert BEGIN not in section and END not in section


@pytest.mark.parametrize(
    ("row", "met"),
    [
        (Row("a", Target(On.WALL_RATIO, 2.0), Timing(3.51, 3.4), "floor", Timing(1.0, 1.0)), "**no**"),
        (Row("a", Target(On.WALL_RATIO, 2.0), Timing(2.0), "floor", Timing(1.0)), "yes"),  # at the bound: ≤
        (Row("a", Target(On.CPU_RATIO, 2.0), Timing(1.0, 2.1), "bare", Timing(1.0, 1.0)), "**no**"),
        (Row("a", Target(On.CPU_RATIO, 2.0), Timing(9.0), "bare", Timing(1.0)), "**no**"),  # no CPU: cannot tell
        (Row("a", Target(On.WALL_SECONDS, 1.0), Timing(1.0)), "**no**"),  # under 1 s: strictly
        (Row("a", Target(On.WALL_SECONDS, 1.0), Timing(0.99)), "yes"),
        (Row("a", Target(On.PEAK_RSS_MB, 400), Timing(1.0, 1.0, 401)), "**no**"),
        (Row("a", Target(On.PEAK_RSS_MB, 400), Timing(1.0, 1.0)), "**no**"),  # memory not measured
        (Row("a", Target(On.REPORTED), Timing(0.003, 0.002), "loop", Timing(0.001, 0.001)), "—"),
        (Row("a", Target(On.WALL_RATIO, 2.0), missing="failed: exit 2"), "**no**"),
        (Row("a", Target(On.REPORTED), missing="failed: exit 2"), "**no**"),
    ],
)
def test_a_missed_target_shows_as_not_met(row, met):
    cells = table_rows(render([row], CONTEXT))[2]
    assert cells[-1] == met
    assert ("1 figure, 1 target missed" if met == "**no**" else "1 figure, 0 targets missed") in render([row], CONTEXT)


def test_a_case_without_its_figure_says_why():
    cells = table_rows(render([Row("ray", Target(On.REPORTED), missing="ray is not installed")], CONTEXT))[2]
    assert cells[1] == "not measured: ray is not installed" and cells[-1] == "**no**"


names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)
timings = st.builds(
    Timing,
    st.floats(1e-6, 1e4),
    st.one_of(st.none(), st.floats(1e-6, 1e4)),
    st.one_of(st.none(), st.floats(1, 1e4)),
)
targets = st.builds(Target, st.sampled_from(list(On)), st.floats(0.1, 100))
rows = st.builds(Row, names, targets, st.one_of(st.none(), timings), names, st.one_of(st.none(), timings), names)


@given(st.lists(rows, max_size=12))
def test_every_row_is_one_line_of_the_table_and_the_missed_count_is_its_no_cells(found):
    section = render(found, CONTEXT)
    cells = table_rows(section)
    assert len(cells) == 2 + len(found)
    assert all(len(line) == len(COLUMNS) for line in cells)
    missed = sum(line[-1] == "**no**" for line in cells[2:])
    assert missed == sum(row.met() is False for row in found)
    figures = f"{len(found)} figure{'' if len(found) == 1 else 's'}"
    assert f"{figures}, {missed} target{'' if missed == 1 else 's'} missed" in section


@given(st.text(), st.text(), st.text())
def test_writing_the_table_again_changes_only_what_is_between_the_markers(before, after, section):
    document = f"{before}{BEGIN}\nold\n{END}{after}"
    assume(document.count(BEGIN) == 1 and document.count(END) == 1 and BEGIN not in section and END not in section)
    written = replace_section(document, section)
    head, rest = written.split(BEGIN)
    inside, tail = rest.split(END)
    assert head == document.split(BEGIN)[0] and tail == document.split(END)[1]
    assert inside == f"\n{section}\n"
    assert replace_section(written, section) == written


@pytest.mark.parametrize(
    "document",
    [
        "# Benchmarks\n\nno markers\n",
        f"{BEGIN}\nonly the beginning\n",
        f"{END}\n{BEGIN}\n",
        f"{BEGIN}\n{END}\n{BEGIN}\n{END}\n",
    ],
)
def test_a_document_without_one_pair_of_markers_in_order_is_refused(document):
    with pytest.raises(ValueError, match="marker"):
        replace_section(document, "table")


def test_benchmarks_md_opens_with_the_generated_table_and_keeps_the_findings_below_it():
    document = (ROOT / "BENCHMARKS.md").read_text()
    assert document.count(BEGIN) == 1 and document.count(END) == 1
    section = document.split(BEGIN)[1].split(END)[0]
    assert table_rows(section)[0] == list(COLUMNS)
    assert document.index(BEGIN) < document.index("## What paid, what did not") < len(document)
    assert len(document.splitlines()) < 400, "the history belongs in docs/benchmark-history.md"


def test_run_py_lists_every_case_of_the_suite_by_a_unique_name():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--list"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    names = [line.split(":", 1)[0] for line in done.stdout.splitlines()]
    assert len(names) == len(set(names)) >= 10
    assert {"recorded", "python lane", "chat cpu", "chat wall", "command lane", "preflight", "compare"} <= set(names)
