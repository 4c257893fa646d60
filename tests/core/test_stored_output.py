"""How outputs.jsonl and the call cache keep an output: an answer that is not JSON read back as the same
UnparsedOutput, any other output (a JSON string that looks like prose included) read back as itself."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.outputparse import NOT_JSON, UnparsedOutput, read_stored_output, stored_output

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
