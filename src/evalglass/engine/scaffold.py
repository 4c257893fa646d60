"""`evalglass init`: copy the starter files into the user's repo without overwriting their work."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from evalglass.errors import SetupError

TEMPLATE_FILES = ("evalglass.yaml", "dataset.jsonl", "authority.yaml")
#: Tool-written files beside the config that do not belong in version control: the call cache (and its WAL).
GITIGNORED = ".evalglass-cache.sqlite*"


def scaffold(target: Path, *, force: bool) -> list[Path]:
    source = files("evalglass") / "templates" / "init"
    existing = [target / name for name in TEMPLATE_FILES if (target / name).exists()]
    if existing and not force:
        raise SetupError(
            f"{existing[0]} already exists",
            fix="pass --force to overwrite, or --dir to scaffold somewhere else",
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in TEMPLATE_FILES:
        destination = target / name
        destination.write_bytes((source / name).read_bytes())
        written.append(destination)
    ignore = target / ".gitignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    if GITIGNORED not in lines:  # added to, never overwritten: it is the user's file
        with ignore.open("a") as handle:
            handle.write(
                ("\n" if lines and lines[-1] else "") + f"# the call cache of live runs (evalglass)\n{GITIGNORED}\n"
            )
        written.append(ignore)
    return written
