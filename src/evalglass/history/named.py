"""The run a reader names (docs/history.md, "Run references"): a folder of this machine, the last run, or a run
recorded in the history, resolved once for every reader (``evalglass.api``: view, explain, report, export, verify,
compare).

Only the standard library is imported here: the history (SQLAlchemy) loads when a reference must be looked up in it,
so reading a run folder or the last run costs nothing of the database.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.errors import SetupError

if TYPE_CHECKING:
    from evalglass.history.refs import ResolvedRun

#: The reference to the newest run (``history.refs.LAST``; spelt here so that naming no run imports no history).
LAST_REF = "last"


def named_run(
    folder: str | os.PathLike[str] | None, db: str | None, stack: ExitStack, *, verifying: bool = False
) -> Path | ResolvedRun:
    """A folder of this machine (a Path), or a run the history resolved into a temporary folder that ``stack``
    removes.

    Nothing named: the last-run pointer's folder, or with ``db`` the newest run in that history. ``last`` without
    ``db``: the pointer's folder when it names one that exists (the run this project last made, whose report then
    goes beside it), else the newest run in the history. Anything else, and ``last`` with ``db``: an existing
    folder as it is, else a reference looked up in the history (``db``, else ``$EVALGLASS_DB``, else the local
    one). Only ``verifying`` (``verify``) is handed a recorded run whose stored files or rows were edited (it
    reports them); every other reader refuses it."""
    if folder is None and db is None:
        return last_run_folder(strict=True) or Path()
    ref = LAST_REF if folder is None else os.fspath(folder)
    if Path(ref).exists():  # a folder of this machine, as the history would find it, without loading the history
        return Path(ref)
    if ref == LAST_REF and db is None:
        pointed = last_run_folder(strict=False)
        if pointed is not None:
            return pointed
    from evalglass.history.location import database_url
    from evalglass.history.refs import refuse_findings, resolve

    resolved = resolve(ref, database_url(db, os.environ), stack)
    if not verifying:
        refuse_findings(resolved, ref)
    return resolved


def named_folder(folder: str | os.PathLike[str] | None, db: str | None, stack: ExitStack) -> Path:
    """The folder :func:`named_run` finds (unchecked: the reader says what is wrong with it)."""
    named = named_run(folder, db, stack)
    return named if isinstance(named, Path) else named.folder


def last_run_folder(*, strict: bool) -> Path | None:
    """The folder ``.evalglass/last-run`` names. ``strict``: one line when there is no pointer or it names no path
    (its folder is checked by the caller); otherwise None unless it names a folder that exists."""
    from evalglass.engine.runs.artifacts import LAST_RUN_POINTER
    from evalglass.readers.userfiles import pointer_text, read_regular

    if not LAST_RUN_POINTER.exists():
        if not strict:
            return None
        raise SetupError(
            f"no previous run recorded in {LAST_RUN_POINTER}",
            fix="run `evalglass run` first or name a run folder",
        )
    try:
        raw = read_regular(LAST_RUN_POINTER, what="last-run pointer", limit=1 << 16)
    except SetupError:
        if strict:
            raise
        return None
    text = pointer_text(raw)
    if text is None:
        if not strict:
            return None
        raise SetupError(
            "the last-run pointer does not hold a folder path",
            where=str(LAST_RUN_POINTER),
            fix="name a run folder, or run `evalglass run` again to rewrite it",
        )
    return Path(text) if strict or Path(text).is_dir() else None
