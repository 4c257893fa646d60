"""Recorded outputs kept in their own file (``task: {type: recorded, path: outputs.jsonl}``), joined to the dataset
by example id as the dataset streams.

Two ways to join, neither holding a Python object per output:

* **in step** (the common case: both files written in the same order): the outputs file is read alongside the
  dataset, a batch at a time; while the ids agree, each batch's outputs are simply taken in order;
* **by index**, from the first batch whose ids do not agree: the whole outputs file is indexed once as two numpy
  arrays (each line's id hash and byte offset, 16 bytes an output), and each example's output is found by a
  binary search and one parse of its line, the id compared in full (a hash collision is never taken for a match).

Either way, every output's id hash is kept, so that once the dataset has streamed, outputs whose id is not in the
dataset are counted (and named, a few of them) and an id recorded twice is refused. The hashes are Python's string
hashes, which are the same for the whole process; two different ids with equal 64-bit hashes could hide one
unmatched output from the count (a chance of about n²/2⁶⁴), never produce a wrong join.

A line of the outputs file that is not a JSON object with an id is refused (exit 2) with its file and line: an
output that cannot be attached to an example is not something to guess about.

Joined in step, the file is read once from its first byte to its last, and that read is hashed (:attr:`read_sha256`):
the run compares it with the file's bytes when the file's state moved during the run (a ``chmod``, a ``touch``: the
change may be metadata only, ``engine.jobs.pipeline.refuse_changed_inputs``). Joined by index, lines are read again
through a memory map, which no hash covers: such a run cannot tell a metadata-only change from a rewrite.
"""

from __future__ import annotations

import hashlib
import mmap
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.uniform import all_of_type
from evalglass.engine.datasets.dataset import BadLine, field_getter, opened_file
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import (
    JsonRefused,
    MendedLines,
    batch_is_exact,
    loads,
    loads_lone_surrogates,
    not_json,
    text_start,
)
from evalglass.readers.userfiles import open_regular

#: Unmatched output ids named in the run's summary (the count is always complete).
NAMED_UNMATCHED = 5


def _int64s(values: array[int]) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64) if values else np.empty(0, np.int64)


@dataclass(frozen=True)
class OutputsJoined:
    """What the join saw, once the dataset has streamed."""

    path: str
    outputs: int
    unmatched: int
    unmatched_ids: tuple[str, ...]
    method: str  # "in_step" or "index"


class RecordedOutputs:
    """Attach each example's output from ``path``; call :meth:`finish` after the last batch."""

    def __init__(self, path: Path, *, label: str, id_field: str, output_field: str) -> None:
        self.path = path
        self.label = label
        self._id = field_getter(id_field)
        self._id_field = id_field
        self._output = field_getter(output_field)
        # A regular file only (a FIFO or a directory is refused in one line, never waited on).
        self._handle: IO[bytes] = open_regular(
            path, what="recorded outputs file", missing_fix="fix `task.path` in the config", buffering=-1
        )
        #: The (device, inode) of the file opened (``dataset.opened_file``), whatever ``path`` names later.
        self.opened = opened_file(self._handle)
        #: The in-step read's hash (every byte, blank lines too); None once the file is read any other way.
        self._digest: hashlib._Hash | None = hashlib.sha256()
        self._read_whole = False
        self._lines = self._numbered_lines(self._digest)
        #: The lines read differently from their bytes (lone surrogate escapes read as U+FFFD), for the run's warnings.
        self.mended = MendedLines(label)
        self._line_no = 0
        self._pending: list[tuple[str, Any, int]] = []  # read ahead, not yet taken: (id, output, line)
        self._hashes = array("q")  # in step: every output's id hash, in file order
        self._dataset_hashes = array("q")
        self._index: tuple[np.ndarray, np.ndarray] | None = None  # (sorted id hashes, offsets in that order)
        self._map: mmap.mmap | None = None

    @property
    def read_sha256(self) -> str | None:
        """The SHA-256 (``sha256:`` and hex) of every byte this join read, when it read the file once from start
        to end and nothing else (joined in step, :meth:`finish` called); None otherwise (joined by index: lines were
        read again through a memory map that no hash covers)."""
        if self._digest is None or not self._read_whole:
            return None
        return "sha256:" + self._digest.hexdigest()

    # ------------------------------------------------------------------ reading
    def _numbered_lines(self, digest: hashlib._Hash | None = None) -> Iterator[tuple[int, int, bytes]]:
        """(line number, byte offset, line) for each non-blank line; the first without a byte order mark (its
        offset after it). ``digest``: given every byte read, blank lines and the mark too."""
        offset = 0
        for number, raw in enumerate(self._handle, start=1):
            if digest is not None:
                digest.update(raw)
            start = offset
            offset += len(raw)
            if number == 1:
                raw = text_start(raw, what="recorded outputs file", where=self.label)
                start = offset - len(raw)
            if raw.strip():
                yield number, start, raw

    def _parse(self, number: int, raw: bytes) -> tuple[str, Any]:
        where = f"{self.label}:{number}"
        try:
            record = loads(raw)  # exact: a repeated key, an integer beyond 64 bits or deep nesting is refused
        except JsonRefused as exc:
            raise SetupError(str(exc), where=where, fix="write each output as plain JSON") from None
        except orjson.JSONDecodeError as exc:
            try:
                mended = loads_lone_surrogates(raw)
            except JsonRefused as refused:
                raise SetupError(str(refused), where=where, fix="write each output as plain JSON") from None
            if mended is None:
                raise SetupError(not_json(raw, exc), where=where, fix="each line must be one JSON object") from None
            record, replaced = mended
            self.mended.add(where, replaced)
        if type(record) is not dict:
            raise SetupError(f"expected a JSON object, got {type(record).__name__}", where=where)
        return self._id_and_output(record, where)

    def _id_and_output(self, record: dict[str, Any], where: str) -> tuple[str, Any]:
        example_id = self._id(record)
        if type(example_id) is int:
            example_id = str(example_id)
        if type(example_id) is not str:
            what = "no id field" if example_id is ABSENT else "an id that is not a string or integer:"
            shown = f"'{self._id_field}'" if example_id is ABSENT else repr(example_id)
            raise SetupError(f"{what} {shown}", where=where, fix="give every output the id of its example")
        return example_id, self._output(record)

    def _read_ahead(self, count: int) -> bool:
        """Read until ``count`` outputs are pending; False when the file had no more.

        The lines are parsed together (one ``map``); a chunk with a line that is not a plain object with a string id
        is parsed line by line instead, which gives that line's exact error (or its integer id); so is a chunk the
        exact reader's scan cannot clear (a repeated key, an integer beyond 64 bits, deep nesting).
        """
        need = count - len(self._pending)
        if need <= 0:
            return True
        chunk = list(islice(self._lines, need))
        if not chunk:
            return False
        lines = [raw for _, _, raw in chunk]
        try:
            records = list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:
            records = []
        if records and not batch_is_exact(lines, records):
            records = []  # line by line: the exact reader says which line and why
        ids = list(map(self._id, records)) if all_of_type(records, dict) else []
        if len(ids) == len(chunk) and all_of_type(ids, str):
            self._hashes.extend(map(hash, ids))
            self._pending.extend(zip(ids, map(self._output, records), [number for number, _, _ in chunk], strict=True))
            return True
        for number, _, raw in chunk:
            example_id, output = self._parse(number, raw)
            self._hashes.append(hash(example_id))
            self._pending.append((example_id, output, number))
        return True

    # ------------------------------------------------------------------ joining
    def attach(self, batch: ExampleBatch | list[Example | BadLine]) -> ExampleBatch | list[Example | BadLine]:
        """The batch with each example's output taken from the outputs file (ABSENT when it has none)."""
        if isinstance(batch, ExampleBatch):
            ids = batch.ids
            outputs = self._outputs_for(ids)
            return ExampleBatch(ids=ids, lines=batch.lines, records=batch.records, outputs=outputs)
        examples = [item for item in batch if isinstance(item, Example)]
        found = iter(self._outputs_for([example.id for example in examples]))
        return [
            item if isinstance(item, BadLine) else Example(item.id, item.line, item.fields, next(found), item.sample)
            for item in batch
        ]

    def output_for(self, example: Example) -> Example:
        """One example at a time (the live path)."""
        (output,) = self._outputs_for([example.id])
        return Example(example.id, example.line, example.fields, output, example.sample)

    def _outputs_for(self, ids: list[str]) -> list[Any]:
        self._dataset_hashes.extend(map(hash, ids))
        if self._index is None:
            self._read_ahead(len(ids))
            head = self._pending[: len(ids)]
            if [entry[0] for entry in head] == ids:
                del self._pending[: len(ids)]
                return [entry[1] for entry in head]
            self._build_index()
        return [self._look_up(example_id) for example_id in ids]

    def _build_index(self) -> None:
        """Index the whole file (from its start: what was read in step is indexed again, and nothing is lost)."""
        self._pending.clear()
        self._hashes = array("q")
        self._digest = None  # read again, and through a map: no one hash covers what the join reads now
        self._handle.seek(0)
        hashes = array("q")
        offsets = array("q")
        for number, offset, raw in self._numbered_lines():
            hashes.append(hash(self._parse(number, raw)[0]))
            offsets.append(offset)
        keys = _int64s(hashes)
        order = np.argsort(keys, kind="stable")
        self._index = (keys[order], _int64s(offsets)[order])
        if self.path.stat().st_size:
            self._map = mmap.mmap(self._handle.fileno(), 0, access=mmap.ACCESS_READ)

    def _look_up(self, example_id: str) -> Any:
        assert self._index is not None
        keys, offsets = self._index
        key = hash(example_id)
        at = int(np.searchsorted(keys, key))
        while at < len(keys) and keys[at] == key:
            found_id, output = self._read_at(int(offsets[at]))
            if found_id == example_id:
                return output
            at += 1
        return ABSENT

    def _read_at(self, offset: int) -> tuple[str, Any]:
        """The id and output of the line at ``offset`` (indexing parsed and checked every line already)."""
        assert self._map is not None
        end = self._map.find(b"\n", offset)
        raw = self._map[offset : end if end >= 0 else len(self._map)]
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:  # read by the slower path when indexed (its note was taken then)
            mended = loads_lone_surrogates(raw)
            assert mended is not None, "an indexed line parsed before"
            record = mended[0]
        return self._id_and_output(record, self.label)

    # ------------------------------------------------------------------ after the stream
    def finish(self, *, strict: bool) -> OutputsJoined:
        """Count (and name a few of) the outputs whose id is not in the dataset; refuse an id recorded twice."""
        if self._index is None:
            # The rest of the file, in step: every line is checked and its id hashed (a chunk at a time).
            self._pending.clear()
            while self._read_ahead(4096):
                self._pending.clear()
            self._read_whole = True  # the in-step read reached the end: its hash covers every byte joined
            output_hashes = _int64s(self._hashes)
            method = "in_step"
        else:
            output_hashes = self._index[0]
            method = "index"
        ordered = np.sort(output_hashes)
        if ordered.size > 1 and (ordered[1:] == ordered[:-1]).any():
            self._refuse_repeats()
        dataset = _int64s(self._dataset_hashes)
        unmatched_mask = ~np.isin(output_hashes, dataset)
        unmatched = int(unmatched_mask.sum())
        names: tuple[str, ...] = ()
        if unmatched:
            names = self._unmatched_names(set(map(int, output_hashes[unmatched_mask][: NAMED_UNMATCHED * 4])))
        self.close()
        summary = OutputsJoined(
            path=self.label, outputs=int(output_hashes.size), unmatched=unmatched, unmatched_ids=names, method=method
        )
        if strict and unmatched:
            raise SetupError(
                f"{unmatched} recorded output(s) name an id that is not in the dataset (e.g. "
                f"{', '.join(repr(name) for name in names)})",
                where=self.label,
                fix="remove them, add their examples, or set `task.strict: false` to count them and go on",
            )
        return summary

    def _rescan(self, digest: hashlib._Hash) -> Iterator[tuple[int, str]]:
        """Every output's line number and id, read again from the start (``digest`` is given every byte read)."""
        self._handle.seek(0)
        for number, _, raw in self._numbered_lines(digest):
            yield number, self._parse(number, raw)[0]

    def _reread(self, digest: hashlib._Hash) -> None:
        """After a rescan: the rest of the file given to ``digest``; the in-step hash no longer stands for what the
        join read unless the second read's bytes are the same."""
        for raw in self._handle:
            digest.update(raw)
        if self._digest is not None and digest.digest() != self._digest.digest():
            self._digest = None

    def _refuse_repeats(self) -> None:
        first: dict[str, int] = {}
        digest = hashlib.sha256()
        for number, example_id in self._rescan(digest):
            seen = first.setdefault(example_id, number)
            if seen != number:
                raise SetupError(
                    f"output for id '{example_id}' recorded twice (first at line {seen})",
                    where=f"{self.label}:{number}",
                    fix="keep one output per example id",
                )
        self._reread(digest)

    def _unmatched_names(self, wanted: set[int]) -> tuple[str, ...]:
        dataset = set(self._dataset_hashes)
        names: list[str] = []
        digest = hashlib.sha256()
        for _, example_id in self._rescan(digest):
            key = hash(example_id)
            if key in wanted and key not in dataset:
                names.append(example_id)
                if len(names) == NAMED_UNMATCHED:
                    break
        self._reread(digest)
        return tuple(names)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        self._handle.close()
