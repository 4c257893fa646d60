"""Fixtures of the history's tests: a database URL per backend (SQLite file, and a fresh database on a real
PostgreSQL server started once per test session)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from tests.history.postgres import Server, server_binaries, start_server
from tests.shared_servers import shared_server

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Server:
    """The run's shared PostgreSQL server, started by the first worker that needs it."""
    binaries = server_binaries()
    if binaries is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no PostgreSQL server binaries under /usr/lib/postgresql: .ci/run installs them")
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)")
    info = shared_server("postgresql", lambda: start_server(binaries))
    return Server(info["port"])


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A history database that holds nothing yet."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team-history.sqlite'}"
    server: Server = request.getfixturevalue("postgres")
    return server.create_database(f"history_{os.getpid()}_{next(_names)}")
