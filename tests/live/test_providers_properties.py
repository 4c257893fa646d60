"""Invariants of the native wire modules, for any input: an answer is read or refused as malformed (never another
exception, which would end the call as an internal fault instead of a classified one); every input token is a
prompt token; an error body never raises; a price table without cache prices costs what it always did."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.usage import Price
from evalglass.lanes.providers import anthropic, gemini
from evalglass.lanes.providers.wire import Malformed

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
#: Bodies near each API's shape, so the parsers' inner branches are reached, not only their first check.
ANTHROPIC_BODY = st.fixed_dictionaries(
    {},
    optional={
        "content": st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "tool_use", "thinking", "other"])},
                optional={"text": JSON, "name": JSON, "id": JSON, "input": JSON},
            )
            | JSON,
            max_size=4,
        )
        | JSON,
        "usage": st.dictionaries(
            st.sampled_from(
                ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
            ),
            JSON,
        )
        | JSON,
        "stop_reason": JSON,
        "model": JSON,
    },
)
PART = st.fixed_dictionaries(
    {},
    optional={
        "text": JSON,
        "thought": JSON,
        "functionCall": st.fixed_dictionaries({}, optional={"name": JSON, "args": JSON, "id": JSON}) | JSON,
    },
)
GEMINI_BODY = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(
            st.fixed_dictionaries(
                {}, optional={"content": st.fixed_dictionaries({}, optional={"parts": st.lists(PART | JSON)}) | JSON}
            )
            | JSON,
            max_size=2,
        )
        | JSON,
        "usageMetadata": st.dictionaries(
            st.sampled_from(
                ["promptTokenCount", "candidatesTokenCount", "cachedContentTokenCount", "thoughtsTokenCount"]
            ),
            JSON,
        )
        | JSON,
        "promptFeedback": JSON,
    },
)


@pytest.mark.parametrize(("module", "bodies"), [(anthropic, ANTHROPIC_BODY), (gemini, GEMINI_BODY)])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_answer_is_read_or_malformed(module: Any, bodies: Any, data: st.DataObject) -> None:
    body = data.draw(bodies | JSON)
    try:
        answer = module.parse_answer(orjson.dumps(body))
    except Malformed:
        return
    assert answer.text is None or isinstance(answer.text, str)
    for call in answer.calls:
        assert isinstance(call.name, str)
    usage = answer.usage
    if usage is not None:
        for value in (usage.prompt_tokens, usage.completion_tokens, usage.cache_read_tokens, usage.cache_write_tokens):
            assert value is None or (type(value) is int and value >= 0)


@settings(max_examples=200, deadline=None)
@given(
    fresh=st.integers(0, 10**7), read=st.integers(0, 10**7), written=st.integers(0, 10**7), out=st.integers(0, 10**7)
)
def test_anthropic_prompt_tokens_are_every_input_token(fresh: int, read: int, written: int, out: int) -> None:
    body = {
        "content": [{"type": "text", "text": "x"}],
        "usage": {
            "input_tokens": fresh,
            "output_tokens": out,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        },
    }
    usage = anthropic.parse_answer(orjson.dumps(body)).usage
    assert usage is not None
    assert usage.prompt_tokens == fresh + read + written and usage.total_tokens == fresh + read + written + out
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (read, written)


@pytest.mark.parametrize("module", [anthropic, gemini])
@settings(max_examples=200, deadline=None)
@given(status=st.integers(400, 599), body=JSON)
def test_any_error_body_is_read_without_raising(module: Any, status: int, body: Any) -> None:
    signal = module.read_error(status, body)
    assert signal is None or isinstance(signal.message, str)
    if signal is not None and signal.retry_after is not None:
        assert signal.retry_after >= 0


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.integers(0, 10**7),
    completion=st.integers(0, 10**7),
    read=st.integers(0, 10**7),
    written=st.integers(0, 10**7),
    rates=st.tuples(*(st.floats(0, 100, allow_nan=False) for _ in range(4))),
)
def test_cache_prices_only_reprice_the_cache_tokens(
    prompt: int, completion: int, read: int, written: int, rates: tuple[float, float, float, float]
) -> None:
    read, written = min(read, prompt), min(written, max(0, prompt - read))
    plain = Price(prompt_per_million=rates[0], completion_per_million=rates[1])
    # Without cache prices the cache tokens cost the prompt price: the cost of the uncached call.
    assert plain.cost(prompt, completion, read, written) == pytest.approx(plain.cost(prompt, completion))
    priced = Price(
        prompt_per_million=rates[0],
        completion_per_million=rates[1],
        cache_read_per_million=rates[2],
        cache_write_per_million=rates[3],
    )
    expected = (
        (prompt - read - written) * rates[0] + read * rates[2] + written * rates[3] + completion * rates[1]
    ) / 1e6
    assert priced.cost(prompt, completion, read, written) == pytest.approx(expected)
