"""Streaming a JSONL dataset: one example at a time, hashed in the same pass.

A line that is not a JSON object is not dropped: it comes out as a :class:`BadLine`, which the pipeline scores as
``error`` for every metric so active gates block while the rest of the run stays useful.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.fingerprint import PREFIX
from evalglass.errors import SetupError


@dataclass(frozen=True, slots=True)
class BadLine:
    id: str
    line: int
    code: str
    message: str


def field_getter(path: str) -> Callable[[Mapping[str, Any]], Any]:
    parts = parse_path(path)
    if len(parts) == 1 and isinstance(parts[0], str):
        key = parts[0]
        return lambda record: record.get(key, ABSENT)
    return lambda record: get_path(record, parts)


class DatasetReader:
    """Iterate once over a JSONL file; afterwards ``fingerprint`` is the SHA-256 of every byte read."""

    def __init__(self, path: Path, *, id_field: str, output_field: str) -> None:
        self.path = path
        self._id = field_getter(id_field)
        self._id_field = id_field
        self._output = field_getter(output_field)
        self._hash = hashlib.sha256()
        self.examples = 0
        self.bad_lines = 0
        self._done = False

    @property
    def fingerprint(self) -> str:
        if not self._done:
            raise RuntimeError("the dataset fingerprint is known only after the whole file was read")
        return PREFIX + self._hash.hexdigest()

    def __iter__(self) -> Iterator[Example | BadLine]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            raise SetupError(
                "dataset file not found", where=str(self.path), fix="fix `dataset.path` in the config"
            ) from None
        except OSError as exc:
            raise SetupError(f"cannot read dataset: {exc.strerror}", where=str(self.path)) from None
        update = self._hash.update
        loads = orjson.loads
        get_id = self._id
        get_output = self._output
        with handle:
            for number, raw in enumerate(handle, start=1):
                update(raw)
                if not raw.strip():
                    continue
                try:
                    record = loads(raw)
                except orjson.JSONDecodeError as exc:
                    yield self._bad(number, "malformed_json", f"not valid JSON ({exc})")
                    continue
                if type(record) is not dict:
                    yield self._bad(number, "not_an_object", f"expected a JSON object, got {type(record).__name__}")
                    continue
                example_id = get_id(record)
                if type(example_id) is not str:
                    if example_id is ABSENT:
                        yield self._bad(number, "id_missing", f"no id field '{self._id_field}'")
                        continue
                    if type(example_id) is not int:
                        yield self._bad(number, "id_invalid", f"id must be a string or integer, not {example_id!r}")
                        continue
                    example_id = str(example_id)
                self.examples += 1
                yield Example(id=example_id, line=number, fields=record, output=get_output(record))
        self._done = True

    def _bad(self, number: int, code: str, message: str) -> BadLine:
        self.examples += 1
        self.bad_lines += 1
        return BadLine(id=f"line:{number}", line=number, code=code, message=f"{self.path}:{number}: {message}")
