"""Streaming a JSONL dataset, one example or one batch of examples at a time, hashed in the same pass.

A line that is not a JSON object is not dropped: it comes out as a :class:`BadLine`, which the pipeline scores as
``error`` for every metric so active gates block while the rest of the run stays useful.

The file is read in large chunks: each chunk is hashed once (on a second thread) and split into lines, so the
per-line work is the JSON parse and the few checks below; :meth:`DatasetReader.batches` parses a batch of lines in
one ``map`` and, when every line is a plain object, hands it on as columns. A line comes out exactly as
line-by-line reading would give it (same numbering, blank lines skipped, the same messages for bad lines).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from queue import SimpleQueue
from typing import IO, Any, BinaryIO

import orjson

from evalglass.core.example import MALFORMED_SHOWN, OUTPUTS_JSON, Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.fingerprint import PREFIX
from evalglass.core.uniform import all_of_type
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import (
    TEXT_START,
    JsonRefused,
    MendedLines,
    batch_is_exact,
    batch_is_exact_keeping,
    check_exact,
    loads_lone_surrogates,
    not_json,
    proven_exact,
    proven_exact_written,
    text_start,
)
from evalglass.readers.userfiles import open_regular, unreadable

#: Bytes read (and hashed) at a time.
CHUNK = 1 << 20
#: Lines per batch: small enough that a batch's parsed records stay in the CPU cache (batches of 128 to 1,024 lines
#: measured within noise of each other; much larger ones let records outlive cyclic collections, see BENCHMARKS.md).
BATCH = 256
#: Bytes of a batch's lines above which :meth:`DatasetReader.parts` parses and scores it in parts. A recorded
#: trajectory's 6 KB line parses to about 40 KB of objects, so a batch of 256 is about 10 MB: freed only after the
#: next one was parsed, its objects were cold and its arenas handed back to the system and faulted in again (a fifth
#: of a 10,000-trajectory replay's CPU). Parts of about this many bytes (1 MB parsed) are freed while still cached,
#: into arenas the next part reuses (32 KiB to 512 KiB measured within noise). A batch of short lines (a chat
#: dataset's) stays one part.
PART_BYTES = 1 << 17
#: :meth:`DatasetReader.parts` estimates a batch's bytes from one line in this many.
_SAMPLED = 16
#: Longest dataset line read: a longer one (or a file that never ends a line) stops the run at that line, instead of
#: filling memory first.
MAX_LINE = 64 << 20


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


def _plain_key(path: str) -> str | None:
    """The key when ``path`` is one plain mapping key (the common case, read inline), else None."""
    parts = parse_path(path)
    return parts[0] if len(parts) == 1 and isinstance(parts[0], str) else None


# An Example is a frozen dataclass: its generated __init__ sets each slot through object.__setattr__ by name, which
# costs about as much as parsing a short JSON line. The reader builds the same object by setting every slot through
# its descriptor (tests compare the result with ``Example(...)``, field for field).
_new = object.__new__
_slot = vars(Example)
_set_id = _slot["id"].__set__
_set_line = _slot["line"].__set__
_set_fields = _slot["fields"].__set__
_set_output = _slot["output"].__set__
_set_sample = _slot["sample"].__set__


class _LineTooLong(Exception):
    """The line after the last one yielded is longer than :data:`MAX_LINE`."""


def _lines(
    handle: Any,
    update: Callable[[bytes], None],
    chunk: int,
    limit: int = MAX_LINE,
    split: Callable[[bytes], list[bytes]] | None = None,
    *,
    what: str,
    where: str,
) -> Iterator[tuple[list[bytes], bool]]:
    """The file's lines, a chunk's worth at a time, without their ``\\n``; every byte read is hashed. ``split``,
    when given, splits a chunk as ``bytes.split(b"\\n")`` does (a faster way for the reader's lines).

    Each list comes with whether its lines ended in a newline: all do, except a last line the file does not end
    with a newline (it comes out alone). A file ending in a newline has no empty last line. A line longer than
    ``limit`` raises :class:`_LineTooLong` once that many bytes of it were read. A UTF-8 byte order mark at the
    start of the file is hashed and left out of the first line; a file in UTF-16 or UTF-32 (``what``, at ``where``)
    raises :class:`SetupError` (:func:`text_start`).
    """
    pieces: list[bytes] = []  # the line in progress (several chunks long, for a very long line)
    pending = 0  # bytes in ``pieces``
    head = handle.read(TEXT_START)
    update(head)
    # read before the first chunk, so a chunk smaller than the mark cannot split it
    carry = text_start(head, what=what, where=where)
    while True:
        data = handle.read(chunk)
        if data:
            update(data)
        if carry:
            data, carry = carry + data, b""
        if not data:
            break
        lines = data.split(b"\n") if split is None else split(data)
        tail = lines.pop()
        if lines:
            if pieces:
                pieces.append(lines[0])
                lines[0] = b"".join(pieces)
                pieces = []
                pending = 0
                if len(lines[0]) > limit:
                    raise _LineTooLong
            yield lines, True
        if tail:
            pieces.append(tail)
            pending += len(tail)
            if pending > limit:
                raise _LineTooLong
    if pieces:
        yield [b"".join(pieces)], False


def split_long_lines(data: bytes) -> list[bytes]:
    """``data.split(b"\\n")``, for data whose lines are long (an OTLP/JSON line holds a batch of spans, a kilobyte or
    more each; a recorded trajectory, several). ``bytes.split`` tests the bytes one at a time (≈ 5 instructions a
    byte: 7,000 a span of the OTLP benchmark's file, 31,000 a line of the replay benchmark's); ``find`` runs
    ``memchr`` (under one a byte). The loop costs a few Python steps a line, so it is the cheaper of the two for
    lines over ≈ 100 bytes."""
    lines: list[bytes] = []
    append = lines.append
    find = data.find
    start = 0
    end = find(b"\n")
    while end >= 0:
        append(data[start:end])
        start = end + 1
        end = find(b"\n", start)
    append(data[start:])
    return lines


#: A chunk whose first whole line is at least this long is split by :func:`split_long_lines`, any other by
#: ``bytes.split`` (short lines: a dataset of questions and answers, ≈ 100 bytes a line, where ``find``'s Python
#: steps a line would cost more than the bytes it skips).
_LONG_LINE = 256


def split_lines(data: bytes) -> list[bytes]:
    """``data.split(b"\\n")``, the cheaper way for this chunk's lines, judged by its first whole line (the text before
    the first newline is usually the end of a line the previous chunk began): a chunk of long lines by
    :func:`split_long_lines`, else by ``bytes.split``. Either way the same list: only the cost differs, and a
    chunk mixing the two only costs what it did before."""
    first = data.find(b"\n")
    if first >= 0 and data.find(b"\n", first + 1, first + 1 + _LONG_LINE) < 0:
        return split_long_lines(data)
    return data.split(b"\n")


def opened_file(handle: BinaryIO | IO[bytes]) -> tuple[int, int]:
    """The (device, inode) of the file ``handle`` reads: the file read, whatever its path names by then or named
    before (a path swapped to another file while it is opened, then back, leaves the path's own state as it was)."""
    found = os.fstat(handle.fileno())
    return (found.st_dev, found.st_ino)


def open_dataset_file(path: Path) -> BinaryIO:
    """The dataset file (JSONL, CSV or Parquet) opened for reading (unbuffered) once known to be a regular file, or
    the one-line error saying why it cannot be."""
    return open_regular(path, what="dataset file", missing_fix="fix `dataset.path` in the config")


def _parsed_frozen(lines: list[bytes]) -> list[Any]:
    """The lines parsed, with the cyclic collector kept off their objects (``JSONDecodeError`` for a bad line).

    orjson builds only trees, never a cycle, so the collector has nothing to find in a batch; yet a nested record
    (a trajectory: a hundred or more dicts and lists) is so many young objects that the collections its parsing
    triggers walk the batch again and again and promote it, and the full collections that promotion sets off took
    a quarter of a recorded run over 10,000 trajectories. Parsed with the collector paused and frozen at once
    (``gc.freeze``, as the stream does with everything alive when it starts: nothing is collected differently,
    only later), a batch's objects are freed by reference counting as ever and never walked. Only the stream
    (:meth:`JsonlDataset._raw_batches`) calls this: it unfreezes when it ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return list(map(orjson.loads, lines))
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _unfreezing() -> Iterator[None]:
    try:
        yield
    finally:
        gc.unfreeze()


class _HashingThread:
    """Feeds the chunks given to it, in order, to ``update`` on a thread of its own: hashlib releases the GIL on
    large buffers, so with a spare core hashing costs the stream nothing. Leaving the block waits for the last."""

    def __init__(self, update: Callable[[bytes], object]) -> None:
        self._update = update
        self._chunks: SimpleQueue[bytes | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._drain, name="evalglass-dataset-hash", daemon=True)

    def _drain(self) -> None:
        while (data := self._chunks.get()) is not None:
            self._update(data)

    def __enter__(self) -> Callable[[bytes], None]:
        self._thread.start()
        return self._chunks.put

    def __exit__(self, *_: object) -> None:
        self._chunks.put(None)
        self._thread.join()


def _ignore(_: bytes) -> None:
    """Where the file's bytes go when nobody asked for their hash."""


class DatasetReader:
    """Iterate once over a JSONL file; afterwards ``fingerprint`` is the SHA-256 of every byte read.

    ``hash_bytes=False`` skips that hash (and its thread) for a caller that never reads ``fingerprint``:
    ``preflight`` needs only the gold fingerprint, which is taken from the parsed records.
    """

    #: orjson refuses NaN, Infinity and numbers beyond a double: no value read here holds one.
    holds_non_finite = False

    def __init__(
        self,
        path: Path,
        *,
        id_field: str,
        output_field: str,
        chunk: int = CHUNK,
        max_line: int = MAX_LINE,
        hash_bytes: bool = True,
    ) -> None:
        self.path = path
        self._id = field_getter(id_field)
        self._id_field = id_field
        self._id_key = _plain_key(id_field)
        self._output = field_getter(output_field)
        self._output_key = _plain_key(output_field)
        self._chunk = chunk
        self._max_line = max_line
        self._hash = hashlib.sha256() if hash_bytes else None
        #: The (device, inode) of each file opened as ``path`` (``opened_file``): what ``engine.jobs.pipeline.
        #: refuse_changed_inputs`` holds to the file's state from before host code ran.
        self.opened: set[tuple[int, int]] = set()
        self.examples = 0
        self.bad_lines = 0
        #: The first few bad lines' numbers (at most MALFORMED_SHOWN), for the run's summary.
        self.first_bad_lines: list[int] = []
        #: The lines read differently from their bytes (lone surrogate escapes read as U+FFFD), for the run's warnings.
        self.mended = MendedLines(str(path))
        self._done = False

    def files(self) -> tuple[Path, ...]:
        """Every file this reader opens (the run holds each to its state: ``engine.datasets.source.source_files``)."""
        return (self.path,)

    @property
    def fingerprint(self) -> str:
        if not self._done:
            raise RuntimeError("the dataset fingerprint is known only after the whole file was read")
        if self._hash is None:
            raise RuntimeError("this reader was opened with hash_bytes=False: it took no fingerprint")
        return PREFIX + self._hash.hexdigest()

    def __iter__(self) -> Iterator[Example | BadLine]:
        for lines, first, ended in self._raw_batches(BATCH):
            yield from self._items(lines, first, ended)

    def batches(self, size: int = BATCH) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        """The dataset ``size`` lines at a time, in order: what iterating gives, grouped.

        A batch whose every line is a JSON object with a string id comes as one :class:`ExampleBatch`, parsed in
        one ``map`` with no object per example; any other batch (a bad, blank or integer-id line) comes as the list
        of what iterating gives for its lines.
        """
        for lines, first, ended in self._raw_batches(size):
            batch = self._plain_batch(lines, first)
            yield batch if batch is not None else list(self._items(lines, first, ended))

    def parts(
        self, size: int = BATCH, part_bytes: int = PART_BYTES
    ) -> Iterator[tuple[ExampleBatch | list[Example | BadLine], bool]]:
        """What :meth:`batches` gives, a batch whose lines hold more than about ``part_bytes`` bytes in consecutive
        parts of equal line counts, each with whether it ends its batch. A part is read exactly as a batch of its lines
        would be (an :class:`ExampleBatch` when its every line is a plain object, else the list of its items); a
        consumer that keeps one block per batch (``scores.jsonl``, the kept outputs) joins a batch's parts. A reader
        that makes its own batches (a subclass overriding :meth:`batches`: CSV, Parquet) gives each batch whole: the
        lines cut here are JSONL's."""
        if type(self).batches is not DatasetReader.batches:
            yield from ((batch, True) for batch in self.batches(size))
            return
        for lines, first, ended in self._raw_batches(size):
            # The batch's bytes estimated from every 16th line (summing every line's length cost a chat dataset's
            # run 0.2 %): how it is cut changes no answer, only how much is parsed at once.
            total = sum(map(len, lines[::_SAMPLED])) * _SAMPLED
            step = len(lines) if total <= part_bytes else -(-len(lines) // -(-total // part_bytes))
            for start in range(0, len(lines), step):
                part = lines[start : start + step]
                last = start + step >= len(lines)
                batch = self._plain_batch(part, first + start)
                # Only the batch's last line can lack its newline: a part before it ends with one.
                yield (batch if batch is not None else list(self._items(part, first + start, ended or not last))), last

    def _raw_batches(self, size: int) -> Iterator[tuple[list[bytes], int, bool]]:
        """The file's lines, ``size`` at a time, each batch with its first line's number and whether its last line
        ended in a newline (only a file's last line may not)."""
        handle = open_dataset_file(self.path)
        self.opened.add(opened_file(handle))
        # Every object alive now (modules, models, the config) outlives the stream. Freezing them keeps the cyclic
        # collector's full passes, which the stream's young objects keep triggering, from re-scanning them all:
        # about a tenth of a million-line run otherwise. Nothing is collected differently, only later.
        gc.freeze()
        pending: list[bytes] = []
        first = 1
        ended = True
        hashing = contextlib.nullcontext(_ignore) if self._hash is None else _HashingThread(self._hash.update)
        with handle, _unfreezing(), hashing as update:
            try:
                for lines, newline in _lines(
                    handle, update, self._chunk, self._max_line, split_lines, what="dataset file", where=str(self.path)
                ):
                    ended = newline
                    pending += lines
                    start = 0
                    # A last line without a newline stays pending, so it is flushed below with ``ended`` False.
                    while len(pending) - start > size or (newline and len(pending) - start == size):
                        yield pending[start : start + size], first, True
                        start += size
                        first += size
                    del pending[:start]
            except _LineTooLong:
                raise SetupError(
                    f"line is longer than {self._max_line:,} bytes",
                    where=f"{self.path}:{first + len(pending)}",
                    fix="a dataset holds one JSON object per line; check that this is the dataset file",
                ) from None
            except OSError as exc:
                raise unreadable(self.path, "dataset file", exc) from None
            if pending:
                yield pending, first, ended
        self._done = True

    def _plain_batch(self, lines: list[bytes], first: int) -> ExampleBatch | None:
        """The batch as an :class:`ExampleBatch` when every line is a JSON object with a string id, else None."""
        try:
            records = _parsed_frozen(lines)
        except orjson.JSONDecodeError:
            return None
        if not all_of_type(records, dict):
            return None
        outputs = self._column(records, self._output_key, self._output)
        # The C scan: nothing written to check, so what the run keeps is taken from the lines' bytes when it can be
        # (the same bytes orjson writes), else written below.
        proven, written = proven_exact_written(lines, self._output_key)
        if proven:
            exact, outputs_json = True, None
        elif self._output_key is None:
            exact, outputs_json = batch_is_exact(lines, records), None
        else:
            exact, outputs_json = batch_is_exact_keeping(lines, records, self._output_key, outputs)
        if not exact:
            return None
        ids = self._column(records, self._id_key, self._id)
        if not all_of_type(ids, str):
            return None
        if proven:
            outputs_json = written if written is not None else self._kept_column(outputs)
        self.examples += len(records)
        batch = ExampleBatch(ids=ids, lines=list(range(first, first + len(records))), records=records, outputs=outputs)
        if outputs_json is not None:  # the same objects the reader just wrote: each record's value at the key
            batch.remember(OUTPUTS_JSON, outputs_json)
        return batch

    def _kept_column(self, outputs: list[Any]) -> bytes | None:
        """What the pure check keeps for the run when it writes the batch back, written for a batch the C scan proved:
        the outputs as one array (the kept outputs' bytes)."""
        if self._output_key is None or ABSENT in outputs:
            return None
        try:
            return orjson.dumps(outputs)
        except orjson.JSONEncodeError:
            return None

    @staticmethod
    def _column(records: list[dict[str, Any]], key: str | None, get: Callable[[Mapping[str, Any]], Any]) -> list[Any]:
        if key is not None:
            return list(map(dict.get, records, repeat(key), repeat(ABSENT)))
        return list(map(get, records))

    def _items(self, lines: list[bytes], first: int, ended: bool) -> Iterator[Example | BadLine]:
        """Line by line: a blank line is skipped, a bad one comes out as a BadLine."""
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        get_id, id_key = self._id, self._id_key
        get_output, output_key = self._output, self._output_key
        new, set_id, set_line, set_fields, set_output, set_sample = (
            _new,
            _set_id,
            _set_line,
            _set_fields,
            _set_output,
            _set_sample,
        )
        last = first + len(lines) - 1
        for number, raw in enumerate(lines, start=first):
            try:
                record = loads(raw)
            except decode_error:
                if not raw.strip():
                    continue
                try:
                    mended = loads_lone_surrogates(raw)
                except JsonRefused as exc:
                    yield self._bad(number, exc.code, str(exc))
                    continue
                if mended is None:
                    yield self._malformed(number, raw, ended or number != last)
                    continue
                record, replaced = mended
                self.mended.add(f"{self.path}:{number}", replaced)
            if type(record) is not dict:
                yield self._bad(number, "not_an_object", f"expected a JSON object, got {type(record).__name__}")
                continue
            if not proven_exact([raw]) and not batch_is_exact([raw], [record]):
                try:
                    check_exact(raw)
                except JsonRefused as exc:
                    yield self._bad(number, exc.code, str(exc))
                    continue
            example_id = record.get(id_key, ABSENT) if id_key is not None else get_id(record)
            if type(example_id) is not str:
                if example_id is ABSENT:
                    yield self._bad(number, "id_missing", f"no id field '{self._id_field}'")
                    continue
                if type(example_id) is not int:
                    yield self._bad(number, "id_invalid", f"id must be a string or integer, not {example_id!r}")
                    continue
                example_id = str(example_id)
            self.examples += 1
            # Example(id=example_id, line=number, fields=record, output=output), sample 0
            example = new(Example)
            set_id(example, example_id)
            set_line(example, number)
            set_fields(example, record)
            output = record.get(output_key, ABSENT) if output_key is not None else get_output(record)
            set_output(example, output)
            set_sample(example, 0)
            yield example

    def _malformed(self, number: int, raw: bytes, had_newline: bool) -> BadLine:
        # orjson's message gives a position; parse the line as line-by-line reading saw it (with its newline).
        try:
            orjson.loads(raw + b"\n" if had_newline else raw)
        except orjson.JSONDecodeError as exc:
            return self._bad(number, "malformed_json", not_json(raw, exc))
        raise AssertionError("a line that failed to parse parsed")  # pragma: no cover

    def _bad(self, number: int, code: str, message: str) -> BadLine:
        self.examples += 1
        self.bad_lines += 1
        if len(self.first_bad_lines) < MALFORMED_SHOWN:
            self.first_bad_lines.append(number)
        return BadLine(id=f"line:{number}", line=number, code=code, message=f"{self.path}:{number}: {message}")


def batched(items: Iterator[Example | BadLine], size: int = BATCH) -> Iterator[ExampleBatch | list[Example | BadLine]]:
    """Examples ``size`` at a time, for readers that make them one by one: an :class:`ExampleBatch` when the batch
    holds no bad line, else the list of what iterating gave."""
    batch: list[Example | BadLine] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield _as_batch(batch)
            batch = []
    if batch:
        yield _as_batch(batch)


def _as_batch(items: list[Example | BadLine]) -> ExampleBatch | list[Example | BadLine]:
    if any(isinstance(item, BadLine) for item in items):
        return items
    return ExampleBatch.of([item for item in items if isinstance(item, Example)])
