"""The run history's :data:`~evalglass.engine.runlocator.RunLocator`: how a run finds a baseline the ledger names by
reference (``main@latest``, a run id) in the history database.

The Python API builds one for every run (``evalglass.run(db=...)``; the command line's ``run --db`` and the pytest
plugin go through it), so the three resolve a reference alike. Importing this module is cheap: the database
machinery loads only when a reference is looked up, which a run without a baseline reference never does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from evalglass.engine.runlocator import RunLocator
from evalglass.history.location import database_url


def history_locator(db: str | None, stack: ExitStack, env: Mapping[str, str] = os.environ) -> RunLocator:
    """Finds runs in ``db`` (else ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``: chosen now, once per run).
    A run found is written to a temporary folder that ``stack`` removes; a run whose stored files or rows were
    edited is refused (SetupError), as every reader but ``verify`` refuses it."""
    url = database_url(db, env)

    def locate(reference: str) -> Path | None:
        from evalglass.history.refs import refuse_findings, resolve

        found = resolve(reference, url, stack)
        refuse_findings(found, reference)
        return found.folder if found.run_id is not None else None

    return locate
