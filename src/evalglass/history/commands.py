"""``evalglass history``: list recorded runs and a metric's trend, import run folders, export a recorded run.

Only click is imported here; the database machinery loads when a command runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

DB_OPTION = click.option(
    "--db",
    "db",
    metavar="URL",
    help="The history database (default: $EVALGLASS_DB, else .evalglass/history.sqlite), e.g. "
    "postgresql+psycopg://user@host/db.",
)


def db_url(explicit: str | None) -> str:
    from evalglass.history.location import database_url

    return database_url(explicit, os.environ)


@click.group(invoke_without_command=True)
@DB_OPTION
@click.option("--metric", help="Show this metric's estimate and interval per run (only runs that have it).")
@click.option("--gate", help="Show this gate's outcome per run (only runs that have it).")
@click.option("--branch", help="Only runs recorded on this branch.")
@click.option(
    "--suite",
    metavar="NAME",
    help="Only runs of this suite: its dataset name, or its config path as the run recorded it "
    "(e.g. evals/evalglass.yaml).",
)
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), help="At most this many runs.")
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
    from evalglass.history.query import list_runs
    from evalglass.history.refs import history_exists

    url = db_url(db)
    entries = []
    if history_exists(url):
        from evalglass.history.session import open_history
        from evalglass.history.store import failures_as_setup_errors

        engine = open_history(url)
        try:
            with failures_as_setup_errors(url, "read"):
                entries = list_runs(engine, metric=metric, gate=gate, branch=branch, suite=suite, limit=limit)
        finally:
            engine.dispose()
    if fmt == "json":
        import orjson

        sys.stdout.write(orjson.dumps([entry.as_dict() for entry in entries], option=orjson.OPT_INDENT_2).decode())
        sys.stdout.write("\n")
        return
    from rich.console import Console

    from evalglass.history.render import render_history

    console = Console(highlight=False, soft_wrap=False, emoji=False)
    render_history(entries, console, metric, gate, filtered=branch is not None or suite is not None)


def _url(ctx: click.Context, db: str | None) -> str:
    return db_url(db if db is not None else (ctx.obj or {}).get("db"))


@history.command("import")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@DB_OPTION
@click.pass_context
def import_runs(ctx: click.Context, folders: tuple[Path, ...], db: str | None) -> None:
    """Record finished run folders (each as one transaction; a run already recorded is skipped).

    \b
    The git commit/branch and CI job recorded with each are those of the current work tree and environment.
    """
    from evalglass.engine.artifacts import run_folder
    from evalglass.engine.provenance import provenance
    from evalglass.errors import SetupError
    from evalglass.history.location import shown
    from evalglass.history.record import AlreadyRecorded, record_folder
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    url = _url(ctx, db)
    engine = open_history(url)
    failed: list[str] = []
    try:
        origin = provenance(Path.cwd(), os.environ)
        for folder in folders:
            try:
                with failures_as_setup_errors(url, "written"):
                    done = record_folder(engine, run_folder(folder), source="import", provenance=origin)
            except AlreadyRecorded as exc:
                click.echo(f"skipped {folder}: {exc.what}")
                continue
            except SetupError as exc:
                failed.extend(exc.stderr_lines())
                continue
            click.echo(f"recorded {done.run_id} from {folder} ({done.files} files, {done.bytes} bytes) in {shown(url)}")
    finally:
        engine.dispose()
    if failed:
        from evalglass.errors import SetupErrors

        raise SetupErrors([SetupError(line.removeprefix("error: ")) for line in failed])


@history.command("export")
@click.argument("run")
@click.argument("target", type=click.Path(path_type=Path))
@DB_OPTION
@click.pass_context
def export_run(ctx: click.Context, run: str, target: Path, db: str | None) -> None:
    """Write a recorded run (run id, BRANCH@latest, BRANCH@YYYY-MM-DD or last) to TARGET, byte for byte."""
    import shutil

    from evalglass.errors import SetupError
    from evalglass.history.export import write_run
    from evalglass.history.location import shown
    from evalglass.history.refs import REF_FORMS, find_run, history_exists
    from evalglass.history.session import open_history
    from evalglass.history.store import failures_as_setup_errors

    url = _url(ctx, db)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise SetupError(
            "the export target exists and is not an empty folder", where=str(target), fix="name a new folder"
        )
    if not history_exists(url):
        raise SetupError("no run history here", where=shown(url), fix="pass --db or set EVALGLASS_DB")
    engine = open_history(url)
    try:
        with failures_as_setup_errors(url, "read"):
            found = find_run(engine, run)
            if found is None:
                raise SetupError(f"no recorded run named {run!r}", where=shown(url), fix=f"name {REF_FORMS}")
            mismatches = write_run(engine, found[0], target)
    finally:
        engine.dispose()
    if mismatches:
        shutil.rmtree(target, ignore_errors=True)
        first = mismatches[0]
        raise SetupError(
            f"recorded run {found[1]} was edited in the history database: {first.name} hashes to {first.found}, "
            f"recorded {first.recorded}",
            where=shown(url),
            fix="record the run again from its folder",
        )
    from evalglass.engine.consistency import load_checked

    try:
        load_checked(target)  # a run that does not add up is not handed on as a run folder
    except SetupError:
        shutil.rmtree(target, ignore_errors=True)
        raise
    click.echo(f"wrote {found[1]} to {target}")
