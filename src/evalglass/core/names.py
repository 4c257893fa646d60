"""Suggesting the name that was probably meant ("did you mean"), for every place a user names something."""

from __future__ import annotations

from collections.abc import Iterable


def closest(word: str, allowed: Iterable[str]) -> str | None:
    """The allowed name closest to ``word``, when one is close enough to be a likely typo."""
    import difflib  # only when a name is wrong: not loaded by every run that reads a config

    close = difflib.get_close_matches(word, list(allowed), n=1, cutoff=0.6)
    return close[0] if close else None


def suggest(word: str, allowed: Iterable[str]) -> str:
    """A short fix: "did you mean 'x'?", else the allowed names, else "remove it"."""
    names = sorted(allowed)
    match = closest(word, names)
    if match is not None:
        return f"did you mean '{match}'?"
    return f"allowed: {', '.join(names)}" if names else "remove it"
