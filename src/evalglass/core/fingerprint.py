"""Content fingerprints and content addresses: the one home of every hash EvalGlass takes over JSON.

Two forms exist, and both are persisted, so neither may change its bytes:

- A **fingerprint** (approvals, validations, definition files, artifacts) is ``sha256:`` + the hex digest of
  :func:`canonical_json` (the standard library's encoder: sorted keys, no insignificant whitespace, UTF-8, NaN
  refused). Two definitions that mean the same thing serialise identically, so reformatting YAML or reordering keys
  does not make an approval stale; changing any semantic field does. Ledgers and run records hold these.
- A **content address** (the call cache's keys, lane and judge definitions) is the bare hex digest of
  :func:`address_json` (orjson, sorted keys). The call cache's keys and the judge fingerprints calibration records
  hold are these. The two encoders differ on some floats (``1e-07`` against ``1e-7``) and on NaN (refused against
  ``null``), which is why they stay two named functions rather than one that would silently move either kind of
  stored value.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any

import orjson
from pydantic import AfterValidator, WithJsonSchema

PREFIX = "sha256:"
#: The form of every fingerprint EvalGlass writes: ``sha256:`` and 64 lowercase hex digits.
FINGERPRINT_PATTERN = r"^sha256:[0-9a-f]{64}$"
_WELL_FORMED = re.compile(FINGERPRINT_PATTERN)


def fingerprint_problem(value: str) -> str | None:
    """Why ``value`` is not a fingerprint EvalGlass could have written, or None when it is one."""
    if _WELL_FORMED.match(value):
        return None
    return f"malformed fingerprint {value!r}: a fingerprint is 'sha256:' and 64 lowercase hex digits"


def _well_formed(value: str) -> str:
    problem = fingerprint_problem(value)
    if problem is not None:
        raise ValueError(f"{problem}; copy it from `evalglass explain`")
    return value


#: A fingerprint field that refuses a malformed value with a message saying so. A malformed fingerprint can never
#: match one EvalGlass computes, so accepting it would only turn a typo into a misleading "stale" later.
Fingerprint = Annotated[
    str, AfterValidator(_well_formed), WithJsonSchema({"type": "string", "pattern": FINGERPRINT_PATTERN})
]


def canonical_json(payload: Any) -> bytes:
    """The bytes a ``sha256:`` fingerprint hashes (stable since the first ledger was written)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def as_set(values: list[Any]) -> list[Any]:
    """A list the tool reads as a set, as a fingerprint binds it: each value once, in the order of its canonical
    JSON. Reordering such a list (a gate's ``tolerate``, an ``enum``'s ``values``) or naming a value twice changes
    nothing measured, so it must not make an approval stale."""
    unique = {canonical_json(value): value for value in values}
    return [unique[key] for key in sorted(unique)]


def fingerprint_of(payload: Any) -> str:
    return PREFIX + hashlib.sha256(canonical_json(payload)).hexdigest()


def fingerprint_of_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def address_json(value: Any) -> bytes:
    """Deterministic JSON bytes for content addresses and cached values: sorted keys, no whitespace, UTF-8.
    Non-JSON values raise TypeError."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def content_address(payload: Any) -> str:
    """The bare hex SHA-256 of :func:`address_json`: a call-cache key, a lane's or a judge's definition."""
    return hashlib.sha256(address_json(payload)).hexdigest()


def short(fingerprint: str, length: int = 12) -> str:
    """A readable prefix for tables; full fingerprints stay in artifacts and ledger snippets."""
    return fingerprint.removeprefix(PREFIX)[:length]
