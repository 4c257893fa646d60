"""The optional C exactness proof (``evalglass._native._scan``) against the pure checks of ``readers.jsonsource``.

The pure checks are the reference: ``exact`` may answer False ("look closer") for anything, but never True for a
line they refuse, and True for every line they accept that spells no integer of 19 digits or more and no escape in a
key (the classes it leaves to them by design; a line without a backslash is tested so), and with the C path on or off every reader gives the same values, the same refusals (code and
words) and the same bad lines at the same file:line. The lines are those of ``test_jsonsource_scan`` (keys
repeated at any depth, ``"a"`` beside ``"\\u0061"``, colons, brackets and escaped quotes inside strings, 18 to 20
digit integers of either sign, exponents, nesting either side of ``MAX_DEPTH``, a BOM, lone surrogates, bytes that
are not UTF-8) and more made here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from evalglass.core.example import OUTPUTS_JSON, ExampleBatch
from evalglass.engine.datasets.dataset import BadLine, DatasetReader
from evalglass.readers import jsonsource
from evalglass.readers.jsonsource import MAX_DEPTH, JsonRefused, check_exact, loads
from tests.engine.test_jsonsource_scan import lines, outcome, parsed, values

native = pytest.importorskip("evalglass._native._scan", reason="the C extension was not built here")


@contextmanager
def pure() -> Iterator[None]:
    """The reader with the C path off (as ``EVALGLASS_PURE=1`` leaves it)."""
    kept = jsonsource._native_scan
    jsonsource._native_scan = None
    try:
        yield
    finally:
        jsonsource._native_scan = kept


def _long_integer(raw: bytes) -> bool:
    """Whether the line spells an integer (no fraction, no exponent) of 19 digits or more, read by the standard
    library (which sees every number token as written)."""
    found = [False]

    def integer(digits: str) -> int:
        found[0] = found[0] or len(digits.lstrip("-")) >= 19
        return 0

    json.loads(raw, parse_int=integer)
    return found[0]


def _accepted(raw: bytes) -> bool:
    try:
        check_exact(raw)
    except JsonRefused:
        return False
    return True


def _proven(raw: bytes) -> bool:
    """What ``exact`` must answer for one line orjson reads: True when the pure checks accept it and it spells no
    integer of 19 digits or more, when it holds no backslash (with one, only: not True for a refused line)."""
    return _accepted(raw) and not _long_integer(raw)


#: Lines made here, beside the scan tests' generator: long digit runs in strings and keys, whitespace everywhere,
#: strings ending in escaped backslashes, escaped quotes before colons and brackets, keys repeated deep down.
TRICKY = st.sampled_from(
    [
        b'{"a": 1, "a": 2}',
        b'{"a": 1, "\\u0061": 2}',
        b'{"\\u0061": {"b": [{"c": 1, "\\u0063": 2}]}}',
        b'{"x": [{"y": {"z": 1}}, {"y": {"z": 1, "z": 1}}]}',
        b'{"a\\"": 1, "a": 2}',
        b'{"a\\\\": 1, "a": 2}',
        b'{"s": "\\\\", "t": ":"}',
        b'{"s": "\\\\\\"{[:", "t": 1}',
        b'{"k:": "v:", "k": "v"}',
        b'{"\\u003a": 1, ":": 2}',
        b'{"n": "12345678901234567890", "12345678901234567890": 1}',
        b'{"n": 1234567890123456789}',
        b'{"n": -1234567890123456789}',
        b'{"n": 123456789012345678}',
        b'{"n": -123456789012345678}',
        b'{"n": 12345678901234567890}',
        b'{"n": -9223372036854775808}',
        b'{"n": 9223372036854775807}',
        b'{"n": 1234567890123456789.5}',
        b'{"n": 12345678901234567890e-5}',
        b'{"n": 1E+2, "m": -0.5e-3, "o": 0}',
        b'{"a": {"b": 1}, "b": 2}',
        b'[{"a": 1}, {"a": 2}, {"b": {"a": {"a": 3}}}]',
        b'{"x": [{"a": 1, "b": [{"a": 2}]}], "a": 2, "b": {"x": 1}}',
        b' \t{ "a" :\r\n [ 1 , { "b" : true } , null , false ] } \r\n',
        b"[]",
        b"{}",
        b'"just a string"',
        b"42",
        b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
        b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
        b'{"d":' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1),
        b'{"d":' * MAX_DEPTH + b"{}" + b"}" * MAX_DEPTH,
        b'{"s": "' + b"[" * 300 + b'"}',
        b'{"s": "' + b"\\\\" * 9 + b'", "a": [' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"]}",
        b'{"long": "' + b"x" * 100 + b'\\"' + b"y" * 40 + b'", "long": 1}',
        b'{"e": "\xc3\xa9\xe6\x97\xa5", "\xc3\xa9": 1, "\\u00e9": 2}',
        b'{"p": "\\ud83d\\ude00", "\\ud83d\\ude00": 1, "\xf0\x9f\x98\x80": 2}',
    ]
)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": {"b": 1}, "b": 2}',
        b'[{"a": 1}, {"a": 2}, {"b": {"a": {"a": 3}}}]',
        b'{"x": [{"a": 1, "b": [{"a": 2}]}], "a": 2, "b": {"x": 1}}',
        b'["a", "a", {"a": "a"}]',
        b'{"ab": 1, "a": 2, "b": 3, "": 4}',
        b'{"s": "a\\"b", "t": ["\\\\", "\\u0022:", "}"]}',
        b'{"n": -123456789012345678, "m": 123456789012345678, "f": 12345678901234567890.5, "e": 1e-400}',
    ],
)
def test_the_same_key_in_other_objects_escapes_in_values_and_long_floats_are_proven(raw: bytes) -> None:
    """A key met again in another object (a sibling, a parent, a child) is no repeat; escapes in values and the
    digits of a float are no reason to doubt."""
    assert _accepted(raw)
    assert native.exact([raw]), raw


@settings(max_examples=400)
@given(raw=lines() | TRICKY)
@example(raw=b'{"a": 1, "\\u0061": 2}')
@example(raw=b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
def test_exact_answers_true_exactly_for_the_lines_the_pure_checks_accept(raw: bytes) -> None:
    """Never True for a line the pure path refuses (a mutant that skips a check fails here), and True for every plain
    one it accepts (a mutant that declines too much fails here too)."""
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return  # the check only ever sees lines orjson read
    expected = _proven(raw)
    answer = native.exact([raw])
    escapes = b"\\" in raw
    event(f"exact: {expected}, backslash: {escapes}")
    if escapes:
        assert expected or not answer, raw
    else:
        assert answer is expected, raw


#: Text orjson writes with escapes (quotes, backslashes, control characters) and without (any other character but a
#: lone surrogate, which no UTF-8 text holds).
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_PLAIN_KEYS = st.text(st.characters(exclude_categories=["Cs", "Cc"], exclude_characters='"\\'), max_size=6)


@settings(max_examples=300)
@given(
    record=st.dictionaries(
        _PLAIN_KEYS, _TEXT | st.lists(_TEXT, max_size=3) | st.integers(-(10**18) + 1, 10**18 - 1), max_size=6
    ),
    repeat=st.integers(0, 6),
    nest=st.booleans(),
)
@example(record={"s": 'a"b', "t": "x"}, repeat=0, nest=False)
@example(record={"s": "\\", "t": ":"}, repeat=0, nest=False)
@example(record={"s": '"}{][', "k": 1}, repeat=1, nest=True)
def test_escaped_strings_are_skipped_whole_and_repeated_plain_keys_found(
    record: dict[str, Any], repeat: int, nest: bool
) -> None:
    """Strings orjson wrote, escapes and all, beside keys without escapes: proven, unless one key is written twice
    (then refused by the pure check, and never proven). A scan that ends a string at an escaped quote, or reads a
    colon, bracket or quote inside one as structure, fails here."""

    def nested(text: bytes) -> bytes:
        return b'{"outer": [' + text + b", " + text + b'], "n": {"inner": ' + text + b"}}" if nest else text

    text = orjson.dumps(record)
    assert native.exact([nested(text)]) is _proven(nested(text)), text
    assert native.exact([nested(text)])
    if record and repeat < len(record):
        key = orjson.dumps(list(record)[repeat])
        doubled = nested(text[:-1] + b", " + key + b": 0}")
        assert not native.exact([doubled]), doubled
        with pytest.raises(JsonRefused):
            check_exact(doubled)


@settings(max_examples=300)
@given(raws=st.lists(lines() | TRICKY, min_size=1, max_size=8))
def test_a_batch_is_exact_when_every_line_is(raws: list[bytes]) -> None:
    kept, _ = parsed(raws)
    answer = native.exact(kept)
    assert answer is all(native.exact([raw]) for raw in kept), kept
    assert not answer or all(map(_proven, kept)), kept


@settings(max_examples=300)
@given(raw=lines() | TRICKY)
def test_loads_reads_or_refuses_as_the_pure_path_does(raw: bytes) -> None:
    """The same value, the same refusal (code and message) or the same parse error, the C path on and off."""
    now = outcome(loads, raw)
    with pure():
        before = outcome(loads, raw)
    assert now == before, raw


@st.composite
def dataset_files(draw: Any) -> bytes:
    """A dataset: object lines with an id and an output (the batch path), beside any line of the generators."""
    rows = []
    for number in range(draw(st.integers(1, 12))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            rows.append(draw(lines() | TRICKY))
        else:
            inner = draw(values(1))
            extra = draw(
                st.sampled_from([b"", b', "id": "again"', b', "\\u0069d": "again"', b', "n": 12345678901234567890'])
            )
            rows.append(b'{"id": "r%d", "output": ' % number + inner.encode("utf-8", "surrogatepass") + extra + b"}")
    return b"\n".join(rows) + b"\n"


def _read(path: Path, size: int) -> list[Any]:
    reader = DatasetReader(path, id_field="id", output_field="output", chunk=1 << 20)
    items: list[Any] = []
    for batch in reader.batches(size):
        items += batch.examples() if isinstance(batch, ExampleBatch) else batch
    return [*items, reader.fingerprint, reader.examples, reader.bad_lines, reader.mended.notes]


def _on_and_off(path: Path, data: bytes, read: Callable[[Path], Any]) -> tuple[Any, Any]:
    """What ``read`` gives for a file holding ``data``, with the C path on, then off."""
    path.write_bytes(data)
    now = read(path)
    with pure():
        return now, read(path)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=dataset_files(), size=st.sampled_from([1, 3, 256]))
def test_the_dataset_reader_gives_the_same_examples_and_bad_lines(tmp_path: Path, data: bytes, size: int) -> None:
    """Every example, and every bad line with its code, message and line number, as with the C path off."""
    now, before = _on_and_off(tmp_path / "data.jsonl", data, lambda path: _read(path, size))
    event(f"bad lines: {sum(isinstance(item, BadLine) for item in now) > 0}")
    assert now == before


def test_refusals_keep_their_codes_and_words_with_the_c_path_on(tmp_path: Path) -> None:
    """The three classes still reach the pure check, which words them, at their file:line."""
    rows = [
        b'{"id": "a", "output": {"v": 1, "\\u0076": 2}}',
        b'{"id": "b", "output": 18446744073709551616}',
        b'{"id": "c", "output": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}",
        b'{"id": "d", "output": 1}',
    ]
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n".join(rows) + b"\n")
    items = _read(path, 256)[:-4]
    assert [(item.line, item.code) for item in items if isinstance(item, BadLine)] == [
        (1, "duplicate_key"),
        (2, "integer_too_large"),
        (3, "too_deep"),
    ]
    assert "the key 'v' appears twice in one object" in items[0].message


def test_what_is_not_a_list_of_bytes_is_not_proven() -> None:
    raw = b'{"a": 1, "b": 2}'
    assert native.exact([raw, raw])
    assert native.exact([])
    assert not native.exact((raw,))  # type: ignore[arg-type]
    assert not native.exact([raw, raw.decode()])  # type: ignore[list-item]
    assert not native.exact([raw, bytearray(raw)])  # type: ignore[list-item]


@pytest.mark.parametrize("keys", [1, 2, 255, 256, 257, 400])
def test_many_keys_open_at_once_are_compared_or_left_to_the_pure_checks(keys: int) -> None:
    """Up to 256 keys of open objects are compared (a repeat found among them); more are declined, never proven."""
    flat = b"{" + b",".join(b'"k%d": %d' % (k, k) for k in range(keys)) + b"}"
    repeated = flat[:-1] + b', "k0": 1}'
    nested = b'{"a": 1, "b": ' + flat + b', "a": 2}'
    assert native.exact([flat]) is (keys <= 256)
    assert not native.exact([repeated])
    assert not native.exact([nested])


def test_reference_counts_are_unchanged_over_many_calls() -> None:
    good = b'{"a": [1, {"b": "x:y"}], "c": {"d": null}}'
    bad = b'{"a": 1, "a": 2}'
    lines_ = [good, bad]
    watched = [good, bad, lines_]
    before = [sys.getrefcount(item) for item in watched]
    for _ in range(5000):
        assert native.exact([good])
        assert not native.exact(lines_)
        assert not native.exact([bad])
        assert not native.exact((good,))  # type: ignore[arg-type]
    assert [sys.getrefcount(item) for item in watched] == before


@pytest.mark.parametrize(("pure_env", "loaded"), [("1", False), ("", True), ("0", True)])
def test_evalglass_pure_turns_the_c_scan_off(pure_env: str, loaded: bool) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from evalglass.readers import jsonsource; print(jsonsource._native_scan is not None)"],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALGLASS_PURE": pure_env},
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == str(loaded)


# --- exact_kept(lines, key): exact(), and what orjson writes for a proven batch's column, from the lines' bytes ---


def _kept(lines: list[bytes], key: str) -> bytes | None:
    """exact_kept's bytes, None when it took none; its proof is always exact()'s."""
    found = native.exact_kept(lines, key)
    proven = native.exact(lines)
    if isinstance(found, bool):
        assert found is proven, lines
        return None
    assert proven, lines
    return found


def _written(records: list[Any], key: str) -> bytes | None:
    """The reference: what orjson writes for the column at ``key``."""
    if not all(type(record) is dict and key in record for record in records):
        return None
    return orjson.dumps([record[key] for record in records])


#: JSON values without floats or text orjson escapes (whose bytes kept() copies), and with them (which it declines).
_PLAIN_TEXT = st.text(st.characters(exclude_categories=["Cs", "Cc"], exclude_characters='"\\'), max_size=8)
_PLAIN_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**18) + 1, 10**18 - 1) | _PLAIN_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_PLAIN_TEXT, inner, max_size=3),
    max_leaves=12,
)
_ANY_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**18) + 1, 10**18 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
)
#: How another tool may have written the line without escaping more than orjson does: orjson's compact form, json's
#: spaced one, odd white space, pretty-printed on one line.
_PLAIN_WRITERS = st.sampled_from(
    [
        orjson.dumps,
        lambda value: json.dumps(value, ensure_ascii=False).encode(),
        lambda value: json.dumps(value, ensure_ascii=False, separators=(" ,\t", " : ")).encode(),
        lambda value: b" \t" + json.dumps(value, ensure_ascii=False, indent=1).replace("\n", "\r").encode() + b" ",
    ]
)
#: And json's default, which escapes every character beyond ASCII.
_WRITERS = _PLAIN_WRITERS | st.just(lambda value: json.dumps(value).encode())


@st.composite
def written_records(draw: Any, values: Any) -> bytes:
    """A record holding ``out`` (last, first, or not at all) among other keys, written by one of :data:`_WRITERS`."""
    record = draw(st.dictionaries(st.sampled_from(["id", "a", "é", "x y", "outs"]), values, max_size=3))
    where = draw(st.sampled_from(["last", "first", "none"]))
    if where == "last":
        record["out"] = draw(values)
    elif where == "first":
        record = {"out": draw(values), **record}
    return cast(bytes, draw(_WRITERS)(record))


#: Numbers as other tools spell them, which orjson writes otherwise (a float's own digits, -0) or the same.
_SPELLED = st.sampled_from(["1.50", "0.10", "1.0", "2E3", "2e-3", "1E+2", "-0", "-0.0", "0", "-7", "10", "[1.0e1]"])
_SPELLED_LINES = st.builds(lambda spelled, first: (b'{"out": %s, "id": 1}' if first else b'{"id": 1, "out": %s}')
                           % spelled.encode(), _SPELLED, st.booleans())  # fmt: skip


@settings(max_examples=300)
@given(
    raws=st.lists(
        written_records(_ANY_VALUES) | written_records(_PLAIN_VALUES) | _SPELLED_LINES | lines() | TRICKY, max_size=5
    ),
    key=st.sampled_from(["out", "id", "a", "é"]),
)
@example(raws=[b'{"out": -0}'], key="out")
@example(raws=[b'{"out": 1E2}'], key="out")
@example(raws=[b'{"out": [1.0]}'], key="out")
@example(raws=[b'{"out": 1, "a": 2}'], key="out")
@example(raws=[b'{"out": "\\u00e9"}'], key="out")
@example(raws=[b'{"a": [1, "b"], "out": true}', b"{}"], key="out")
def test_kept_gives_what_orjson_writes_or_nothing(raws: list[bytes], key: str) -> None:
    """exact_kept proves as exact() does, and for a batch it proves gives nothing or exactly orjson's bytes for the
    column: a copy that keeps white space, a float's or an escape's spelling, ``-0``, or a record without the key
    fails here."""
    kept, records = parsed(raws)
    found = _kept(kept, key)
    if not native.exact(kept):
        return
    event(f"kept: {found is not None}")
    assert found is None or found == _written(records, key), kept


@settings(max_examples=200)
@given(
    records=st.lists(st.dictionaries(st.sampled_from(["id", "a", "é"]), _PLAIN_VALUES, max_size=3), max_size=5),
    output=st.lists(_PLAIN_VALUES, min_size=5, max_size=5),
    writer=_PLAIN_WRITERS,
)
def test_kept_takes_every_plain_batch_from_its_text(
    records: list[dict[str, Any]], output: list[Any], writer: Any
) -> None:
    """Records without floats or escaped text, the output their last key, however white space is laid out: always
    taken from the text (a kept() that declines them fails here), and orjson's bytes."""
    for record, value in zip(records, output, strict=False):
        record.pop("out", None)
        record["out"] = value
    raws = [writer(record) for record in records]
    assert native.exact(raws), raws
    assert _kept(raws, "out") == _written(records, "out"), raws


def test_kept_declines_what_it_cannot_copy_and_checks_its_arguments() -> None:
    line = b'{"id": "a", "out": [1, "x"]}'
    assert _kept([line, line], "out") == b'[[1,"x"],[1,"x"]]'
    assert _kept([], "out") == b"[]"
    assert _kept([b'{"out": 1}'], "out") == b"[1]"
    assert _kept([line], "id") == b'["a"]'  # not the last key: copied all the same
    assert native.exact_kept([line], "missing") is True
    assert native.exact_kept([b'["out"]'], "out") is True
    assert native.exact_kept([b'{"out": 1, "out": 2}'], "out") is False
    assert native.exact_kept((line,), "out") is False  # type: ignore[arg-type]
    assert native.exact_kept([line, line.decode()], "out") is False  # type: ignore[list-item]
    assert native.exact_kept([line], b"out") is False  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        native.exact_kept([line], "out", False)  # type: ignore[call-arg]


_PIECES = st.sampled_from([b" ", b"\t", b'"', b'"a b"', b"-0", b"-1", b"0", b"1.5", b"7e", b"e", b"1", b"\\", b"x"])


@settings(max_examples=300)
@given(
    data=st.binary(max_size=80)
    | st.lists(_PIECES, max_size=40).map(b"".join)
    | _ANY_VALUES.map(lambda value: json.dumps(value, ensure_ascii=False).encode()),
)
def test_minify_is_the_same_with_sse2_and_the_byte_loop(data: bytes) -> None:
    """The SSE2 masks and the portable ones give the same copy or the same refusal (at every piece boundary too: a
    string, a `-0` or a digit before an `e` running over from one 16-byte piece into the next)."""
    assert native.minify(data, False) == native.minify(data, True), data


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, list):
        return any(map(_has_float, value))
    if isinstance(value, dict):
        return any(map(_has_float, value.values()))
    return False


@settings(max_examples=300)
@given(value=_ANY_VALUES, writer=_WRITERS, pad=st.integers(0, 17))
def test_minify_gives_orjson_bytes_or_nothing(value: Any, writer: Any, pad: int) -> None:
    """A value written by another tool (any white space, moved by up to a piece): its copy is orjson's bytes, or
    None (a float, an escape, -0); and every value without those is copied."""
    text = b" " * pad + writer(value)
    found = native.minify(text, False)
    assert found is None or found == orjson.dumps(value), text
    if b"\\" not in text and b"-0" not in text and not _has_float(value):
        assert found == orjson.dumps(value), text


@contextmanager
def copying_short_lines() -> Iterator[None]:
    """The reader copying the kept bytes from the text of any batch (not only of long lines, where it pays)."""
    kept = jsonsource._COPY_FROM
    jsonsource._COPY_FROM = 0
    try:
        yield
    finally:
        jsonsource._COPY_FROM = kept


def _remembered(path: Path) -> list[Any]:
    reader = DatasetReader(path, id_field="id", output_field="output")
    found = []
    with copying_short_lines():
        batches = list(reader.batches(3))
    for batch in batches:
        if isinstance(batch, ExampleBatch):
            outputs = batch.derived(OUTPUTS_JSON, lambda: None)
            assert outputs is None or outputs == orjson.dumps(batch.outputs)
            found.append(outputs)
    return found


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=dataset_files())
def test_the_reader_keeps_the_bytes_orjson_writes(tmp_path: Path, data: bytes) -> None:
    """The outputs a batch keeps for the run are orjson's bytes, C path on or off."""
    now, before = _on_and_off(tmp_path / "data.jsonl", data, _remembered)
    assert len(now) == len(before)
    for outputs, outputs_before in zip(now, before, strict=True):
        assert outputs is None or outputs_before is None or outputs == outputs_before
