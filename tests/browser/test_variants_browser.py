"""A run with variants in the HTML report (issue 33): the pair matrix per metric, in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import run_cli

PAGE_DOCS = Path(__file__).resolve().parents[2] / "docs" / "choosing-models.md"


@pytest.fixture(scope="module")
def variants_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/choosing-models.md's worked example, rendered."""
    from tests.e2e.test_docs_choosing_models import blocks

    root = tmp_path_factory.mktemp("variants")
    models, make_data = blocks("python")
    (root / "models.py").write_text(models)
    exec(compile(make_data.replace("questions.jsonl", str(root / "questions.jsonl")), "make_data", "exec"))
    config = next(block for block in blocks("yaml") if "dataset" in block)
    (root / "evalglass.yaml").write_text(config)
    (root / "authority.yaml").write_text("version: 1\n")
    result = run_cli("run", "--no-history", "--out", "out", "--html", "report.html", cwd=root)
    assert result.code == 0, result.err
    return root / "report.html"


def test_the_pair_matrix_shows_every_pair_with_its_adjusted_interval(open_page: Any, variants_page: Path) -> None:
    watched = open_page()
    page = watched.open(variants_page)
    matrix = page.locator("article.variant-matrix[data-metric='correct']")
    assert "Holm-adjusted for 3 pairs" in matrix.locator("h3").inner_text()
    headers = [text.lower() for text in matrix.locator("thead th").all_inner_texts()]
    assert headers == ["row − column", "a", "b", "c"]
    row_a = matrix.locator("tbody tr").nth(0)
    cell_ab = row_a.locator("td").nth(1).inner_text()
    assert "+0.015" in cell_ab and "indistinguishable at this n" in cell_ab and "at 95%" in cell_ab
    cell_ac = row_a.locator("td").nth(2).inner_text()
    assert "+0.235" in cell_ac and "a better" in cell_ac and "98.33%" in cell_ac
    assert matrix.locator("td.apart").count() == 2 and matrix.locator("td.together").count() == 1
    assert "{a, b} | {c}" in matrix.locator(".groups").inner_text()
    assert page.locator("nav a[href='#variants']").count() == 1
    assert watched.shot("variants").stat().st_size > 0


def test_the_matrix_fits_a_phone(open_page: Any, variants_page: Path) -> None:
    watched = open_page(width=375)
    page = watched.open(variants_page)
    matrix = page.locator("article.variant-matrix")
    assert matrix.is_visible()
    # The page itself never scrolls sideways: a wide matrix scrolls within its own box.
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert watched.shot("variants-375").stat().st_size > 0
