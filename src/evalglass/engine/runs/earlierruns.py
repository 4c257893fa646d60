"""The host-code hashes earlier runs recorded, read without the artifacts' models (and numpy behind them), so that
``preflight`` stays free of the statistics it never uses (tests/test_lazy_imports.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from evalglass.engine.runs.runfolder import RUNRECORD_NAME
from evalglass.errors import SetupError
from evalglass.readers.userfiles import read_regular

#: How many earlier runs' records a stale approval's reason looks through (newest first) for the approved files.
EARLIER_RUNS = 20


def earlier_definition_files(runs: Path, leave_out: Path | None = None) -> Iterator[dict[str, dict[str, str]]]:
    """The ``definition_files`` of the run records in the folders of ``runs`` (a runs folder, ``.evalglass/runs``),
    newest first by modification time, at most :data:`EARLIER_RUNS`, ``leave_out`` (the run being made) aside. What
    cannot be read is passed over: these only help name what changed since an approval (``engine.spec.staleness``,
    which proves a match by the approved fingerprint), they are never trusted for anything."""
    try:
        folders = [folder for folder in runs.iterdir() if folder.is_dir() and folder != leave_out]
        folders.sort(key=lambda folder: folder.stat().st_mtime, reverse=True)
    except OSError:
        return
    for folder in folders[:EARLIER_RUNS]:
        try:
            document = orjson.loads(read_regular(folder / RUNRECORD_NAME, what="run record"))
        except (SetupError, orjson.JSONDecodeError):
            continue
        found = document.get("definition_files") if isinstance(document, dict) else None
        if isinstance(found, dict) and all(isinstance(value, dict) for value in found.values()):
            yield found
