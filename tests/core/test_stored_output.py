"""How outputs.jsonl and the call cache keep an output: an answer that is not JSON read back as the same
UnparsedOutput, any other output (a JSON string that looks like prose included) read back as itself."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.outputparse import NOT_JSON, UnparsedOutput, read_stored_output, shown_output, stored_output

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(JSON)
def test_an_output_comes_back_as_itself_through_json(value: Any) -> None:
    entry = orjson.loads(orjson.dumps(stored_output(value, "output")))
    assert NOT_JSON not in entry
    assert read_stored_output(entry, "output", "declared") == value


@given(st.text(), st.text())
def test_an_unparsed_answer_comes_back_as_the_same_unparsed_answer(text: str, message: str) -> None:
    unparsed = UnparsedOutput(text, message, declared="the lane's output is json")
    entry = orjson.loads(orjson.dumps(stored_output(unparsed, "value")))
    assert entry == {"value": text, NOT_JSON: message}
    assert read_stored_output(entry, "value", "the lane's output is json") == unparsed


@given(JSON)
def test_a_json_value_is_shown_as_orjson_writes_it(value: Any) -> None:
    if type(value) is not str:
        assert shown_output(value) == orjson.dumps(value).decode()
        assert shown_output(value, indent=True) == orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def test_a_nan_or_a_large_integer_is_shown_as_it_is_never_as_null() -> None:
    """orjson writes a NaN or an infinity as null and refuses an integer beyond 64 bits (a tool log's target or
    answer holds either): shown as the standard library writes them, in orjson's layout."""
    value = {"text": float("nan"), "x": [float("-inf"), None, "null"], "big": 2**70}
    assert shown_output(value) == '{"text":NaN,"x":[-Infinity,null,"null"],"big":1180591620717411303424}'
    assert shown_output(float("inf")) == "Infinity"
    assert shown_output({"a": [float("nan")]}, indent=True) == '{\n  "a": [\n    NaN\n  ]\n}'
    assert shown_output([UnparsedOutput("<x>", "m"), float("nan")]) == '["<x> [not JSON]",NaN]'
