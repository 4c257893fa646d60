"""The gold fingerprint: what the ledger's ``validated_gold`` binds.

It covers every example as the dataset holds it — its id and every field — except the recorded output fields, so a
new batch of outputs never makes gold stale while an edited reference, input, id, or an added, removed or reordered
example always does. Concretely: the SHA-256 of each record (the parsed JSON object, keys in the file's order, the
output fields removed) serialised as compact JSON, records joined by ``,`` in file order, so the value is the same
however the file is split into batches. A line that is not an example (malformed JSON, no id) enters as its code and
message. Whitespace and escaping of the file do not count; key order does (a reordered record is an edited record:
conservative, never lenient).

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
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import repeat
from typing import Any, cast

import orjson

from evalglass.core.example import RECORDS_WITHOUT_JSON, Example, ExampleBatch
from evalglass.core.fieldpath import parse_path
from evalglass.core.fingerprint import PREFIX
from evalglass.core.goldfields import record_without
from evalglass.core.uniform import all_of_type
from evalglass.engine.datasets.dataset import BadLine
from evalglass.readers.jsonsource import split_last_key
from evalglass.readers.jsonvalues import non_finite


def _dumps(value: Any, non_finite: bool = True) -> bytes:
    """``value`` as compact JSON, exactly: orjson's bytes, except for a value orjson cannot write (an integer beyond
    64 bits) or writes as another (a NaN or an infinity, as ``null``), which the standard library writes as it is
    (``NaN``, ``Infinity``), so a gold edited from NaN to null changes the fingerprint. A value holding neither is
    orjson's bytes, as it always was. ``non_finite=False``: the value comes from a reader that cannot give one."""
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: the standard library writes it, the same way
        return _dumps_exactly(value)
    return _dumps_exactly(value) if non_finite and _holds_non_finite(data, value) else data


def _dumps_exactly(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _holds_non_finite(data: bytes, value: Any) -> bool:
    """Whether ``value``, which orjson wrote as ``data``, holds a NaN or an infinity (orjson writes each as
    ``null``; only Parquet rows hold one). The walk is made only when ``data`` holds a ``null``."""
    return b"null" in data and non_finite(value) is not None


def _rest_at_last_key(records: list[dict[str, Any]], key: str) -> bytes | None:
    """The records without ``key`` as one JSON array, when it is every record's last key; else None."""
    halves = split_last_key(records, key, column=False)
    return halves[1] if halves is not None else None


def _top_level_keys(paths: Sequence[str]) -> tuple[str, ...] | None:
    """``paths`` as keys of the record itself (the usual ``output``) when every one names one, else None."""
    keys: list[str] = []
    for path in paths:
        parts = parse_path(path)
        if len(parts) != 1 or not isinstance(parts[0], str):
            return None
        keys.append(parts[0])
    return tuple(keys)


class GoldHasher:
    """Feed it what the dataset reader gives, in order; ``fingerprint`` is then the gold fingerprint.

    ``excluded_fields``: the fields left out (:meth:`Config.gold_excluded_fields`); any number, none included.

    Cost (measured, see BENCHMARKS.md): a batch is serialised by one ``orjson.dumps`` call and hashed. A single
    output field, when it is the last key of every record (as datasets are usually written), is popped from the
    records, serialised around and put back (:meth:`_serialised_in_place`), or nothing is serialised at all when the
    dataset reader already wrote those bytes while checking the batch; output fields that are keys elsewhere
    (or several of them) are popped from copies of the records, with C-level ``map`` calls, no Python frame per
    record; a nested output path takes the general (slower) copy. Every way hashes the same bytes.
    """

    def __init__(self, excluded_fields: Sequence[str], *, holds_non_finite: bool = True) -> None:
        """``holds_non_finite``: whether the reader's values can hold a NaN or an infinity (``Reader``); when they
        cannot, a batch whose bytes hold a ``null`` is not walked to look for one (≈ 1.3 µs a record)."""
        self._non_finite = holds_non_finite
        self._without = record_without(excluded_fields)
        self._keys = _top_level_keys(excluded_fields)
        self._general = bool(excluded_fields) and self._keys is None
        self._hash = hashlib.sha256()
        self._first = True

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

    def _serialised_in_place(self, batch: ExampleBatch) -> bytes | None:
        """The batch serialised without its output, when the output is every record's last key: the dataset
        reader's bytes when it wrote them while checking the batch (:data:`RECORDS_WITHOUT_JSON`), else each
        record's last item popped from the shared records, the rest serialised, and the item put back
        (:func:`split_last_key`: the records are as they were, key order included). No copy is made, and no garbage
        that would trigger the cycle collector (the copies used to cost more in collections than in copying).
        None: the general way (a record without the key, or with it elsewhere, or a value orjson cannot write)."""
        records = batch.records
        if self._keys is None or len(self._keys) != 1 or not records or not all_of_type(records, dict):
            return None
        (key,) = self._keys
        shared = cast("list[dict[str, Any]]", records)
        rest = batch.derived((RECORDS_WITHOUT_JSON, key), partial(_rest_at_last_key, shared, key))
        if rest is None or (
            self._non_finite and b"null" in rest and non_finite(self._records_without(records)) is not None
        ):
            return None  # a NaN or an infinity outside the output: the general way writes it as it is
        return rest[1:-1]

    def _update(self, data: bytes) -> None:
        if not data:
            return
        self._hash.update(data if self._first else b"," + data)
        self._first = False

    def add(self, batch: ExampleBatch | list[Example | BadLine]) -> None:
        if isinstance(batch, ExampleBatch):
            in_place = self._serialised_in_place(batch)
            if in_place is not None:
                self._update(in_place)
                return
            records = self._records_without(batch.records)
            try:
                data = orjson.dumps(records)[1:-1]  # "[a,b]" -> "a,b": the same bytes as record by record
            except orjson.JSONEncodeError:
                data = b",".join(map(_dumps, records))
            else:
                if self._non_finite and _holds_non_finite(data, records):
                    data = b",".join(map(_dumps, records))
            self._update(data)
            return
        for item in batch:
            self.add_item(item)

    def add_item(self, item: Example | BadLine) -> None:
        if isinstance(item, BadLine):
            message = item.message.split(f":{item.line}: ", 1)[-1]  # without the path, which depends on the cwd
            self._update(_dumps({"\u0000line": item.line, "code": item.code, "message": message}))
            return
        self._update(_dumps(self._without(item.fields), self._non_finite))

    @property
    def fingerprint(self) -> str:
        return PREFIX + self._hash.hexdigest()
