"""One headless Chromium per test session, driven by Playwright against the system's browser (never a download).

Without a Chromium the browser tests skip loudly on a developer's machine and fail in CI (``CI=true``), where
``.ci/run`` installs Debian's package: a missing browser must never turn the report's tests green by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
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
def chromium_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The session's one Chromium process, listening for DevTools on 127.0.0.1; its ``http://`` endpoint.

    Playwright connects to it per module (below) rather than owning it for the whole session: Playwright's sync API
    keeps an asyncio loop running on the main thread while it is connected, and every other test that calls
    ``asyncio.run`` on this worker would fail if that lasted the session.
    """
    executable = chromium_path()
    if executable is None:
        _unavailable("no chromium executable on this machine")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[test]')")
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [
            str(executable),
            "--headless",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            *CHROMIUM_ARGS,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        port_file = profile / "DevToolsActivePort"  # Chromium writes the port it chose here
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                err = (
                    proc.stderr.read().decode(errors="replace")[-2000:]
                    if proc.stderr and proc.poll() is not None
                    else ""
                )
                pytest.fail(f"chromium did not start (exit {proc.poll()}): {err}", pytrace=False)
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text().split()[0]}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser(chromium_endpoint: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        connected = playwright.chromium.connect_over_cdp(chromium_endpoint)
        yield connected
        connected.close()  # disconnects; the session's Chromium goes on


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
