"""Opening the history database: an SQLAlchemy engine set up for many writers, and every way that fails as one
line with the URL's password redacted.

SQLite (the default) is opened with a 60 s busy timeout, WAL journaling and ``BEGIN IMMEDIATE`` transactions: two
runs finishing at once queue for the write lock instead of one failing with "database is locked" (a deferred
transaction that reads first cannot be upgraded to a writer while another writes, and SQLite does not wait then).
Limit: SQLite's locks need a local file system; a team shares a PostgreSQL database instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from evalglass.core.redact import Redactor
from evalglass.errors import SetupError
from evalglass.history.location import shown

SQLITE_BUSY_TIMEOUT_S = 60.0
#: A PostgreSQL server that does not answer within this many seconds is "unreachable", not a hung run.
CONNECT_TIMEOUT_S = 10


class HistoryUnavailable(SetupError):
    """The history database could not be opened, read or written (one line; the URL's password redacted)."""


def url_redactor(url: str) -> Redactor:
    """A redactor for messages about ``url``: its password (as written and as parsed) and any URL password."""
    values: list[str] = []
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError):
        password = None
    if password:
        values.append(str(password))
    if "://" in url and "@" in url:
        head = url.split("://", 1)[1].split("@", 1)[0]
        if ":" in head:
            values.append(head.split(":", 1)[1])
    return Redactor.of(values)


def describe_failure(url: str, exc: BaseException) -> str:
    """What went wrong, in one line, without the password (drivers may quote the URL or its parts back)."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    return url_redactor(url).text(first)


def unavailable(url: str, exc: BaseException, doing: str) -> HistoryUnavailable:
    return HistoryUnavailable(
        f"the history database could not be {doing}: {describe_failure(url, exc)}",
        where=shown(url),
        fix="check --db / EVALGLASS_DB, or pass --no-history",
    )


def open_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created (private, like the rest of ``.evalglass/``)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise HistoryUnavailable(
            "not a database URL",
            where=shown(url),
            fix="use e.g. sqlite:///path/history.sqlite or postgresql+psycopg://user@host/db",
        ) from None
    options: dict[str, Any] = {}
    sqlite = parsed.get_backend_name() == "sqlite"
    if sqlite:
        options["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_S}
        if parsed.database and parsed.database != ":memory:":
            from evalglass.engine.runs.runfolder import make_dirs

            database = Path(parsed.database)
            try:
                make_dirs(database.parent)
                # Private like every artifact (SQLite gives its -wal and -shm files the database's mode).
                os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            except OSError as exc:
                raise unavailable(url, exc, "created") from None
    elif parsed.get_backend_name() == "postgresql":
        options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
    try:
        engine = create_engine(parsed, **options)
    except NoSuchModuleError:
        raise HistoryUnavailable(
            f"no driver for {parsed.drivername}",
            where=shown(url),
            fix="for PostgreSQL: pip install 'evalglass[postgres]' and use postgresql+psycopg://",
        ) from None
    except (ImportError, ArgumentError, SQLAlchemyError) as exc:
        raise unavailable(url, exc, "opened") from None
    if sqlite:
        _sqlite_for_many_writers(engine)
    return engine


def _sqlite_for_many_writers(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own transaction handling is turned off so that BEGIN below is the only one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


@contextmanager
def failures_as_setup_errors(url: str, doing: str) -> Iterator[None]:
    """Inside: any database error becomes one :class:`HistoryUnavailable` line."""
    try:
        yield
    except HistoryUnavailable:
        raise
    except (SQLAlchemyError, OSError) as exc:
        raise unavailable(url, exc, doing) from None
