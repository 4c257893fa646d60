"""A JSONL line holding lone surrogate escapes (valid JSON by RFC 8259's grammar, refused by orjson) is read by
the dataset reader as the standard library reads it with each lone surrogate replaced by U+FFFD, with
a note at its line; a line whose surrogate escapes are all paired is read by the fast path exactly as before.

The oracle is ``json.loads`` and a regular expression, independent of the reader's path."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evalglass.engine.datasets.dataset import BadLine, DatasetReader
from evalglass.readers.jsonsource import NOTES_SHOWN

LONE = re.compile("[\ud800-\udfff]")
#: Text with surrogates among ordinary characters: a high one before a low one makes a pair, any other is alone.
TEXT = st.lists(st.text(alphabet='ab\\"é😀:', max_size=3) | st.integers(0xD800, 0xDFFF).map(chr), max_size=5).map(
    "".join
)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replaced(item) for item in value]
    if isinstance(value, dict):
        return {_replaced(key): _replaced(item) for key, item in value.items()}
    return value


def _read(raw: bytes) -> tuple[list[Any], list[str]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.jsonl"
        path.write_bytes(raw + b"\n")
        reader = DatasetReader(path, id_field="id", output_field="output")
        items = [item for batch in reader.batches() for item in (batch if isinstance(batch, list) else [batch])]
        return items, list(reader.mended.notes)


def _fields(items: list[Any]) -> Any:
    (item,) = items
    assert not isinstance(item, BadLine), item
    return item.records[0] if hasattr(item, "records") else item.fields


@settings(max_examples=150, deadline=None)
@given(fields=st.dictionaries(TEXT, VALUES, max_size=4), output=VALUES)
def test_a_line_is_read_as_json_loads_with_lone_surrogates_replaced(fields: dict[str, Any], output: Any) -> None:
    record = {**fields, "id": "x", "output": output}
    text = json.dumps(record)  # ensure_ascii: every surrogate written as an escape
    expected = json.loads(text)
    replaced = _replaced(expected)
    assume(_keys_stay_apart(expected))
    items, notes = _read(text.encode())
    assert _fields(items) == replaced
    lone = len(LONE.findall(json.dumps(expected, ensure_ascii=False)))
    if lone:
        (note,) = notes
        assert f"data.jsonl:1: {lone} lone surrogate escape{'s' if lone > 1 else ''} (" in note
        assert note.endswith("read as U+FFFD; write the whole character to keep it")
    else:  # paired escapes only (or none): the fast path's value, and nothing said
        assert _fields(items) == orjson.loads(text) and notes == []


def _keys_stay_apart(value: Any) -> bool:
    """Whether no two keys of one object become one once replaced (such a line is refused as a duplicate key)."""
    if isinstance(value, list):
        return all(map(_keys_stay_apart, value))
    if isinstance(value, dict):
        return len({_replaced(key) for key in value}) == len(value) and all(map(_keys_stay_apart, value.values()))
    return True


def test_keys_that_differ_only_in_lone_surrogates_are_refused_as_one_key_twice() -> None:
    items, _ = _read(b'{"id": "x", "\\ud800": 1, "\\ud801": 2}')
    (item,) = items
    assert isinstance(item, BadLine) and item.code == "duplicate_key", item


def test_a_line_not_json_for_another_reason_keeps_its_error() -> None:
    items, notes = _read(b'{"id": "x", "a": "\\ud800", "b": NaN}')
    (item,) = items
    assert isinstance(item, BadLine) and item.code == "malformed_json" and notes == [], item


def test_many_such_lines_are_said_in_a_few_lines_of_warning(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"".join(b'{"id": "%d", "output": "\\ud83d"}\n' % number for number in range(NOTES_SHOWN + 2)))
    reader = DatasetReader(path, id_field="id", output_field="output")
    items = [item for batch in reader.batches() for item in (batch if isinstance(batch, list) else [batch])]
    assert [item.fields["output"] for item in items] == ["\ufffd"] * (NOTES_SHOWN + 2)
    notes = reader.mended.notes
    assert [note.split(": ")[0] for note in notes[:-1]] == [f"{path}:{line}" for line in range(1, NOTES_SHOWN + 1)]
    assert notes[-1] == f"{path}: 2 more lines with lone surrogate escapes read as U+FFFD"
