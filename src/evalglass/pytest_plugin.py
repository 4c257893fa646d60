"""The pytest plugin (entry point ``pytest11``, name ``evalglass``): the ``evalglass_run`` fixture.

::

    def test_quality(evalglass_run):
        evalglass_run("evals/evalglass.yaml").assert_passed()

``assert_passed`` carries the Verdict Engine's verdict into pytest's words, without deciding anything again:
``pass`` passes; ``fail`` fails the test with each gate's value and approved threshold; ``blocked`` fails it with
every reason (never a pass, never a skip: it fails CI like ``evalglass run`` does); ``informational`` skips it,
saying that no gate is active. A run that cannot complete (what ``evalglass run`` exits 2 for) fails the test with
the one-line error.

pytest loads this module in every session of an environment where EvalGlass is installed, so it imports nothing
but pytest until a test uses the fixture (``tests/test_lazy_imports.py`` pins that). Disable it with
``-p no:evalglass``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalglass.api import CacheMode, RunResult


@dataclass(frozen=True)
class PytestRun(RunResult):
    """An :class:`evalglass.RunResult` with the assertion a test makes about it."""

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
        pytest.fail("\n".join(lines), pytrace=False)


@pytest.fixture
def evalglass_run(request: pytest.FixtureRequest) -> Callable[..., PytestRun]:
    """Run an evaluation: ``evalglass_run(config, *, out=None, cache="use", db=None)``. A relative ``config`` is
    looked up under pytest's rootdir, then the working directory; the run folder defaults to
    ``.evalglass/runs/<run id>`` (under the working directory) as with ``evalglass run``; a baseline the ledger
    names by reference is looked up in ``db`` (default: ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``), as
    ``evalglass run --db`` does."""
    root = request.config.rootpath

    def run(
        config: str | os.PathLike[str],
        *,
        out: str | os.PathLike[str] | None = None,
        cache: CacheMode = "use",
        db: str | None = None,
    ) -> PytestRun:
        import evalglass
        from evalglass.readers.userfiles import may_exist

        path = Path(config)
        if not path.is_absolute():
            # rootdir first (tests run from anywhere under it), then the working directory; when neither has the
            # file, the error names the rootdir path.
            path = next((base / path for base in (root, Path.cwd()) if may_exist(base / path)), root / path)
        try:
            result = evalglass.run(path, out=out, cache=cache, db=db)
        except evalglass.SetupError as exc:
            problem = exc.line()
        else:
            return PytestRun(folder=result.folder, scorecard=result.scorecard)
        # Failed outside the ``except``: inside it, pytest shows the SetupError again above the failure ("During
        # handling of the above exception, another exception occurred"), the one line said twice.
        pytest.fail(f"EvalGlass could not complete the run (no verdict): {problem}", pytrace=False)

    return run
