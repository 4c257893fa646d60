"""Case-insensitive text comparison as the Unicode standard defines it (canonical caseless match, D145).

``str.casefold`` alone leaves canonically equivalent texts apart: ``"Café"`` written precomposed (NFC, ``é``) and
decomposed (NFD, ``e`` + U+0301) fold to different strings, though they are the same text, and folding can itself
produce sequences that are not normalised (``"ǰ"`` folds to ``j`` + U+030C). Unicode's canonical caseless match
compares ``NFD(casefold(NFD(x)))``. :func:`caseless` gives the composed form of that, ``NFC(casefold(NFD(x)))``:
two texts share it exactly when they match (NFC and NFD of a text are equal exactly when the other is), and
composed, a substring search (``contains``) never finds ``cafe`` inside ``café`` by its decomposed ``e``.
Compatibility forms (full-width ``"Ｐ"`` and ``"p"``) stay apart: that is NFKC's business
(``normalize: {unicode: true}``), not case's (case folding itself maps ``"ﬁ"`` to ``"fi"`` and ``"ß"`` to ``"ss"``).
"""

from __future__ import annotations

import unicodedata


def caseless(text: str) -> str:
    """The key two texts share exactly when they are a canonical caseless match. ASCII text (which NFD leaves as it
    is) is only case-folded, so the common case costs what ``casefold`` does."""
    if text.isascii():
        return text.casefold()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())
