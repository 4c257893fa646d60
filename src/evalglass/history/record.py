"""Recording a finished run folder in the history: one transaction holding the run's row, its gate and metric
rows, and every artifact as compressed chunks with its SHA-256.

Nothing of a run is visible in the history until the transaction commits, so a process killed while recording
leaves no half-written run. The files are checked against the folder's ``digests.json`` as they are stored (their
hashes are computed in the same pass): a folder edited after its run is refused, not recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.exc import IntegrityError

from evalglass.engine.decide.consistency import load_checked
from evalglass.engine.runs.digests import load_digests
from evalglass.engine.runs.provenance import Provenance
from evalglass.errors import SetupError
from evalglass.history.blobs import Compressed, artifact_files
from evalglass.history.rows import gate_rows, metric_rows, run_columns
from evalglass.history.schema import ArtifactChunkRow, ArtifactRow, GateResultRow, MetricResultRow, RunRow


class AlreadyRecorded(SetupError):
    """The history already holds a run with this id (a run is recorded once)."""


@dataclass(frozen=True)
class Recorded:
    run_id: str
    files: int
    bytes: int


def record_folder(engine: Engine, folder: Path, *, source: str, provenance: Provenance) -> Recorded:
    """Record the finished run in ``folder``; raises :class:`AlreadyRecorded`, or ``SetupError`` for a folder
    that is not a finished run or whose files differ from its digests."""
    checked = load_checked(folder)  # a folder that does not add up is not recorded (nor shown by `history`)
    card, record = checked.scorecard, checked.record
    digests = load_digests(folder)
    names = artifact_files(folder)
    signed = digests.provenance if digests is not None and digests.signature is not None else None
    values = {
        **run_columns(card, record),
        "recorded_at": datetime.now(UTC).replace(tzinfo=None),
        "source": source,
        # A signed run's branch and commit are the ones its signer saw (a run imported elsewhere keeps them).
        "git_commit": signed.git_commit if signed is not None else provenance.git_commit,
        "git_branch": signed.git_branch if signed is not None else provenance.git_branch,
        "git_dirty": provenance.git_dirty,
        "ci_provider": provenance.ci_provider,
        "ci_job_url": provenance.ci_job_url,
    }
    total = 0
    with engine.begin() as connection:
        if connection.execute(select(RunRow.pk).where(RunRow.run_id == card.run_id)).first() is not None:
            raise _already(card.run_id, folder)
        try:
            pk = connection.execute(insert(RunRow).values(values)).inserted_primary_key[0]  # type: ignore[index]
        except IntegrityError:  # another process recorded the same run id between the check and the insert
            raise _already(card.run_id, folder) from None
        gates = gate_rows(card)
        if gates:
            connection.execute(insert(GateResultRow), [{"run_pk": pk, **row} for row in gates])
        metrics = metric_rows(card)
        if metrics:
            connection.execute(insert(MetricResultRow), [{"run_pk": pk, **row} for row in metrics])
        for name in names:
            stored = _store_file(connection, pk, name, folder / name)
            expected = None if digests is None else digests.files.get(name)
            if expected is not None and expected != stored.sha256:
                raise SetupError(
                    f"{name} differs from the run's digests.json; the folder was edited after its run",
                    where=str(folder),
                    fix="record only untouched run folders (`evalglass verify` names what changed)",
                )
            total += stored.size
        if digests is not None:
            missing = sorted(set(digests.files) - set(names))
            if missing:
                raise SetupError(
                    f"{', '.join(missing)} listed in digests.json but missing from the folder",
                    where=str(folder),
                    fix="record only complete run folders",
                )
    return Recorded(run_id=card.run_id, files=len(names), bytes=total)


def _store_file(connection: Connection, pk: int, name: str, path: Path) -> Compressed:
    pieces = Compressed(path)
    count = 0
    for seq, data in enumerate(pieces):
        connection.execute(insert(ArtifactChunkRow).values(run_pk=pk, name=name, seq=seq, data=data))
        count += 1
    connection.execute(
        insert(ArtifactRow).values(run_pk=pk, name=name, size=pieces.size, sha256=pieces.sha256, chunks=count)
    )
    return pieces


def _already(run_id: str, folder: Path) -> AlreadyRecorded:
    return AlreadyRecorded(
        f"run {run_id} is already in the history",
        where=os.fspath(folder),
        fix="nothing to do: a run is recorded once",
    )


def record_after_run(folder: Path, url: str, work_tree: Path, *, finished_before: bool = False) -> str | None:
    """``evalglass run``'s one call into the history, after the run's folder is complete: record it, or return
    the one-line warning saying why not. It never raises: whether the history could be updated does not change
    a run's verdict or exit code, and ``history import`` can add the folder later. ``finished_before``: a finished
    run resumed, which the history holding already is no problem (its warning told the user to import it again)."""
    from evalglass import redaction
    from evalglass.engine.runs.provenance import provenance
    from evalglass.history.session import open_history
    from evalglass.history.store import describe_failure, failures_as_setup_errors

    try:
        engine = open_history(url)
        try:
            with failures_as_setup_errors(url, "written"):
                record_folder(engine, folder, source="run", provenance=provenance(work_tree, os.environ))
        finally:
            engine.dispose()
    except AlreadyRecorded as exc:
        if finished_before:
            return None
        reason = exc.what
    except SetupError as exc:
        reason = exc.what
    except Exception as exc:  # any failure of the history is reported, never the run's failure
        reason = describe_failure(url, exc)
    else:
        return None
    from evalglass.history.location import shown

    line = (
        f"warning: the run history ({shown(url)}) was not updated ({reason}); "
        f"add this run later: evalglass history import {folder}"
    )
    return redaction.current().text(line)
