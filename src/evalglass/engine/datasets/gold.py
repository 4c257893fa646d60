"""The gold fingerprint: what the ledger's ``validated_gold`` binds.

It covers every example as the dataset holds it — its id and every field — except the recorded output field, so a
new batch of outputs never makes gold stale while an edited reference, input, id, or an added, removed or reordered
example always does. Concretely: the SHA-256 of each record (the parsed JSON object, keys in the file's order, the
output field removed) serialised as compact JSON, records joined by ``,`` in file order, so the value is the same
however the file is split into batches. A line that is not an example (malformed JSON, no id) enters as its code and
message. Whitespace and escaping of the file do not count; key order does (a reordered record is an edited record:
conservative, never lenient).

Which field is left out is decided by the config (:meth:`Config.gold_excluded_field`): the recorded output field when
outputs are recorded in the dataset file, nothing otherwise. Moving outputs out of the dataset file into their own
file (``task.path``) therefore keeps the gold fingerprint: the records without the output are the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Mapping
from itertools import repeat
from typing import Any, cast

import orjson

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import parse_path
from evalglass.core.fingerprint import PREFIX
from evalglass.core.uniform import all_of_type
from evalglass.engine.datasets.dataset import BadLine


def _remover(path: str | None) -> Callable[[Mapping[str, Any]], Any]:
    """A function giving a record without the value at ``path`` (the record itself, unchanged, when it has none).

    The dataset's records are shared with the metrics, so the value is removed from a copy, copying only the
    mappings on the way down to it.
    """
    if path is None:
        return lambda record: record
    parts = parse_path(path)

    def remove(node: Any, depth: int) -> Any:
        part = parts[depth]
        last = depth == len(parts) - 1
        if isinstance(part, int) and type(node) is list and part < len(node):
            copy: Any = list(node)
            if last:
                del copy[part]
            else:
                copy[part] = remove(node[part], depth + 1)
            return copy
        if type(node) is dict and str(part) in node:
            key = str(part)
            copy = dict(node)
            if last:
                del copy[key]
            else:
                copy[key] = remove(node[key], depth + 1)
            return copy
        return node

    return lambda record: remove(record, 0)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: the standard library writes it, the same way
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _top_level_key(path: str | None) -> str | None:
    """``path`` when it names a key of the record itself (the usual ``output``), else None."""
    if path is None:
        return None
    parts = parse_path(path)
    return parts[0] if len(parts) == 1 and isinstance(parts[0], str) else None


class GoldHasher:
    """Feed it what the dataset reader gives, in order; ``fingerprint`` is then the gold fingerprint.

    Cost (measured, see BENCHMARKS.md): a batch is serialised by one ``orjson.dumps`` call and hashed. The output
    field, when it is the last key of every record (as datasets are usually written), is popped from the records,
    serialised around and put back (:meth:`_serialised_in_place`); when it is a key elsewhere, each record is copied
    and the key popped, with C-level ``map`` calls, no Python frame per record; a nested output path takes the
    general (slower) copy. Every way hashes the same bytes.
    """

    def __init__(self, excluded_field: str | None) -> None:
        self._without = _remover(excluded_field)
        self._key = _top_level_key(excluded_field)
        self._general = excluded_field is not None and self._key is None
        self._hash = hashlib.sha256()
        self._first = True

    def _records_without(self, records: list[Mapping[str, Any]]) -> list[Any]:
        if self._key is not None and all_of_type(records, dict):
            copies = list(map(dict.copy, cast("list[dict[str, Any]]", records)))
            # The records are shared with the metrics: the key is popped from the copies.
            deque(map(dict.pop, copies, repeat(self._key), repeat(None)), maxlen=0)
            return copies
        if self._key is None and not self._general:
            return records
        return list(map(self._without, records))

    def _serialised_in_place(self, records: list[Mapping[str, Any]]) -> bytes | None:
        """The batch serialised without its output, when the output is every record's last key: popped from the
        shared records, serialised, and put back before anything else sees them (the same key, the same value
        object, again last: the records are as they were, key order included). No copy is made, and no garbage
        that would trigger the cycle collector (the copies used to cost more in collections than in copying).
        None: the general way (a record without the key, or with it elsewhere, or a value orjson cannot write)."""
        key = self._key
        if key is None or not records or not all_of_type(records, dict):
            return None
        shared = cast("list[dict[str, Any]]", records)
        if list(map(next, map(reversed, shared), repeat(None))).count(key) != len(shared):
            return None
        popped = list(map(dict.pop, shared, repeat(key)))
        try:
            return orjson.dumps(shared)[1:-1]
        except orjson.JSONEncodeError:
            return None
        finally:
            deque(map(dict.__setitem__, shared, repeat(key), popped), maxlen=0)

    def _update(self, data: bytes) -> None:
        if not data:
            return
        self._hash.update(data if self._first else b"," + data)
        self._first = False

    def add(self, batch: ExampleBatch | list[Example | BadLine]) -> None:
        if isinstance(batch, ExampleBatch):
            in_place = self._serialised_in_place(batch.records)
            if in_place is not None:
                self._update(in_place)
                return
            records = self._records_without(batch.records)
            try:
                data = orjson.dumps(records)[1:-1]  # "[a,b]" -> "a,b": the same bytes as record by record
            except orjson.JSONEncodeError:
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
        self._update(_dumps(self._without(item.fields)))

    @property
    def fingerprint(self) -> str:
        return PREFIX + self._hash.hexdigest()
