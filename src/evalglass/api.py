"""The Python API: run an evaluation, load a finished run, verify one. ``evalglass run``, ``view`` and ``verify`` call
these same functions, so a script, a notebook and the command line get one result from one path.

Reach it through the package (``evalglass.run``, ``evalglass.load_run``, ``evalglass.verify``); what
``evalglass.__all__`` lists is the public surface, everything else is private. Importing this module is cheap: the
engine loads when a function is first called.

A problem the caller can fix (no config, a bad dataset line, an unreadable run folder) raises
:class:`evalglass.SetupError`, the error behind the CLI's exit 2: the run could not complete and has no verdict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from evalglass.errors import SetupError

if TYPE_CHECKING:
    from evalglass.core.gates import GateResult, Outcome
    from evalglass.core.scorecard import CheckSummary, MetricSummary, Scorecard
    from evalglass.core.verdict import VerdictPayload
    from evalglass.engine.pipeline import RunOutcome
    from evalglass.engine.verify import VerifyReport

CacheMode = Literal["use", "off", "refresh"]
CACHE_MODES: tuple[CacheMode, ...] = ("use", "off", "refresh")


@dataclass(frozen=True)
class RunResult:
    """A finished run as its artifacts say: the scorecard and the folder it was read from or written to.

    Every other field is read from the scorecard's verdict payload, never recomputed, so the result cannot show a
    verdict, exit code or gate list other than the payload's.
    """

    folder: Path
    scorecard: Scorecard
    #: Problems that left the verdict and the artifacts intact (e.g. `.evalglass/last-run` could not be updated).
    warnings: tuple[str, ...] = ()

    @property
    def payload(self) -> VerdictPayload:
        """The Verdict Engine's payload: gates, verdict, CI flag and exit code."""
        return self.scorecard.decision

    @property
    def verdict(self) -> Outcome:
        """``informational``, ``pass``, ``fail`` or ``blocked`` (a string enum: ``result.verdict == "pass"``)."""
        return self.payload.verdict

    @property
    def exit_code(self) -> int:
        """What ``evalglass run`` exits with for this run: 0 informational or pass, 1 fail or blocked."""
        return self.payload.exit_code

    @property
    def ci_should_fail(self) -> bool:
        return self.payload.ci_should_fail

    @property
    def meaning(self) -> str:
        """What the verdict means, in one sentence (an informational run says that no gate was active)."""
        return self.payload.meaning

    @property
    def gates(self) -> tuple[GateResult, ...]:
        return self.payload.gates

    @property
    def metrics(self) -> Mapping[str, MetricSummary]:
        """Every metric's estimate and population, by name (read-only)."""
        return MappingProxyType({metric.name: metric for metric in self.scorecard.metrics})

    @property
    def checks(self) -> tuple[CheckSummary, ...]:
        """The standalone checks run with this run."""
        return self.scorecard.checks

    def gate(self, name: str) -> GateResult:
        """One gate by name; ``KeyError`` names the gates there are."""
        for gate in self.gates:
            if gate.name == name:
                return gate
        raise KeyError(f"no gate {name!r} in this run (gates: {', '.join(g.name for g in self.gates) or 'none'})")


def run(
    config: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    cache: CacheMode = "use",
    resume: str | os.PathLike[str] | None = None,
    progress: bool = False,
    pinned_ledger: str | os.PathLike[str] | None = None,
    db: str | None = None,
    isolate: bool = True,
) -> RunResult:
    """Evaluate the dataset ``config`` declares, decide every gate, write the run's artifacts and return them.

    ``out``: the run folder (default ``.evalglass/runs/<run id>`` under the working directory, which also records
    it as the last run). ``cache``: ``"use"`` (default), ``"off"`` (neither read nor write the call cache) or
    ``"refresh"`` (call again and overwrite). ``resume``: the folder of an interrupted run to finish under its own id
    (completed calls come from the cache; it needs ``cache="use"`` and no ``out``). ``progress``: show the live
    run's progress on stderr. ``pinned_ledger``: the host's ledger; a config whose ``ledger:`` names any other
    file is refused (``evalglass run --ledger``). ``db``: the run history a baseline the ledger names by reference
    (``run: main@latest``) is looked up in (default: ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``), as
    ``evalglass run --db`` does; nothing is read from it unless the ledger names such a baseline. ``isolate``: run
    in a forked copy of this process (the default where the platform can fork), so that host code which ends its
    process (``os._exit(0)``, a signal) ends that copy and this call raises :class:`evalglass.SetupError` naming
    it, instead of ending the caller with nothing decided; ``False`` runs in this process (docs/python-api.md,
    "Isolation").

    Raises :class:`evalglass.SetupError` when the run cannot complete, and :class:`evalglass.RunInterrupted` on
    Ctrl-C (what was done is cached; ``resume`` its ``folder``). A fail or blocked verdict is a result, not an
    exception: read ``result.verdict``.
    """
    if cache not in CACHE_MODES:
        raise SetupError(f"cache={cache!r} is not a cache mode", fix=f"use one of {', '.join(CACHE_MODES)}")
    if resume is not None and (cache != "use" or out is not None):
        raise SetupError(
            "resume finishes a run in its own folder from the call cache",
            fix='leave out and cache at their defaults (cache="use") when resuming',
        )
    from contextlib import ExitStack

    from evalglass.engine.pipeline import RunOptions
    from evalglass.engine.pipeline import run as run_pipeline
    from evalglass.history.locator import history_locator

    reporter = None
    if progress:
        from evalglass.engine.progress import reporter_for

        reporter = reporter_for()

    def evaluate() -> RunOutcome:
        # The run's locator, one of its options: the command line, the pytest plugin and a script get the same
        # one. Runs read from the history live in temporary folders until the run has copied what it needs.
        with ExitStack() as stack:
            options = RunOptions(
                out=None if out is None else Path(out),
                cache_mode=cache,
                resume=None if resume is None else Path(resume),
                progress=reporter,
                pinned_ledger=None if pinned_ledger is None else Path(pinned_ledger),
                locator=history_locator(db, stack),
            )
            return run_pipeline(Path(config), options)

    if isolate:
        from evalglass.engine.isolated import run_apart

        outcome = run_apart(evaluate)
    else:
        outcome = evaluate()
    return RunResult(folder=outcome.folder, scorecard=outcome.scorecard, warnings=outcome.warnings)


def load_run(folder: str | os.PathLike[str]) -> RunResult:
    """A finished run from its folder, computing nothing. The scorecard is checked by its own validators on load
    (a verdict its gates contradict is refused); whether it matches its recorded scores is :func:`verify`'s job."""
    from evalglass.engine.artifacts import load_runrecord, load_scorecard, run_folder
    from evalglass.engine.consistency import refuse_contradicted

    path = run_folder(Path(folder))
    scorecard = load_scorecard(path)
    # A payload its own run record's ledger snapshot contradicts (a gate flipped to inactive, a threshold never
    # approved) is refused here, so no renderer or caller ever shows it.
    refuse_contradicted(path, scorecard, load_runrecord(path))
    return RunResult(folder=path, scorecard=scorecard)


def verify(
    folder: str | os.PathLike[str],
    *,
    config: str | os.PathLike[str] | None = None,
    ledger: str | os.PathLike[str] | None = None,
    key: str | None = None,
) -> VerifyReport:
    """Check every artifact against the run's digests, re-derive every aggregate, gate and the verdict from the
    run's recorded scores, and anchor the run to the config and ledger at hand (``config``/``ledger``, default:
    the paths the run record names); ``report.ok`` is False and ``report.findings`` names each difference.
    ``key``: the Ed25519 public key the run must be signed with (default: ``$EVALGLASS_VERIFY_KEY``, or the key
    ``$EVALGLASS_SIGNING_KEY`` implies; none: the signature is not checked). See docs/config.md, "What verify
    proves"."""
    from evalglass.engine.artifacts import run_folder
    from evalglass.engine.digests import verify_key_from_env
    from evalglass.engine.verify import Anchors, verify_run

    anchors = Anchors(config=None if config is None else Path(config), ledger=None if ledger is None else Path(ledger))
    return verify_run(run_folder(Path(folder)), anchors, key or verify_key_from_env())
