"""What ``evalglass history`` lists is what its readers would show: each listed run is checked again, from the files
the history stores, by the check every reader of a run goes through (``engine.decide.consistency``).

A row's verdict was written when the run entered the history, by the EvalGlass of that day: a row recorded before a
rule existed (``core.recordrules``: a run record claiming older rules is green only if the current rules agree), or
edited in the database since, would otherwise be listed green while ``view``, ``explain`` or ``verify`` refuse the
same run. So, per listed run: its scorecard and run record are read back from their stored chunks and hashed against
the stored SHA-256, the summary rows are compared with what those files say (``history.rows.row_findings``), and the
scorecard is decided again from the run record under the current rules (``scorecard_problems``). A run that fails
any of these is listed as ``refused``, with the first problem, never with its stored verdict.

The cost is two small files per listed run (``limit`` of them, 20 by default), decompressed and parsed; the scores
are not read (``verify`` does that).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable
from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy import Connection, Engine, select

from evalglass.core.exitcodes import ExitCode
from evalglass.core.fingerprint import PREFIX
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, SCORECARD_FILE
from evalglass.history.blobs import stored_pieces
from evalglass.history.schema import ArtifactRow, GateResultRow, MetricResultRow, RunRow

#: The verdict a listed run shows when its stored files do not support its stored verdict, and its exit code: what
#: a reader refusing it exits with (``SETUP``, 2), never the stored verdict's 0.
REFUSED = "refused"
REFUSED_EXIT = int(ExitCode.SETUP)


def refusals(engine: Engine, pks: Iterable[int]) -> dict[int, str]:
    """Per run (by primary key) that its readers would refuse, the first reason, in one line; runs that add up are
    left out."""
    found: dict[int, str] = {}
    with engine.connect() as connection:
        for pk in pks:
            try:
                problem = _problem(connection, pk)
            except (TypeError, ValueError, LookupError, zlib.error) as exc:
                # A row edited to what no EvalGlass writes (a chunk set to NULL or to text, a number where a name
                # goes): its run cannot be checked, so it is refused, in one line, never a traceback or its verdict.
                problem = f"its stored rows do not read: {type(exc).__name__}: {_first_line(exc)}"
            if problem is not None:
                found[pk] = problem
    return found


def _first_line(exc: BaseException) -> str:
    lines = str(exc).splitlines()
    return lines[0] if lines else ""


def _problem(connection: Connection, pk: int) -> str | None:
    from evalglass.engine.decide.consistency import scorecard_problems
    from evalglass.history.rows import row_findings

    files: dict[str, bytes] = {}
    for name in (SCORECARD_FILE, RUNRECORD_FILE):
        data = _stored(connection, pk, name)
        if isinstance(data, str):
            return data
        files[name] = data
    try:
        card = Scorecard.model_validate(orjson.loads(files[SCORECARD_FILE]))
        record = RunRecord.model_validate(orjson.loads(files[RUNRECORD_FILE]))
    except (orjson.JSONDecodeError, ValidationError, ValueError) as exc:
        return f"its stored files do not load: {_first_line(exc)}"
    findings = row_findings(*stored_summary(connection, pk), card, record)
    if findings:
        field, stored, derived = findings[0]
        return f"edited in the history database: {field} is {stored}, its files say {derived}"
    problems = scorecard_problems(card, record)
    return f"its files do not add up under the current rules: {problems[0]}" if problems else None


def _stored(connection: Connection, pk: int, name: str) -> bytes | str:
    """The stored file's bytes, or why they cannot be trusted."""
    stored = connection.execute(
        select(ArtifactRow.sha256).where(ArtifactRow.run_pk == pk, ArtifactRow.name == name)
    ).scalar_one_or_none()
    if stored is None:
        return f"the history stores no {name} for it"
    try:
        data = b"".join(zlib.decompress(piece) for piece in stored_pieces(connection, pk, name))
    except zlib.error:
        return f"its stored {name} does not decompress"
    if PREFIX + hashlib.sha256(data).hexdigest() != stored:
        return f"its stored {name} is not the file recorded ({stored})"
    return data


def stored_summary(
    connection: Connection, pk: int
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Run ``pk``'s summary rows as stored: its ``runs`` row, its gate rows and its metric rows (without keys)."""
    run = dict(connection.execute(select(*_columns(RunRow)).where(RunRow.pk == pk)).one()._mapping)
    gates = [
        dict(row._mapping)
        for row in connection.execute(select(*_columns(GateResultRow)).where(GateResultRow.run_pk == pk))
    ]
    metrics = [
        dict(row._mapping)
        for row in connection.execute(select(*_columns(MetricResultRow)).where(MetricResultRow.run_pk == pk))
    ]
    return run, gates, metrics


def _columns(model: Any) -> list[Any]:
    return [column for column in model.__table__.columns if column.key not in ("run_pk", "pk")]
