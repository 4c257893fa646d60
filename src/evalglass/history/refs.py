"""Run references: how a command names a run, resolved to a folder it can read.

A reference is, in this order: an existing folder (used as it is); ``last`` (the newest run in the history); a
run id; ``BRANCH@latest`` (the newest run recorded on that branch); ``BRANCH@YYYY-MM-DD`` (the newest run on that
branch started on or before that day, UTC). A run found in the history is written back to a private temporary
folder (removed when the command ends) with every file checked against its stored SHA-256, and its summary rows
checked against those files; what differs is reported (``verify``) or refused (every other reader).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.engine import make_url

from evalglass.errors import SetupError
from evalglass.history.location import shown
from evalglass.history.query import newest_first
from evalglass.history.schema import RunRow

LAST = "last"
_BRANCH_REF = re.compile(r"^(?P<branch>.+)@(?P<when>latest|\d{4}-\d{2}-\d{2})$")
REF_FORMS = "a run folder, a run id, BRANCH@latest, BRANCH@YYYY-MM-DD or last"


@dataclass(frozen=True)
class ResolvedRun:
    folder: Path
    #: Set when the run was read from the history.
    run_id: str | None = None
    #: (field, stored, derived): stored files or summary rows that differ from what the run's files say.
    findings: tuple[tuple[str, Any, Any], ...] = field(default=())


def is_reference(text: str) -> bool:
    """Whether ``text`` names a run in the history rather than a folder (it still may be a folder's name)."""
    return text == LAST or _BRANCH_REF.match(text) is not None or "/" not in text


def find_run(engine: Engine, ref: str) -> tuple[int, str] | None:
    """(pk, run id) of the run ``ref`` names in the history, or None."""
    match = _BRANCH_REF.match(ref)
    if ref == LAST:
        query = newest_first(None)
    elif match is not None:
        query = newest_first(match["branch"])
        if match["when"] != "latest":
            try:
                day = date.fromisoformat(match["when"])
            except ValueError:
                raise SetupError(
                    f"{ref}: {match['when']} is not a date", fix="write the day as YYYY-MM-DD, e.g. main@2026-12-01"
                ) from None
            query = query.where(RunRow.created_at < datetime.combine(day + timedelta(days=1), datetime.min.time()))
    else:
        query = select(RunRow.pk).where(RunRow.run_id == ref)
    with engine.connect() as connection:
        pk = connection.execute(query.limit(1)).scalar()
        if pk is None:
            return None
        run_id = connection.execute(select(RunRow.run_id).where(RunRow.pk == pk)).scalar_one()
    return pk, run_id


def history_exists(url: str) -> bool:
    """False for a SQLite file that is not there (reading must not create an empty history); True otherwise.
    Something else at its path (a folder, a FIFO) is refused: "no history" would read as "no runs yet", and a
    reader asking for ``last`` would be told there is nothing to find when the history is there but unreadable."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return True
    try:
        mode = os.stat(parsed.database).st_mode
    except FileNotFoundError:
        return False
    except OSError:  # unsearchable, a loop of links, a name too long: opening it says which, as for any database
        return True
    if not stat.S_ISREG(mode):
        raise SetupError(
            "the history database is not a file (a folder or another kind of entry is at its path)",
            where=shown(url),
            fix="move it away (a new history is then started), or point --db / EVALGLASS_DB at the database file",
        )
    return True


def resolve(ref: str, url: str, stack: ExitStack, *, what: str = "run") -> ResolvedRun:
    """The folder ``ref`` names, or the history's run written to a temporary folder that ``stack`` removes."""
    candidate = Path(ref)
    if candidate.exists() or not is_reference(ref):
        return ResolvedRun(folder=candidate)
    if not history_exists(url):
        raise SetupError(
            f"no {what} folder here and no run history to look {ref!r} up in",
            where=shown(url),
            fix=f"name {REF_FORMS} (runs enter the history when `evalglass run` finishes, or by `history import`)",
        )
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    engine = open_history(url)
    stack.callback(engine.dispose)
    with failures_as_setup_errors(url, "read"):
        found = find_run(engine, ref)
        if found is None:
            raise SetupError(
                f"no {what} folder and no recorded run named {ref!r}",
                where=shown(url),
                fix=f"name {REF_FORMS}; `evalglass history` lists the recorded runs",
            )
        pk, run_id = found
        return read_recorded(engine, pk, run_id, stack)


def read_recorded(engine: Engine, pk: int, run_id: str, stack: ExitStack) -> ResolvedRun:
    """Run ``pk`` written back to a private temporary folder that ``stack`` removes, with what differs from its
    stored hashes and rows (``findings``)."""
    target = Path(tempfile.mkdtemp(prefix=f"evalglass-{run_id}-"))
    stack.callback(shutil.rmtree, target, ignore_errors=True)
    folder = target / run_id
    return ResolvedRun(folder=folder, run_id=run_id, findings=tuple(_read_back(engine, pk, folder)))


def _read_back(engine: Engine, pk: int, folder: Path) -> list[tuple[str, Any, Any]]:
    from evalglass.engine.runs.artifacts import load_runrecord, load_scorecard
    from evalglass.history.export import write_run
    from evalglass.history.recheck import stored_summary
    from evalglass.history.rows import row_findings

    findings: list[tuple[str, Any, Any]] = [
        (f"history.artifacts.{item.name}", item.recorded, item.found) for item in write_run(engine, pk, folder)
    ]
    if findings:
        return findings  # the files themselves are in question: their summary is not worth comparing
    with engine.connect() as connection:
        stored = stored_summary(connection, pk)
    return row_findings(*stored, load_scorecard(folder), load_runrecord(folder))


def refuse_findings(resolved: ResolvedRun, ref: str) -> None:
    """For readers other than ``verify``: a run whose stored files or rows were edited is not shown."""
    if resolved.findings:
        name, recorded, found = resolved.findings[0]
        raise SetupError(
            f"recorded run {ref!r} ({resolved.run_id}) was edited in the history database: {name} is {recorded}, "
            f"its files say {found}",
            fix="`evalglass verify` names every difference; record the run again from its folder",
        )
