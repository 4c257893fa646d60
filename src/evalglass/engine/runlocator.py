"""A port for finding a run the ledger names by reference (``baselines: NAME: run: main@latest``) rather than by
folder: the command line installs a locator backed by the run history (``evalglass.history``), which the engine
may not import. Without one installed, a baseline is a folder and nothing else.

The locator only finds files. Trust comes from the ledger: the baseline's fingerprint is checked exactly as for a
folder, so a reference that resolves to any other run than the approved one is ``baseline_stale``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

#: Given a reference, the folder holding that run (None: no such run), or raises SetupError.
RunLocator = Callable[[str], Path | None]

_installed: RunLocator | None = None


@contextlib.contextmanager
def installed(locator: RunLocator) -> Iterator[None]:
    global _installed
    previous, _installed = _installed, locator
    try:
        yield
    finally:
        _installed = previous


def locate(reference: str) -> Path | None:
    """The folder the installed locator finds for ``reference``; None when none is installed or it finds none."""
    return None if _installed is None else _installed(reference)
