"""The one redactor: which values are secrets, and text, records and bytes with every secret replaced.

Pure: it is given the environment (a mapping) and the names the config declares; collecting them from the process
is the edge's job (``evalglass.redaction``).

What counts as a secret (documented in docs/lanes.md, "Secrets"):

* the value of every environment variable whose NAME says it holds a credential (:func:`is_secret_name`: KEY,
  TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH, PRIVATE, COOKIE, SESSION, ...);
* the value of every variable the config declares: ``secrets: [NAME, ...]`` and every ``api_key_env``;
* any value shaped like a well-known token (``sk-...``, ``ghp_...``, ``AKIA...``, a JWT), whatever its name;
* the password in a ``scheme://user:password@host`` URL held by any variable.

Values shorter than :data:`MIN_SECRET_LENGTH` characters are not treated as secrets: they would match ordinary text.

Order matters: redaction runs on the whole text BEFORE it is cut to a length (:meth:`Redactor.head`,
:meth:`Redactor.tail`), so a secret straddling the cut is replaced whole; and whatever a cut leaves at the cut edge
that is a prefix or suffix of a secret, of at least :data:`MIN_EDGE_FRAGMENT` characters, is replaced too (so a
text that was cut before it reached us, like a command's output tail, loses a piece at that edge as well).
Limit: a fragment shorter than that survives, as does a secret a program prints altered (reversed, base64-encoded,
split over lines).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

REDACTED = "<redacted>"
_REDACTED_BYTES = REDACTED.encode()
#: Values shorter than this are never treated as secrets (they would match ordinary text).
MIN_SECRET_LENGTH = 6
#: A piece of a secret left at a cut edge is redacted from this many characters on.
MIN_EDGE_FRAGMENT = 4

_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|SIGNATURE|CERT_PASS|PAT$"
)
# Well-known credential shapes, redacted whatever the variable is called.
_SECRET_VALUE = re.compile(
    r"(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.)"
)
# user:password@ inside a URL (e.g. DATABASE_URL=postgres://me:hunter2@db/x).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)(?P<password>[^/@\s]+)(?P<at>@)")
# An Authorization header's credential, e.g. quoted back in an HTTP error body.
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\"<]+")


@functools.lru_cache(maxsize=4096)  # an environment's names repeat from call to call; the regex is slow-ish
def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential (KEY, TOKEN, SECRET, PASSWORD, AUTH, ...)."""
    return bool(_SECRET_NAME.search(name.upper()))


@functools.lru_cache(maxsize=4096)
def looks_like_credential(value: str) -> bool:
    """Whether a value has the shape of a well-known token (OpenAI, GitHub, Slack, AWS, GitLab, a JWT)."""
    return bool(_SECRET_VALUE.search(value))


def redact_env(env: Mapping[str, str], declared: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``env`` safe to record, sorted by name: secret names (and ``declared`` ones) and credential-shaped
    values become ``<redacted>``; a password inside a URL is replaced in place."""
    names = set(declared)
    out: dict[str, str] = {}
    for name in sorted(env):
        value = env[name]
        if name in names or is_secret_name(name) or looks_like_credential(value):
            out[name] = REDACTED
        else:
            out[name] = _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED + m["at"], value)
    return out


def secret_values(env: Mapping[str, str], declared: Iterable[str] = ()) -> tuple[str, ...]:
    """The values in ``env`` that are secrets (see the module docstring), longest first."""
    names = set(declared)
    found: set[str] = set()
    for name, value in env.items():
        if name in names or is_secret_name(name) or looks_like_credential(value):
            found.add(value)
        if "@" in value:
            found.update(m["password"] for m in _URL_PASSWORD.finditer(value))
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=lambda v: (-len(v), v)))


def _json_forms(value: str) -> tuple[bytes, ...]:
    """How ``value`` appears inside a JSON string as orjson writes it (none: orjson cannot write a lone surrogate,
    the form an undecodable environment byte takes, so such a value never reaches a JSON artifact whole)."""
    try:
        return (orjson.dumps(value)[1:-1],)
    except TypeError:
        return ()


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces every secret it was given (plus bearer credentials and URL passwords) by ``<redacted>``."""

    secrets: tuple[str, ...] = ()
    _json_forms: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    _text_forms: tuple[bytes, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_json_forms", tuple(form for value in self.secrets for form in _json_forms(value)))
        object.__setattr__(
            self, "_text_forms", tuple(value.encode("utf-8", "surrogateescape") for value in self.secrets)
        )

    @classmethod
    def of(cls, values: Iterable[str]) -> Redactor:
        kept = {value for value in values if len(value) >= MIN_SECRET_LENGTH}
        return cls(tuple(sorted(kept, key=lambda v: (-len(v), v))))

    def with_values(self, values: Iterable[str]) -> Redactor:
        return Redactor.of((*self.secrets, *values))

    def text(self, text: str) -> str:
        """``text`` with every secret, bearer credential and URL password replaced (nothing cut)."""
        for value in self.secrets:
            if value in text:
                text = text.replace(value, REDACTED)
        if "earer" in text or "EARER" in text:
            text = _BEARER.sub(lambda m: m[1] + REDACTED, text)
        if "://" in text:
            text = _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED + m["at"], text)
        return text

    def edges(self, text: str, *, start: bool = True, end: bool = True) -> str:
        """``text`` with a secret's prefix at its end, or a secret's suffix at its start, replaced: what a cut
        through a secret leaves behind. Only cut edges are checked (a natural end of a text that happens to end like
        a secret begins, e.g. "/tmp" or "json", is left alone)."""
        for value in self.secrets:
            if end:
                for size in range(min(len(value) - 1, len(text)), MIN_EDGE_FRAGMENT - 1, -1):
                    if text.endswith(value[:size]):
                        text = text[:-size] + REDACTED
                        break
            if start:
                for size in range(min(len(value) - 1, len(text)), MIN_EDGE_FRAGMENT - 1, -1):
                    if text.startswith(value[-size:]):
                        text = REDACTED + text[size:]
                        break
        return text

    def head(self, text: str, limit: int, marker: str = "…") -> str:
        """The first ``limit`` characters of the redacted text (``marker`` added when cut)."""
        text = self.text(text)
        if len(text) <= limit:
            return text
        return self.edges(text[: max(0, limit - len(marker))], start=False) + marker

    def tail(self, text: str, limit: int, marker: str = "…") -> str:
        """The last ``limit`` characters of the redacted text (``marker`` in front when cut)."""
        text = self.text(text)
        if len(text) <= limit:
            return text
        return marker + self.edges(text[len(text) - max(0, limit - len(marker)) :], end=False)

    def tail_bytes(self, text: str, limit: int) -> str:
        """The redacted text cut to its last ``limit`` UTF-8 bytes (a character cut in two shows as U+FFFD). The
        text given may itself start where an earlier byte cut left it: that edge is checked too."""
        data = self.text(text).encode("utf-8", "surrogateescape")
        if len(data) > limit:
            data = data[len(data) - limit :] if limit else b""
        return self.edges(data.decode("utf-8", "replace"), end=False)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string in it (keys too) redacted."""
        if not self.secrets and isinstance(value, str) and "://" not in value and "earer" not in value:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def json_bytes(self, data: bytes) -> bytes:
        """Serialised JSON with every secret replaced where it appears inside a string (escaped as JSON writes it).
        The result is still valid JSON: the replacement holds no character JSON escapes."""
        for form in self._json_forms:
            if form in data:
                data = data.replace(form, _REDACTED_BYTES)
        return data

    def text_bytes(self, data: bytes) -> bytes:
        """UTF-8 text with every secret replaced."""
        for raw in self._text_forms:
            if raw in data:
                data = data.replace(raw, _REDACTED_BYTES)
        return data


__all__ = [
    "MIN_EDGE_FRAGMENT",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "is_secret_name",
    "looks_like_credential",
    "redact_env",
    "secret_values",
]
