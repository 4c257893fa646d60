"""The chunked dataset reader gives exactly what reading the file line by line gives.

The oracle below is the line-by-line reader the chunked one replaced, plus the exact check every line gets (see
``evalglass.readers.jsonsource``; the oracle runs it on every line, the reader only where its raw-byte scan says a
line could need it). Files are built from lines of every kind (objects, other JSON, blank and whitespace-only lines,
malformed JSON, missing and odd ids, duplicate keys, integers beyond 64 bits, deep nesting, CRLF endings, a last
line without a newline) and read with chunk sizes from one byte up, so lines straddle chunk boundaries.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.fingerprint import PREFIX
from evalglass.engine.datasets.dataset import (
    _LONG_LINE,
    CHUNK,
    PART_BYTES,
    BadLine,
    DatasetReader,
    field_getter,
    split_lines,
)
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import TEXT_START, UTF8_BOM, JsonRefused, check_exact, not_json, wide_encoding


def refused_as_wide(path: Path, chunk: int) -> bool:
    """True when the file opens as UTF-16 or UTF-32 text and the reader (read ``chunk`` bytes at a time) refuses it
    whole, saying so, as it must: such a file is not read line by line at all. False for any other file."""
    encoding = wide_encoding(path.read_bytes()[:TEXT_START])
    if encoding is None:
        return False
    with pytest.raises(SetupError, match=f"dataset file is {encoding} text, not UTF-8"):
        list(DatasetReader(path, id_field="id", output_field="output", chunk=chunk))
    return True


def line_by_line(path: Path, id_field: str, output_field: str) -> tuple[list[Example | BadLine], str, int, int]:
    """The reader as it was: one ``for raw in handle`` iteration, hashing and parsing each line."""
    get_id, get_output = field_getter(id_field), field_getter(output_field)
    digest = hashlib.sha256()
    items: list[Example | BadLine] = []
    examples = bad = 0

    def bad_line(number: int, code: str, message: str) -> BadLine:
        return BadLine(id=f"line:{number}", line=number, code=code, message=f"{path}:{number}: {message}")

    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            digest.update(raw)
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                items.append(bad_line(number, "malformed_json", not_json(raw, exc)))
                examples, bad = examples + 1, bad + 1
                continue
            if type(record) is not dict:
                items.append(bad_line(number, "not_an_object", f"expected a JSON object, got {type(record).__name__}"))
                examples, bad = examples + 1, bad + 1
                continue
            try:
                check_exact(raw)
            except JsonRefused as exc:
                items.append(bad_line(number, exc.code, str(exc)))
                examples, bad = examples + 1, bad + 1
                continue
            example_id = get_id(record)
            if type(example_id) is not str:
                if example_id is ABSENT:
                    items.append(bad_line(number, "id_missing", f"no id field '{id_field}'"))
                    examples, bad = examples + 1, bad + 1
                    continue
                if type(example_id) is not int:
                    items.append(bad_line(number, "id_invalid", f"id must be a string or integer, not {example_id!r}"))
                    examples, bad = examples + 1, bad + 1
                    continue
                example_id = str(example_id)
            examples += 1
            items.append(Example(id=example_id, line=number, fields=record, output=get_output(record)))
    return items, PREFIX + digest.hexdigest(), examples, bad


OBJECTS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.text(max_size=6) | st.integers(-5, 10**18) | st.none() | st.booleans() | st.just([1]),
        "output": st.text(max_size=8)
        | st.integers(-(2**63), 2**63 - 1)
        | st.none()
        | st.dictionaries(st.just("answer"), st.text(max_size=4)),
        "meta": st.dictionaries(st.sampled_from(["id", "k"]), st.text(max_size=4) | st.integers(-9, 9), max_size=2),
        "expected": st.text(max_size=5),
    },
).map(lambda obj: orjson.dumps(obj))
LINES = OBJECTS | st.sampled_from(
    [
        b"",
        b"   ",
        b"\t",
        b"\r",
        b"\x0c",
        b"[1, 2]",
        b"42",
        b'"text"',
        b"null",
        b"{",
        b'{"id": "a",}',
        b"{'id': 1}",
        b'{"id": "x"} trailing',
        b"\xff\xfe",
        b'{"id": "\xc3\xa9", "output": "\xe2\x82\xac"}',
        b'  {"id": "pad"}  ',
        b'{"id": 123456789012345678901234567890}',
        b'{"id": 7, "output": 1e999}',
        b'{"id": "d1", "output": 1, "output": 2}',
        b'{"id": "d2", "output": {"a": 1, "a" : 1}}',
        b'{"id": "d3", "output" : "\\u003a", "output": ":"}',
        b'{"id": "c1", "output": "a: b", "expected": {"k": "\\":"}}',
        b'{"id": "b1", "output": 100000000000000000001}',
        b'{"id": "b2", "output": -9223372036854775809}',
        b'{"id": "b3", "output": 18446744073709551615}',
        b'{"id": "b4", "output": "100000000000000000001"}',
        b'{"id": "n1", "output": ' + b"[" * 129 + b"]" * 129 + b"}",
        b'{"id": "n2", "output": ' + b"[" * 127 + b"]" * 127 + b"}",
        b'{"id": "n3", "output": "' + b"[" * 300 + b'"}',
    ]
)


@st.composite
def files(draw: Any) -> bytes:
    lines = draw(st.lists(LINES, max_size=14))
    endings = draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=len(lines), max_size=len(lines)))
    data = b"".join(line + ending for line, ending in zip(lines, endings, strict=True))
    if data and draw(st.booleans()):
        data = data.rstrip(b"\n")  # a last line without its newline
    return data


def _as_tuples(items: list[Example | BadLine]) -> list[tuple[Any, ...]]:
    return [
        ("example", item.id, item.line, item.fields, item.output, item.sample)
        if isinstance(item, Example)
        else ("bad", item.id, item.line, item.code, item.message)
        for item in items
    ]


@pytest.mark.parametrize(("id_field", "output_field"), [("id", "output"), ("meta.id", "output.answer")])
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=files(), chunk=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]))
def test_chunked_reading_gives_what_line_by_line_reading_gives(
    tmp_path: Path, id_field: str, output_field: str, data: bytes, chunk: int
) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(data)
    if refused_as_wide(path, chunk):
        return
    expected, fingerprint, examples, bad = line_by_line(path, id_field, output_field)
    reader = DatasetReader(path, id_field=id_field, output_field=output_field, chunk=chunk)
    items = list(reader)
    assert _as_tuples(items) == _as_tuples(expected)
    assert items == expected  # dataclass equality: every field of every Example, including any added later
    assert all(type(item) is Example for item in items if not isinstance(item, BadLine))
    assert (reader.fingerprint, reader.examples, reader.bad_lines) == (fingerprint, examples, bad)


@pytest.mark.parametrize(("id_field", "output_field"), [("id", "output"), ("meta.id", "output.answer")])
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    data=files(),
    chunk=st.sampled_from([1, 7, 1 << 20]),
    size=st.sampled_from([1, 2, 3, 256]),
    hash_bytes=st.booleans(),
)
def test_batches_give_what_line_by_line_reading_gives(
    tmp_path: Path, id_field: str, output_field: str, data: bytes, chunk: int, size: int, hash_bytes: bool
) -> None:
    """With or without the file's hash (``preflight`` reads for the gold fingerprint only), the same batches."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(data)
    if refused_as_wide(path, chunk):
        return
    expected, fingerprint, examples, bad = line_by_line(path, id_field, output_field)
    reader = DatasetReader(path, id_field=id_field, output_field=output_field, chunk=chunk, hash_bytes=hash_bytes)
    items: list[Example | BadLine] = []
    for batch in reader.batches(size):
        if isinstance(batch, ExampleBatch):
            assert batch.samples is None and len(batch) <= size
            assert batch.lines == list(range(batch.lines[0], batch.lines[0] + len(batch))), "one batch, no gaps"
            items += batch.examples()
        else:
            assert len({item.line for item in batch}) <= size
            items += batch
    assert items == expected
    assert all(type(item) is Example for item in items if not isinstance(item, BadLine))
    assert (reader.examples, reader.bad_lines) == (examples, bad)
    if hash_bytes:
        assert reader.fingerprint == fingerprint
    else:
        with pytest.raises(RuntimeError, match="hash_bytes=False"):
            _ = reader.fingerprint


#: Lines either side of the splitter's threshold (a chunk's first whole line decides how it is split), blank ones and
#: lines of every kind above, in any order.
PIECES = st.sampled_from([b"", b"\n", b"\r", b"a", b"x" * (_LONG_LINE - 1), b"y" * _LONG_LINE, b"z" * (3 * _LONG_LINE)])


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES | st.binary(max_size=20), max_size=16).map(b"".join))
def test_the_chunk_splitter_splits_as_bytes_split(data: bytes) -> None:
    # Long lines are split by find (memchr), short ones by bytes.split: the same pieces either way, the empty ones
    # (blank lines, a chunk starting or ending in a newline) included.
    assert split_lines(data) == data.split(b"\n")


def _padded(line: bytes) -> bytes:
    """An object line made longer than the splitter's threshold (a trajectory's length), same keys otherwise."""
    if not line.startswith(b"{") or not line.endswith(b"}") or line == b"{}":
        return line
    return line[:-1] + b', "pad": "' + b"p" * _LONG_LINE + b'"}'


@pytest.mark.parametrize(("id_field", "output_field"), [("id", "output"), ("meta.id", "output.answer")])
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    lines=st.lists(LINES.map(_padded) | LINES, max_size=14),
    crlf=st.booleans(),
    chunk=st.sampled_from([1, 7, _LONG_LINE + 1, 4 * _LONG_LINE, 1 << 20]),
)
def test_long_lines_are_read_as_line_by_line_reading_reads_them(
    tmp_path: Path, id_field: str, output_field: str, lines: list[bytes], crlf: bool, chunk: int
) -> None:
    """Chunks of long lines (split by find) and of short ones give what the line-by-line reader gives."""
    path = tmp_path / "data.jsonl"
    path.write_bytes((b"\r\n" if crlf else b"\n").join(lines))
    if refused_as_wide(path, chunk):
        return
    expected, fingerprint, examples, bad = line_by_line(path, id_field, output_field)
    reader = DatasetReader(path, id_field=id_field, output_field=output_field, chunk=chunk)
    items: list[Example | BadLine] = []
    for batch in reader.batches(3):
        items += batch.examples() if isinstance(batch, ExampleBatch) else batch
    assert items == expected
    assert (reader.fingerprint, reader.examples, reader.bad_lines) == (fingerprint, examples, bad)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=files(), chunk=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]))
def test_a_byte_order_mark_is_hashed_and_never_read_as_part_of_the_first_line(
    tmp_path: Path, data: bytes, chunk: int
) -> None:
    assume(wide_encoding(data[:TEXT_START]) is None)  # without the mark, that file is refused (test above)
    plain, marked = tmp_path / "plain.jsonl", tmp_path / "marked.jsonl"
    plain.write_bytes(data)
    marked.write_bytes(UTF8_BOM + data)
    expected = [
        replace(item, message=item.message.replace(str(plain), str(marked))) if isinstance(item, BadLine) else item
        for item in DatasetReader(plain, id_field="id", output_field="output")
    ]
    reader = DatasetReader(marked, id_field="id", output_field="output", chunk=chunk)
    assert list(reader) == expected
    assert reader.fingerprint == PREFIX + hashlib.sha256(UTF8_BOM + data).hexdigest()


def test_a_batch_of_plain_objects_comes_as_columns(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"id": f"e{i}", "output": i}) + b"\n" for i in range(5)) + b"{bad\n")
    batches = list(DatasetReader(path, id_field="id", output_field="output").batches(2))
    assert [type(batch) for batch in batches] == [ExampleBatch, ExampleBatch, list]
    first = batches[0]
    assert isinstance(first, ExampleBatch)
    assert (first.ids, first.lines, first.outputs) == (["e0", "e1"], [1, 2], [0, 1])
    assert [item.id for item in batches[2]] == ["e4", "line:6"]


def test_a_line_longer_than_many_chunks(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    long = orjson.dumps({"id": "long", "output": "x" * 5000})
    path.write_bytes(b'{"id": "a"}\n' + long + b'\n{"id": "b"}')
    items = list(DatasetReader(path, id_field="id", output_field="output", chunk=10))
    assert [(item.id, item.line) for item in items] == [("a", 1), ("long", 2), ("b", 3)]
    assert isinstance(items[1], Example) and items[1].output == "x" * 5000


def test_the_fingerprint_is_known_only_after_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n')
    reader = DatasetReader(path, id_field="id", output_field="output")
    stream: Iterator[Example | BadLine] = iter(reader)
    next(stream)
    with pytest.raises(RuntimeError):
        _ = reader.fingerprint
    list(stream)
    assert reader.fingerprint == PREFIX + hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_missing_dataset_is_a_setup_error(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="dataset file not found"):
        list(DatasetReader(tmp_path / "nope.jsonl", id_field="id", output_field="output"))


@pytest.mark.parametrize("stop_early", [False, True])
def test_the_collector_is_left_as_it_was(tmp_path: Path, stop_early: bool) -> None:
    """The reader freezes the objects alive before the stream; finished or abandoned, it unfreezes them."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n')
    before = gc.get_freeze_count()
    stream = iter(DatasetReader(path, id_field="id", output_field="output"))
    next(stream)
    assert gc.get_freeze_count() > before
    if stop_early:
        stream.close()  # type: ignore[attr-defined]
    else:
        list(stream)
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("bad_line", [False, True])
def test_batches_are_parsed_out_of_the_collectors_sight_and_it_is_left_as_it_was(
    tmp_path: Path, bad_line: bool
) -> None:
    """A batch of nested records is frozen as it is parsed (the collections its young objects would trigger walked
    it again and again), a batch with a line that does not parse too, and the collector is enabled and nothing is
    left frozen once the stream ends."""
    lines = [
        json.dumps({"id": f"e{i}", "output": {"messages": [{"role": "user", "parts": [{"n": i}]}]}}) for i in range(60)
    ]
    if bad_line:
        lines.insert(25, "{not json")
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    batches = DatasetReader(path, id_field="id", output_field="output").batches(size=20)
    first = next(batches)  # kept alive, so that its objects stay counted
    after_first = gc.get_freeze_count()
    second = next(batches)
    assert gc.isenabled()
    assert isinstance(second, list) == bad_line  # the batch with a bad line is read line by line
    if not bad_line:  # five tracked containers a record (the innermost dict holds only a number: never tracked)
        assert gc.get_freeze_count() >= after_first + 5 * 20
    list(batches)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert len(first) == 20


@pytest.mark.parametrize(("id_field", "output_field"), [("id", "output"), ("meta.id", "output.answer")])
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=files(), size=st.sampled_from([1, 3, 256]), part_bytes=st.sampled_from([1, 20, 90, 1 << 17]))
def test_parts_join_into_the_batches(
    tmp_path: Path, id_field: str, output_field: str, data: bytes, size: int, part_bytes: int
) -> None:
    """A recorded run reads a batch of long lines in parts (``DatasetReader.parts``): the parts up to each one that
    ends its batch hold what that batch holds, read the same way (bad lines and their messages, a last line without
    its newline), and the reader counts and hashes the same."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(data)
    if refused_as_wide(path, CHUNK):
        return
    whole = DatasetReader(path, id_field=id_field, output_field=output_field)
    expected = [batch.examples() if isinstance(batch, ExampleBatch) else batch for batch in whole.batches(size)]
    reader = DatasetReader(path, id_field=id_field, output_field=output_field)
    found: list[list[Example | BadLine]] = []
    block: list[Example | BadLine] = []
    for part, ends_block in reader.parts(size, part_bytes):
        if isinstance(part, ExampleBatch):
            assert part.lines == list(range(part.lines[0], part.lines[0] + len(part))), "one part, no gaps"
        block += part.examples() if isinstance(part, ExampleBatch) else part
        if ends_block:
            found.append(block)
            block = []
    assert block == [], "the last part ends its batch"
    assert found == expected
    assert (reader.fingerprint, reader.examples, reader.bad_lines, reader.first_bad_lines) == (
        whole.fingerprint,
        whole.examples,
        whole.bad_lines,
        whole.first_bad_lines,
    )


def test_a_batch_of_short_lines_is_one_part_and_long_lines_come_in_parts(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    short = b"".join(orjson.dumps({"id": f"s{i}", "output": "a"}) + b"\n" for i in range(300))
    path.write_bytes(short)
    reader = DatasetReader(path, id_field="id", output_field="output")
    assert [(len(part), ends) for part, ends in reader.parts()] == [(256, True), (44, True)]
    padding = "x" * (PART_BYTES // 20)
    path.write_bytes(b"".join(orjson.dumps({"id": f"l{i}", "output": padding}) + b"\n" for i in range(256)))
    parts = list(DatasetReader(path, id_field="id", output_field="output").parts())
    assert len(parts) > 1 and [ends for _, ends in parts] == [False] * (len(parts) - 1) + [True]
    assert sum(len(part) for part, _ in parts) == 256


def test_a_reader_making_its_own_batches_gives_them_whole_as_parts(tmp_path: Path) -> None:
    """``parts`` cuts JSONL lines; a CSV reader's batches are its own rows (the cut once read every CSV row as a
    malformed JSON line), so each comes whole and reads as ``batches`` reads it."""
    from evalglass.engine.datasets.tabular import TabularReader

    path = tmp_path / "data.csv"
    padding = "x" * (PART_BYTES // 20)
    path.write_text("id,output\n" + "".join(f"r{i},{padding}\n" for i in range(300)))
    parts = list(TabularReader(path, id_field="id", output_field="output").parts())
    whole = list(TabularReader(path, id_field="id", output_field="output").batches())
    assert [ends for _, ends in parts] == [True] * len(whole)
    as_examples = [batch.examples() if isinstance(batch, ExampleBatch) else batch for batch, _ in parts]
    assert as_examples == [batch.examples() if isinstance(batch, ExampleBatch) else batch for batch in whole]
    assert sum(map(len, as_examples)) == 300
    assert all(isinstance(example, Example) for batch in as_examples for example in batch)
