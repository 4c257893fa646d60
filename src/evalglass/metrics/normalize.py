"""Text normalisation for string comparison, compiled once per metric into a single function.

Steps run in a fixed order: Unicode NFKC, then case folding (Unicode's canonical caseless match, so NFC and NFD
forms of one text compare equal: :func:`~evalglass.core.textcase.caseless`), then punctuation removal, then whitespace
collapsing, so removing a punctuation mark between two spaces never leaves a double space behind.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.textcase import caseless

Normalizer = Callable[[str], str]

_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


class NormalizeOptions(BaseModel):
    """Which differences between two strings do not count. Everything is off by default: exact means exact."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    case: bool = Field(
        default=False,
        description="Ignore case (Unicode canonical caseless match: 'Straße' = 'STRASSE', and 'Café' precomposed = "
        "'CAFE' + combining accent).",
    )
    whitespace: bool = Field(
        default=False, description="Collapse every run of whitespace to one space and strip both ends."
    )
    punctuation: bool = Field(
        default=False,
        description="Remove ASCII punctuation/symbols (string.punctuation) and all Unicode punctuation (P*).",
    )
    unicode: bool = Field(default=False, description="Apply Unicode NFKC normalisation (e.g. 'ﬁ' -> 'fi').")

    @property
    def is_identity(self) -> bool:
        return not (self.case or self.whitespace or self.punctuation or self.unicode)


def strip_punctuation(text: str) -> str:
    """Remove ASCII ``string.punctuation`` and any non-ASCII character in a Unicode punctuation category."""
    text = text.translate(_ASCII_PUNCTUATION)
    if text.isascii():
        return text
    return "".join(char for char in text if not unicodedata.category(char).startswith("P"))


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def build_normalizer(options: NormalizeOptions) -> Normalizer:
    """One function applying the enabled steps in order; the identity function when none is enabled."""
    steps: list[Normalizer] = []
    if options.unicode:
        steps.append(_nfkc)
    if options.case:
        steps.append(caseless)
    if options.punctuation:
        steps.append(strip_punctuation)
    if options.whitespace:
        steps.append(_collapse_whitespace)
    if not steps:
        return _identity
    if len(steps) == 1:
        return steps[0]

    def normalize(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return normalize


def _identity(text: str) -> str:
    return text


def is_identity(normalizer: Normalizer) -> bool:
    """Whether ``normalizer`` (from :func:`build_normalizer`) leaves every string as it is."""
    return normalizer is _identity
