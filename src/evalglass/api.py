"""The Python API: every use case the command line offers, as one function each. ``evalglass run``, ``view``,
``verify``, ``explain``, ``compare``, ``preflight``, ``report``, ``check``, ``calibrate``, ``history``, ``export``,
``init`` and ``schema`` parse their flags, call the function here and render what it returns, so a script, a
notebook and the command line get one result from one path (docs/python-api.md lists them all).

Reach it through the package (``evalglass.run``, ``evalglass.load_run``, ...); ``__all__`` below is the public
surface, and ``evalglass.__all__`` re-exports it; everything else is private. Importing this module is cheap: the
engine loads when a function is first called, and only what that function needs.

The rules that refuse a combination of options are written here once and raised as
:class:`evalglass.errors.OptionError`, which names each option as the caller spells it (``resume`` here,
``--resume`` on the command line). A problem the caller can fix (no config, a bad dataset line, an unreadable run
folder) raises :class:`evalglass.SetupError`, the error behind the CLI's exit 2: the call could not complete and
decided nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from evalglass.choices import EXAMPLE_STATES, EXAMPLES, SCHEMAS
from evalglass.errors import OptionError, SetupError

if TYPE_CHECKING:
    from evalglass.core.checks import CheckResult
    from evalglass.core.compare import Comparison
    from evalglass.core.gates import GateResult, Outcome
    from evalglass.core.preflight import Preflight
    from evalglass.core.scorecard import CheckSummary, MetricSummary, Scorecard
    from evalglass.core.verdict import VerdictPayload
    from evalglass.engine.explore.failing import ExampleRow
    from evalglass.engine.explore.otlpexport import Exported, Sink
    from evalglass.engine.jobs.calibrate import CalibrationOutcome
    from evalglass.engine.jobs.pipeline import RunOutcome
    from evalglass.engine.jobs.verify import VerifyReport
    from evalglass.history.query import HistoryEntry
    from evalglass.history.record import Recorded
    from evalglass.report.explain import Explanation

__all__ = [
    "CheckRun",
    "ExampleListing",
    "Explained",
    "ImportedRuns",
    "ReportWritten",
    "RunResult",
    "calibrate",
    "check",
    "compare",
    "explain",
    "export_otlp",
    "export_recorded",
    "import_runs",
    "init",
    "list_examples",
    "load_run",
    "preflight",
    "recorded_runs",
    "run",
    "schema",
    "verify",
    "write_report",
]

CacheMode = Literal["use", "off", "refresh"]
CACHE_MODES: tuple[CacheMode, ...] = ("use", "off", "refresh")

CONFIG_CANDIDATES = (Path("evals") / "evalglass.yaml", Path("evalglass.yaml"))

#: How this API names its options in an :class:`~evalglass.errors.OptionError` (the CLI has its flags).
OPTION_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "config": "config",
        "example": "example",
        "out": "out",
        "resume": "resume",
        "cache_off": 'cache="off"',
        "cache_refresh": 'cache="refresh"',
        "today": "today",
        "baseline": "baseline",
        "option": "argument",
    }
)

Where = str | os.PathLike[str]


def _path(value: Where | None) -> Path | None:
    return None if value is None else Path(value)


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
    #: A run loaded from its folder (:func:`load_run`): what loading it did not check, in one line that every
    #: renderer shows. None for a run this process decided from its scores.
    not_checked: str | None = None

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
        """What the verdict means, in one sentence (an informational run says that no gate was active; a pass
        says which examples its gates tolerated leaving out)."""
        from evalglass.report.fmt import verdict_meaning

        return verdict_meaning(self.scorecard)

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
    config: Where | None = None,
    *,
    example: str | None = None,
    out: Where | None = None,
    cache: CacheMode = "use",
    resume: Where | Literal[True] | None = None,
    progress: bool = False,
    pinned_ledger: Where | None = None,
    db: str | None = None,
    isolate: bool = True,
    record: bool = False,
) -> RunResult:
    """Evaluate the dataset ``config`` declares, decide every gate, write the run's artifacts and return them.

    ``config``: the config file (default: ``evals/evalglass.yaml``, else ``evalglass.yaml``; when resuming, the
    one the interrupted run recorded). ``example``: a bundled example's config instead (``quickstart``,
    ``bound-checks``). ``out``: the run folder (default ``.evalglass/runs/<run id>`` under the working directory,
    which also records it as the last run). ``cache``: ``"use"`` (default), ``"off"`` (neither read nor write the
    call cache) or ``"refresh"`` (call again and overwrite). ``resume``: the folder of an interrupted run to finish
    under its own id, or ``True`` for the last one started here (completed calls come from the cache; it needs
    ``cache="use"``, no ``out`` and no ``example``). ``progress``: show the live run's progress on stderr.
    ``pinned_ledger``: the host's ledger; a config whose ``ledger:`` names any other file is refused (``evalglass
    run --ledger``). ``db``: the run history a baseline the ledger names by reference (``run: main@latest``) is
    looked up in (default: ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``), and where ``record`` records the
    run. ``isolate``: run in a forked copy of this process (the default where the platform can fork), so that host
    code which ends its process (``os._exit(0)``, a signal) ends that copy and this call raises
    :class:`evalglass.SetupError` naming it, instead of ending the caller with nothing decided; ``False`` runs in
    this process (docs/python-api.md, "Isolation"). ``record``: record the finished run in the history, as
    ``evalglass run`` does (a history that cannot be written is one line in ``result.warnings``, never an error).

    Raises :class:`evalglass.SetupError` when the run cannot complete (:class:`evalglass.errors.OptionError` for
    options that exclude each other), and :class:`evalglass.RunInterrupted` on Ctrl-C (what was done is cached;
    ``resume`` its ``folder``). A fail or blocked verdict is a result, not an exception: read ``result.verdict``.
    """
    _refuse_run_options(config=config, example=example, out=out, cache=cache, resume=resume)
    resumed = None if resume is None else _resume_folder(None if resume is True else Path(resume))
    if config is None and example is None and resumed is not None:
        from evalglass.engine.runs.manifest import load_manifest

        config = load_manifest(resumed).config_path
    path = _config_path(config, example)
    # A finished run resumed is derived again in its folder (same run id; the same bytes when its calls come from
    # the cache): said plainly, with how to see it without running anything. It ended with exit 0 and only the
    # history's warning that it held the run already, telling the user to import it again.
    finished_before = resumed is not None and _has_finished(resumed)
    from evalglass.engine.jobs.pipeline import RunOptions
    from evalglass.engine.jobs.pipeline import run as run_pipeline
    from evalglass.history.locator import history_locator

    reporter = None
    if progress:
        from evalglass.engine.produce.progress import reporter_for

        reporter = reporter_for()

    def evaluate() -> RunOutcome:
        # The run's locator, one of its options: the command line, the pytest plugin and a script get the same
        # one. Runs read from the history live in temporary folders until the run has copied what it needs.
        with ExitStack() as stack:
            options = RunOptions(
                out=_path(out),
                cache_mode=cache,
                resume=resumed,
                progress=reporter,
                pinned_ledger=_path(pinned_ledger),
                locator=history_locator(db, stack),
            )
            return run_pipeline(path, options)

    if isolate:
        from evalglass.engine.jobs.isolated import run_apart

        outcome = run_apart(evaluate)
    else:
        outcome = evaluate()
    warnings = outcome.warnings
    if finished_before:
        warnings += (
            f"note: this run had finished already: --resume derived it again in {outcome.folder} (the same bytes "
            "when every call came from the cache) and the exit code is its verdict's; to see a finished run without "
            f"running anything: evalglass view {outcome.folder}",
        )
    if record:  # the history never changes the verdict or the exit code: at worst, one warning line
        from evalglass.history.location import database_url
        from evalglass.history.record import record_after_run

        problem = record_after_run(
            outcome.folder, database_url(db, os.environ), path.parent, finished_before=finished_before
        )
        warnings += () if problem is None else (problem,)
    return RunResult(folder=outcome.folder, scorecard=outcome.scorecard, warnings=warnings)


def _refuse_run_options(
    *, config: Where | None, example: str | None, out: Where | None, cache: str, resume: object
) -> None:
    """The rules on a run's options, once for the API and the command line (which spells them as flags)."""
    _refuse_config_choice(config, example)
    if cache not in CACHE_MODES:
        raise SetupError(f"cache={cache!r} is not a cache mode", fix=f"use one of {', '.join(CACHE_MODES)}")
    if resume is None:
        return
    if cache != "use":
        raise OptionError(
            "{resume} reuses completed calls from the cache; it cannot be combined with {cache_off} or {cache_refresh}",
            fix="drop the {option}, or start a new run instead of resuming",
            names=OPTION_NAMES,
        )
    if out is not None or example is not None:
        raise OptionError(
            "{resume} continues in the run's own folder", fix="drop {out} / {example}", names=OPTION_NAMES
        )


def _resume_folder(folder: Path | None) -> Path:
    from evalglass.engine.runs.manifest import LAST_STARTED_POINTER

    if folder is not None:
        if not folder.is_dir():
            raise SetupError("no such run folder", where=str(folder), fix="name a folder under .evalglass/runs/")
        return folder
    from evalglass.readers.userfiles import read_pointer

    if not LAST_STARTED_POINTER.exists():
        raise SetupError(
            f"no run to resume: {LAST_STARTED_POINTER} does not exist here",
            fix="run from the folder the run was started in, or name the run folder: --resume RUN_FOLDER",
        )
    # As the last-run pointer is read: binary bytes there were an internal UnicodeDecodeError, a FIFO a hang.
    return read_pointer(
        LAST_STARTED_POINTER,
        what="last-started pointer",
        missing_fix="name the run folder: --resume RUN_FOLDER",
        fix="name the run folder: --resume RUN_FOLDER",
    )


def _has_finished(folder: Path) -> bool:
    """Whether the run in ``folder`` finished: its scorecard, the file a run renames into place last, is there."""
    from evalglass.engine.runs.artifacts import SCORECARD_FILE

    return (folder / SCORECARD_FILE).exists()


def _refuse_config_choice(config: Where | None, example: str | None) -> None:
    if example is not None and config is not None:
        raise OptionError("{example} and {config} exclude each other", fix="pass one of them", names=OPTION_NAMES)
    if example is not None and example not in EXAMPLES:
        raise SetupError(f"no bundled example {example!r}", fix=f"use one of {', '.join(EXAMPLES)}")


def _config_path(config: Where | None, example: str | None) -> Path:
    """The config a command reads: a bundled example's, the one named, or the first of the usual places."""
    _refuse_config_choice(config, example)
    if example is not None:
        from importlib.resources import files

        return Path(str(files("evalglass") / "examples" / example / "evalglass.yaml"))
    if config is not None:
        return Path(config)
    from evalglass.readers.userfiles import may_exist

    for candidate in CONFIG_CANDIDATES:
        if may_exist(candidate):
            return candidate
    raise SetupError(
        "no config found (looked for evals/evalglass.yaml and evalglass.yaml)",
        fix="run `evalglass init` to create one, or pass --config PATH",
    )


def load_run(folder: Where | None = None, *, db: str | None = None, stack: ExitStack | None = None) -> RunResult:
    """A finished run, computing nothing from its scores. ``folder``: a run folder, or a run reference (a run id,
    ``BRANCH@latest``, ``BRANCH@YYYY-MM-DD``, ``last``) looked up in the history ``db`` (default:
    ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``); nothing: the last run made here (with ``db``: that
    history's newest). A run read from the history is written to a temporary folder (``result.folder``), removed
    before this returns, or when ``stack`` closes when one is given (to read the run's other files after: the CI
    outputs of ``evalglass view --junit/--github`` do).

    A run that does not add up is refused (:class:`SetupError`, naming the file or field): every file its
    ``digests.json`` lists must have its bytes and every file the run record binds by its hash those bytes (the check
    :func:`verify` makes of the artifacts), every gate is decided again from what the scorecard and the run record's
    config and ledger snapshots say, the verdict from the gates (``engine.decide.consistency``). Whether the numbers
    match the recorded scores is :func:`verify`'s job; ``result.not_checked`` says so in one line."""
    from evalglass.engine.decide.consistency import load_checked

    with ExitStack() as own:
        checked = load_checked(_run_folder(folder, db, own if stack is None else stack))
    return RunResult(folder=checked.folder, scorecard=checked.scorecard, not_checked=checked.not_checked)


def _run_folder(folder: Where | None, db: str | None, stack: ExitStack) -> Path:
    """The folder of the run a reader names (``history.named``), refused in one line when it is a file or missing."""
    from evalglass.engine.runs.artifacts import run_folder
    from evalglass.history.named import named_folder

    return run_folder(named_folder(folder, db, stack))


@dataclass(frozen=True)
class ExampleListing:
    """A run's examples with their per-metric state (``evalglass view --examples``)."""

    folder: Path
    #: Each metric's rule for a failing value, as a sentence (only the metrics asked for).
    rules: Mapping[str, str]
    rows: tuple[ExampleRow, ...]
    #: Where the outputs shown were read from (None: no outputs were shown).
    outputs_from: str | None
    #: Why inputs are not shown (None: they are, or there were no rows).
    inputs_not_shown: str | None
    not_checked: str


def list_examples(
    folder: Where | None = None,
    *,
    metrics: Sequence[str] = (),
    states: Sequence[str] = (),
    limit: int = 20,
    db: str | None = None,
) -> ExampleListing:
    """A finished run's examples in dataset order, with each metric's state, output and inputs, at most ``limit``.
    ``folder`` and ``db`` as for :func:`load_run` (the run is checked as it checks it). ``metrics``: only these
    (default: all); ``states``: only examples in these states (``all`` for every one; default: every state but
    pass and scored)."""
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.engine.explore.exampleinputs import with_inputs
    from evalglass.engine.explore.failing import NOT_PASSING, ExampleState, example_rows, fail_rules, with_outputs
    from evalglass.engine.runs.artifacts import load_runrecord

    unknown = [state for state in states if state not in EXAMPLE_STATES]
    if unknown:
        raise SetupError(f"no example state {unknown[0]!r}", fix=f"use one of {', '.join(EXAMPLE_STATES)}")
    chosen = (
        frozenset(ExampleState)
        if "all" in states
        else frozenset(ExampleState(state) for state in states)
        if states
        else NOT_PASSING
    )
    with ExitStack() as stack:
        resolved = _run_folder(folder, db, stack)
        checked = load_checked(resolved)
        card = checked.scorecard
        rows = list(example_rows(resolved, card, metrics=metrics or None, states=chosen, limit=limit))
        record = load_runrecord(resolved)
        rows, source = with_outputs(resolved, record, rows)
        rows, missing_inputs = with_inputs(resolved, record, rows)
    rules = {name: rule.describe() for name, rule in fail_rules(card).items() if not metrics or name in metrics}
    return ExampleListing(
        folder=resolved,
        rules=MappingProxyType(rules),
        rows=tuple(rows),
        outputs_from=source,
        inputs_not_shown=missing_inputs,
        not_checked=checked.not_checked,
    )


def verify(
    folder: Where | None = None,
    *,
    config: Where | None = None,
    ledger: Where | None = None,
    key: str | None = None,
    db: str | None = None,
    strict: bool = False,
    dataset: Where | None = None,
    rescore_host: bool = False,
) -> VerifyReport:
    """Check every artifact against the run's digests, score the run's deterministic metrics again from the outputs
    it kept and the dataset (``dataset``, default: the path its config names beside the config; python metrics too
    with ``rescore_host``), re-derive every aggregate, gate and the verdict from the re-derived and recorded scores,
    and anchor the run to the config and ledger at hand (``config``/``ledger``, default:
    the paths the run record names); ``report.ok`` is False and ``report.findings`` names each difference.
    ``folder`` and ``db`` as for :func:`load_run`; a run read from the history has its stored files and summary
    rows checked too (each difference a finding). ``key``: the Ed25519 public key the run must be signed with
    (default: ``$EVALGLASS_VERIFY_KEY``, or the key ``$EVALGLASS_SIGNING_KEY`` implies; none: the signature is
    not checked). ``strict``: a config or ledger not at hand, and definition files or a dataset that are not the
    ones the run hashed, are findings too, not statements. See docs/config.md, "What verify proves"."""
    from evalglass.engine.jobs.verify import Anchors, Finding, VerifyReport, verify_run
    from evalglass.engine.runs.artifacts import run_folder
    from evalglass.engine.runs.digests import verify_key_from_env
    from evalglass.history.named import named_run

    anchors = Anchors(config=_path(config), ledger=_path(ledger), dataset=_path(dataset))
    with ExitStack() as stack:
        named = named_run(folder, db, stack, verifying=True)
        found = named if isinstance(named, Path) else named.folder
        # A run read from the history: its stored files and summary rows as they differ from what its files say.
        stored = () if isinstance(named, Path) else tuple(Finding(*item) for item in named.findings)
        if any(item.field.startswith("history.artifacts.") for item in stored):
            # The stored files themselves differ from their hashes: there is nothing trustworthy to re-derive.
            return VerifyReport(folder=found, findings=stored, examples=0)
        report = verify_run(
            run_folder(found), anchors, key or verify_key_from_env(), strict=strict, rescore_host=rescore_host
        )
    return replace(report, findings=stored + report.findings) if stored else report


@dataclass(frozen=True)
class Explained:
    """Why each gate or metric asked about is (or is not) trustworthy (``evalglass explain``)."""

    explanations: tuple[Explanation, ...]
    #: What loading the run did not check (it was not re-derived from its scores), in one line.
    not_checked: str


def explain(
    name: str | None = None, *, folder: Where | None = None, baseline: str | None = None, db: str | None = None
) -> Explained:
    """Why gate or metric ``name`` (default: every one) is or is not trustworthy, and the ledger entry each gate
    needs to be active. ``folder`` and ``db`` as for :func:`load_run`. ``baseline``: the run to propose as the
    baseline of comparative gates whose baseline the ledger does not approve yet (a folder or a run reference;
    default: ``BASELINE@latest`` from the history, when there is one)."""
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.engine.explore.failing import gate_examples
    from evalglass.engine.spec.ledger import ledger_layout
    from evalglass.report.explain import explain as build

    with ExitStack() as stack:
        resolved = _run_folder(folder, db, stack)
        checked = load_checked(resolved)
        card, record = checked.scorecard, checked.record
        names = [gate.name for gate in card.decision.gates if name is None or gate.name == name]
        explanations = build(
            card,
            record,
            name,
            gate_examples(resolved, card, names, limit=5),
            _gate_definitions(record),
            _proposed_baselines(card, record, name, names, baseline, db, stack),
            ledger_layout(Path(record.ledger_path)),
        )
    return Explained(explanations=tuple(explanations), not_checked=checked.not_checked)


def _gate_definitions(record: Any) -> dict[str, dict[str, Any]]:
    """Each gate's canonical definition, re-derived from the config the run recorded (as verify does), with the
    evaluator versions the run recorded (so it hashes to the run's fingerprint under a later EvalGlass too)."""
    from evalglass.engine.spec.config import RECORDED_CONTEXT, Config

    try:
        config = Config.model_validate(record.config, context=RECORDED_CONTEXT)
    except ValueError:
        return {}
    recorded = record.gate_evaluators if "gate_evaluators" in record.model_fields_set else None
    return {
        name: config.gate_definition(
            name, record.definition_files, None if recorded is None else recorded.get(name, {})
        )
        for name in config.gates
    }


def _proposed_baselines(
    card: Any,
    record: Any,
    name: str | None,
    names: list[str],
    baseline_ref: str | None,
    db: str | None,
    stack: ExitStack,
) -> dict[str, Any]:
    """Per baseline of the named comparative gates that the run did not find, the run to propose in its entry:
    ``baseline_ref`` (which must be readable), else ``NAME@latest`` when the history has one (quietly skipped if
    not). A ``baseline_ref`` with no such gate to go to is refused, as other options that cannot apply are: it was
    ignored (exit 0), unread even when it named no run."""
    from evalglass.engine.decide.baselines import proposed_baseline
    from evalglass.history.named import named_run

    wanted = [
        gate.comparison.baseline
        for gate in card.decision.gates
        if gate.name in names and gate.comparison is not None and gate.comparison.baseline_fingerprint is None
    ]
    if baseline_ref is not None and not wanted:
        which = f"gate {name!r} is not one" if name is not None and name in names else "this run has none"
        if name is not None and name not in names:
            which = f"{name!r} is no gate of this run"
        raise OptionError(
            "{baseline} proposes the baseline of a comparative gate whose baseline the ledger does not approve yet, "
            f"and {which}",
            fix="drop {baseline}",
            names=OPTION_NAMES,
        )
    ledger_dir = Path(record.ledger_path).parent
    proposed: dict[str, Any] = {}
    for baseline in dict.fromkeys(wanted):
        reference = baseline_ref if baseline_ref is not None else f"{baseline}@latest"
        try:
            named = named_run(reference, db, stack)
        except SetupError:
            if baseline_ref is not None:
                raise
            continue
        if isinstance(named, Path):  # a folder: the ledger names it relative to itself
            proposed[baseline] = proposed_baseline(named, os.path.relpath(named.resolve(), ledger_dir.resolve()))
        else:  # pinned by its run id: `NAME@latest` moves with the next run and would be baseline_stale then
            proposed[baseline] = proposed_baseline(named.folder, named.run_id or reference)
    return proposed


def compare(
    base: Where,
    candidate: Where,
    *,
    metrics: Sequence[str] = (),
    html: Where | None = None,
    db: str | None = None,
) -> Comparison:
    """Compare two finished runs example by example: each shared metric's paired difference with its interval,
    and the examples that flipped. ``base`` and ``candidate``: run folders or run references (as for
    :func:`load_run`, looked up in ``db``). ``metrics``: only these (default: every shared one). ``html``: also
    write the comparison to this file as one self-contained page. Raises :class:`SetupError` when the runs cannot
    be compared (a folder unreadable, a run that does not add up as :func:`load_run` checks it, a metric or every
    example id missing on one side); whatever the numbers say is a result (gates decide, compare does not)."""
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.engine.runs.artifacts import run_folder
    from evalglass.engine.runs.compare import compare_runs
    from evalglass.history.named import named_folder

    with ExitStack() as stack:
        # Each run is checked as every reader checks it (its artifacts as a set, its scorecard against its record)
        # before its scores are paired: a damaged or swapped file is refused, never compared.
        base_folder, candidate_folder = (run_folder(named_folder(each, db, stack)) for each in (base, candidate))
        for folder in (base_folder, candidate_folder):
            load_checked(folder)
        comparison = compare_runs(base_folder, candidate_folder, list(metrics) or None)
    if html is not None:
        from evalglass.report.comparison_html import render_comparison_html

        _write_page(render_comparison_html(comparison), Path(html))
    return comparison


def preflight(
    config: Where | None = None,
    *,
    example: str | None = None,
    pinned_ledger: Where | None = None,
    today: str | None = None,
    db: str | None = None,
) -> Preflight:
    """What every gate would be (informational, would decide, or blocked now and why) without running a metric,
    a lane or a check. ``config``/``example``/``pinned_ledger``/``db`` as for :func:`run` (a baseline named by
    reference is judged as the run would judge it). ``today``: check expiry on this day (``YYYY-MM-DD``, today or
    later, UTC) instead of today. ``result.exit_code``: 0 when every active gate could decide, 1 when any would be
    blocked."""
    from datetime import UTC, datetime

    from evalglass.collector import collector_paused
    from evalglass.core.calendar import day_number, day_problem
    from evalglass.engine.jobs.preflight import preflight as compute
    from evalglass.history.locator import history_locator

    path = _config_path(config, example)
    clock = datetime.now(UTC).date().isoformat()
    if today is not None:
        problem = day_problem(today)
        if problem is not None:
            raise OptionError("{today}: " + _literal(problem), fix="pass a date as YYYY-MM-DD", names=OPTION_NAMES)
        if day_number(today) < day_number(clock):
            # Looking ahead shows what will expire; looking back would let a command line un-expire an approval.
            raise OptionError(
                "{today} " + _literal(f"{today} is before today ({clock}): preflight can look ahead, never back"),
                fix="pass today's date or a later one",
                names=OPTION_NAMES,
            )
    # A large suite's config and ledger leave ~100,000 objects alive, and each object made after them (a reason, a
    # preview per gate) kept triggering full collector passes over them all: a fifth of the command's time.
    with ExitStack() as stack, collector_paused():
        return compute(
            path, today=today or clock, pinned_ledger=_path(pinned_ledger), locator=history_locator(db, stack)
        )


def _literal(text: str) -> str:
    """``text`` as it is inside an :class:`OptionError`'s template (braces are not option names)."""
    return text.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class ReportWritten:
    """An HTML report written (``evalglass report``): where, and what loading the run did not check."""

    path: Path
    not_checked: str


def write_report(folder: Where | None = None, *, out: Where | None = None, db: str | None = None) -> ReportWritten:
    """Write a finished run's HTML report: one self-contained file, no network needed to open it. ``folder`` and
    ``db`` as for :func:`load_run`. ``out``: where (default: ``report.html`` in the run's folder; for a run read
    from the history, ``report-RUN_ID.html`` in the working folder). It renders the run's artifacts and decides
    nothing."""
    from evalglass.engine.explore.explorer import html_report
    from evalglass.engine.runs.artifacts import SCORECARD_FILE, refuse_unfinished, run_folder
    from evalglass.history.named import named_run

    with ExitStack() as stack:
        named = named_run(folder, db, stack)
        resolved = run_folder(named if isinstance(named, Path) else named.folder)
        refuse_unfinished(resolved)  # a run killed before its scorecard is one to resume, said so
        if not (resolved / SCORECARD_FILE).exists():
            raise SetupError(
                f"no {SCORECARD_FILE} in this folder",
                where=str(resolved),
                fix="name a run folder written by `evalglass run`",
            )
        target = Path(out) if out is not None else resolved / "report.html"
        if out is None and not isinstance(named, Path) and named.run_id is not None:
            target = Path(f"report-{named.run_id}.html")  # a run read from the history: its folder is temporary
        page, not_checked = html_report(resolved)
        _write_page(page, target)
    return ReportWritten(path=target, not_checked=not_checked)


def _write_page(page: str, out: Path) -> None:
    from evalglass.engine.runs.runfolder import write_atomic

    try:
        write_atomic(out, page.encode())
    except OSError as exc:
        raise SetupError(f"cannot write the HTML report ({exc.strerror})", where=str(out)) from None


@dataclass(frozen=True)
class CheckRun:
    """Standalone checks run (``evalglass check``): each check's result by name, in order."""

    results: Mapping[str, CheckResult]

    @property
    def exit_code(self) -> int:
        """What ``evalglass check`` exits with: the worst outcome, 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 4 ERROR."""
        from evalglass.core.checks import check_exit_code

        return int(check_exit_code(list(self.results.values())))


def check(
    names: Iterable[str] = (),
    *,
    config: Where | None = None,
    example: str | None = None,
    expect_state: str | None = None,
) -> CheckRun:
    """Run the standalone checks ``names`` (default: all of them) that the config declares. ``config``/``example``
    as for :func:`run`. ``expect_state``: the target state (a fingerprint) the one check named must be bound to;
    any other state is ERROR."""
    from evalglass.engine.jobs.checking import run_named_checks

    path = _config_path(config, example)
    return CheckRun(results=MappingProxyType(run_named_checks(path, list(names), expect_state)))


def calibrate(
    judge: str, labels: Where, *, config: Where | None = None, cache: CacheMode = "use"
) -> CalibrationOutcome:
    """Measure how far LLM judge ``judge`` agrees with the human labels in ``labels`` (JSONL: one labelled output
    per line) and write ``calibrations/JUDGE.json`` beside the config. ``config`` as for :func:`run`; ``cache``:
    the call cache, as for :func:`run`. The record is evidence, not approval: the ledger's ``judges:`` entry says
    what agreement a gate needs."""
    from evalglass.engine.jobs.calibrate import calibrate_command

    if cache not in CACHE_MODES:
        raise SetupError(f"cache={cache!r} is not a cache mode", fix=f"use one of {', '.join(CACHE_MODES)}")
    return calibrate_command(_config_path(config, None), judge, Path(labels), cache_mode=cache)


def recorded_runs(
    *,
    db: str | None = None,
    metric: str | None = None,
    gate: str | None = None,
    branch: str | None = None,
    suite: str | None = None,
    limit: int = 20,
) -> list[HistoryEntry]:
    """The runs recorded in the history ``db`` (default: ``$EVALGLASS_DB``, else ``.evalglass/history.sqlite``),
    newest first, at most ``limit``: with ``metric``, only runs that have it (its estimate per run); with
    ``gate``, only runs that have it (its outcome per run); ``branch``/``suite``: only runs of that branch, or of
    that suite (its dataset name or config path). No history yet: an empty list."""
    from evalglass.history.location import database_url
    from evalglass.history.query import list_runs
    from evalglass.history.refs import history_exists

    url = database_url(db, os.environ)
    if not history_exists(url):
        return []
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    engine = open_history(url)
    try:
        with failures_as_setup_errors(url, "read"):
            return list_runs(engine, metric=metric, gate=gate, branch=branch, suite=suite, limit=limit)
    finally:
        engine.dispose()


def export_otlp(folder: Where | None = None, *, out: Where | Sink, db: str | None = None) -> Exported:
    """Write a finished run's per-example scores as ``gen_ai.evaluation.result`` events, OTLP/JSON lines
    (docs/traces.md, "Results out"), to the file ``out`` (written whole or not at all) or to an object with a
    ``write(bytes)`` method. ``folder`` and ``db`` as for :func:`load_run`."""
    from evalglass.engine.explore.otlpexport import export_otlp as export

    with ExitStack() as stack:
        resolved = _run_folder(folder, db, stack)
        if not isinstance(out, (str, os.PathLike)):
            return export(resolved, out)
        from evalglass.engine.runs.runfolder import atomically

        with atomically(Path(out)) as file:
            return export(resolved, file)


def init(target: Where = "evals", *, force: bool = False) -> list[Path]:
    """Scaffold ``evalglass.yaml``, a small dataset and an empty authority ledger in ``target``; the files
    written. Existing files are refused unless ``force``."""
    from evalglass.engine.spec.scaffold import scaffold

    return scaffold(Path(target), force=force)


def schema(which: str = "config") -> dict[str, Any]:
    """The JSON Schema of one of ``evalglass.choices.SCHEMAS`` (default: ``evalglass.yaml``'s), for editors and
    validators."""
    from evalglass.engine.runs.schemas import schema_of

    if which not in SCHEMAS:
        raise SetupError(f"no schema {which!r}", fix=f"use one of {', '.join(SCHEMAS)}")
    return schema_of(which)


@dataclass(frozen=True)
class ImportedRuns:
    """Run folders recorded in the history (``evalglass history import``), each in its own transaction."""

    #: The history, as it may be shown (a password replaced).
    where: str
    #: Each folder in the order given, with what was recorded from it, or why it was skipped (the history already
    #: holds its run).
    outcomes: tuple[tuple[Path, Recorded | str], ...]
    #: Each folder that could not be recorded, as its error; the others are recorded all the same.
    problems: tuple[SetupError, ...]


def import_runs(folders: Iterable[Where], *, db: str | None = None) -> ImportedRuns:
    """Record finished run folders in the history ``db`` (default: ``$EVALGLASS_DB``, else
    ``.evalglass/history.sqlite``), each as one transaction; a run already recorded is skipped. The git commit,
    branch and CI job recorded with each are those of the working folder and environment. A folder that cannot be
    recorded is one of ``result.problems`` (``evalglass history import`` exits 2 naming each); a history that
    cannot be opened raises :class:`SetupError`."""
    from evalglass.engine.runs.artifacts import run_folder
    from evalglass.engine.runs.provenance import provenance
    from evalglass.history.location import database_url, shown
    from evalglass.history.record import AlreadyRecorded, record_folder
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    url = database_url(db, os.environ)
    engine = open_history(url)
    outcomes: list[tuple[Path, Recorded | str]] = []
    problems: list[SetupError] = []
    try:
        origin = provenance(Path.cwd(), os.environ)
        for folder in map(Path, folders):
            try:
                with failures_as_setup_errors(url, "written"):
                    done = record_folder(engine, run_folder(folder), source="import", provenance=origin)
            except AlreadyRecorded as exc:
                outcomes.append((folder, exc.what))
                continue
            except SetupError as exc:
                problems.append(exc)
                continue
            outcomes.append((folder, done))
    finally:
        engine.dispose()
    return ImportedRuns(where=shown(url), outcomes=tuple(outcomes), problems=tuple(problems))


def export_recorded(run: str, target: Where, *, db: str | None = None) -> str:
    """Write the recorded run ``run`` names (a run id, ``BRANCH@latest``, ``BRANCH@YYYY-MM-DD`` or ``last``) from
    the history ``db`` to the new or empty folder ``target``, byte for byte; its run id. A run whose stored files
    were edited in the database, or that does not add up, is refused and nothing is left in ``target``."""
    import shutil

    from evalglass.engine.decide.consistency import load_checked
    from evalglass.history.export import write_run
    from evalglass.history.location import database_url, shown
    from evalglass.history.refs import REF_FORMS, find_run, history_exists
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    url, folder = database_url(db, os.environ), Path(target)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise SetupError(
            "the export target exists and is not an empty folder", where=str(folder), fix="name a new folder"
        )
    if not history_exists(url):
        raise SetupError("no run history here", where=shown(url), fix="pass --db or set EVALGLASS_DB")
    engine = open_history(url)
    try:
        with failures_as_setup_errors(url, "read"):
            found = find_run(engine, run)
            if found is None:
                raise SetupError(f"no recorded run named {run!r}", where=shown(url), fix=f"name {REF_FORMS}")
            mismatches = write_run(engine, found[0], folder)
    finally:
        engine.dispose()
    if mismatches:
        shutil.rmtree(folder, ignore_errors=True)
        first = mismatches[0]
        raise SetupError(
            f"recorded run {found[1]} was edited in the history database: {first.name} hashes to {first.found}, "
            f"recorded {first.recorded}",
            where=shown(url),
            fix="record the run again from its folder",
        )
    try:
        load_checked(folder)  # a run that does not add up is not handed on as a run folder
    except SetupError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return found[1]
