"""Suggesting the name that was probably meant ("did you mean"), for every place a user names something."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, allowed: Iterable[str]) -> str | None:
    """The allowed name closest to ``word``, when one is close enough to be a likely typo."""
    close = difflib.get_close_matches(word, list(allowed), n=1, cutoff=0.6)
    return close[0] if close else None


def suggest(word: str, allowed: Iterable[str]) -> str:
    """A short fix: "did you mean 'x'?", else the allowed names, else "remove it"."""
    names = sorted(allowed)
    match = closest(word, names)
    if match is not None:
        return f"did you mean '{match}'?"
    return f"allowed: {', '.join(names)}" if names else "remove it"


#: What joins a metric's name to its variant's in a run with variants (``metric@variant``); ``@`` is not allowed in
#: a declared name, so these never clash with one (core.variants builds these names).
VARIANT_SEPARATOR = "@"


def declared_metric(subject: str) -> str:
    """The declared metric a decided subject measures: ``m`` for ``m``, ``m@variant`` and ``m@a-vs-b`` alike
    (variants change the task, never a metric's definition or its judge)."""
    return subject.split(VARIANT_SEPARATOR, 1)[0]
