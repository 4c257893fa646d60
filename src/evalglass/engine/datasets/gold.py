"""The gold fingerprint: what the ledger's ``validated_gold`` binds.

It covers every example as the dataset holds it (its id and every field) except the recorded output fields, so a
new batch of outputs never makes gold stale while an edited reference, input, id or ``not_captured`` mark, or an
added or removed example, always does. The order of the examples does not count: nothing a gate measures depends on
it (every interval is computed from the values as a multiset: the seeded bootstraps sort them first,
``core.stats.bootstrapping``), and a reordered dataset (sorted, merged, exported again) used to block an approved
gate although nothing it measures changed.

Concretely (scheme 2): each record (the parsed JSON object, keys in the file's order, the output fields removed) is
written as JSON indented by two spaces, as it stands one level into a list (what ``json.dumps([record], indent=2,
ensure_ascii=False)`` writes between ``[\n  `` and ``\n]``, in orjson's bytes: one call writes a whole batch, cut at
the records' boundaries) and hashed with SHA-256; the digests are sorted (bytewise), duplicates kept, so two equal
records count twice; the fingerprint is the SHA-256 of ``GOLD_SCHEME``, the number of records as 8 big-endian bytes,
and the sorted digests. A line that is not an example (malformed JSON, no id) enters as its code and message, not its
line number. Whitespace and escaping of the file do not count; key order within a record does (a reordered record is
an edited record: conservative, never lenient).

Scheme 1 (before 2026-12-05) hashed the records joined by ``,`` in file order: a validation made with it does not
match scheme 2 and blocks once (``gold_stale``) until the entry ``explain`` prints is pasted again; it never passes
silently (docs/config.md, "What gold covers").

Which fields are left out is decided by the config (:meth:`Config.gold_excluded_fields`, ``core.goldfields``): the
recorded output field of every task the run scores (the task, or each variant) that reads its outputs from the
dataset file, nothing otherwise. Moving outputs out of the dataset file into their own file (``task.path``)
therefore keeps the gold fingerprint: the records without the output are the same bytes. Removing a field a record
does not have changes nothing, so a run with one output field hashes the same bytes whichever other (absent) fields
are also left out.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import methodcaller
from typing import Any, cast

import orjson

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import parse_path
from evalglass.core.fingerprint import PREFIX
from evalglass.core.goldfields import record_without
from evalglass.core.uniform import all_of_type
from evalglass.engine.datasets.dataset import BadLine
from evalglass.readers.jsonvalues import non_finite

#: How each record is written for its digest: orjson's two-space indentation, as the record stands in a list (one
#: level in), so a batch is written by one call and cut at its records' boundaries (``_pieces``): a JSON string
#: holds no raw newline and a deeper line is indented further, so ``,\n  {`` occurs only between records.
_INDENTED = orjson.OPT_INDENT_2
_BETWEEN = b",\n  {"


def _piece(value: Any, non_finite: bool = True) -> bytes:
    """``value`` as its digest hashes it: what ``json.dumps([value], indent=2, ensure_ascii=False)`` writes between
    ``[\n  `` and ``\n]``, in orjson's bytes, except for a value orjson cannot write (an integer beyond 64 bits) or
    writes as another (a NaN or an infinity, as ``null``), which the standard library writes as it is (``NaN``,
    ``Infinity``), so a gold edited from NaN to null changes the fingerprint. It depends on the value alone, never on
    the batch it came in. ``non_finite=False``: the value comes from a reader that cannot give one."""
    try:
        data = orjson.dumps([value], option=_INDENTED)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: the standard library writes it, the same way
        return _piece_exactly(value)
    return _piece_exactly(value) if non_finite and _holds_non_finite(data, value) else data[4:-2]


def _piece_exactly(value: Any) -> bytes:
    return json.dumps([value], indent=2, ensure_ascii=False).encode()[4:-2]


def _pieces(records: list[Any], non_finite: bool) -> list[bytes] | None:
    """Each record (a dict) as :func:`_piece` writes it, from one ``orjson.dumps`` of the batch cut between records;
    None when a record needs the standard library (the caller then writes them one by one)."""
    try:
        data = orjson.dumps(records, option=_INDENTED)
    except orjson.JSONEncodeError:
        return None
    if non_finite and _holds_non_finite(data, records):
        return None
    first, *rest = data[4:-2].split(_BETWEEN)
    return [first, *map(b"{".__add__, rest)]


def _holds_non_finite(data: bytes, value: Any) -> bool:
    """Whether ``value``, which orjson wrote as ``data``, holds a NaN or an infinity (orjson writes each as
    ``null``; only Parquet rows hold one). The walk is made only when ``data`` holds a ``null``."""
    return b"null" in data and non_finite(value) is not None


def _top_level_keys(paths: Sequence[str]) -> tuple[str, ...] | None:
    """``paths`` as keys of the record itself (the usual ``output``) when every one names one, else None."""
    keys: list[str] = []
    for path in paths:
        parts = parse_path(path)
        if len(parts) != 1 or not isinstance(parts[0], str):
            return None
        keys.append(parts[0])
    return tuple(keys)


#: What the fingerprint's hash starts with: the scheme (module docstring), so no other hash EvalGlass takes over
#: the same digests can be mistaken for it.
GOLD_SCHEME = b"evalglass gold fingerprint 2\n"
DIGEST_SIZE = 32
_DIGEST = methodcaller("digest")
#: From this many records on, the digests are sorted by numpy (≈ 4x faster at a million; its import costs more below).
_NUMPY_FROM = 50_000


class GoldHasher:
    """Feed it what the dataset reader gives, in order; ``fingerprint`` is then the gold fingerprint.

    ``excluded_fields``: the fields left out (:meth:`Config.gold_excluded_fields`); any number, none included.

    Cost: a batch is written by one ``orjson.dumps`` call, cut into its records, and each is hashed on its own, with
    C-level ``map`` calls and no Python frame per record; output fields that are keys of the record are popped from
    copies of the records, a nested output path takes the general (slower) copy. The digests (32 bytes a record) are
    kept and sorted once at the end: the price of an order-free fingerprint (module docstring), about 0.5 µs a record
    more than scheme 1 (its SHA-256 calls, one a record).
    """

    def __init__(self, excluded_fields: Sequence[str], *, holds_non_finite: bool = True) -> None:
        """``holds_non_finite``: whether the reader's values can hold a NaN or an infinity (``Reader``); when they
        cannot, a batch whose bytes hold a ``null`` is not walked to look for one (≈ 1.3 µs a record)."""
        self._non_finite = holds_non_finite
        self._without = record_without(excluded_fields)
        self._keys = _top_level_keys(excluded_fields)
        self._general = bool(excluded_fields) and self._keys is None
        #: Every record's digest, in the order read (sorted once, by ``fingerprint``).
        self._digests = bytearray()
        self._count = 0

    def _records_without(self, records: list[Mapping[str, Any]]) -> list[Any]:
        if self._keys and all_of_type(records, dict):
            copies = list(map(dict.copy, cast("list[dict[str, Any]]", records)))
            # The records are shared with the metrics: the keys are popped from the copies.
            for key in self._keys:
                deque(map(dict.pop, copies, repeat(key), repeat(None)), maxlen=0)
            return copies
        if not self._keys and not self._general:
            return records
        return list(map(self._without, records))

    def _add(self, pieces: Iterable[bytes]) -> None:
        """Each piece (a record as gold sees it, serialised) hashed on its own, its digest kept."""
        before = len(self._digests)
        self._digests += b"".join(map(_DIGEST, map(hashlib.sha256, pieces)))
        self._count += (len(self._digests) - before) // DIGEST_SIZE

    def add(self, batch: ExampleBatch | list[Example | BadLine]) -> None:
        if isinstance(batch, ExampleBatch):
            records = self._records_without(batch.records)
            if not records:
                return
            pieces = _pieces(records, self._non_finite) if all_of_type(records, dict) else None
            self._add(pieces if pieces is not None else [_piece(record, self._non_finite) for record in records])
            return
        for item in batch:
            self.add_item(item)

    def add_item(self, item: Example | BadLine) -> None:
        if isinstance(item, BadLine):
            message = item.message.split(f":{item.line}: ", 1)[-1]  # without the path, which depends on the cwd
            self._add([_piece({"\u0000bad_line": item.code, "message": message})])
            return
        self._add([_piece(self._without(item.fields), self._non_finite)])

    @property
    def fingerprint(self) -> str:
        """Scheme 2 (module docstring): the same for any order of the records, and for any batching."""
        digest = hashlib.sha256(GOLD_SCHEME)
        digest.update(self._count.to_bytes(8, "big"))
        digest.update(_sorted_digests(self._digests))
        return PREFIX + digest.hexdigest()


def _sorted_digests(digests: bytearray) -> bytearray:
    """The 32-byte digests in ``digests``, sorted bytewise in place (so any later call sorts them again, in any
    order). A large set is sorted by numpy, on the buffer itself: no copy (at a million records a copy, numpy's
    sorted copy and its bytes were ≈ 96 MB beside the run's columns at the end of the read); a small one without
    importing it (the gold of ``preflight`` is taken without numpy): the same order."""
    if len(digests) // DIGEST_SIZE < _NUMPY_FROM:
        digests[:] = b"".join(sorted(digests[at : at + DIGEST_SIZE] for at in range(0, len(digests), DIGEST_SIZE)))
        return digests
    import numpy as np

    # Fixed-width byte strings compare as their bytes (a trailing NUL sorts first, as in ``sorted``).
    view = np.frombuffer(digests, dtype=f"S{DIGEST_SIZE}")
    view.sort()
    del view  # the buffer export ends: the bytearray may grow again
    return digests
