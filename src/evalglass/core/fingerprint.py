"""Content fingerprints that approvals and validations are bound to.

A fingerprint is ``sha256:`` + the hex digest of canonical JSON (sorted keys, no insignificant whitespace, UTF-8).
Two definitions that mean the same thing serialise identically, so reformatting YAML or reordering keys does not
make an approval stale; changing any semantic field does.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

PREFIX = "sha256:"


def canonical_json(payload: Any) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def fingerprint_of(payload: Any) -> str:
    return PREFIX + hashlib.sha256(canonical_json(payload)).hexdigest()


def fingerprint_of_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def short(fingerprint: str, length: int = 12) -> str:
    """A readable prefix for tables; full fingerprints stay in artifacts and ledger snippets."""
    return fingerprint.removeprefix(PREFIX)[:length]
