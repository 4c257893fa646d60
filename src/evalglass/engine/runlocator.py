"""A port for finding a run the ledger names by reference (``baselines: NAME: run: main@latest``) rather than by
folder. A run is given its locator as one of its options (``engine.pipeline.RunOptions(locator=...)``, likewise
``engine.preflight``): the Python API builds the run history's (``evalglass.history.locator``) for every run, the
command line and the pytest plugin through it, so all three resolve a baseline alike. Nothing process-global is
consulted: without a locator, a baseline is a folder and nothing else.

The locator only finds files. Trust comes from the ledger: the baseline's fingerprint is checked exactly as for a
folder, so a reference that resolves to any other run than the approved one is ``baseline_stale``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

#: Given a reference, the folder holding that run (None: no such run), or raises SetupError.
RunLocator = Callable[[str], Path | None]
