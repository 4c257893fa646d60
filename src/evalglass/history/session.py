"""A history ready to use: the engine for a URL, with its schema migrated to the revision this code uses."""

from __future__ import annotations

from sqlalchemy import Engine

from evalglass.history.migrate import ensure_schema
from evalglass.history.store import failures_as_setup_errors, open_engine


def open_history(url: str) -> Engine:
    """Open the database at ``url`` and bring its schema up to date; one-line ``HistoryUnavailable`` otherwise."""
    engine = open_engine(url)
    with failures_as_setup_errors(url, "opened"):
        ensure_schema(engine, url)
    return engine
