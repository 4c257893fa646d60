"""The terminal console shows text from configs, ledgers and check output as written."""

from __future__ import annotations

from evalglass.cli import _console


def test_emoji_codes_are_not_substituted() -> None:
    console = _console()
    with console.capture() as captured:
        console.print("checker said :thumbs_up: for {target}")
    assert captured.get() == "checker said :thumbs_up: for {target}\n"
