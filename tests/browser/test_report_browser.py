"""The HTML report in a real browser: what a reader sees, clicks and types, in light, dark and at 375 px.

Every test fails if the page logs a console error (see conftest). Screenshots land in the test's tmp folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import make_project, run_cli
from tests.e2e.reports import HOSTILE, report_project

ROWS = 120  # more than one page of the explorer (50 per page)


@pytest.fixture(scope="module")
def blocked_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocked")
    project = report_project(root, ROWS)
    assert project.cli("report", "out", "--out", "report.html").code == 0
    return root / "report.html"


@pytest.fixture(scope="module")
def informational_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("informational")
    project = make_project(root)
    project.run("--out", "out", "--html", "report.html")
    return root / "report.html"


@pytest.fixture(scope="module")
def checks_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("checks")
    assert run_cli("run", "--example", "bound-checks", "--html", "report.html", cwd=root).code == 1
    return root / "report.html"


def visible_ids(page: Any) -> list[str]:
    return page.locator("#ex-list > li:visible .ex-id").all_inner_texts()


def test_the_verdict_gates_metrics_and_population_are_shown(open_page: Any, blocked_page: Path) -> None:
    watched = open_page()
    page = watched.open(blocked_page)
    assert page.locator("h1").inner_text() == "Verdict: blocked"
    assert "could not be decided honestly" in page.locator(".banner").inner_text()
    gate = page.locator("article.gate", has_text="accuracy")
    assert gate.locator(".badge").inner_text() == "blocked"
    text = gate.inner_text()
    assert "incomplete_measurement" in text and "tolerate" in text  # the reason and its repair hint
    assert page.locator(".forest-row svg.plot").count() == 2
    assert page.locator(".forest-row", has_text="exact").locator("line.threshold").count() == 1
    population = page.locator(".pop", has_text="exact").inner_text()
    assert f"{ROWS - 1} included" in population and "1 non_evaluable/not_applicable" in population
    assert "reference_missing" in population
    assert watched.shot("light").stat().st_size > 0


def test_informational_is_visibly_not_a_pass(open_page: Any, informational_page: Path) -> None:
    watched = open_page()
    page = watched.open(informational_page)
    assert page.locator("h1").inner_text() == "Verdict: informational"
    assert page.locator(".headline").inner_text().startswith("Not a pass")
    colour = page.eval_on_selector("h1", "e => getComputedStyle(e).color")
    pass_colour = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--pass').trim()")
    assert colour != "rgb(26, 127, 55)" and pass_colour == "#1a7f37"
    watched.shot("informational")


def test_filters_by_state_metric_and_text(open_page: Any, blocked_page: Path) -> None:
    page = open_page().open(blocked_page)
    assert len(visible_ids(page)) == 50  # first page of 120
    assert page.locator("#ex-status").inner_text().startswith("Showing 1–50 of 120 matching")
    page.select_option("#f-state", "non_evaluable")
    assert visible_ids(page) == ["ex-0005"]
    page.select_option("#f-metric", "affirmative")
    assert visible_ids(page) == []
    assert page.locator("#ex-empty").is_visible()
    page.select_option("#f-state", "")
    assert len(visible_ids(page)) == 50
    page.select_option("#f-metric", "exact")
    page.select_option("#f-state", "look")
    looked = page.locator("#ex-status").inner_text()
    # 40 answer "no" (every third), plus the hostile output, the needle and the excluded ex-0005
    assert "of 43 matching" in looked
    page.select_option("#f-metric", "")
    page.select_option("#f-state", "")
    page.fill("#f-text", "NEEDLE-in")
    assert visible_ids(page) == ["ex-0007"]
    page.fill("#f-text", "")
    assert len(visible_ids(page)) == 50


def test_pages_and_rows_work_from_the_keyboard(open_page: Any, blocked_page: Path) -> None:
    watched = open_page()
    page = watched.open(blocked_page)
    first = visible_ids(page)
    page.focus("#ex-next")
    page.keyboard.press("Enter")
    second = visible_ids(page)
    assert len(second) == 50 and not set(first) & set(second)
    assert "Showing 51–100" in page.locator("#ex-status").inner_text()
    page.focus("#ex-next")
    page.keyboard.press("Space")
    assert len(visible_ids(page)) == ROWS - 100
    assert page.locator("#ex-next").is_disabled()
    outline = page.eval_on_selector("#ex-prev", "e => { e.focus(); return getComputedStyle(e).outlineStyle }")
    assert outline != "none"  # a visible focus ring
    page.keyboard.press("Enter")
    summary = page.locator("#ex-list > li:visible summary").first
    summary.focus()
    page.keyboard.press("Enter")
    assert page.locator("#ex-list > li:visible details").first.get_attribute("open") is not None
    # Every control has a label a screen reader announces.
    for control in ("#f-metric", "#f-state", "#f-text"):
        assert page.locator(f"label[for='{control[1:]}']").count() == 1
    watched.shot("keyboard")


def test_hostile_output_is_shown_as_text_and_never_runs(open_page: Any, blocked_page: Path) -> None:
    page = open_page().open(blocked_page)
    page.fill("#f-text", "ex-0002")
    row = page.locator("#ex-list > li:visible")
    row.locator("summary").click()
    assert HOSTILE in row.locator("pre").nth(1).inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 1


def test_dark_mode_is_dark_and_readable(open_page: Any, blocked_page: Path) -> None:
    watched = open_page(scheme="dark")
    page = watched.open(blocked_page)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    text = page.evaluate("getComputedStyle(document.body).color")
    assert _luminance(background) < 0.1 and _luminance(text) > 0.7
    watched.shot("dark")


@pytest.mark.parametrize(("which", "scheme"), [("blocked", "light"), ("blocked", "dark"), ("checks", "light")])
def test_no_layout_break_at_375_px(
    open_page: Any, blocked_page: Path, checks_page: Path, which: str, scheme: str
) -> None:
    watched = open_page(width=375, scheme=scheme)
    page = watched.open(blocked_page if which == "blocked" else checks_page)
    for summary in page.locator("#ex-list > li:visible summary").all()[:5]:
        summary.click()
    for more in page.locator("details.more summary").all():
        more.click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    for selector in ("#f-metric", "#f-state", "#f-text"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
    watched.shot(f"narrow-{which}-{scheme}")


def _luminance(css: str) -> float:
    red, green, blue = (int(part) / 255 for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue
