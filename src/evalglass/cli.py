"""The command line: each command parses its flags, calls its one function of the Python API (``evalglass.api``),
renders what it returns and exits with the code the result names. Nothing here decides: a rule on options lives in
the API (an :class:`~evalglass.errors.OptionError`, which the error boundary below spells as flags), and what a
command reads or writes it reads or writes through the API.

Heavy modules are imported inside the commands so that `evalglass --help` starts fast.
"""

from __future__ import annotations

import atexit
import errno
import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from evalglass.choices import EXAMPLE_STATES, EXAMPLES, SCHEMAS
from evalglass.version import __version__

if TYPE_CHECKING:
    from evalglass.api import CacheMode, ExampleListing, RunResult

#: How the command line spells the options an :class:`~evalglass.errors.OptionError` names (the API's own
#: spelling is ``evalglass.api.OPTION_NAMES``).
FLAG_NAMES = {
    "config": "--config",
    "example": "--example",
    "out": "--out",
    "resume": "--resume",
    "cache_off": "--no-cache",
    "cache_refresh": "--refresh",
    "today": "--today",
    "baseline": "--baseline",
    "option": "flag",
}


class _AtMost(click.IntRange):
    """A count option ("at most N"): below its low bound refused as click refuses it, above what a 64-bit integer
    holds read as that bound, which already means "all". Unbounded, ``history --limit 99999999999999999999``
    reached SQLite, which cannot bind it: an internal error. The help still shows ``x>=low``."""

    def __init__(self, low: int) -> None:
        super().__init__(min=low)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return min(super().convert(value, param, ctx), (1 << 63) - 1)


def _exit_after(lines: list[str], code: int, debug: bool) -> NoReturn:
    """Print the error's lines on stderr (after the traceback, with --debug) and exit with ``code``."""
    from evalglass import redaction

    if debug:
        import traceback

        traceback.print_exc()
    for line in lines:
        click.echo(redaction.current().text(line), err=True)  # an error may quote a value: never a secret
    _exit_process(code)


def _exit_process(code: int) -> NoReturn:
    """``sys.exit(code)``; with a connection to a lost cluster still held, ``os._exit`` after flushing, so that
    interpreter teardown cannot crash the process under the cluster client's threads and turn the documented exit
    code into a signal (``lanes.shipping.connection_abandoned``). Everything a run writes is committed before
    its error reaches here."""
    shipping = sys.modules.get("evalglass.lanes.shipping")
    if shipping is not None and shipping.connection_abandoned():
        sys.stdout.flush()
        sys.stderr.flush()
        _ended_with(code)
        os._exit(code)
    sys.exit(code)


def _ended_with(code: int) -> None:
    """Tell a supervising parent the code this command ends with (``evalglass.supervisor``: the parent exits with
    nothing else), before an exit that skips the supervised entry point's own report."""
    from evalglass.supervisor import report_exit

    report_exit(code)


def _exit_without_teardown(code: int) -> NoReturn:
    """End a command that read files and printed, and holds nothing else to flush or close, without the
    interpreter's teardown: freeing module by module everything it imported and built took 0.05-0.1 s of a
    preflight's ~0.6 s even with the collector's exit passes skipped (``main``'s ``atexit`` freeze). Only
    ``preflight`` (and ``run --dry-run``) ends this way; a command that writes files ends through ``sys.exit``.
    When the standard streams cannot be flushed (a closed pipe), it ends as every command does.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        sys.exit(code)
    _ended_with(code)
    os._exit(code)


def _usage_line(exc: click.UsageError) -> str:
    """Click's usage error as one line, naming the option at fault and where help is."""
    command = exc.ctx.command_path if exc.ctx is not None else "evalglass"
    return f"error: {exc.format_message()} — see `{command} --help`"


class GuardedGroup(click.Group):
    """The one error boundary: every command runs through :meth:`invoke`, which turns each error into its lines on
    stderr and its exit code (``ExitCode``). ``--debug`` adds the traceback; it never changes the exit code.

    The project's own errors (:class:`~evalglass.errors.EvalGlassError`) carry their lines and code; Ctrl-C is
    ``ExitCode.INTERRUPTED``; click's usage errors (an unknown option, a bad value) are one line and
    ``ExitCode.SETUP``; anything else is an internal error, also ``ExitCode.SETUP``: the run could not complete.
    """

    def invoke(self, ctx: click.Context) -> Any:
        from evalglass.core.exitcodes import ExitCode
        from evalglass.errors import EvalGlassError, Interrupted, OptionError

        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except click.UsageError as exc:
            _exit_after([_usage_line(exc)], ExitCode.SETUP, debug)
        except click.ClickException:
            raise
        except OptionError as exc:  # a rule of the API, naming the options as this command's flags
            _exit_after(exc.spelt(FLAG_NAMES).stderr_lines(), exc.exit_code, debug)
        except EvalGlassError as exc:
            _exit_after(exc.stderr_lines(), exc.exit_code, debug)
        except KeyboardInterrupt:
            stop = Interrupted()
            _exit_after(stop.stderr_lines(), stop.exit_code, debug)
        except OSError as exc:
            # What a reader did not catch itself (``Path.exists()`` and ``is_dir()`` raise for a path in a folder
            # this user may not search, a name too long, a loop of links; a full disk): the machine's, which the
            # user can mend, not an internal error. One with neither a path nor such a cause is still internal.
            line = _os_error_line(exc)
            _exit_after([line or _internal_line(exc)], ExitCode.SETUP, debug)
        except Exception as exc:
            from evalglass.engine.produce.interrupts import interrupt_inside

            if interrupt_inside(exc):  # a Ctrl-C a library reported as its own error (pydantic's SchemaError)
                stop = Interrupted()
                _exit_after(stop.stderr_lines(), stop.exit_code, debug)
            _exit_after([_internal_line(exc)], ExitCode.SETUP, debug)


def _internal_line(exc: Exception) -> str:
    return f"error: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)"


#: Errors of the machine's storage whatever the file: the fix is the same for every one.
_STORAGE_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _os_error_line(exc: OSError) -> str | None:
    """The one line for an ``OSError`` no reader turned into its own, or None when it names no path and no
    cause the user can mend (then it is an internal error)."""
    reason = exc.strerror or str(exc)
    if exc.errno in _STORAGE_FULL:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return (
            f"error: {where}{reason} — free space (or raise the quota or file-size limit), or write the run elsewhere"
        )
    if exc.filename is None:
        return None
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"error: {exc.filename}: permission denied — make it readable (writable for a folder the run writes "
            "to), and every folder above it searchable, by the user running evalglass"
        )
    if exc.errno == errno.EROFS:
        return f"error: {exc.filename}: {reason} — write the run to a writable folder (--out)"
    return f"error: {exc.filename}: {reason} — check the path"


@contextmanager
def _long_lived_imports() -> Iterator[None]:
    """Import the run's modules with the cyclic collector paused, then freeze what they created.

    The imports create a few hundred thousand objects that live as long as the process (modules, classes, pydantic
    schemas); the collector would otherwise make about a hundred passes over them while they load, and rescan them
    in every full pass after (~15 ms of a short run). The dataset reader unfreezes everything when its stream ends.
    """
    from evalglass.collector import collector_paused

    with collector_paused():
        try:
            yield
        finally:
            gc.freeze()


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the engine runs, whatever writes to stdout (a host metric's print, a library's C code, a child
    process that inherits the descriptor) goes to stderr instead, so stdout holds only what the command itself
    prints afterwards: with ``--format json``, exactly one JSON document. Afterwards both descriptors are put back
    as they were, so host code that closed or redirected fd 1 or 2 does not take the command's output with it.

    The redirection is at the file-descriptor level (``dup2``), so it catches writes that bypass ``sys.stdout``.
    Limit: a thread that host code leaves running after the engine returns writes to stdout again.
    """
    sys.stdout.flush()
    streams = sys.stdout, sys.stderr
    saved_out, saved_err = os.dup(1), os.dup(2)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout, sys.stderr = streams
        os.dup2(saved_err, 2)
        os.dup2(saved_err, 1)  # what is still buffered for stdout goes where the engine's output went
        with suppress(OSError, ValueError):  # a stream host code closed fails here, and again where it is used
            sys.stdout.flush()
        os.dup2(saved_out, 1)
        os.close(saved_out)
        os.close(saved_err)


def _load_numpy() -> None:
    """Load numpy with OpenBLAS on one thread (``evalglass.blasthreads``; SciPy's own OpenBLAS gets the same guard
    from ``main``)."""
    from evalglass.blasthreads import one_blas_thread

    if "numpy" in sys.modules:
        return
    with one_blas_thread():
        import numpy  # noqa: F401


def _console() -> Any:
    from rich.console import Console

    # Names, reasons and command output are shown as written: no `:name:` emoji codes (rich's default), which also
    # spares loading rich's emoji table (~3 ms of the first render).
    return Console(highlight=False, soft_wrap=False, emoji=False)


def _emit_json(payload: Any) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


JUNIT = click.option(
    "--junit",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="PATH",
    help="Also write the verdict as JUnit XML: one testcase per gate and check.",
)
DB = click.option(
    "--db",
    metavar="URL",
    help="Look runs named by reference (run id, BRANCH@latest, last) up in this history database; alone, read its "
    "newest run [default: $EVALGLASS_DB, else .evalglass/history.sqlite].",
)
FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json prints the machine-readable payload on stdout.",
)


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Print the traceback before an error (the exit code stays the same).")
@click.version_option(version=__version__, package_name="evalglass")  # the one source (pyproject reads it)
def main(debug: bool) -> None:
    """EvalGlass: evaluate AI applications and gate CI on approved thresholds only.

    \b
    Exit codes: 0 informational or pass, 1 fail or blocked, 2 the run could not complete, 130 interrupted.
    Exit 0 does not by itself mean quality was checked: an informational run has no active gate.
    """
    from evalglass.blasthreads import one_blas_thread
    from evalglass.core.stats._scipyfuncs import guard_loading
    from evalglass.redaction import redact_standard_streams

    redact_standard_streams()  # no secret of the environment is ever printed, whoever prints it
    # SciPy's bundled OpenBLAS starts no worker per core when any command's first t or beta quantile loads it.
    guard_loading(one_blas_thread)
    # Interpreter teardown runs the cyclic collector over every object still alive (modules, pydantic schemas, a
    # run's columns): ~0.07-0.15 s of a short command. Frozen objects are skipped by those passes and still freed
    # by reference counting as modules are torn down; only the finalizers of cycles alive at exit, which Python
    # does not promise to run anyway, are left to the operating system.
    atexit.register(gc.freeze)


LAST = "\x00last"


@main.command()
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Path to evalglass.yaml.")
@click.option("--out", type=click.Path(path_type=Path), help="Folder for the run's artifacts.")
@click.option("--example", type=click.Choice(EXAMPLES), help="Run a bundled example (no set-up, no network).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")
@click.option("--refresh", is_flag=True, help="Make every lane and judge call again and overwrite the cache.")
@click.option(
    "--resume",
    "resume",
    is_flag=False,
    flag_value=LAST,
    default=None,
    metavar="[RUN_FOLDER]",
    help="Finish an interrupted run (default: the last one started) under its own run id; completed calls come "
    "from the cache.",
)
@click.option("--no-progress", is_flag=True, help="No progress bar or progress lines (live runs).")
@click.option(
    "--ledger",
    "pinned_ledger",
    type=click.Path(path_type=Path),
    help="The host's ledger: refuse a config whose `ledger:` names any other file (pin it in CI).",
)
@JUNIT
@click.option(
    "--github/--no-github",
    default=None,
    help="GitHub Actions: annotate failing and blocked gates and append report.md to the step summary "
    "[default: on when GITHUB_ACTIONS=true].",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the HTML report of this run to this file (as `evalglass report` does).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Run nothing: show what every gate would be (the same as `evalglass preflight`) and exit 0, 1 or 2.",
)
@click.option(
    "--db",
    metavar="URL",
    help="Record the run in this history database [default: $EVALGLASS_DB, else .evalglass/history.sqlite].",
)
@click.option("--no-history", is_flag=True, help="Do not record this run in the history.")
@click.option(
    "--verdict-exit-codes",
    is_flag=True,
    help="Exit with the verdict's own code: 0 pass, 1 fail, 10 informational, 11 blocked (2 and 130 unchanged), "
    "for a caller that must learn the verdict from the process itself (the GitHub action).",
)
@FORMAT
def run(
    config_path: Path | None,
    out: Path | None,
    example: str | None,
    no_cache: bool,
    refresh: bool,
    resume: str | None,
    no_progress: bool,
    junit: Path | None,
    github: bool | None,
    html_path: Path | None,
    pinned_ledger: Path | None,
    dry_run: bool,
    db: str | None,
    no_history: bool,
    verdict_exit_codes: bool,
    fmt: str,
) -> None:
    """Evaluate the dataset, decide every gate, write artifacts, record the run in the history, exit with the
    verdict's code."""
    if dry_run:
        # --verdict-exit-codes too: a dry run decides nothing, and its 0 or 1 would read as pass or fail.
        writes = [
            name
            for name, given in (
                ("--out", out),
                ("--resume", resume),
                ("--junit", junit),
                ("--html", html_path),
                ("--verdict-exit-codes", verdict_exit_codes),
            )
            if given
        ]
        if writes or no_cache or refresh:
            from evalglass.errors import SetupError

            combined = ", ".join(writes) or "--no-cache/--refresh"
            raise SetupError(
                f"--dry-run runs and writes nothing; it cannot be combined with {combined}",
                fix="drop those options, or drop --dry-run",
            )
        # The example's config when both are given (a dry run has always read it so).
        _preflight(None if example is not None else config_path, example, pinned_ledger, None, fmt, db)
    _refuse_unwritable_folder("--html", html_path, creates_folders=False)
    _refuse_unwritable_folder("--junit", junit, creates_folders=True)  # ci.write_junit makes its folders
    with _long_lived_imports():
        _load_numpy()
        # With the API, the modules its `run` imports when called (the pipeline, the history's locator): loaded
        # here, so that they too load with the collector paused and are frozen after.
        import evalglass.engine.jobs.pipeline
        import evalglass.history.locator  # noqa: F401
        from evalglass.api import run as run_evaluation
    mode = _cache_mode(no_cache, refresh)
    with _stdout_to_stderr():
        result = run_evaluation(  # this process is the supervised one (evalglass.supervisor): no second fork
            config_path,
            example=example,
            out=out,
            cache=mode,
            resume=None if resume is None else True if resume == LAST else Path(resume),
            progress=not no_progress,
            pinned_ledger=pinned_ledger,
            db=db,
            isolate=False,
            record=not no_history,
        )
    for warning in result.warnings:
        click.echo(warning, err=True)
    if html_path is not None:
        from evalglass.api import write_report

        write_report(result.folder, out=html_path)
    calls = result.scorecard.calls
    if calls is not None and calls.calls and (no_progress or sys.stderr.isatty()):
        # Plain progress lines (not a terminal) end with these numbers; a bar vanishes, --no-progress shows nothing.
        click.echo(f"evalglass: {calls.calls} calls, {calls.retries} retries", err=True)
    _show(result, fmt)
    if html_path is not None and fmt != "json":
        click.echo(f"html report: {html_path}")
    if example is not None and fmt != "json":
        from evalglass.report.terminal import next_steps

        click.echo("\n".join(next_steps(result.scorecard)))
    _publish(result, junit, github, fmt)
    if verdict_exit_codes:
        from evalglass.core.exitcodes import verdict_exit_code

        sys.exit(verdict_exit_code(result.verdict.value))
    sys.exit(result.exit_code)


def _refuse_unwritable_folder(flag: str, target: Path | None, *, creates_folders: bool) -> None:
    """Refuse, before the run, a file option that cannot be written for its folder: a file on its path, or (unless
    the writer creates folders, as the JUnit one does) a folder not there. Found after the run, it ended a finished
    run with exit 2, its verdict's exit code lost and every call already paid for. Limit: a folder this user may
    not write to is still found when the file is written."""
    if target is None:
        return
    what = {"--html": "the HTML report", "--junit": "the JUnit report"}[flag]
    folder = target.parent
    try:
        while not folder.exists() and folder != folder.parent:
            if not creates_folders:
                raise _unwritable(target, what, f"its folder {folder} is not there", flag)
            folder = folder.parent
        if not folder.is_dir():
            raise _unwritable(target, what, f"{folder} is not a folder", flag)
    except OSError:  # unsearchable, a name too long: writing it says which
        return


def _unwritable(target: Path, what: str, why: str, flag: str) -> Exception:
    from evalglass.errors import SetupError

    return SetupError(
        f"cannot write {what}: {why}",
        where=str(target),
        fix=f"give {flag} a path in a folder that exists (nothing was run)",
    )


def _cache_mode(no_cache: bool, refresh: bool) -> CacheMode:
    """The call-cache mode two flags choose (``run``, ``calibrate``)."""
    if no_cache and refresh:
        from evalglass.errors import SetupError

        raise SetupError("--no-cache and --refresh exclude each other", fix="pass one of them")
    return "off" if no_cache else "refresh" if refresh else "use"


@main.command()
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Path to evalglass.yaml.")
@click.option(
    "--ledger",
    "pinned_ledger",
    type=click.Path(path_type=Path),
    help="The host's ledger: refuse a config whose `ledger:` names any other file.",
)
@click.option(
    "--today",
    metavar="YYYY-MM-DD",
    help="Check expiry on this day instead of today (UTC): today or later only, to see what will expire.",
)
@click.option(
    "--db",
    metavar="URL",
    help="Look a baseline the ledger names by reference (main@latest) up in this history database, as `run` would "
    "[default: $EVALGLASS_DB, else .evalglass/history.sqlite].",
)
@FORMAT
def preflight(
    config_path: Path | None, pinned_ledger: Path | None, today: str | None, db: str | None, fmt: str
) -> None:
    """Show what every gate would be (informational, would decide, or blocked now and why) without running
    anything; exit 0 when every active gate could decide, 1 when any would be blocked."""
    _preflight(config_path, None, pinned_ledger, today, fmt, db)


def _preflight(
    config_path: Path | None,
    example: str | None,
    pinned_ledger: Path | None,
    today: str | None,
    fmt: str,
    db: str | None,
) -> NoReturn:
    from evalglass.api import preflight as compute
    from evalglass.report.preflight import preflight_json, preflight_text

    found = compute(config_path, example=example, pinned_ledger=pinned_ledger, today=today, db=db)
    if fmt == "json":
        _emit_json(preflight_json(found))
    else:
        click.echo(preflight_text(found))
    _exit_without_teardown(int(found.exit_code))


def _show(result: RunResult, fmt: str) -> None:
    """The run on stdout: its JSON payload or the terminal summary (then, for a loaded run, what was not checked)."""
    if fmt == "json":
        _emit_json({"folder": str(result.folder.resolve()), **result.scorecard.model_dump(mode="json")})
    else:
        from evalglass.report.terminal import render_terminal

        render_terminal(result.scorecard, _console(), result.folder)
    _say_not_checked(result.not_checked, fmt)


def _say_not_checked(line: str | None, fmt: str) -> None:
    """A loaded run's one line saying what loading it did not check: after the text, or on stderr beside JSON
    (stdout then holds exactly one document)."""
    if line is None:
        return
    if fmt == "json":
        click.echo(line, err=True)
        return
    from evalglass.report.wrap import fold_text

    click.echo(fold_text(line, _console().width))


def _publish(result: RunResult, junit: Path | None, github: bool | None, fmt: str) -> None:
    """The CI outputs asked for. GitHub annotations go to stdout, or to stderr when stdout carries JSON (the
    runner reads workflow commands from both)."""
    from evalglass.ci import github_wanted, publish_github, write_junit

    if junit is not None:
        write_junit(result, junit)
    if github_wanted(github, os.environ):
        note = publish_github(result, stream=sys.stderr if fmt == "json" else sys.stdout, env=os.environ)
        if note:
            click.echo(note, err=True)


@main.command()
@click.argument("judge")
@click.option(
    "--labels",
    "labels",
    required=True,
    type=click.Path(path_type=Path),
    help="JSONL: one human-labelled output per line (output, label, and the example's fields).",
)
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Path to evalglass.yaml.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the call cache.")
@click.option("--refresh", is_flag=True, help="Make every judge call again and overwrite the cache.")
@FORMAT
def calibrate(judge: str, labels: Path, config_path: Path | None, no_cache: bool, refresh: bool, fmt: str) -> None:
    """Measure how far an LLM judge agrees with human labels; write calibrations/JUDGE.json beside the config.

    \b
    The record is evidence, not approval: the ledger's `judges:` entry says what agreement a gate needs.
    """
    from evalglass.api import calibrate as measure

    mode = _cache_mode(no_cache, refresh)
    with _stdout_to_stderr():
        outcome = measure(judge, labels, config=config_path, cache=mode)
    for warning in outcome.warnings:
        click.echo(warning, err=True)
    record = outcome.record
    if fmt == "json":
        from evalglass.core.authority import calibration_line

        # The record as written, and (beside it, not in it) the line the text format ends with: what the host
        # pastes under `judges: <ledger_judge>:` once it has reviewed the record.
        pasted = {"ledger_judge": record.judge, "ledger_line": calibration_line(record)}
        _emit_json({"path": str(outcome.path), **record.model_dump(mode="json"), **pasted})
        return
    from evalglass.engine.jobs.calibrate import describe

    click.echo(describe(record, outcome.path))


@main.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@JUNIT
@click.option("--github", is_flag=True, help="Print GitHub annotations and append report.md to the step summary.")
@click.option("--examples", is_flag=True, help="List examples with their per-metric state instead of the summary.")
@click.option("--metric", "metrics", multiple=True, help="With --examples: only this metric (repeatable).")
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(EXAMPLE_STATES),
    help="With --examples: only examples in this state (repeatable; default: every state but pass and scored).",
)
@click.option("--limit", type=_AtMost(1), default=20, show_default=True, help="With --examples: at most N.")
@click.option(
    "--width",
    "chars",
    type=_AtMost(0),
    default=200,
    show_default=True,
    help="With --examples: characters of each input, reference and output shown (0: whole; --format json always "
    "shows them whole).",
)
@DB
@FORMAT
def view(
    folder: Path | None,
    junit: Path | None,
    github: bool,
    examples: bool,
    metrics: tuple[str, ...],
    states: tuple[str, ...],
    limit: int,
    chars: int,
    db: str | None,
    fmt: str,
) -> None:
    """Show a finished run (default: the last one) from its artifacts, without recomputing anything."""
    context = click.get_current_context()
    # Given on the command line, not defaulted: --limit was left out, so `view --limit 3` was silently ignored.
    given = [
        flag
        for flag, name in (("--width", "chars"), ("--limit", "limit"))
        if context.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]
    if (metrics or states or given) and not examples:
        from evalglass.errors import SetupError

        raise SetupError(
            "--metric, --state, --limit and --width go with --examples", fix="add --examples, or drop them"
        )
    if examples:
        from evalglass.api import list_examples

        _show_examples(list_examples(folder, metrics=metrics, states=states, limit=limit, db=db), limit, chars, fmt)
        return
    from contextlib import ExitStack

    from evalglass.api import load_run

    # A run read from the history stays in its temporary folder until the command ends: the CI outputs read it.
    result = load_run(folder, db=db, stack=click.get_current_context().with_resource(ExitStack()))
    _show(result, fmt)
    if junit is not None or github:
        _publish(result, junit, github, fmt)


def _show_examples(listing: ExampleListing, limit: int, chars: int, fmt: str) -> None:
    rules = dict(listing.rules)
    if fmt == "json":
        _emit_json(
            {
                "folder": str(listing.folder.resolve()),
                "rules": rules,
                "outputs_from": listing.outputs_from,
                "inputs_not_shown": listing.inputs_not_shown,
                "examples": [row.as_dict() for row in listing.rows],
            }
        )
    else:
        from evalglass.report.examples import render_examples

        click.echo(
            render_examples(
                listing.rows,
                rules,
                listing.outputs_from,
                limit,
                chars=chars,
                columns=_console().width,
                missing_inputs=listing.inputs_not_shown,
            )
        )
    _say_not_checked(listing.not_checked, fmt)


@main.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the page (default: report.html in the run folder).",
)
@DB
def report(folder: Path | None, out: Path | None, db: str | None) -> None:
    """Write a run's HTML report (default: the last run): one self-contained file, no network needed to open it.
    FOLDER may be a recorded run (run id, BRANCH@latest, last): read from the history, its report goes to
    report-RUN_ID.html here; a run whose folder is on this machine (the last run's, `last` too) gets it beside it.

    \b
    It renders the run's artifacts and decides nothing; `evalglass verify` checks them.
    """
    from evalglass.api import write_report

    written = write_report(folder, out=out, db=db)
    click.echo(f"wrote {written.path}")
    click.echo(written.not_checked)


@main.command()
@click.argument("name", required=False)
@click.option(
    "--run",
    "folder",
    type=click.Path(path_type=Path),
    help="Run folder or recorded run (run id, BRANCH@latest, last) [default: the last run].",
)
@click.option(
    "--baseline",
    "baseline_ref",
    metavar="RUN",
    help="A run to propose as the baseline of comparative gates whose baseline the ledger does not approve yet: a "
    "folder or a recorded run (main@latest); its fingerprint (and signing key) fill the entry [default: "
    "NAME@latest from the history, when there is one].",
)
@DB
@FORMAT
def explain(name: str | None, folder: Path | None, baseline_ref: str | None, db: str | None, fmt: str) -> None:
    """Say why a gate or metric is (or is not) trustworthy, and what the ledger needs for a gate to be active."""
    from evalglass.api import explain as build
    from evalglass.report.safetext import visible

    explained = build(name, folder=folder, baseline=baseline_ref, db=db)
    if fmt == "json":
        _emit_json([item.as_dict() for item in explained.explanations])
    else:
        if not explained.explanations:
            click.echo("Nothing to explain: this run has no gates and no metrics.")
        from evalglass.report.wrap import fold_text

        width = _console().width
        # The ledger entry below its header is YAML to paste: kept line for line, never folded.
        folded = (fold_text(item.as_text(), width, "  Ledger entry to write") for item in explained.explanations)
        click.echo(visible("\n\n".join(folded)))
    _say_not_checked(explained.not_checked, fmt)


@main.command()
@click.argument("base", metavar="BASE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option("--metric", "metrics", multiple=True, help="Compare only this metric (repeatable; default: all shared).")
@click.option("--top", default=10, show_default=True, type=_AtMost(0), help="Flipped ids shown per metric.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the comparison as one self-contained HTML page (differences drawn, flips by id).",
)
@DB
@FORMAT
def compare(
    base: str, candidate: str, metrics: tuple[str, ...], top: int, html_path: Path | None, db: str | None, fmt: str
) -> None:
    """Compare two finished runs example by example: paired differences with intervals, and the flips.

    \b
    BASE and CANDIDATE: run folders or recorded runs (run id, BRANCH@latest, BRANCH@YYYY-MM-DD, last).
    Exit 0 when the runs were compared (whatever the numbers say; gates decide, compare does not), 2 when they
    cannot be compared (a folder unreadable, a metric or every example id missing on one side).
    """
    _load_numpy()
    from evalglass.api import compare as compare_runs

    comparison = compare_runs(base, candidate, metrics=metrics, html=html_path, db=db)
    if fmt == "json":
        _emit_json(comparison.model_dump(mode="json"))
        return
    from evalglass.report.comparison import render_comparison

    render_comparison(comparison, _console(), top)
    if html_path is not None:
        click.echo(f"html comparison: {html_path}")


@main.command()
@click.argument("folder", metavar="RUN")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="The config to anchor to (default: the path the run record names).",
)
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(path_type=Path),
    help="The ledger to anchor to (default: the path the run record names).",
)
@click.option(
    "--key",
    help="Ed25519 public key (PEM file, PEM text or 64 hex digits) the run must be signed with "
    "(default: $EVALGLASS_VERIFY_KEY, or the key $EVALGLASS_SIGNING_KEY implies).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Also a finding (exit 1): a config or ledger not at hand, and definition files or a dataset beside the "
    "config that are not the ones the run hashed (by default said, not counted).",
)
@click.option(
    "--dataset",
    "dataset_path",
    type=click.Path(path_type=Path),
    help="The dataset to re-score the run's deterministic metrics from (default: the path its config names, beside "
    "the config); it must be the file the run read.",
)
@click.option(
    "--rescore-host",
    is_flag=True,
    help="Also score python metrics again (their host code runs, in worker processes as in `run`).",
)
@DB
@FORMAT
def verify(
    folder: str,
    config_path: Path | None,
    ledger_path: Path | None,
    key: str | None,
    strict: bool,
    dataset_path: Path | None,
    rescore_host: bool,
    db: str | None,
    fmt: str,
) -> None:
    """Check every artifact, re-score the run's deterministic metrics from the outputs it kept, re-derive the run
    from its scores and anchor it to the repository's files; exit 1 naming each difference. RUN: a run folder, or a
    recorded run (run id, BRANCH@latest, last), whose stored files and summary rows are checked as well."""
    from evalglass.api import verify as verify_run

    report = verify_run(
        folder,
        config=config_path,
        ledger=ledger_path,
        key=key,
        db=db,
        strict=strict,
        dataset=dataset_path,
        rescore_host=rescore_host,
    )
    if fmt == "json":
        _emit_json(
            {
                "folder": str(folder),
                "ok": report.ok,
                "examples": report.examples,
                "anchors": list(report.anchors),
                "signature": report.signature,
                "findings": [
                    {"field": item.field, "recorded": item.recorded, "derived": item.derived}
                    for item in report.findings
                ],
            }
        )
    else:
        if report.ok:
            click.echo(f"verified: {folder} re-derives exactly from its {report.examples} recorded examples")
        else:
            click.echo(f"NOT verified: {len(report.findings)} field(s) differ from what the recorded scores imply:")
            for item in report.findings:
                click.echo(f"  {item.field}: recorded {item.recorded!r}, derived {item.derived!r}")
        for line in report.anchors:
            click.echo(f"  {line}")
        click.echo(f"  signature: {report.signature}")
    sys.exit(report.exit_code)


@main.command()
@click.argument("names", nargs=-1)
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="Path to evalglass.yaml.")
@click.option("--example", type=click.Choice(EXAMPLES), help="Use a bundled example's config.")
@click.option(
    "--expect-state",
    metavar="FINGERPRINT",
    help="The target state the check must be bound to (one check only); any other state is ERROR.",
)
@FORMAT
def check(
    names: tuple[str, ...], config_path: Path | None, example: str | None, expect_state: str | None, fmt: str
) -> None:
    """Run standalone checks (default: all of them) and exit 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 4 ERROR.

    \b
    The exit code is the worst outcome among the checks run. 2 means nothing could run (bad config).
    """
    from evalglass.api import check as run_checks

    with _stdout_to_stderr():
        checked = run_checks(names, config=config_path, example=example, expect_state=expect_state)
    if fmt == "json":
        _emit_json({name: result.model_dump(mode="json") for name, result in checked.results.items()})
    else:
        from evalglass.report.terminal import render_checks

        render_checks(dict(checked.results), _console())
    sys.exit(checked.exit_code)


@main.command()
@click.option("--dir", "target", type=click.Path(path_type=Path), default=Path("evals"), show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(target: Path, force: bool) -> None:
    """Scaffold evalglass.yaml, a small dataset and an empty authority ledger."""
    from evalglass.api import init as scaffold

    for path in scaffold(target, force=force):
        click.echo(f"wrote {path}")
    click.echo(f"next: evalglass run --config {target / 'evalglass.yaml'}")


HISTORY_DB_HELP = (
    "The history database (default: $EVALGLASS_DB, else .evalglass/history.sqlite), e.g. "
    "postgresql+psycopg://user@host/db."
)


@main.group(invoke_without_command=True)
@click.option("--db", "db", metavar="URL", help=HISTORY_DB_HELP)
@click.option("--metric", help="Show this metric's estimate and interval per run (only runs that have it).")
@click.option("--gate", help="Show this gate's outcome per run (only runs that have it).")
@click.option("--branch", help="Only runs recorded on this branch.")
@click.option(
    "--suite",
    metavar="NAME",
    help="Only runs of this suite: its dataset name, or its config path as the run recorded it "
    "(e.g. evals/evalglass.yaml).",
)
@click.option("--limit", default=20, show_default=True, type=_AtMost(1), help="At most this many runs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.pass_context
def history(
    ctx: click.Context,
    db: str | None,
    metric: str | None,
    gate: str | None,
    branch: str | None,
    suite: str | None,
    limit: int,
    fmt: str,
) -> None:
    """List recorded runs newest first, with a metric's trend per suite (--metric) or a gate's outcomes (--gate).

    \b
    Every `evalglass run` records itself (unless --no-history); `history import` adds run folders.
    """
    ctx.ensure_object(dict)
    ctx.obj["db"] = db
    if ctx.invoked_subcommand is not None:
        return
    from evalglass.api import recorded_runs

    entries = recorded_runs(db=db, metric=metric, gate=gate, branch=branch, suite=suite, limit=limit)
    if fmt == "json":
        _emit_json([entry.as_dict() for entry in entries])
        return
    from evalglass.history.render import render_history

    render_history(entries, _console(), metric, gate, filtered=branch is not None or suite is not None)


def _history_db(ctx: click.Context, db: str | None) -> str | None:
    """A subcommand's --db, else the group's."""
    return db if db is not None else (ctx.obj or {}).get("db")


@history.command("import")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--db", "db", metavar="URL", help=HISTORY_DB_HELP)
@click.pass_context
def import_runs(ctx: click.Context, folders: tuple[Path, ...], db: str | None) -> None:
    """Record finished run folders (each as one transaction; a run already recorded is skipped).

    \b
    The git commit/branch and CI job recorded with each are those of the current work tree and environment.
    """
    from evalglass.api import import_runs as record

    imported = record(folders, db=_history_db(ctx, db))
    for folder, outcome in imported.outcomes:
        if isinstance(outcome, str):
            click.echo(f"skipped {folder}: {outcome}")
        else:
            click.echo(
                f"recorded {outcome.run_id} from {folder} ({outcome.files} files, {outcome.bytes} bytes) in "
                f"{imported.where}"
            )
    if imported.problems:
        from evalglass.errors import SetupError, SetupErrors

        lines = [line for problem in imported.problems for line in problem.stderr_lines()]
        raise SetupErrors([SetupError(line.removeprefix("error: ")) for line in lines])


@history.command("export")
@click.argument("run")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--db", "db", metavar="URL", help=HISTORY_DB_HELP)
@click.pass_context
def export_recorded(ctx: click.Context, run: str, target: Path, db: str | None) -> None:
    """Write a recorded run (run id, BRANCH@latest, BRANCH@YYYY-MM-DD or last) to TARGET, byte for byte."""
    from evalglass.api import export_recorded as write_run

    run_id = write_run(run, target, db=_history_db(ctx, db))
    click.echo(f"wrote {run_id} to {target}")


class _TextSink:
    """Bytes (UTF-8 JSON) written to standard output as text."""

    def write(self, data: bytes, /) -> int:
        return sys.stdout.write(data.decode())


@main.command("export")
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["otlp"]),
    required=True,
    help='otlp: gen_ai.evaluation.result events, OTLP/JSON lines (docs/traces.md, "Results out").',
)
@click.option("--out", type=click.Path(path_type=Path), help="Write to this file (default: standard output).")
@DB
def export_run(folder: Path | None, fmt: str, out: Path | None, db: str | None) -> None:
    """Export a finished run's per-example scores (default: the last run) for another tool."""
    from evalglass.api import export_otlp

    if out is None:
        export_otlp(folder, out=_TextSink(), db=db)  # through the redacting stdout, as everything the CLI prints
        return
    exported = export_otlp(folder, out=out, db=db)
    linked = "linked to their spans" if exported.linked else "not linked to spans (the run was not read from traces)"
    click.echo(f"wrote {exported.events:,} gen_ai.evaluation.result events to {out}, {linked}", err=True)


@main.command()
@click.argument(
    "which",
    type=click.Choice(SCHEMAS),
    default="config",
    required=False,
)
def schema(which: str) -> None:
    """Print a JSON Schema (default: evalglass.yaml's) for editors and validators."""
    from evalglass.api import schema as schema_of

    _emit_json(schema_of(which))


if __name__ == "__main__":  # pragma: no cover
    main()
