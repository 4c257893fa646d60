"""One headless Chromium per test session, driven by Playwright against the system's browser (never a download).

Without a Chromium the browser tests skip loudly on a developer's machine and fail in CI (``CI=true``), where
``.ci/run`` installs Debian's package: a missing browser must never turn the report's tests green by skipping.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    message = f"BROWSER TESTS SKIPPED: {reason}. Install it (apt-get install -y chromium) to test the HTML report."
    warnings.warn(message, stacklevel=1)
    pytest.skip(message)


def chromium_path() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        _unavailable("no chromium executable on this machine")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


class Page:
    """A page with its console watched: any console error or uncaught exception fails the test at teardown."""

    def __init__(self, page: Any, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self.errors: list[str] = []
        page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri())
        return self.page

    def shot(self, name: str, *, full_page: bool = True) -> Path:
        target = self.shots / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=full_page)
        return target


@pytest.fixture
def open_page(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """``open_page(width=..., scheme=...)`` → a watched :class:`Page`; screenshots go under the test's tmp folder."""
    pages: list[Page] = []
    contexts: list[Any] = []

    def make(*, width: int = 1280, scheme: str = "light") -> Page:
        context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        contexts.append(context)
        shots = tmp_path / "screenshots"
        shots.mkdir(exist_ok=True)
        page = Page(context.new_page(), shots)
        pages.append(page)
        return page

    yield make
    for context in contexts:
        context.close()
    errors = [error for page in pages for error in page.errors]
    assert not errors, f"the page logged console errors: {errors}"
