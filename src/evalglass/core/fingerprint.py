"""Content fingerprints that approvals and validations are bound to.

A fingerprint is ``sha256:`` + the hex digest of canonical JSON (sorted keys, no insignificant whitespace, UTF-8).
Two definitions that mean the same thing serialise identically, so reformatting YAML or reordering keys does not
make an approval stale; changing any semantic field does.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any

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
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def fingerprint_of(payload: Any) -> str:
    return PREFIX + hashlib.sha256(canonical_json(payload)).hexdigest()


def fingerprint_of_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def short(fingerprint: str, length: int = 12) -> str:
    """A readable prefix for tables; full fingerprints stay in artifacts and ledger snippets."""
    return fingerprint.removeprefix(PREFIX)[:length]
