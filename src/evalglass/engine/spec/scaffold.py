"""`evalglass init`: copy the starter files into the user's repo without overwriting their work."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from evalglass.errors import SetupError
from evalglass.readers.userfiles import may_exist, read_regular

TEMPLATE_FILES = ("evalglass.yaml", "dataset.jsonl", "authority.yaml")
#: Tool-written files beside the config that do not belong in version control: the call cache (and its WAL).
GITIGNORED = ".evalglass-cache.sqlite*"
#: Run folders and last-run pointers, created where `evalglass run` is started (the folder `init` runs in).
RUNS_GITIGNORED = ".evalglass/"


def scaffold(target: Path, *, force: bool, workdir: Path = Path(".")) -> list[Path]:
    """Write the starter files into ``target`` and make git ignore what runs write: the call cache beside the
    config (``target/.gitignore``) and ``.evalglass/`` in ``workdir``, where `evalglass run` creates it."""
    source = files("evalglass") / "templates" / "init"
    existing = [target / name for name in TEMPLATE_FILES if (target / name).exists()]
    if existing and not force:
        raise SetupError(
            f"{existing[0]} already exists",
            fix="pass --force to overwrite, or --dir to scaffold somewhere else",
        )
    ignores = (
        (target / ".gitignore", GITIGNORED, "the call cache of live runs (evalglass)"),
        (workdir / ".gitignore", RUNS_GITIGNORED, "run folders and pointers written by `evalglass run` (evalglass)"),
    )
    # Read before anything is written: a `.gitignore` that is not a regular file (a FIFO hung `init`) is one line,
    # and the scaffold is then not left half written.
    for ignore, _, _ in ignores:
        _ignore_lines(ignore)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TEMPLATE_FILES:
        destination = target / name
        destination.write_bytes((source / name).read_bytes())
        written.append(destination)
    for ignore, pattern, why in ignores:
        if _add_ignore(ignore, _ignore_lines(ignore), pattern, why) and ignore not in written:
            written.append(ignore)
    return written


def _ignore_lines(ignore: Path) -> list[str]:
    """The lines of a ``.gitignore`` file (none when there is no file), read only if it is a regular file."""
    if not may_exist(ignore):
        return []
    fix = "make it a regular file (or remove it) and run `evalglass init` again"
    return read_regular(ignore, what=".gitignore", other_fix=fix).decode("utf-8", "replace").splitlines()


def _add_ignore(ignore: Path, lines: list[str], pattern: str, why: str) -> bool:
    """Append ``pattern`` to the ``.gitignore`` file (whose lines are ``lines``) unless it is already there; True
    when the file changed.

    Added to, never overwritten: it is the user's file."""
    if pattern in lines:
        return False
    with ignore.open("a") as handle:
        handle.write(("\n" if lines and lines[-1] else "") + f"# {why}\n{pattern}\n")
    return True
