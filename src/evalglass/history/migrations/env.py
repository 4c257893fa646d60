"""Alembic's environment for the history: migrations run on the connection ``evalglass.history.migrate`` hands over
(already inside the transaction that holds the migration lock), never on one of their own."""

from __future__ import annotations

from alembic import context

from evalglass.history.schema import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
