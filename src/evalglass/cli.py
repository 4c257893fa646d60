"""The command line. Thin: parse, call the engine, render, exit with the payload's exit code.

Heavy modules are imported inside the commands so that `evalglass --help` starts fast.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from evalglass.version import __version__

if TYPE_CHECKING:
    from evalglass.api import CacheMode, RunResult
    from evalglass.history.refs import ResolvedRun

CONFIG_CANDIDATES = (Path("evals") / "evalglass.yaml", Path("evalglass.yaml"))
EXAMPLES = ("quickstart", "bound-checks")


def _exit_after(lines: list[str], code: int, debug: bool) -> NoReturn:
    """Print the error's lines on stderr (after the traceback, with --debug) and exit with ``code``."""
    from evalglass import redaction

    if debug:
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
        from evalglass.errors import EvalGlassError, Interrupted

        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except click.UsageError as exc:
            _exit_after([_usage_line(exc)], ExitCode.SETUP, debug)
        except click.ClickException:
            raise
        except EvalGlassError as exc:
            _exit_after(exc.stderr_lines(), exc.exit_code, debug)
        except KeyboardInterrupt:
            stop = Interrupted()
            _exit_after(stop.stderr_lines(), stop.exit_code, debug)
        except Exception as exc:
            _exit_after(
                [f"error: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)"],
                ExitCode.SETUP,
                debug,
            )


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


_BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _load_numpy() -> None:
    """Load numpy with OpenBLAS on one thread, unless the environment already says how many threads to use.

    EvalGlass does no linear algebra, but OpenBLAS starts a worker per core as it loads, and each spins for work
    that never comes: ~80 ms of CPU, taken from the run itself on a 2-CPU CI machine. The variable is read once,
    when the library loads, and is removed again so that checks and lanes started later do not inherit it. Host
    metrics and lanes running in this process get one BLAS thread too; setting one of the variables keeps theirs.
    """
    if "numpy" in sys.modules or any(name in os.environ for name in _BLAS_THREAD_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def _console() -> Any:
    from rich.console import Console

    # Names, reasons and command output are shown as written: no `:name:` emoji codes (rich's default), which also
    # spares loading rich's emoji table (~3 ms of the first render).
    return Console(highlight=False, soft_wrap=False, emoji=False)


def _emit_json(payload: Any) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")


def find_config(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    for candidate in CONFIG_CANDIDATES:
        if candidate.exists():
            return candidate
    from evalglass.errors import SetupError

    raise SetupError(
        "no config found (looked for evals/evalglass.yaml and evalglass.yaml)",
        fix="run `evalglass init` to create one, or pass --config PATH",
    )


def example_config(name: str) -> Path:
    from importlib.resources import files

    return Path(str(files("evalglass") / "examples" / name / "evalglass.yaml"))


def resolve_run_folder(folder: Path | None, db: str | None = None) -> Path:
    """The folder of the run a reader names (see :func:`_named_run`), or the last run's; either way a folder (one
    line when it is a file or missing)."""
    from evalglass.engine.artifacts import run_folder

    named = _named_run(folder, db)
    return run_folder(named if isinstance(named, Path) else named.folder)


def _named_folder(ref: str, db: str | None) -> Path:
    """The folder :func:`_named_run` finds for ``ref`` (unchecked: the reader says what is wrong with it)."""
    named = _named_run(ref, db)
    return named if isinstance(named, Path) else named.folder


def _named_run(folder: Path | str | None, db: str | None, *, verifying: bool = False) -> Path | ResolvedRun:
    """The run ``view``, ``explain``, ``report``, ``verify`` and ``compare`` read (docs/history.md, "Run references"):
    a folder of this machine (a Path), or what :func:`_from_history` resolved.

    Nothing named: the last-run pointer's folder, or with ``--db`` the newest run in that history. ``last`` without
    ``--db``: the pointer's folder when it names one that exists (the run this project last made, whose report then
    goes beside it), else the newest run in the history. Anything else, and ``last`` with ``--db``: an existing
    folder as it is, else a reference looked up in the history (``--db``, else ``$EVALGLASS_DB``, else the local
    one). The history (SQLAlchemy) is imported only when it is asked."""
    if folder is None and db is None:
        return _last_run_folder(strict=True) or Path()
    ref = LAST_REF if folder is None else str(folder)
    if ref == LAST_REF and db is None and not Path(ref).exists():
        pointed = _last_run_folder(strict=False)
        if pointed is not None:
            return pointed
    return _from_history(ref, verifying=verifying, db=db)


#: The reference to the newest run (``history.refs.LAST``; spelt here so that naming no run imports no history).
LAST_REF = "last"


def _last_run_folder(*, strict: bool) -> Path | None:
    """The folder ``.evalglass/last-run`` names. ``strict``: one line when there is no pointer or it names no path
    (its folder is checked by the caller); otherwise None unless it names a folder that exists."""
    from evalglass.engine.artifacts import LAST_RUN_POINTER
    from evalglass.errors import SetupError
    from evalglass.readers.userfiles import read_regular

    if not LAST_RUN_POINTER.exists():
        if not strict:
            return None
        raise SetupError(
            f"no previous run recorded in {LAST_RUN_POINTER}",
            fix="run `evalglass run` first or name a run folder",
        )
    try:
        raw = read_regular(LAST_RUN_POINTER, what="last-run pointer", limit=1 << 16)
    except SetupError:
        if strict:
            raise
        return None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        text = ""
    if not text or "\x00" in text:
        if not strict:
            return None
        raise SetupError(
            "the last-run pointer does not hold a folder path",
            where=str(LAST_RUN_POINTER),
            fix="name a run folder, or run `evalglass run` again to rewrite it",
        )
    return Path(text) if strict or Path(text).is_dir() else None


def _from_history(ref: str, *, verifying: bool = False, db: str | None = None) -> ResolvedRun:
    """A run reference (docs/history.md): an existing folder as it is, or a run from the history written to a
    temporary folder that lives as long as the command. Only ``verify`` is handed a run whose stored files or rows
    were edited (it reports them); every other reader refuses it."""
    from contextlib import ExitStack

    from evalglass.history.commands import db_url
    from evalglass.history.refs import refuse_findings, resolve

    stack = click.get_current_context().with_resource(ExitStack())
    resolved = resolve(ref, db_url(db), stack)
    if not verifying:
        refuse_findings(resolved, ref)
    return resolved


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
    from evalglass.redaction import redact_standard_streams

    redact_standard_streams()  # no secret of the environment is ever printed, whoever prints it
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
    fmt: str,
) -> None:
    """Evaluate the dataset, decide every gate, write artifacts, record the run in the history, exit with the
    verdict's code."""
    if dry_run:
        writes = [
            name
            for name, given in (("--out", out), ("--resume", resume), ("--junit", junit), ("--html", html_path))
            if given
        ]
        if writes or no_cache or refresh:
            from evalglass.errors import SetupError

            combined = ", ".join(writes) or "--no-cache/--refresh"
            raise SetupError(
                f"--dry-run runs and writes nothing; it cannot be combined with {combined}",
                fix="drop those options, or drop --dry-run",
            )
        path = example_config(example) if example is not None else find_config(config_path)
        _preflight(path, pinned_ledger, None, fmt, db)
    with _long_lived_imports():
        _load_numpy()
        from evalglass.api import run as run_evaluation
    from evalglass.errors import SetupError

    if example is not None and config_path is not None:
        raise SetupError("--example and --config exclude each other", fix="pass one of them")
    if no_cache and refresh:
        raise SetupError("--no-cache and --refresh exclude each other", fix="pass one of them")
    folder: Path | None = None
    if resume is not None:
        if no_cache or refresh:
            raise SetupError(
                "--resume reuses completed calls from the cache; it cannot be combined with --no-cache or --refresh",
                fix="drop the flag, or start a new run instead of resuming",
            )
        if out is not None or example is not None:
            raise SetupError("--resume continues in the run's own folder", fix="drop --out / --example")
        folder = _resume_folder(None if resume == LAST else Path(resume))
        if config_path is None:
            from evalglass.engine.manifest import load_manifest

            config_path = Path(load_manifest(folder).config_path)
    path = example_config(example) if example is not None else find_config(config_path)
    mode: CacheMode = "off" if no_cache else "refresh" if refresh else "use"
    with _stdout_to_stderr():
        result = run_evaluation(  # this process is the supervised one (evalglass.supervisor): no second fork
            path,
            out=out,
            cache=mode,
            resume=folder,
            progress=not no_progress,
            pinned_ledger=pinned_ledger,
            db=db,
            isolate=False,
        )
    warnings = list(result.warnings)
    if not no_history:  # the history never changes the verdict or the exit code: at worst, one warning line
        from evalglass.history.commands import db_url
        from evalglass.history.record import record_after_run

        problem = record_after_run(result.folder, db_url(db), path.parent)
        warnings += [] if problem is None else [problem]
    for warning in warnings:
        click.echo(warning, err=True)
    if html_path is not None:
        _write_html(result.folder, html_path)
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
    sys.exit(result.exit_code)


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
    _preflight(find_config(config_path), pinned_ledger, today, fmt, db)


def _preflight(path: Path, pinned_ledger: Path | None, today: str | None, fmt: str, db: str | None) -> NoReturn:
    from datetime import UTC, datetime

    from evalglass.collector import collector_paused
    from evalglass.core.calendar import day_number, day_problem
    from evalglass.engine.preflight import preflight as compute
    from evalglass.errors import SetupError
    from evalglass.report.preflight import preflight_json, preflight_text

    clock = datetime.now(UTC).date().isoformat()
    if today is not None:
        problem = day_problem(today)
        if problem is not None:
            raise SetupError(f"--today: {problem}", fix="pass a date as YYYY-MM-DD")
        if day_number(today) < day_number(clock):
            # Looking ahead shows what will expire; looking back would let a command line un-expire an approval.
            raise SetupError(
                f"--today {today} is before today ({clock}): preflight can look ahead, never back",
                fix="pass today's date or a later one",
            )
    from contextlib import ExitStack

    from evalglass.history.locator import history_locator

    # The locator a run would get (evalglass.api.run), so a baseline named by reference is judged as the run judges it.
    stack = click.get_current_context().with_resource(ExitStack())
    # A large suite's config and ledger leave ~100,000 objects alive, and each object made after them (a reason, a
    # preview per gate) kept triggering full collector passes over them all: a fifth of the command's time.
    with collector_paused():
        found = compute(path, today=today or clock, pinned_ledger=pinned_ledger, locator=history_locator(db, stack))
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


def _write_html(folder: Path, out: Path) -> str:
    """Write the run's page; returns the line saying what loading the run did not check (the page says it too)."""
    from evalglass.engine.explorer import html_report

    page, not_checked = html_report(folder)
    _write_page(page, out)
    return not_checked


def _write_page(page: str, out: Path) -> None:
    from evalglass.engine.runfolder import write_atomic
    from evalglass.errors import SetupError

    try:
        write_atomic(out, page.encode())
    except OSError as exc:
        raise SetupError(f"cannot write the HTML report ({exc.strerror})", where=str(out)) from None


def _resume_folder(folder: Path | None) -> Path:
    from evalglass.engine.manifest import LAST_STARTED_POINTER
    from evalglass.errors import SetupError

    if folder is not None:
        if not folder.is_dir():
            raise SetupError("no such run folder", where=str(folder), fix="name a folder under .evalglass/runs/")
        return folder
    try:
        return Path(LAST_STARTED_POINTER.read_text().strip())
    except FileNotFoundError:
        raise SetupError(
            f"no run to resume: {LAST_STARTED_POINTER} does not exist here",
            fix="run from the folder the run was started in, or name the run folder: --resume RUN_FOLDER",
        ) from None


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
    from evalglass.engine.calibrate import calibrate_command
    from evalglass.errors import SetupError

    if no_cache and refresh:
        raise SetupError("--no-cache and --refresh exclude each other", fix="pass one of them")
    mode = "off" if no_cache else "refresh" if refresh else "use"
    with _stdout_to_stderr():
        outcome = calibrate_command(find_config(config_path), judge, labels, cache_mode=mode)
    for warning in outcome.warnings:
        click.echo(warning, err=True)
    record = outcome.record
    if fmt == "json":
        _emit_json({"path": str(outcome.path), **record.model_dump(mode="json")})
        return
    from evalglass.engine.calibrate import describe

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
    type=click.Choice(["pass", "fail", "scored", "invalid", "error", "blocked", "non_evaluable", "skipped", "all"]),
    help="With --examples: only examples in this state (repeatable; default: every state but pass and scored).",
)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="With --examples: at most N.")
@click.option(
    "--width",
    "chars",
    type=click.IntRange(min=0),
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
    from evalglass.api import load_run

    resolved = resolve_run_folder(folder, db)
    width_given = click.get_current_context().get_parameter_source("chars") is click.core.ParameterSource.COMMANDLINE
    if (metrics or states or width_given) and not examples:
        from evalglass.errors import SetupError

        raise SetupError("--metric, --state and --width go with --examples", fix="add --examples, or drop them")
    result = load_run(resolved)
    if examples:
        _view_examples(resolved, result.scorecard, metrics, states, limit, chars, fmt)
        _say_not_checked(result.not_checked, fmt)
        return
    _show(result, fmt)
    if junit is not None or github:
        _publish(result, junit, github, fmt)


def _gate_definitions(record: Any) -> dict[str, dict[str, Any]]:
    """Each gate's canonical definition, re-derived from the config the run recorded (as verify does), with the
    evaluator versions the run recorded (so it hashes to the run's fingerprint under a later EvalGlass too)."""
    from evalglass.engine.config import Config

    try:
        config = Config.model_validate(record.config)
    except ValueError:
        return {}
    recorded = record.gate_evaluators if "gate_evaluators" in record.model_fields_set else None
    return {
        name: config.gate_definition(
            name, record.definition_files, None if recorded is None else recorded.get(name, {})
        )
        for name in config.gates
    }


def _view_examples(
    folder: Path, card: Any, metrics: tuple[str, ...], states: tuple[str, ...], limit: int, chars: int, fmt: str
) -> None:
    from evalglass.engine.artifacts import load_runrecord
    from evalglass.engine.exampleinputs import with_inputs
    from evalglass.engine.failing import NOT_PASSING, ExampleState, example_rows, fail_rules, with_outputs

    chosen = (
        frozenset(ExampleState)
        if "all" in states
        else frozenset(ExampleState(state) for state in states)
        if states
        else NOT_PASSING
    )
    rows = list(example_rows(folder, card, metrics=metrics or None, states=chosen, limit=limit))
    record = load_runrecord(folder)
    rows, source = with_outputs(folder, record, rows)
    rows, missing_inputs = with_inputs(folder, record, rows)
    rules = {name: rule.describe() for name, rule in fail_rules(card).items() if not metrics or name in metrics}
    if fmt == "json":
        _emit_json(
            {
                "folder": str(folder.resolve()),
                "rules": rules,
                "outputs_from": source,
                "inputs_not_shown": missing_inputs,
                "examples": [row.as_dict() for row in rows],
            }
        )
        return
    from evalglass.report.examples import render_examples

    click.echo(
        render_examples(
            rows, rules, source, limit, chars=chars, columns=_console().width, missing_inputs=missing_inputs
        )
    )


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
    from evalglass.engine.artifacts import SCORECARD_FILE, run_folder
    from evalglass.errors import SetupError

    named = _named_run(folder, db)
    resolved = run_folder(named if isinstance(named, Path) else named.folder)
    if not (resolved / SCORECARD_FILE).exists():
        raise SetupError(
            f"no {SCORECARD_FILE} in this folder",
            where=str(resolved),
            fix="name a run folder written by `evalglass run`",
        )
    target = out if out is not None else resolved / "report.html"
    if out is None and not isinstance(named, Path) and named.run_id is not None:
        target = Path(f"report-{named.run_id}.html")  # a run read from the history: its folder is temporary
    not_checked = _write_html(resolved, target)
    click.echo(f"wrote {target}")
    click.echo(not_checked)


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
    from evalglass.engine.consistency import load_checked
    from evalglass.engine.ledger import ledger_layout
    from evalglass.report.explain import explain as build
    from evalglass.report.safetext import visible

    resolved = resolve_run_folder(folder, db)
    checked = load_checked(resolved)
    card, record = checked.scorecard, checked.record
    from evalglass.engine.failing import gate_examples

    names = [gate.name for gate in card.decision.gates if name is None or gate.name == name]
    explanations = build(
        card,
        record,
        name,
        gate_examples(resolved, card, names, limit=5),
        _gate_definitions(record),
        _proposed_baselines(card, record, names, baseline_ref, db),
        ledger_layout(Path(record.ledger_path)),
    )
    if fmt == "json":
        _emit_json([item.as_dict() for item in explanations])
    else:
        if not explanations:
            click.echo("Nothing to explain: this run has no gates and no metrics.")
        from evalglass.report.wrap import fold_text

        width = _console().width
        # The ledger entry below its header is YAML to paste: kept line for line, never folded.
        folded = (fold_text(item.as_text(), width, "  Ledger entry to write") for item in explanations)
        click.echo(visible("\n\n".join(folded)))
    _say_not_checked(checked.not_checked, fmt)


def _proposed_baselines(
    card: Any, record: Any, names: list[str], baseline_ref: str | None, db: str | None
) -> dict[str, Any]:
    """Per baseline of the named comparative gates that the run did not find, the run to propose in its entry:
    ``--baseline`` (which must be readable), else ``NAME@latest`` when the history has one (quietly skipped if not)."""
    from evalglass.engine.baselines import proposed_baseline
    from evalglass.errors import SetupError

    wanted = [
        gate.comparison.baseline
        for gate in card.decision.gates
        if gate.name in names and gate.comparison is not None and gate.comparison.baseline_fingerprint is None
    ]
    ledger_dir = Path(record.ledger_path).parent
    proposed: dict[str, Any] = {}
    for baseline in dict.fromkeys(wanted):
        reference = baseline_ref if baseline_ref is not None else f"{baseline}@latest"
        try:
            named = _named_run(reference, db)
        except SetupError:
            if baseline_ref is not None:
                raise
            continue
        if isinstance(named, Path):  # a folder: the ledger names it relative to itself
            proposed[baseline] = proposed_baseline(named, os.path.relpath(named.resolve(), ledger_dir.resolve()))
        else:  # pinned by its run id: `NAME@latest` moves with the next run and would be baseline_stale then
            proposed[baseline] = proposed_baseline(named.folder, named.run_id or reference)
    return proposed


@main.command()
@click.argument("base", metavar="BASE")
@click.argument("candidate", metavar="CANDIDATE")
@click.option("--metric", "metrics", multiple=True, help="Compare only this metric (repeatable; default: all shared).")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=0), help="Flipped ids shown per metric.")
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
    from evalglass.engine.compare import compare_runs

    comparison = compare_runs(_named_folder(base, db), _named_folder(candidate, db), list(metrics) or None)
    if html_path is not None:
        from evalglass.report.comparison_html import render_comparison_html

        _write_page(render_comparison_html(comparison), html_path)
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
@DB
@FORMAT
def verify(
    folder: str, config_path: Path | None, ledger_path: Path | None, key: str | None, db: str | None, fmt: str
) -> None:
    """Check every artifact, re-derive the run from its recorded scores and anchor it to the repository's files;
    exit 1 naming each difference. RUN: a run folder, or a recorded run (run id, BRANCH@latest, last), whose stored
    files and summary rows are checked as well."""
    from evalglass.api import verify as verify_run
    from evalglass.history.refs import ResolvedRun

    named = _named_run(folder, db, verifying=True)
    resolved = ResolvedRun(folder=named) if isinstance(named, Path) else named
    if resolved.findings:
        import dataclasses

        from evalglass.engine.verify import Finding, VerifyReport

        stored = tuple(Finding(*item) for item in resolved.findings)
        if any(item.field.startswith("history.artifacts.") for item in stored):
            # The stored files themselves differ from their hashes: there is nothing trustworthy to re-derive.
            report = VerifyReport(folder=resolved.folder, findings=stored, examples=0)
        else:
            report = verify_run(resolved.folder, config=config_path, ledger=ledger_path, key=key)
            report = dataclasses.replace(report, findings=stored + report.findings)
    else:
        report = verify_run(resolved.folder, config=config_path, ledger=ledger_path, key=key)
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
    from evalglass.core.exitcodes import ExitCode

    sys.exit(ExitCode.OK if report.ok else ExitCode.FAILED)


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
    from evalglass.core.checks import check_exit_code
    from evalglass.engine.checking import run_named_checks

    if example is not None and config_path is not None:
        from evalglass.errors import SetupError

        raise SetupError("--example and --config exclude each other", fix="pass one of them")
    path = example_config(example) if example is not None else find_config(config_path)
    with _stdout_to_stderr():
        results = run_named_checks(path, list(names), expect_state)
    if fmt == "json":
        _emit_json({name: result.model_dump(mode="json") for name, result in results.items()})
    else:
        from evalglass.report.terminal import render_checks

        render_checks(results, _console())
    sys.exit(check_exit_code(list(results.values())))


@main.command()
@click.option("--dir", "target", type=click.Path(path_type=Path), default=Path("evals"), show_default=True)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
def init(target: Path, force: bool) -> None:
    """Scaffold evalglass.yaml, a small dataset and an empty authority ledger."""
    from evalglass.engine.scaffold import scaffold

    written = scaffold(target, force=force)
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"next: evalglass run --config {target / 'evalglass.yaml'}")


from evalglass.history.commands import history  # noqa: E402  (click only; the database loads when it runs)

main.add_command(history)


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
    from evalglass.engine.otlpexport import export_otlp

    resolved = resolve_run_folder(folder, db)
    if out is None:
        export_otlp(resolved, _TextSink())  # through the redacting stdout, as everything the CLI prints
        return
    from evalglass.engine.runfolder import atomically

    with atomically(out) as file:
        exported = export_otlp(resolved, file)
    linked = "linked to their spans" if exported.linked else "not linked to spans (the run was not read from traces)"
    click.echo(f"wrote {exported.events:,} gen_ai.evaluation.result events to {out}, {linked}", err=True)


@main.command()
@click.argument(
    "which",
    type=click.Choice(
        ["config", "ledger", "scorecard", "runrecord", "scores", "comparison", "trace-record", "trajectory"]
    ),
    default="config",
    required=False,
)
def schema(which: str) -> None:
    """Print a JSON Schema (default: evalglass.yaml's) for editors and validators."""
    from evalglass.engine.schemas import schema_of

    _emit_json(schema_of(which))


if __name__ == "__main__":  # pragma: no cover
    main()
