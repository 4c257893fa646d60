"""Suite-wide pytest set-up."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from tests.shared_servers import open_registry, stop_servers

# CI runners are shared machines: a per-example time limit makes property tests fail on load, not on a property.
# Speed is measured in benchmarks/, never in tests.
settings.register_profile("evalglass", deadline=None)
settings.load_profile("evalglass")

# `pytester` runs pytest on generated test files (tests/test_pytest_plugin.py runs its own shared session instead).
# (pytest only accepts `pytest_plugins` in the top-level conftest.)
pytest_plugins = ["pytester"]

_SERVERS = pytest.StashKey[Path]()
_CACHE_HOME = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """The controlling process opens the registry of servers its workers share (tests/shared_servers.py).

    Every process of the session gives the runs it starts (in process, forked, or as subprocesses, which inherit the
    environment) a call-cache key of the session's own (engine/produce/cachekey.py): a key file in a folder made
    here, never the user's ~/.cache, and never a key from the environment the suite was started in. Set here, not
    in a fixture, so fixtures of every scope see it; one folder per process, so a cache a test fills is vouched
    for in its next run, as on a user's machine. Tests of the key itself set these variables themselves."""
    home = Path(tempfile.mkdtemp(prefix="evalglass-cache-home-"))
    os.environ["XDG_CACHE_HOME"] = str(home)
    os.environ.pop("EVALGLASS_CACHE_KEY", None)
    config.stash[_CACHE_HOME] = home
    if not hasattr(config, "workerinput"):
        folder = open_registry()
        if folder is not None:
            config.stash[_SERVERS] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """After every worker has finished: stop the servers they started."""
    shutil.rmtree(config.stash.get(_CACHE_HOME, ""), ignore_errors=True)
    folder = config.stash.get(_SERVERS, None)
    if folder is not None:
        stop_servers(folder)


@pytest.fixture(scope="session")
def preloaded() -> None:
    """This test process has imported what a run imports (tests/cli_server.py's ``preload``), for tests that call
    ``evalglass.run()``: its isolation forks this process, and each fork of a process that has not imported the
    pipeline imports it again (0.6 of a 5-row run's 0.9 s at load 7, docs/testing.md). Each fork now starts from
    what a command forked from the CLI server starts from; what the run computes is the same."""
    from tests import cli_server

    cli_server.preload()


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs started by tests (in process or as subprocesses, which inherit the environment) must not see the
    Actions runner of a CI job running this suite: they would annotate it and append to its real step summary.
    Tests of the GitHub output set these variables themselves."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
