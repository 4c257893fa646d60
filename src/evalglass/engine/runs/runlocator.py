"""A port for finding runs the ledger names other than by folder: by reference (``baselines: NAME: run:
main@latest``), or as the newest runs of a branch (a baseline approved as a source: ``branch``, ``signed_by``). A
run is given its locator as one of its options (``engine.jobs.pipeline.RunOptions(locator=...)``, likewise
``engine.jobs.preflight``): the Python API builds the run history's (``evalglass.history.locator``) for every run, the
command line and the pytest plugin through it, so all three resolve a baseline alike. Nothing process-global is
consulted: without a locator, a baseline is a folder and nothing else.

The locator only finds files. Trust comes from the ledger: a pinned baseline's fingerprint is checked exactly as
for a folder, so a reference that resolves to any other run than the approved one is ``baseline_stale``; a
candidate of a source is judged by its own signature (``engine.decide.baselines``), never by what the locator says of
it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol


class RunCandidate(Protocol):
    """One run a locator offers as a branch's newest. Reading it whole may be costly (a run written back from a
    database), so its digest list comes first: most candidates a source refuses are refused on it alone."""

    @property
    def run_id(self) -> str:
        """The run's id as the locator lists it (for messages; the run record's is the one believed)."""
        ...

    @property
    def where(self) -> str:
        """Where it was found, as a message may show it (a database URL without its password, a folder)."""
        ...

    def digests_file(self) -> Path | None:
        """The run's ``digests.json`` (None: it has none). Raises SetupError when it cannot be read."""
        ...

    def folder(self) -> Path:
        """The whole run as a folder. Raises SetupError when it cannot be read (edited in the history)."""
        ...


class RunLocator(Protocol):
    def __call__(self, reference: str) -> Path | None:
        """The folder holding the run ``reference`` names (None: no such run), or raises SetupError."""
        ...

    def newest(self, branch: str, suite: str) -> Iterator[RunCandidate]:
        """Runs the locator lists as made on ``branch`` for dataset ``suite``, newest first (as it orders them:
        nothing it says is trusted). Raises SetupError when the runs cannot be listed."""
        ...
