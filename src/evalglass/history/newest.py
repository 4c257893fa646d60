"""The runs the history lists as a branch's newest for one suite: candidates for a baseline that follows a branch.

Nothing here is trusted: the branch and dataset columns only narrow the search (indexed, newest first), and each
candidate is judged by its own signed files (``engine.decide.baselinesearch``). A candidate's digest list is read alone
first (one small artifact), so a source refuses an unsigned or foreign-key run without writing the whole run back;
a run whose stored files or rows were edited is refused when read, as every reader but ``verify`` refuses it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, make_url, select

from evalglass.engine.decide.baselinesearch import refuse_committed
from evalglass.engine.runs.digests import DIGESTS_FILE
from evalglass.errors import SetupError
from evalglass.history.blobs import restore, stored_pieces
from evalglass.history.location import shown
from evalglass.history.query import newest_first
from evalglass.history.refs import history_exists, read_recorded, refuse_findings
from evalglass.history.schema import ArtifactRow, RunRow
from evalglass.history.store import failures_as_setup_errors

#: Rows fetched per query while candidates are examined (a source usually takes the first).
PAGE = 20


@dataclass(frozen=True)
class RecordedCandidate:
    """A run of the history offered as a candidate; its files are read back only when asked for."""

    engine: Engine
    url: str
    pk: int
    run_id: str
    stack: ExitStack

    @property
    def where(self) -> str:
        return f"the run history ({shown(self.url)})"

    def digests_file(self) -> Path | None:
        with failures_as_setup_errors(self.url, "read"), self.engine.connect() as connection:
            stored = connection.execute(
                select(ArtifactRow.sha256).where(ArtifactRow.run_pk == self.pk, ArtifactRow.name == DIGESTS_FILE)
            ).scalar()
            if stored is None:
                return None
            target = Path(self.stack.enter_context(tempfile.TemporaryDirectory(prefix="evalglass-digests-")))
            found, _ = restore(stored_pieces(connection, self.pk, DIGESTS_FILE), target / DIGESTS_FILE)
        if found != stored:
            raise SetupError(f"its {DIGESTS_FILE} was edited in the history database")
        return target / DIGESTS_FILE

    def folder(self) -> Path:
        with failures_as_setup_errors(self.url, "read"):
            resolved = read_recorded(self.engine, self.pk, self.run_id, self.stack)
        refuse_findings(resolved, self.run_id)
        return resolved.folder


def newest_runs(url: str, stack: ExitStack, branch: str, suite: str) -> Iterator[RecordedCandidate]:
    """The history's runs recorded on ``branch`` for dataset ``suite``, newest first (none when there is no
    history yet: reading must not create one)."""
    if not history_exists(url):
        return
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and database and database != ":memory:":
        refuse_committed(Path(database), "a run history file")
    from evalglass.history.session import open_history

    engine = open_history(url)
    stack.callback(engine.dispose)
    query = newest_first(branch).add_columns(RunRow.run_id).where(RunRow.dataset_name == suite)
    offset = 0
    while True:
        with failures_as_setup_errors(url, "read"), engine.connect() as connection:
            rows = connection.execute(query.offset(offset).limit(PAGE)).all()
        for pk, run_id in rows:
            yield RecordedCandidate(engine=engine, url=url, pk=pk, run_id=run_id, stack=stack)
        if len(rows) < PAGE:
            return
        offset += PAGE
