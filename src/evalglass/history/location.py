"""Which history database a command uses, and its URL as it may be shown anywhere."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalglass.core.redact import Redactor

#: The embedded default, relative to the working directory (beside ``.evalglass/runs/``).
DEFAULT_PATH = Path(".evalglass") / "history.sqlite"
DB_ENV = "EVALGLASS_DB"


def database_url(explicit: str | None, env: Mapping[str, str]) -> str:
    """``--db URL`` when given, else ``$EVALGLASS_DB``, else the SQLite file under ``.evalglass/``.

    A bare path (no ``scheme://``) is taken as a SQLite file, so ``--db team.sqlite`` works as expected.
    """
    chosen = explicit if explicit else env.get(DB_ENV) or None
    if chosen is None:
        return f"sqlite:///{DEFAULT_PATH}"
    if "://" not in chosen:
        return f"sqlite:///{chosen}"
    return chosen


def shown(url: str) -> str:
    """The URL with any password replaced, through the project's one redactor (its URL-password rule), for
    messages, logs and artifacts. The password never appears anywhere else the tool writes."""
    return Redactor().text(url)
