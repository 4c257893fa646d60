"""A run with variants in the HTML report's example list (issues 33 and 30): each example shows every variant's
output, read from the run folder, a long one expandable, beside the input and reference once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_variant_examples_cli import long_output, variant_project


@pytest.fixture(scope="module")
def variant_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = variant_project(tmp_path_factory.mktemp("variant-outputs"))
    result = project.run("--html", "report.html")
    assert result.code == 0, result.err
    return project.root / "report.html"


def test_each_example_shows_every_variants_output(open_page: Any, variant_report: Path) -> None:
    watched = open_page()
    page = watched.open(variant_report)
    card = page.locator("li.ex").filter(has=page.locator(".ex-id", has_text="ex-3"))
    card.locator("summary").first.click()
    outputs = card.locator(".io-output")
    assert outputs.count() == 3
    assert [outputs.nth(i).locator("h4").text_content() for i in range(3)] == [
        "Output of good",
        "Output of long",
        "Output of wrong",
    ]
    assert outputs.nth(0).locator("pre").inner_text() == "yes 3"
    assert outputs.nth(2).locator("pre").inner_text() == "no ex-3"
    assert card.locator(".io-input").count() == 1 and "what is 3?" in card.locator(".io-input").inner_text()
    assert card.locator(".io-reference pre").inner_text() == "yes 3"
    # The long output: its first characters at first, the whole text once expanded.
    long = outputs.nth(1).locator("details.long")
    assert long.locator("> pre").is_hidden()
    long.locator("summary").click()
    assert long.locator("> pre").inner_text() == long_output("ex-3")
    assert watched.shot("variant-outputs").stat().st_size > 0
