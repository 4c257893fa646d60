"""The run folder a measured ``evalglass run --out NAME`` writes, emptied before each round.

``evalglass run`` refuses an ``--out`` folder that already holds a run (its files would sit beside the new
artifacts), and a benchmark runs the same command round after round in one project: every runner that starts a
measured command calls :func:`clear_run_folder` first, outside the clock.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path


def clear_run_folder(argv: Sequence[str], cwd: Path) -> None:
    """Remove the folder ``argv``'s ``run --out NAME`` would write, when it holds an earlier run (its ``run.json``);
    any other command, or a folder that is not a run's, is left alone."""
    if "run" not in argv or "--out" not in argv:
        return
    position = list(argv).index("--out") + 1
    if position >= len(argv):
        return
    folder = cwd / argv[position]
    if (folder / "run.json").is_file():
        shutil.rmtree(folder)
