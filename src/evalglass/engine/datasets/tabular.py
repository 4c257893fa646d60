"""CSV and Parquet datasets: one example per row, read a row at a time, the same Examples the JSONL reader gives.

CSV is read with the standard library and every value is a **string**, exactly as the file holds it (an empty cell
is the empty string, a number is its text): CSV carries no types, and guessing them (is ``007`` a number? is ``NA``
missing?) would change what a metric compares. Metrics that need numbers say so (``numeric_*`` parse text). A row
with more or fewer cells than the header is a bad line (``malformed_row``), scored as an error like a malformed
JSONL line. Parquet is read with pyarrow (the ``parquet`` extra): its columns keep their types; values JSON cannot
hold (timestamps, bytes, decimals) come out as their text. A NaN or an infinity in a cell (pandas writes a missing
number so) is never a silent ``null``, nor a row lost as ``malformed_row`` (an error blocking every gate): it is split
as the rest of EvalGlass splits a value JSON cannot hold. In the output the dataset records it is the system's wrong
answer, as a ``python`` lane's NaN answer is (an :class:`~evalglass.core.outputparse.UnparsedOutput`: every metric's
worst value, ``output_not_json``); in any other column the float is kept as it is, so a metric reading it as its
reference finds a reference that is not JSON (``non_evaluable``, ``reference_wrong_type``: the gold's problem, which
a gate may tolerate), and an input is the number the file holds (a ``python`` lane gets the float, as pandas gives
it). The reader cannot tell a reference column from an input column (the metrics name their references), so both
are kept; neither is a measurement of the system.

The dataset fingerprint is the SHA-256 of the file's bytes, as for JSONL. Row numbers are CSV line numbers (where
the row ends, counting the header as line 1) or, for Parquet, 1-based row numbers.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import UnparsedOutput
from evalglass.engine.datasets.dataset import BATCH, BadLine, DatasetReader, batched, open_dataset_file, opened_file
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import text_start
from evalglass.readers.jsonvalues import non_finite

PARQUET_HINT = "install the parquet extra: pip install 'evalglass[parquet]'"
#: What made a Parquet row's output an answer, in the diagnostic of one JSON cannot hold.
DECLARED = "the Parquet dataset records the output"


class TabularReader(DatasetReader):
    """The :class:`~evalglass.engine.datasets.dataset.DatasetReader` interface over a ``.csv`` or ``.parquet`` file (its
    fingerprint, counts and bad-line messages are the JSONL reader's)."""

    @property
    def holds_non_finite(self) -> bool:  # type: ignore[override]  # the JSONL reader's class attribute, a property here
        """A Parquet cell can hold a NaN or an infinity; a CSV cell is text."""
        return self.path.suffix.lower() == ".parquet"

    def _read_bytes(self) -> bytes:
        with open_dataset_file(self.path) as handle:
            self.opened.add(opened_file(handle))
            data = handle.read()
        if self._hash is not None:
            self._hash.update(data)
        return data

    def _rows(self) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
        """(row number, record) for each row, or (row number, why it is not one)."""
        data = self._read_bytes()
        if self.path.suffix.lower() == ".parquet":
            yield from _parquet_rows(self.path, data)
        else:
            yield from _csv_rows(self.path, data)
        self._done = True

    def __iter__(self) -> Iterator[Example | BadLine]:
        for number, row in self._rows():
            if isinstance(row, str):
                yield self._bad(number, "malformed_row", row)
                continue
            item = self._item(number, row)
            if type(row) is _NonFiniteRow and isinstance(item, Example):
                item = self._non_finite_output(item)
            yield item

    def _item(self, number: int, row: Mapping[str, Any]) -> Example | BadLine:
        example_id = self._id(row)
        if type(example_id) is int:
            example_id = str(example_id)
        if type(example_id) is not str or example_id == "":
            if example_id is ABSENT or example_id in ("", None):
                return self._bad(number, "id_missing", f"no id field '{self._id_field}'")
            return self._bad(number, "id_invalid", f"id must be a string or integer, not {example_id!r}")
        self.examples += 1
        return Example(id=example_id, line=number, fields=row, output=self._output(row))

    @staticmethod
    def _non_finite_output(example: Example) -> Example:
        """An example of a row holding a NaN or an infinity (see the module's docstring): its output, when that
        holds one, is the system's answer JSON cannot hold, its ``repr`` kept as its text."""
        problem = non_finite(example.output)
        if problem is None:
            return example
        return replace(example, output=UnparsedOutput(text=repr(example.output), message=problem, declared=DECLARED))

    def batches(self, size: int = BATCH) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        return batched(iter(self), size)


def _csv_rows(path: Path, data: bytes) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
    start = text_start(data, what="CSV dataset", where=str(path))
    try:
        text = start.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Named by line (and the byte's value and place in it), as a YAML or JSONL file's is: an offset into the
        # whole file is no place an editor shows.
        # A line ends at CR LF, LF or a lone CR, as the csv module reads it: counting LF alone put every byte of a
        # file saved with CR line endings (classic Mac, some exports) on line 1.
        before = start[: exc.start]
        line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
        column = exc.start - (max(before.rfind(b"\n"), before.rfind(b"\r")) + 1) + 1
        raise SetupError(
            f"a CSV dataset must be UTF-8 (byte 0x{start[exc.start]:02x}, byte {column} of the line, is not)",
            where=f"{path}:{line}",
            fix="save the file as UTF-8",
        ) from None
    # The csv module refuses a cell over its field size limit (128 KiB by default) as an error, which made a long
    # document in a valid file a malformed row. The whole file is in memory already, so no cell can be longer than
    # it: the limit is raised to the file's length (never lowered; it is the module's, shared by the process).
    csv.field_size_limit(max(csv.field_size_limit(), len(text)))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise SetupError(f"unreadable CSV header ({exc})", where=f"{path}:1") from None
    if len(set(header)) != len(header) or any(not name for name in header):
        raise SetupError(
            "the CSV header must name every column once", where=f"{path}:1", fix="give each column a unique name"
        )
    while True:
        # A row is named by the line it starts on: ``line_num`` after reading is the line it ends on, which for a
        # quoted cell holding line breaks is a later line than the one the row begins at.
        first = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, f"not valid CSV ({exc})"
            continue
        if not cells:
            continue  # a blank line, as in JSONL
        if len(cells) != len(header):
            yield first, f"expected {len(header)} cells as in the header, got {len(cells)}"
            continue
        yield first, dict(zip(header, cells, strict=True))


def _parquet_rows(path: Path, data: bytes) -> Iterator[tuple[int, Mapping[str, Any] | str]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SetupError("reading a .parquet dataset needs pyarrow", where=str(path), fix=PARQUET_HINT) from None
    try:
        file = pq.ParquetFile(pa.BufferReader(data))
        number = 0
        for batch in file.iter_batches(batch_size=BATCH):
            for record in batch.to_pylist():
                number += 1
                # Values JSON cannot hold become their text, so metrics and fingerprints see JSON values only.
                encoded = orjson.dumps(record, default=str)
                if b"null" in encoded and non_finite(record) is not None:
                    yield number, _NonFiniteRow(_keeping_non_finite(record))
                else:
                    yield number, orjson.loads(encoded)
    except (pa.ArrowException, OSError) as exc:
        raise SetupError(f"not a readable Parquet file ({exc})", where=str(path)) from None


class _NonFiniteRow(dict[str, Any]):
    """A Parquet row holding a NaN or an infinity (rare: told apart by its type, the other rows are plain dicts)."""


def _keeping_non_finite(value: Any) -> Any:
    """``value`` as JSON values, as every other row is read (values JSON cannot hold become their text), except
    that its NaNs and infinities stay floats (orjson would write them as ``null``, a value the file does not hold)."""
    if isinstance(value, float):  # a finite float is read back from its JSON as the same float
        return value
    if isinstance(value, dict):
        return {str(key): _keeping_non_finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_keeping_non_finite(item) for item in value]
    return orjson.loads(orjson.dumps(value, default=str))
