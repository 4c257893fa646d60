"""The batch scan of ``readers.jsonsource`` decides as the scan it replaced, on lines made to trip it.

The scan was made cheaper (one ``translate`` keeping digits and structure, a per-line bound on brackets before the
depth is measured, the colons of the kept column as a lower bound before the rest is written). Its oracle here is
the scan as it was (``before_exact``: a copy of the code it replaced, unchanged but for its split at the last key,
which nothing asks for any more), over batches of lines of
every kind that could make orjson read differently from the text: keys repeated at any depth, keys that are the
same only once unescaped, escaped colons and quotes, integers of 19 and 20 digits (in strings too), floats whose
digits run long, ``-0``, numbers orjson refuses (``1e400``, ``NaN``), a BOM, lone surrogates, bytes that are not
UTF-8, nesting around the limit, brackets inside strings, documents with newlines inside. Every function answers
what it answered before (the decision and the column kept), and :func:`loads` returns the same value or
refuses with the same code and message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import orjson
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from evalglass.core.fieldpath import ABSENT
from evalglass.core.uniform import all_of_type
from evalglass.readers.jsonsource import (
    _DIGITS_ONLY,
    _LARGE,
    _LONG_DIGITS,
    MAX_DEPTH,
    JsonRefused,
    _colons,
    _opens_more_than_max,
    _writing_measures_depth,
    batch_is_exact,
    batch_is_exact_keeping,
    check_exact,
    loads,
)

# --- the scan as it was (commit 562155b), the oracle -------------------------------------------------------------

_BEFORE_NOT_MARKS = bytes(byte for byte in range(256) if byte not in b'[]{}"')
_BEFORE_BRACKETS_AS_SQUARE = bytes.maketrans(b"{}", b"[]")


def before_exact(
    lines: list[bytes], values: list[Any], key: str | None, *, at_key: list[Any] | None = None
) -> tuple[bool, bytes | None, bytes | None]:
    joined = b"\n".join(lines)
    if _LONG_DIGITS in joined.translate(_DIGITS_ONLY):
        return False, None, None
    if not before_shallow_enough(joined):
        return False, None, None
    colons = joined.count(b":")
    if colons == 0:
        return True, None, None
    if all_of_type(values, dict) and colons == sum(map(len, values)):
        return True, None, None
    column = rest = None
    try:
        if key is not None and (
            ABSENT not in at_key
            if at_key is not None
            else all_of_type(values, dict) and all(key in value for value in values)
        ):
            column = orjson.dumps(at_key if at_key is not None else list(map(itemgetter(key), values)))
            if 2 * len(column) > len(joined):
                rest = orjson.dumps([{name: item for name, item in record.items() if name != key} for record in values])
                written = column.count(b":") + rest.count(b":") + len(values) * (1 + key.count(":"))
            else:
                written = orjson.dumps(values).count(b":")
        else:
            written = orjson.dumps(values).count(b":")
    except orjson.JSONEncodeError:
        return False, None, None
    exact = written == colons and (b"\\" not in joined or (b"\\u003a" not in joined and b"\\u003A" not in joined))
    return (True, column, rest) if exact else (False, None, None)


def before_shallow_enough(joined: bytes) -> bool:
    if b"\\" in joined:
        joined = joined.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = joined.translate(_BEFORE_BRACKETS_AS_SQUARE, _BEFORE_NOT_MARKS)
    if len(marks) - marks.count(b'"') <= 2 * MAX_DEPTH:
        return True
    marks = marks.replace(b'""', b"")
    if b'"' in marks:
        marks = b"".join(marks.split(b'"')[::2])
    for _ in range(MAX_DEPTH):
        if not marks:
            return True
        marks = marks.replace(b"[]", b"")
    return not marks


def before_loads(raw: bytes) -> Any:
    value = orjson.loads(raw)
    if not before_exact([raw], [value], None)[0]:
        check_exact(raw)
    return value


# --- lines made to trip the scan ---------------------------------------------------------------------------------

#: Keys that repeat, that are the same once unescaped ("a" and "\u0061"), and that hold colons, quotes, brackets.
KEYS = st.sampled_from(['"a"', '"\\u0061"', '"b"', '"a:b"', '"\\u003a"', '"\\u003A"', '"\\""', '"\\\\"', '"[{"', '"k"'])
NUMBERS = st.sampled_from(
    [
        "0",
        "-0",
        "-0.0",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "18446744073709551615",
        "18446744073709551616",
        "100000000000000000001",
        "1234567890123456789",
        "123456789012345678",
        "1.2345678901234567e-05",
        "-1.2345678901234567e+305",
        "1.2345678901234567E5",
        "0.1234567890123456789",
        "1e400",
        "-1e400",
        "1E-400",
        "NaN",
        "Infinity",
        "12.5",
        "3",
    ]
)
STRINGS = st.sampled_from(
    [
        '""',
        '"x"',
        '"a: b"',
        '"[[{"',
        '"]}]"',
        '"\\"["',
        '"\\\\"',
        '"\\\\\\"]"',
        '"\\u003a"',
        '"\\ud800"',
        '"\\udc00"',
        '"\\ud83d\\ude00"',
        '"12345678901234567890"',
        '"1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9"',
        '"1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0"',
        '"\xe9t\xe9"',
        '"\\n\\t\\/"',
    ]
)
SPACES = st.sampled_from(["", " ", "\t", "\n", "\r\n"])


@st.composite
def values(draw: Any, depth: int = 0) -> str:
    """One JSON value written by hand: keys may repeat at any depth, numbers and strings are the awkward ones."""
    kind = draw(st.integers(0, 5)) if depth < 4 else 0
    if kind == 0:
        return draw(NUMBERS | STRINGS | st.sampled_from(["true", "false", "null"]))
    if kind == 1:
        return "[" + ",".join(draw(st.lists(values(depth + 1), max_size=3))) + "]"
    if kind == 2:  # nesting near the limit, one kind of bracket or both, around a value
        levels = draw(st.sampled_from([MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 200]))
        inner = draw(values(4))
        opens = "".join(draw(st.sampled_from(["[", '{"d":'])) for _ in range(levels))
        closes = "".join("]" if opener == "[" else "}" for opener in reversed(opens.replace('{"d":', "{")))
        return opens + inner + closes
    space = draw(SPACES)
    pairs = draw(st.lists(st.tuples(KEYS, values(depth + 1)), max_size=4))
    return "{" + ",".join(f"{key}{space}:{space}{value}" for key, value in pairs) + "}"


@st.composite
def lines(draw: Any) -> bytes:
    """A dataset line: mostly an object (with the id and output fields), sometimes anything, sometimes mangled."""
    if draw(st.booleans()):
        pairs = [('"id"', draw(STRINGS | NUMBERS)), *draw(st.lists(st.tuples(KEYS, values(1)), max_size=3))]
        if draw(st.booleans()):
            pairs.insert(draw(st.integers(0, len(pairs))), ('"out"', draw(values(1))))
        text = "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"
    else:
        text = draw(values())
    raw = text.encode("utf-8", "surrogatepass")
    mangle = draw(st.sampled_from(["", "", "", "bom", "latin1", "wide"]))
    if mangle == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif mangle == "latin1":
        raw = raw.replace(b"x", b"\xff")
    elif mangle == "wide":  # many brackets, little depth: the bound fails, the depth is measured
        raw = b'{"w":[' + b",".join([b'{"r":[1,{"s":"]["}]}'] * 60) + b'],"v":' + raw + b"}"
    return raw


def parsed(raws: list[bytes]) -> tuple[list[bytes], list[Any]]:
    """The lines orjson reads (the scan only ever sees those), with their values."""
    kept, got = [], []
    for raw in raws:
        try:
            got.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            continue
        kept.append(raw)
    return kept, got


def outcome(read: Callable[[bytes], Any], raw: bytes) -> tuple[str, Any]:
    try:
        return "value", read(raw)
    except JsonRefused as exc:
        return exc.code, str(exc)
    except orjson.JSONDecodeError as exc:
        return "malformed", str(exc)


@settings(max_examples=300)
@given(raws=st.lists(lines(), min_size=1, max_size=6), key=st.sampled_from(["out", "a", "a:b", "id"]))
def test_the_scan_decides_as_the_scan_it_replaced(raws: list[bytes], key: str) -> None:
    kept, got = parsed(raws)
    if not kept:
        return
    event(f"batch exact: {before_exact(kept, got, key)[0]}")
    assert batch_is_exact(kept, got) == before_exact(kept, got, None)[0], kept
    exact, column, _ = before_exact(kept, got, key)
    assert batch_is_exact_keeping(kept, got, key) == (exact, column), kept
    at_key = [value.get(key, ABSENT) if type(value) is dict else ABSENT for value in got]
    exact, column, _ = before_exact(kept, got, key, at_key=at_key)
    assert batch_is_exact_keeping(kept, got, key, at_key) == (exact, column), kept


@settings(max_examples=300)
@given(raw=lines())
def test_a_line_is_read_or_refused_as_before(raw: bytes) -> None:
    """The same value, or the same refusal (code and message), or the same parse error."""
    now, before = outcome(loads, raw), outcome(before_loads, raw)
    event(now[0])
    assert now == before, raw
    assert now[0] != "value" or now[1] == json.loads(raw)  # a value read is what the text says (no NaN/BOM gets in)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (b'{"a": 1, "\\u0061": 2}', "duplicate_key"),
        (b'{"x": [{"a": {"b": 1, "b": 2}}]}', "duplicate_key"),
        (b'{"a\\u003ab": 1, "a:b": 2}', "duplicate_key"),
        (b'{"n": [1, 18446744073709551615]}', "integer_too_large"),
        (b'{"n": 9223372036854775808}', "integer_too_large"),
        (b'{"w": [' + b",".join([b"[1]"] * 200) + b'], "v": ' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}", "too_deep"),
        (b"{\n" + b'"d":{' * MAX_DEPTH + b"}" * MAX_DEPTH + b"\n}", "too_deep"),
    ],
)
def test_the_classes_the_scan_must_send_to_the_checking_parse_are_refused(text: bytes, code: str) -> None:
    with pytest.raises(JsonRefused) as caught:
        loads(text)
    assert caught.value.code == code
    assert outcome(before_loads, text) == (code, str(caught.value))


def test_digits_the_scan_joins_but_the_text_keeps_apart_are_read() -> None:
    """Digits of one number split by an exponent, or of a string split by letters, run together in the scan's bytes;
    the text itself then says there is no run of 19, and the batch is still cleared without a second parse."""
    batch = [b'{"f": 1.2345678901234567e305, "s": "1a2b3c4d5e6f7g8h9i0j1k2l3m4n5o6p7q8r9s0"}'] * 3
    assert batch_is_exact(batch, [orjson.loads(line) for line in batch])


# --- the depth measured by writing the batch back -----------------------------------------------------------------


def _nested_line(where: str, levels: int) -> bytes:
    """A trajectory-like line (many brackets, keys in nested objects, so the check writes it back) whose deepest
    value, in the output column or in the rest of the record, nests ``levels`` levels from the line's own."""
    wide = b'{"messages":[' + b",".join([b'{"role":"tool","parts":[{"type":"text","items":[1,[2]]}]}'] * 40) + b"]}"
    below = levels - (2 if where == "out" else 1)  # the levels above it: the record's (and the output's)
    deep = b'{"d":' * (below - 1) + b"[]" + b"}" * (below - 1)
    if where == "out":
        return b'{"id":"x","expected":[{"k":1}],"out":{"w":' + wide + b',"v":' + deep + b"}}"
    return b'{"id":"x","expected":' + deep + b',"out":' + wide + b"}"


@pytest.mark.parametrize("where", ["out", "rest"])
@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 300])
def test_a_batch_written_back_is_refused_exactly_when_a_line_nests_too_deep(where: str, levels: int) -> None:
    """The batch is written back (its nested keys make the colons differ from the keys), so the writing measures
    its depth: a line nested one level too deep sends the batch to the checking parse, which refuses it; one at the
    limit is cleared whole, whichever half of the record holds the depth."""
    plain = _nested_line("out", 3)
    batch = [plain, _nested_line(where, levels), plain]
    assert check_depth(batch[1]) == levels
    records = [orjson.loads(line) for line in batch]
    deep = levels > MAX_DEPTH
    assert batch_is_exact(batch, records) is not deep
    assert batch_is_exact_keeping(batch, records, "out")[0] is not deep
    assert batch_is_exact_keeping(batch, records, "out", [record["out"] for record in records])[0] is not deep
    assert [outcome(loads, line)[0] for line in batch] == ["value", "too_deep" if deep else "value", "value"]
    if not deep:  # what the check kept is what orjson writes
        assert batch_is_exact_keeping(batch, records, "out")[1] == orjson.dumps([record["out"] for record in records])


def check_depth(raw: bytes) -> int:
    """The line's nesting, counted on the standard library's reading of it."""
    deepest, stack = 0, [(json.loads(raw), 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            stack.extend((item, level + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest


def test_the_installed_orjson_measures_the_depth_it_writes() -> None:
    """The proof above is on (an orjson with another limit would only turn it off: the text is then scanned)."""
    assert _writing_measures_depth()


# --- long batches: the same scans in numpy ------------------------------------------------------------------------


@settings(max_examples=200)
@given(
    pieces=st.lists(
        st.sampled_from([b"0", b"7", b"9", b":", b"/", b";", b"a", b"\xff", b"\x00", b"\x80", b"\xb0", b"\xb9", b" "]),
        max_size=60,
    ),
    repeat_to=st.sampled_from([1, 20, 40_000]),
)
@example(pieces=[b":"], repeat_to=40_000)
@example(pieces=[b";"], repeat_to=40_000)  # the bytes beside the colon
@example(pieces=[b"9"], repeat_to=40_000)
def test_the_numpy_counts_are_the_bytes_counts(pieces: list[bytes], repeat_to: int) -> None:
    """Below and beyond the length from which numpy counts: the same colons."""
    data = b"".join(pieces) * repeat_to
    event(f"numpy: {len(data) >= _LARGE}")
    assert _colons(data) == data.count(b":")


@given(
    before=st.integers(0, 2 * MAX_DEPTH),
    after=st.integers(0, 2 * MAX_DEPTH),
    gap=st.sampled_from([0, 1, 4095, 4096, 4097, 70_000]),
    length=st.sampled_from([0, 1000, _LARGE - 1, _LARGE, _LARGE + 1, 3 * _LARGE]),
)
@example(before=MAX_DEPTH, after=1, gap=4096, length=3 * _LARGE)  # the prefix at the bound, the rest tips it
@example(before=MAX_DEPTH + 1, after=0, gap=0, length=_LARGE + 1)
@example(before=MAX_DEPTH, after=0, gap=0, length=3 * _LARGE)  # exactly the bound, all in the prefix: not more
def test_the_brackets_are_counted_past_the_bound_as_the_whole_count_says(
    before: int, after: int, gap: int, length: int
) -> None:
    """A long structure's brackets counted first in its prefix: the same answer as counting them all, brackets
    before, inside and after the prefix, at lengths either side of the one from which the prefix is read."""
    data = b"[" * before + b'"' * gap + b"[" * after
    data += b":" * max(0, length - len(data))
    assert _opens_more_than_max(data) == (data.count(b"[") > MAX_DEPTH)


KEY_NAMES = st.sampled_from(["out", "a", "a:b", "id"])


@settings(max_examples=150)
@given(kept=st.lists(lines(), min_size=1, max_size=4).map(lambda raws: parsed(raws)[0]).filter(bool), key=KEY_NAMES)
def test_a_long_batch_is_decided_as_the_scan_it_replaced(kept: list[bytes], key: str) -> None:
    """The batches of the first test, repeated past the length from which what orjson writes is counted in numpy."""
    long = kept * (_LARGE // len(b"\n".join(kept)) + 1)
    assert len(b"\n".join(long)) >= _LARGE
    test_the_scan_decides_as_the_scan_it_replaced.hypothesis.inner_test(long, key)  # type: ignore[attr-defined]
