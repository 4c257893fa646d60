"""The exact JSON reader: what it returns is what the text says, or it refuses.

The oracle is the standard library's parser with every key pair and every integer in view, written here from the
rules (no key twice in one object, integers within 64 bits, at most MAX_DEPTH levels), independently of the
raw-byte scan the reader uses to skip that parse on clean lines.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.fieldpath import ABSENT
from evalglass.readers.jsonsource import (
    MAX_DEPTH,
    JsonRefused,
    batch_is_exact,
    batch_is_exact_keeping,
    loads,
)

KEYS = st.sampled_from(["a", "b", "a:b", ':"', "\\", "\u003a", "k"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=':"\\ab{}[]0123456789 \u003a', max_size=8)
)


@st.composite
def documents(draw: Any, depth: int = 0) -> str:
    """JSON text built by hand, so keys can repeat and colons, quotes and escapes can sit anywhere."""
    if depth > 3 or draw(st.booleans()):
        value = draw(SCALARS)
        if isinstance(value, str) and draw(st.booleans()):
            return '"' + "".join(f"\\u{ord(char):04x}" for char in value) + '"'  # every character escaped
        return json.dumps(value)
    if draw(st.booleans()):
        items = draw(st.lists(documents(depth + 1), max_size=3))
        return "[" + ",".join(items) + "]"
    pairs = draw(st.lists(st.tuples(KEYS, documents(depth + 1)), max_size=4))
    space = draw(st.sampled_from(["", " ", "\t", "\n"]))
    return "{" + ",".join(f"{json.dumps(key)}{space}:{space}{value}" for key, value in pairs) + "}"


def depth(value: Any) -> int:
    """Levels of objects and arrays, counted on the parsed value."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def oracle(text: bytes) -> Any:
    """What the text says, or the class of the reason it cannot be read exactly."""

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise JsonRefused("duplicate_key", "")
        return dict(pairs)

    def whole(digits: str) -> int:
        if not -(2**63) <= int(digits) < 2**63:
            raise JsonRefused("integer_too_large", "")
        return int(digits)

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook, parse_int=whole)
    except JsonRefused as exc:
        return exc.code
    return "too_deep" if depth(value) > MAX_DEPTH else value


@settings(max_examples=600, deadline=None)
@given(text=documents())
def test_the_reader_returns_what_the_text_says_or_refuses(text: str) -> None:
    raw = text.encode()
    expected = oracle(raw)
    try:
        got = loads(raw)
    except JsonRefused as exc:
        assert exc.code == expected, (text, exc)
        return
    assert got == expected, text


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(documents(), min_size=1, max_size=8))
def test_a_batch_passes_the_scan_only_when_every_line_is_exact(texts: list[str]) -> None:
    raws = [text.encode() for text in texts]
    values = [orjson.loads(raw) for raw in raws]
    if batch_is_exact(raws, values):
        assert [oracle(raw) for raw in raws] == values, texts


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (b'{"verdict": "fail", "verdict": "pass"}', "duplicate_key"),
        (b'{"a": {"b": 1, "b" : 2}}', "duplicate_key"),
        (b'{"a": 1, "a": "\\u003a"}', "duplicate_key"),
        (b'{"n": 100000000000000000001}', "integer_too_large"),
        (b'{"n": -9223372036854775809}', "integer_too_large"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "too_deep"),
        (b"[" * 1000 + b"]" * 1000, "too_deep"),
    ],
)
def test_what_a_fast_parser_would_read_differently_is_refused(text: bytes, code: str) -> None:
    with pytest.raises(JsonRefused) as caught:
        loads(text)
    assert caught.value.code == code


def test_clean_documents_come_back_as_orjson_reads_them() -> None:
    text = b'{"id": "x", "n": 9223372036854775807, "s": "100000000000000000001", "o": {"a": "b: c"}}'
    assert loads(text) == orjson.loads(text)
    assert loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) == orjson.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)


BRACKETY = st.text(alphabet='[]{}"\\ab:\u003a', max_size=6)


@settings(max_examples=200, deadline=None)
@given(depth=st.integers(1, MAX_DEPTH + 8), width=st.integers(0, 80), leaves=st.lists(BRACKETY, min_size=1, max_size=5))
def test_the_depth_of_a_line_with_many_brackets_is_measured_not_guessed(
    depth: int, width: int, leaves: list[str]
) -> None:
    """A wide, shallow record (a conversation: hundreds of brackets, a few levels) passes the scan without a second
    parse; a deep one is always looked at, whatever brackets its strings hold."""
    value: Any = leaves
    for level in range(depth - 1):
        value = {"k": value, "s": leaves[level % len(leaves)]} if level % 2 else [value, leaves[0]]
    wide = [value, *({"role": "tool", "parts": [{"x": leaves}]} for _ in range(width))]
    raw = orjson.dumps(wide)
    exact = batch_is_exact([raw], [orjson.loads(raw)])
    assert exact == (depth + 1 <= MAX_DEPTH)  # the list around it is one level more
    assert oracle(raw) == ("too_deep" if depth + 1 > MAX_DEPTH else wide)


#: Strings whose brackets, quotes and escapes a depth scan must not count as structure.
TRICKY_TEXT = st.text(alphabet='[]{}"\\/ab\n', max_size=6)


@st.composite
def nested(draw: Any) -> Any:
    """A value nested to a drawn depth (near MAX_DEPTH as often as not), one kind of bracket or both, with tricky
    strings beside each level."""
    depth = draw(st.sampled_from([1, 3, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 3]))
    kinds = draw(st.sampled_from(["list", "object", "both"]))
    value: Any = draw(TRICKY_TEXT)
    for level in range(depth):
        if kinds == "list" or (kinds == "both" and level % 2):
            value = [value, draw(TRICKY_TEXT)]
        else:
            value = {"k": value, "s": draw(TRICKY_TEXT)}
    return value


@settings(max_examples=200, deadline=None)
@given(values=st.lists(nested(), min_size=1, max_size=4), wide=st.integers(0, 60))
def test_a_batch_passes_the_depth_scan_exactly_when_every_line_is_shallow_enough(values: list[Any], wide: int) -> None:
    """The scan over a whole batch counts the nesting of each line, whatever brackets, quotes and escapes its strings
    hold and however many brackets it has side by side: a batch of lines no deeper than MAX_DEPTH passes without a
    second parse, one deeper line sends the batch to be read line by line."""

    records = [{"line": index, "value": value, "wide": [{"x": [1]}] * wide} for index, value in enumerate(values)]
    lines = [orjson.dumps(record) for record in records]
    assert batch_is_exact(lines, [orjson.loads(line) for line in lines]) == all(
        depth(record) <= MAX_DEPTH for record in records
    )


@st.composite
def objects(draw: Any) -> str:
    """A JSON object written by hand (keys may repeat, colons and escapes anywhere), as a dataset line is."""
    pairs = draw(st.lists(st.tuples(KEYS, documents(1)), max_size=4))
    return "{" + ",".join(f"{json.dumps(key)}:{value}" for key, value in pairs) + "}"


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(objects(), min_size=1, max_size=6), key=KEYS)
def test_checking_a_batch_while_keeping_a_column_decides_as_the_whole_check(texts: list[str], key: str) -> None:
    """The column kept is orjson's dump of each record's value at the key, and keeping it changes no decision."""
    raws = [text.encode() for text in texts]
    values = [orjson.loads(raw) for raw in raws]
    exact, column = batch_is_exact_keeping(raws, values, key)
    assert exact == batch_is_exact(raws, values), texts
    # Given the values at the key (the reader's outputs column), the same decision and column, looked up once.
    assert batch_is_exact_keeping(raws, values, key, [value.get(key, ABSENT) for value in values]) == (exact, column)
    if column is not None:
        assert exact
        assert column == orjson.dumps([value[key] for value in values])


def test_the_column_is_kept_from_a_nested_batch_and_a_repeat_inside_it_is_still_refused() -> None:
    lines = [b'{"id": "a", "out": {"x": {"y": ":"}}}', b'{"id": "b", "out": [1, {"z": 2}]}']
    assert batch_is_exact_keeping(lines, [orjson.loads(line) for line in lines], "out") == (
        True,
        b'[{"x":{"y":":"}},[1,{"z":2}]]',
    )
    repeated = [b'{"id": "a", "out": {"x": 1, "x": 2}}']
    assert batch_is_exact_keeping(repeated, [orjson.loads(line) for line in repeated], "out") == (False, None)
    # A key some record lacks: decided as before, no column.
    mixed = [b'{"id": "a", "out": {"x": 1}}', b'{"id": "b", "other": {"x": 1}}']
    assert batch_is_exact_keeping(mixed, [orjson.loads(line) for line in mixed], "out") == (True, None)
