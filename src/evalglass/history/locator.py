"""The run history's :data:`~evalglass.engine.runs.runlocator.RunLocator`: how a run finds a baseline the ledger names
by reference (``main@latest``, a run id) in the history database, and the newest runs of a branch a baseline approved
as a source chooses from (``engine.decide.baselinesearch``).

The Python API builds one for every run (``evalglass.run(db=...)``; the command line's ``run --db`` and the pytest
plugin go through it), so the three resolve a reference alike. Importing this module is cheap: the database
machinery loads only when a reference is looked up, which a run without a baseline reference never does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from evalglass.engine.runs.runlocator import RunCandidate, RunLocator
from evalglass.history.location import database_url


@dataclass(frozen=True)
class HistoryLocator:
    """Finds runs in one history database, chosen when the run starts. Runs read back live in temporary folders
    that ``stack`` removes; a run whose stored files or rows were edited is refused (SetupError), as every reader
    but ``verify`` refuses it."""

    url: str
    stack: ExitStack

    def __call__(self, reference: str) -> Path | None:
        from evalglass.history.refs import refuse_findings, resolve

        found = resolve(reference, self.url, self.stack)
        refuse_findings(found, reference)
        return found.folder if found.run_id is not None else None

    def newest(self, branch: str, suite: str) -> Iterator[RunCandidate]:
        from evalglass.history.newest import newest_runs

        return newest_runs(self.url, self.stack, branch, suite)


def history_locator(db: str | None, stack: ExitStack, env: Mapping[str, str] = os.environ) -> RunLocator:
    """Finds runs in ``db`` (else ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``: chosen now, once per run)."""
    return HistoryLocator(database_url(db, env), stack)
