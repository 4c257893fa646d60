"""The pytest plugin (entry point ``pytest11``, name ``evalglass``): the ``evalglass_run`` fixture.

::

    def test_quality(evalglass_run):
        evalglass_run("evals/evalglass.yaml").assert_passed()

``assert_passed`` carries the Verdict Engine's verdict into pytest's words, without deciding anything again:
``pass`` passes; ``fail`` fails the test with each gate's value and approved threshold; ``blocked`` fails it with
every reason (never a pass, never a skip: it fails CI like ``evalglass run`` does); ``informational`` skips it,
saying that no gate is active. A run that cannot complete (what ``evalglass run`` exits 2 for) fails the test with
the one-line error.

Such a failure cannot be swallowed: a test that catches it (``except BaseException``, ``pytest.raises``), an
``xfail`` marker or a hook that turns the report into a pass still leaves the session's exit status failed, with the
run's verdict line in the terminal summary (``pytest_sessionfinish`` below; pytest-xdist workers hand theirs to the
controller). A test meant to check that a run fails (a gate's own test) reads ``run.verdict`` instead of catching
``assert_passed()``, or calls ``evalglass.run`` (which raises ``evalglass.SetupError``, not a test failure): a
failure caught is still the session's. ``--evalglass-ledger PATH`` pins the host's ledger for every run of the
session, as ``evalglass run --ledger`` does: a config whose ``ledger:`` names another file is refused, and a session
that made no run fails. Limit: a test file, ``conftest.py`` and pytest's configuration are the pull request's own
code, running in this process; a pull request can delete the test or rewrite the exit status from a later hook. A
green pytest session is therefore never the approval gate: CI runs ``evalglass run --ledger`` (or ``evalglass verify
DIR --ledger PATH --strict`` on the run folder) from the base branch's workflow (docs/python-api.md, "In pytest").

pytest loads this module in every session of an environment where EvalGlass is installed, so it imports nothing
but pytest until a test uses the fixture (``tests/test_lazy_imports.py`` pins that). Disable it with
``-p no:evalglass``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

from evalglass.api import CacheMode, RunResult

#: Every verdict of this session that fails CI, as the line pytest failed a test with; kept on the config so that
#: no test outcome (caught, xfailed, rewritten) can take it back.
_FAILED_RUNS = pytest.StashKey[list[str]]()
#: The test of each run the session made (completed or not).
_RUNS = pytest.StashKey[list[str]]()
#: What a pytest-xdist worker hands its controller (``config.workeroutput``), whose exit status is its own.
_WORKER_KEYS = {"evalglass_failed_runs": _FAILED_RUNS, "evalglass_runs": _RUNS}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("evalglass").addoption(
        "--evalglass-ledger",
        dest="evalglass_ledger",
        default=None,
        metavar="PATH",
        help="pin the host's ledger for every evalglass_run (refuse a config whose ledger: names another file); "
        "a session that makes no run then fails",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FAILED_RUNS] = []
    config.stash[_RUNS] = []


def _unmade(config: pytest.Config) -> str | None:
    """A pinned session exists to make a run: one whose tests made none (deselected, skipped, removed) says so."""
    if config.getoption("evalglass_ledger", None) is None or config.stash.get(_RUNS, []):
        return None
    return "no test ran evalglass_run, though --evalglass-ledger asked for a run under the host's ledger"


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A run whose verdict fails CI fails the session, whatever the test did with the failure; so does a session
    pinned to the host's ledger that made no run."""
    config = session.config
    output = getattr(config, "workeroutput", None)
    if output is not None:  # an xdist worker: the controller decides the session's status
        for key, stashed in _WORKER_KEYS.items():
            output[key] = config.stash.get(stashed, [])
        return
    failing = config.stash.get(_FAILED_RUNS, []) or _unmade(config) is not None
    if failing and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist's controller: gather what each worker recorded."""
    output = getattr(node, "workeroutput", {})
    config = getattr(node, "config", None)
    if config is None:
        return
    for key, stashed in _WORKER_KEYS.items():
        config.stash.setdefault(stashed, []).extend(output.get(key, []))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    failed = [*config.stash.get(_FAILED_RUNS, []), *filter(None, [_unmade(config)])]
    if failed:
        terminalreporter.section("EvalGlass: runs that fail CI (whatever the tests did with them)", red=True)
        for line in failed:
            terminalreporter.write_line(line)


def _fail(record: Callable[[str], None] | None, message: str) -> NoReturn:
    if record is not None:
        record(message.splitlines()[0])
    pytest.fail(message, pytrace=False)


@dataclass(frozen=True)
class PytestRun(RunResult):
    """An :class:`evalglass.RunResult` with the assertion a test makes about it."""

    #: Records a failure the session must not lose (None outside the fixture).
    record: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    def assert_passed(self) -> None:
        from evalglass.core.gates import Outcome
        from evalglass.report.fmt import OUTCOME_LABEL, gate_sentence

        verdict = self.verdict
        if verdict is Outcome.PASS:
            return
        head = f"EvalGlass verdict: {OUTCOME_LABEL[verdict]} (exit code {self.exit_code}). {self.meaning}"
        if verdict is Outcome.INFORMATIONAL:
            pytest.skip(f"{head} (run folder: {self.folder})")
        shown = [gate for gate in self.gates if gate.outcome in (Outcome.FAIL, Outcome.BLOCKED)]
        lines = [head, *(f"  {gate_sentence(gate)}" for gate in shown), f"run folder: {self.folder}"]
        _fail(self.record, "\n".join(lines))


@pytest.fixture
def evalglass_run(request: pytest.FixtureRequest) -> Callable[..., PytestRun]:
    """Run an evaluation: ``evalglass_run(config, *, out=None, cache="use", db=None)``. A relative ``config`` is
    looked up under pytest's rootdir, then the working directory; the run folder defaults to
    ``.evalglass/runs/<run id>`` (under the working directory) as with ``evalglass run``; a baseline the ledger
    names by reference is looked up in ``db`` (default: ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``), as
    ``evalglass run --db`` does. ``--evalglass-ledger`` pins the host's ledger for every run (``evalglass run
    --ledger``)."""
    root = request.config.rootpath
    failed = request.config.stash.setdefault(_FAILED_RUNS, [])
    made = request.config.stash.setdefault(_RUNS, [])
    given = request.config.getoption("evalglass_ledger")
    # Relative to where pytest was started, as on its command line (a test may change the working directory).
    pinned = None if given is None else request.config.invocation_params.dir / given
    node = request.node.nodeid

    def record(line: str) -> None:
        failed.append(f"{node}: {line}")

    def run(
        config: str | os.PathLike[str],
        *,
        out: str | os.PathLike[str] | None = None,
        cache: CacheMode = "use",
        db: str | None = None,
    ) -> PytestRun:
        import evalglass
        from evalglass.readers.userfiles import may_exist

        made.append(node)
        path = Path(config)
        if not path.is_absolute():
            # rootdir first (tests run from anywhere under it), then the working directory; when neither has the
            # file, the error names the rootdir path.
            path = next((base / path for base in (root, Path.cwd()) if may_exist(base / path)), root / path)
        try:
            result = evalglass.run(path, out=out, cache=cache, db=db, pinned_ledger=pinned)
        except evalglass.SetupError as exc:
            problem = exc.line()
        else:
            return PytestRun(folder=result.folder, scorecard=result.scorecard, record=record)
        # Failed outside the ``except``: inside it, pytest shows the SetupError again above the failure ("During
        # handling of the above exception, another exception occurred"), the one line said twice.
        _fail(record, f"EvalGlass could not complete the run (no verdict): {problem}")

    return run
