"""The history's tables as SQLAlchemy 2 models, and the schema revision this code reads and writes.

One row per run (``runs``) with what ``history`` lists and filters on; one row per gate and per metric of a run
(their outcome, value and interval, for trends); and the run's artifacts themselves, each file as its SHA-256
(``artifacts``) and its bytes as zlib-compressed chunks (``artifact_chunks``), so a folder comes back byte for
byte on a machine that never had it, and a million-example run is a few dozen rows rather than a million.

Times are stored as naive UTC datetimes (SQLite has no time zones). Changing a table means a new Alembic revision
in ``migrations/versions/`` and a new :data:`HEAD_REVISION`; ``tests/history/test_migrations.py`` checks that the
migrations build exactly these tables.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

#: The newest migration; a database at another revision is upgraded (older) or refused (newer) on first use.
HEAD_REVISION = "0002"


class Base(DeclarativeBase):
    pass


class StoredBytes(TypeDecorator[bytes]):
    """A BLOB read back as bytes whatever the row was edited to: SQLite keeps a TEXT (or a number) written into a
    BLOB column, which SQLAlchemy's own reading refuses with a TypeError; read as its bytes, an edited chunk fails
    its hash like any other edit, in one line naming it. The column's DDL is LargeBinary's."""

    impl = LargeBinary
    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], bytes | None]:
        def process(value: Any) -> bytes | None:
            if value is None or isinstance(value, bytes):
                return value
            if isinstance(value, str):
                return value.encode("utf-8", "surrogateescape")
            if isinstance(value, bytearray | memoryview):
                return bytes(value)
            return str(value).encode()

        return process


class RunRow(Base):
    __tablename__ = "runs"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, doc="When the run started (UTC), from its run record.")
    recorded_at: Mapped[datetime] = mapped_column(DateTime, doc="When it entered the history (UTC).")
    source: Mapped[str] = mapped_column(String(20), doc="'run' (recorded by the run) or 'import'.")
    tool_version: Mapped[str] = mapped_column(String(50))
    config_path: Mapped[str] = mapped_column(Text)
    config_fingerprint: Mapped[str] = mapped_column(String(80))
    ledger_fingerprint: Mapped[str] = mapped_column(String(80))
    dataset_name: Mapped[str] = mapped_column(Text)
    dataset_fingerprint: Mapped[str] = mapped_column(String(80))
    definitions_fingerprint: Mapped[str] = mapped_column(String(80))
    scores_sha256: Mapped[str] = mapped_column(String(80))
    examples: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(20))
    exit_code: Mapped[int] = mapped_column(Integer)
    git_commit: Mapped[str | None] = mapped_column(String(64))
    git_branch: Mapped[str | None] = mapped_column(Text)
    git_dirty: Mapped[bool | None] = mapped_column(Boolean)
    # Revision 0002.
    ci_provider: Mapped[str | None] = mapped_column(String(40))
    ci_job_url: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        Index("ix_runs_created", "created_at", "pk"),
        Index("ix_runs_branch_created", "git_branch", "created_at", "pk"),
    )


class GateResultRow(Base):
    __tablename__ = "gate_results"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    subject: Mapped[str] = mapped_column(String(200))
    active: Mapped[bool] = mapped_column(Boolean)
    outcome: Mapped[str] = mapped_column(String(20))
    value: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float | None] = mapped_column(Float)
    reasons: Mapped[str] = mapped_column(Text, doc="The blocking or failing reason codes, comma-separated.")

    __table_args__ = (Index("ix_gate_results_name", "name", "run_pk"),)


class MetricResultRow(Base):
    __tablename__ = "metric_results"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    point: Mapped[float | None] = mapped_column(Float)
    low: Mapped[float | None] = mapped_column(Float)
    high: Mapped[float | None] = mapped_column(Float)
    level: Mapped[float | None] = mapped_column(Float)
    method: Mapped[str | None] = mapped_column(String(40))
    included: Mapped[int] = mapped_column(Integer)
    excluded: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_metric_results_name", "name", "run_pk"),)


class ArtifactRow(Base):
    __tablename__ = "artifacts"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(500), primary_key=True, doc="Path inside the run folder, '/'-separated.")
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(80))
    chunks: Mapped[int] = mapped_column(Integer)


class ArtifactChunkRow(Base):
    __tablename__ = "artifact_chunks"

    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.pk", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(500), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    data: Mapped[bytes] = mapped_column(StoredBytes, doc="zlib-compressed bytes of this piece of the file.")
