"""The inline decoding of OTLP/JSON attribute values gives what the general decoder gives.

``_json_attributes`` takes the common values (text, an integer written as decimal text, an array of one text) inline
and hands anything else to ``_json_value``; ``_json_attributes_each`` hands every value but text to ``_json_value``.
For any list of attributes, well formed or not, both must give the same dict (type for type, key order included) or
refuse it with the same message. The values are drawn around the inline paths' edges: arrays with extra keys beside
``values``, elements with extra keys, a value with two kinds, integers as numbers or too long for ``int()``.
"""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.engine.datasets.traces.otlpspans import _Bad, _json_attributes, _json_attributes_each, split_long_lines

scalars = st.one_of(
    st.sampled_from(["stop", "", "12", "-3", "1e3", "NaN", "Infinity", True, False, None, 7, 2.5, [], {}]),
    st.text(alphabet="abc019", max_size=4),
    st.just("9" * (sys.get_int_max_str_digits() + 1)),
)
kinds = st.sampled_from(["stringValue", "intValue", "boolValue", "doubleValue", "bytesValue", "nonsense"])


@st.composite
def any_values(draw: st.DrawFn, depth: int = 0) -> Any:
    """An AnyValue as OTLP/JSON writes it, or one of the ways a file may get it wrong."""
    shape = draw(st.integers(0, 6 if depth < 2 else 2))
    if shape == 0:
        return {}
    if shape <= 2:
        value: dict[str, Any] = {draw(kinds): draw(scalars)}
    elif shape <= 4:
        elements = draw(st.lists(st.one_of(any_values(depth + 1), scalars), max_size=3))
        inner: Any = {"values": elements}
        if draw(st.booleans()):
            inner = draw(st.sampled_from([{}, {"values": None}, {"values": "ab"}, {"values": elements, "x": 1}, []]))
        value = {"arrayValue": inner}
    elif shape == 5:
        value = {"kvlistValue": {"values": [{"key": "k", "value": draw(any_values(depth + 1))}]}}
    else:
        element = {"stringValue": draw(scalars)}
        if draw(st.booleans()):
            element[draw(kinds)] = draw(scalars)  # an element with a second kind
        value = {"arrayValue": {"values": [element]}}
    if draw(st.integers(0, 3)) == 0:  # a second kind beside the first, before or after it
        second = {draw(kinds): draw(scalars)}
        value = {**second, **value} if draw(st.booleans()) else {**value, **second}
    return value


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), any_values()), max_size=5))
def test_inline_decoding_matches_the_general_decoder(pairs: list[tuple[str, Any]]) -> None:
    items = [{"key": key, "value": value} for key, value in pairs]

    def outcome(decode: Any) -> tuple[str, str]:
        try:
            return "value", repr(decode(items))
        except _Bad as exc:
            return "refused", str(exc)

    assert outcome(_json_attributes) == outcome(_json_attributes_each)


def test_an_array_of_one_text_is_a_list_of_it() -> None:
    # The inline path's own case, so that a change dropping it is seen as a change, not only as an equivalence.
    items = [{"key": "r", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}]
    assert _json_attributes(items) == {"r": ["stop"]}


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"\n", b"{}", b"a", b" ", b"\r"]), max_size=12).map(b"".join))
def test_the_line_splitter_splits_as_bytes_split(data: bytes) -> None:
    # The OTLP/JSON reader splits its chunks with find (memchr) instead of bytes.split: the same pieces, the empty
    # ones (blank lines, a chunk ending in a newline) included.
    assert split_long_lines(data) == data.split(b"\n")
