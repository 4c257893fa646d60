"""The comparison view in a real browser: `compare --html` and a run report's comparative gates, as a reader sees
them, from the keyboard, in light and dark, and at 375 px. Every test fails on a console error (see conftest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_comparative_gates import BIG_DROP, setup
from tests.e2e.test_compare import PATTERN, rows_with, two_runs

HOSTILE_ID = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`compare BASE CAND --html` over 50 paired examples (7 regressed, 2 improved) plus one regressed hostile id;
    and the JSON payload of the same comparison, which the page must show."""
    root = tmp_path_factory.mktemp("compare")
    rows = [*rows_with(PATTERN), {"id": HOSTILE_ID, "expected": "a", "old": "a", "new": "b"}]
    project = two_runs(root, rows)
    result = project.cli("compare", "runs/base", "runs/cand", "--html", "comparison.html")
    assert result.code == 0, result.err
    assert "html comparison: comparison.html" in result.out
    data = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    return root / "comparison.html", data


@pytest.fixture(scope="module")
def gate_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose comparative gate (lower_bound, margin 0.05) fails against its approved baseline."""
    project, _ = setup(tmp_path_factory.mktemp("gate"), BIG_DROP, rule="lower_bound")
    result = project.run("--out", "runs/cand", "--html", "report.html")
    assert result.code == 1, result.err
    return project.root / "report.html"


def test_the_comparison_page_shows_the_payload(open_page: Any, compare_page: tuple[Path, dict[str, Any]]) -> None:
    path, data = compare_page
    watched = open_page()
    page = watched.open(path)
    (metric,) = data["metrics"]
    difference = metric["difference"]
    card = page.locator("#m-1")
    text = card.inner_text()
    assert "newcombe_paired" in text and "95% two-sided" in text
    assert f"{metric['pairs']['included']} of {metric['pairs']['expected']} paired examples" in text
    assert f"p={difference['p_value']:.3g}" in text
    table = difference["table"]
    assert f"{table['both']} pass in both, {table['base_only']} baseline only" in text
    assert "Regressed: passed in the baseline, fail now (8)" in text and "Improved" in text
    header = page.locator("header.banner").inner_text()
    assert data["base"]["run_id"] in header and data["candidate"]["run_id"] in header
    assert "decides nothing" in header
    # The drawing: the point left of 0 (the candidate is worse), inside its interval's whiskers.
    point = float(card.locator("svg.diff circle.point").get_attribute("cx") or "nan")
    zero = float(card.locator("svg.diff line.zero").get_attribute("x1") or "nan")
    whiskers = sorted(
        float(x) for x in card.locator("svg.diff line.ci").evaluate_all("ls => ls.map(l => l.getAttribute('x1'))")
    )
    assert whiskers[0] < point < zero <= whiskers[-1] + 0.01
    assert card.locator("svg.diff").get_attribute("aria-label") is not None
    assert page.locator("script").count() == 0
    watched.shot("comparison-light")


def test_flips_open_from_the_keyboard_and_ids_are_text(
    open_page: Any, compare_page: tuple[Path, dict[str, Any]]
) -> None:
    path, data = compare_page
    watched = open_page()
    page = watched.open(path)
    regressed = page.locator("#m-1-regressed")
    assert regressed.get_attribute("open") is None
    # Tab (bounded) until the regressed list's summary has focus, then open it with Enter.
    for _ in range(60):
        page.keyboard.press("Tab")
        if (
            page.evaluate("document.activeElement.closest('details') && document.activeElement.closest('details').id")
            == "m-1-regressed"
        ):
            break
    else:
        raise AssertionError("the regressed list cannot be reached with Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # a visible focus ring
    page.keyboard.press("Enter")
    assert regressed.get_attribute("open") is not None
    shown = regressed.locator(".id-list li").all_inner_texts()
    assert shown == data["metrics"][0]["flips"]["regressed"]
    assert HOSTILE_ID in shown and page.evaluate("typeof window.__pwned") == "undefined"
    page.keyboard.press("Space")  # and closed again
    assert regressed.get_attribute("open") is None
    watched.shot("comparison-keyboard")


def test_a_comparative_gate_is_drawn_in_the_run_report(open_page: Any, gate_page: Path) -> None:
    watched = open_page()
    page = watched.open(gate_page)
    assert page.locator("nav.toc a[href='#comparisons']").count() == 1
    card = page.locator("#comparisons article.cmp-gate")
    assert card.count() == 1
    text = card.inner_text()
    assert "no-regression: this run against baseline main" in text
    assert card.locator(".badge").inner_text() == "fail"
    assert "below_threshold" in text and "0.05" in text and "newcombe_paired" in text
    assert "90% two-sided" in text and "Power" in text
    # The approved limit (-0.05) is drawn left of 0, and the whole interval the three-way rule decided on (its ends
    # the one-sided 95% bounds) left of the limit: the gate fails because the drop is shown, not merely possible.
    svg = card.locator("svg.diff")
    limit = float(svg.locator("line.threshold").get_attribute("x1") or "nan")
    zero = float(svg.locator("line.zero").get_attribute("x1") or "nan")
    low = float(svg.locator("line.ci").nth(1).get_attribute("x1") or "nan")
    high = float(svg.locator("line.ci").nth(2).get_attribute("x1") or "nan")
    assert low < high < limit < zero
    assert svg.locator("path.ci.open").count() == 0
    card.locator("summary", has_text="Regressed").click()
    assert card.locator(".id-list li").all_inner_texts() == [f"q{i:03d}" for i in range(30, 40)]
    watched.shot("gate-comparison")


def test_a_report_without_comparative_gates_has_no_comparison_section(open_page: Any, tmp_path: Path) -> None:
    from tests.e2e.project import make_project

    project = make_project(tmp_path)
    assert project.run("--out", "out", "--html", "report.html").code == 0
    page = open_page().open(tmp_path / "report.html")
    assert page.locator("#comparisons").count() == 0 and page.locator("a[href='#comparisons']").count() == 0


@pytest.mark.parametrize(("which", "scheme"), [("compare", "light"), ("compare", "dark"), ("gate", "light")])
def test_no_layout_break_at_375_px(
    open_page: Any, compare_page: tuple[Path, dict[str, Any]], gate_page: Path, which: str, scheme: str
) -> None:
    watched = open_page(width=375, scheme=scheme)
    page = watched.open(compare_page[0] if which == "compare" else gate_page)
    for summary in page.locator("details summary").all():
        if summary.is_visible():
            summary.click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    for svg in page.locator("svg.diff").all():
        box = svg.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
    watched.shot(f"narrow-{which}-{scheme}")


def test_dark_mode_draws_the_difference_readably(open_page: Any, compare_page: tuple[Path, dict[str, Any]]) -> None:
    watched = open_page(scheme="dark")
    page = watched.open(compare_page[0])
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    stroke = page.eval_on_selector("svg.diff line.ci", "e => getComputedStyle(e).stroke")
    assert _luminance(background) < 0.1 and _luminance(stroke) > 0.7
    watched.shot("comparison-dark")


def _luminance(css: str) -> float:
    red, green, blue = (int(part) / 255 for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_the_forest_draws_a_comparative_gate_on_its_own_difference_axis(open_page: Any, gate_page: Path) -> None:
    """The margin (-0.05) is a difference between runs: the metric's row keeps its 0…1 scale and no threshold of the
    comparative gate, and the gate gets a row of its own with 0 and its limit on a difference axis (issue 30)."""
    watched = open_page()
    page = watched.open(gate_page)
    rows = page.locator("#metrics .forest-row")
    metric_row = rows.first
    ticks = metric_row.locator("svg text.tick-label").evaluate_all("ts => ts.map(t => t.textContent)")
    assert [float(tick) for tick in ticks] == [0.0, 0.5, 1.0], ticks
    assert metric_row.locator("line.threshold").count() == 0
    difference = page.locator('#metrics .forest-difference[data-gate="no-regression"]')
    assert difference.count() == 1 and "this run minus baseline main" in difference.inner_text()
    plot = difference.locator("svg.diff")
    zero = float(plot.locator("line.zero").get_attribute("x1") or "nan")
    limit = float(plot.locator("line.threshold").get_attribute("x1") or "nan")
    point = float(plot.locator("circle.point").get_attribute("cx") or "nan")
    assert point < limit < zero  # a real drop: the point left of the limit, which is left of no change
    difference.get_by_role("link", name="comparison").click()
    assert page.evaluate("location.hash") == "#cmp-1"


def test_a_flipped_id_links_to_its_example_card(open_page: Any, gate_page: Path) -> None:
    from playwright.sync_api import expect  # imported where used: conftest reports a missing playwright itself

    watched = open_page()
    page = watched.open(gate_page)
    flips = page.locator("#cmp-1-regressed")
    flips.locator("summary").click()
    link = flips.get_by_role("link", name="q030")
    assert link.count() == 1
    link.click()
    card = page.locator(page.evaluate("location.hash"))
    # The card is revealed on `hashchange`, an event the browser fires after the click returns: wait for it
    # (bounded, playwright's default 5 s) rather than read the page before it has run.
    expect(card).to_be_visible()
    assert "q030" in card.locator("summary").inner_text()
    assert card.locator("details").get_attribute("open") is not None
    # A filter that hides the card: following the link again clears it and shows the card.
    page.locator("#f-text").fill("no such example")
    assert not card.is_visible()
    page.evaluate("location.hash = ''")
    link.click()
    expect(card).to_be_visible()
