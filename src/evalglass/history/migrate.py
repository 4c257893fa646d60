"""Bringing a history database to the schema this code uses: Alembic migrations, applied on first use.

The fast path reads the revision and imports nothing of Alembic. When the database is older (or empty), the
upgrade runs inside one transaction that first takes a lock every other process also takes before migrating
(SQLite: the write lock, ``BEGIN IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock), then reads the
revision again: of two processes meeting a new database, one migrates and the other finds it done. An empty
database gets the head tables directly and is stamped, as Alembic recommends for new databases. Both systems
have transactional DDL, so a migration killed half-way leaves the database at its previous revision.

A database at a revision this code does not know (written by a newer EvalGlass) is refused, never downgraded.
"""

from __future__ import annotations

from importlib.resources import files

from sqlalchemy import Connection, Engine, inspect, text

from evalglass.errors import SetupError
from evalglass.history.location import shown
from evalglass.history.schema import HEAD_REVISION, Base, RunRow

#: pg_advisory_xact_lock key: any 64-bit number the history alone uses ("evalglas" in ASCII).
_PG_LOCK_KEY = 0x6576616C676C6173 & 0x7FFFFFFFFFFFFFFF
KNOWN_REVISIONS = ("0001", "0002")


def current_revision(connection: Connection) -> str | None:
    """The revision Alembic recorded, or None for a database without history tables."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _refuse_unknown(revision: str | None, url: str) -> None:
    if revision is not None and revision not in KNOWN_REVISIONS:
        raise SetupError(
            f"the history database is at schema revision {revision}, which this EvalGlass does not know "
            "(a newer version wrote it)",
            where=shown(url),
            fix="upgrade evalglass, or use another --db",
        )


def upgrade_to(connection: Connection, revision: str) -> None:
    """Run Alembic's migrations up to ``revision`` on ``connection`` (inside its transaction)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(files("evalglass.history") / "migrations"))
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def ensure_schema(engine: Engine, url: str) -> None:
    """The database at :data:`HEAD_REVISION`, migrating it under the lock when it is behind."""
    with engine.connect() as connection:
        revision = current_revision(connection)
        connection.rollback()
    _refuse_unknown(revision, url)
    if revision == HEAD_REVISION:
        return
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        revision = current_revision(connection)
        _refuse_unknown(revision, url)
        if revision is None and not inspect(connection).has_table(RunRow.__tablename__):
            create_at_head(connection)
        elif revision != HEAD_REVISION:
            upgrade_to(connection, HEAD_REVISION)


def create_at_head(connection: Connection) -> None:
    """A new database: the tables as the models declare them, stamped at :data:`HEAD_REVISION` (what Alembic's
    ``stamp`` writes), without loading Alembic to replay every migration. The migrations and the models build the
    same tables (``tests/history/test_migrations.py`` compares them)."""
    Base.metadata.create_all(connection)
    connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)"))
    connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": HEAD_REVISION})
