"""`evalglass init`: copy the starter files into the user's repo without overwriting their work."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from evalglass.errors import SetupError

TEMPLATE_FILES = ("evalglass.yaml", "dataset.jsonl", "authority.yaml")


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
    return written
