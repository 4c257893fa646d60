"""Fixtures of the history's tests: a database URL per backend (SQLite file, and a fresh database on a real
PostgreSQL server started once per test session)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.history.postgres import Server, running_server, server_binaries

_names = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[Server]:
    binaries = server_binaries()
    if binaries is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no PostgreSQL server binaries under /usr/lib/postgresql: .ci/run installs them")
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)")
    with running_server(binaries) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A history database that holds nothing yet."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'team-history.sqlite'}"
    server: Server = request.getfixturevalue("postgres")
    return server.create_database(f"history_{os.getpid()}_{next(_names)}")
