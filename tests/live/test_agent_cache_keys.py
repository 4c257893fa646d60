"""The agent lane's cache keys made a new message at a time (``callcache.KeyFrame``, ``GrowingKey``), held to
:func:`~evalglass.lanes.callcache.cache_key` over the whole request (the definition every stored entry was keyed by):
the same key for the same request, another for any difference in it, the same bytes of the stored request, and the
same refusal of what is not JSON."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.fingerprint import address_json
from evalglass.engine.produce.cache import CacheMode, CallCache, stored_request
from evalglass.lanes.callcache import KeyFrame, cache_key, request_json
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.modelstep import StepRequest, WireMemo
from evalglass.lanes.ports import LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import parse_task_spec
from .test_agent_fast_paths import messages, tools

#: Any JSON a message may hold: floats (orjson's own way of writing them is what the keys hash), text beyond ASCII,
#: keys that sort differently as text than as they were inserted.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10,
)
any_message = messages | json_values


def _writable(value: Any) -> bool:
    try:
        address_json(value)
    except TypeError:  # an integer beyond 64 bits
        return False
    return True


#: Messages a request can be keyed with (the refusal of the others: the first test).
keyable = any_message.filter(_writable)
#: Sampling parameters under any name but ``messages``: before it in key order, after it, or between the others.
params = st.dictionaries(
    st.sampled_from(["max_tokens", "temperature", "top_p", "seed", "stop", "a", "mz", "messagez", "message", "zz"])
    | st.text(max_size=5).filter(lambda name: name != "messages"),
    json_values,
    max_size=4,
).map(lambda found: tuple(sorted(found.items())))
fingerprints = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
samples = st.integers(0, 2**40)


def plain_key(fingerprint: str, request: StepRequest, sample: int) -> str:
    """The key as the lane made it before (and every entry stored so far was keyed by)."""
    return cache_key(fingerprint, request.key_body(), sample)


def grown_keys(
    fingerprint: str, model: str, offered: tuple[Any, ...], sampling: tuple[tuple[str, Any], ...], sample: int
) -> tuple[WireMemo, Any]:
    """What the lane holds per trajectory: a memo of the conversation and the one callable that starts its keys."""
    frame = KeyFrame(fingerprint, StepRequest(model, (), offered, sampling).key_rest())
    return WireMemo(), lambda: frame.start(sample)


@settings(max_examples=300, deadline=None)
@given(
    fingerprints,
    st.text(max_size=6),
    tools,
    params,
    samples,
    st.lists(any_message, max_size=8),
    st.lists(st.integers(0, 8), min_size=1, max_size=6),
)
def test_a_key_made_a_message_at_a_time_is_the_key_of_the_whole_request(
    fingerprint: str,
    model: str,
    offered: tuple[dict[str, Any], ...],
    sampling: tuple[tuple[str, Any], ...],
    sample: int,
    conversation: list[Any],
    cuts: list[int],
) -> None:
    """A trajectory's steps key ever longer prefixes of one conversation (a step asked again, a retry, keys it
    again): every key is the whole request's, and the request the cache stores beside it is its bytes."""
    memo, start = grown_keys(fingerprint, model, offered, sampling, sample)
    for cut in [*sorted(cuts), len(conversation), len(conversation)]:
        request = StepRequest(model, tuple(conversation[:cut]), offered, sampling)
        try:
            plain_key(fingerprint, request, sample)
        except TypeError:  # not JSON (an integer beyond 64 bits): refused alike, and the memo starts again
            with pytest.raises(TypeError):
                memo.extend(request.messages, start, type(start()).add)
            continue
        keyed = memo.extend(request.messages, start, type(start()).add).current()
        assert keyed.key == plain_key(fingerprint, request, sample)
        assert request_json(keyed) == address_json(request.key_body()) == request_json(request.key_body())


@settings(max_examples=300, deadline=None)
@given(fingerprints, tools, params, samples, st.lists(keyable, min_size=1, max_size=8), st.data())
def test_changing_any_earlier_message_or_any_other_part_changes_the_key(
    fingerprint: str,
    offered: tuple[dict[str, Any], ...],
    sampling: tuple[tuple[str, Any], ...],
    sample: int,
    conversation: list[Any],
    data: st.DataObject,
) -> None:
    """A conversation that is not the one the memo grew (an earlier message replaced by another, or left out) is
    keyed afresh: its key is its own whole request's, never the first's; so are the keys of requests that differ
    only in model, tools, parameters, sample or fingerprint."""
    memo, start = grown_keys(fingerprint, "m", offered, sampling, sample)
    add = type(start()).add
    first = StepRequest("m", tuple(conversation), offered, sampling)
    key = memo.extend(first.messages, start, add).current().key
    index = data.draw(st.integers(0, len(conversation) - 1), label="index")
    replacement = data.draw(keyable.filter(lambda value: value != conversation[index]), label="replacement")
    edited = [*conversation[:index], replacement, *conversation[index + 1 :]]
    shorter = [*conversation[:index], *conversation[index + 1 :]]
    for other in (edited, shorter):
        request = StepRequest("m", tuple(other), offered, sampling)
        changed = memo.extend(request.messages, start, add).current().key
        assert changed == plain_key(fingerprint, request, sample)
        assert orjson.dumps(request.key_body()) != orjson.dumps(first.key_body())  # the requests differ ...
        assert changed != key  # ... and so do their keys
    key = memo.extend(first.messages, start, add).current().key  # the first conversation again: its key again

    def key_of(fingerprint: str, model: str, offered: Any, sampling: Any, sample: int) -> str:
        memo, start = grown_keys(fingerprint, model, offered, sampling, sample)
        return str(memo.extend(first.messages, start, add).current().key)

    assert key_of(fingerprint, "m", offered, sampling, sample) == key
    assert key_of(fingerprint, "m2", offered, sampling, sample) != key
    assert key_of(fingerprint, "m", (*offered, {"name": "more"}), sampling, sample) != key
    assert key_of(fingerprint, "m", offered, (*sampling, ("zzzzzz", 1)), sample) != key
    assert key_of(fingerprint, "m", offered, sampling, sample + 1) != key
    assert key_of(fingerprint[::-1] + "0", "m", offered, sampling, sample) != key


def test_the_keys_are_the_ones_stored_before_so_existing_caches_stay_valid() -> None:
    """A key as the lane made it before keys were grown (computed with that code, pinned here): a cache filled
    then still answers this request."""
    conversation = (
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Zürich?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Zürich", "days": 2}}],
            "finish_reason": "tool_calls",
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": {"temp": -1.5, "sky": None}}],
        },
    )
    offered = (
        {
            "name": "weather",
            "description": "The forecast.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    )
    sampling = (("max_tokens", 64), ("stop", ["END"]), ("temperature", 0.0))
    memo, start = grown_keys("ab" * 32, "m-1", offered, sampling, 3)
    keyed = memo.extend(conversation, start, type(start()).add).current()
    assert keyed.key == "61b74e025db94f8c90154071a2d9ec36791eede7575eb6c32586708eaa920de8"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", range(245, 256))
def test_a_message_nested_too_deep_is_refused_as_the_whole_request_would_be(depth: int) -> None:
    """orjson counts its nesting limit from the top of what it writes: a message is written where it sits in the
    key's payload, so it is refused exactly when the whole request would be."""
    message = {"role": "tool", "parts": [{"type": "tool_call_response", "response": nested(depth)}]}
    request = StepRequest("m", (message,), (), ())
    memo, start = grown_keys("0" * 64, "m", (), (), 0)
    try:
        expected: str | type[BaseException] = plain_key("0" * 64, request, 0)
    except TypeError:
        expected = TypeError
    if expected is TypeError:
        with pytest.raises(TypeError):
            memo.extend(request.messages, start, type(start()).add)
    else:
        assert memo.extend(request.messages, start, type(start()).add).current().key == expected


def test_a_request_that_would_hide_its_messages_is_refused() -> None:
    with pytest.raises(ValueError, match="messages"):
        KeyFrame("0" * 64, {"model": "m", "messages": []})


ECHO = '''
def note(text: str, *, state: dict) -> dict:
    """Note a line; the notes so far."""
    state.setdefault("notes", []).append(text)
    return {"notes": state["notes"], "count": len(state["notes"])}
'''


def test_every_stored_step_is_keyed_by_its_whole_request_and_a_rerun_replays_them_all(tmp_path: Path) -> None:
    """Against the fake server with a real cache: each stored entry's key is ``cache_key`` over the request stored
    beside it, that request is the conversation up to its step, and a second run asks the server nothing."""
    (tmp_path / "echo.py").write_text(ECHO)
    script = [{"tool_calls": [{"name": "note", "arguments": {"text": f"line {n}"}}]} for n in range(12)]
    with FakeOpenAI(turns={"Go": [*script, "All noted."]}) as server:
        spec = parse_task_spec(
            {
                "type": "agent",
                "base_url": server.base_url,
                "model": "m",
                "api_key_env": None,
                "system": "Be brief.",
                "prompt": "{{ q }}",
                "tools": {"note": "echo.py:note"},
                "temperature": 0.0,
                "max_tokens": 32,
                "max_steps": 20,
            }
        )

        def produce(run: str) -> tuple[Any, Any]:
            async def go() -> Any:
                cache = CallCache(tmp_path / "cache.sqlite", CacheMode.USE, run=run)
                lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(4), env={}, cache=cache)
                try:
                    return lane, await lane.produce("e0", {"q": "Go"}, 2)
                finally:
                    await lane.aclose()
                    cache.close()

            return asyncio.run(go())

        lane, first = produce("one")
        assert server.request_count == 13
        _, again = produce("two")
        assert server.request_count == 13  # every step replayed
        # A cache as the EvalGlass before the chained requests wrote it (each request whole; keys, values and
        # MACs the same): a third run replays every step from it too.
        old = tmp_path / "old.sqlite"
        with sqlite3.connect(tmp_path / "cache.sqlite") as db:
            links = [json.loads(row[0]) for row in db.execute("SELECT request FROM calls WHERE kind = 'agent'")]
            db.execute("VACUUM INTO ?", (str(old),))
            keys = [row[0] for row in db.execute("SELECT key FROM calls")]
            whole = {key: stored_request(db, key) for key in keys}
        with sqlite3.connect(old) as db:
            for key, request in whole.items():
                db.execute("UPDATE calls SET request = ? WHERE key = ?", (request, key))
        (tmp_path / "old.sqlite").replace(tmp_path / "cache.sqlite")
        for stale in tmp_path.glob("cache.sqlite-*"):
            stale.unlink()
        _, third = produce("three")
        assert server.request_count == 13 and third.value == first.value and third.cached
    assert isinstance(first, LaneOutput) and isinstance(again, LaneOutput)
    assert again.value == first.value and again.cached
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        keys = [row[0] for row in db.execute("SELECT key FROM calls WHERE kind = 'agent'")]
        rows = {key: stored_request(db, key) for key in keys}
    conversation = first.value["messages"]
    starts = [index for index, message in enumerate(conversation) if message["role"] == "assistant"]
    expected = {}
    for end in starts:
        request = StepRequest("m", tuple(conversation[:end]), lane.definitions, lane.params)
        expected[plain_key(lane.fingerprint, request, 2)] = address_json(request.key_body())
    assert rows == expected
    assert first.call_id in expected
    for key, stored in rows.items():
        assert stored is not None and key == cache_key(lane.fingerprint, json.loads(stored), 2)
    # Stored once: the first step whole, each later one as a link to the step before and what it added.
    assert sum("messages" in link for link in links) == 1
    assert sorted(len(link["added"]) for link in links if "extends" in link) == [2] * 12
