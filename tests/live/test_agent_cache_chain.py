"""The agent lane's stored requests as a chain (``GrownRequest.stored``): a conversation's first step stored whole,
each later step as the key of the step before and the messages added since. Held, on a real SQLite cache, to: every
step's request rebuilt whole (``stored_request``) is the request its key hashes; the bytes stored grow with the
conversation, not with its square; an answer is never served for another conversation; entries an EvalGlass stored
whole before this still answer, and later steps extend them."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.fingerprint import address_json
from evalglass.engine.produce.cache import CacheMode, CallCache, stored_request
from evalglass.lanes.callcache import Hit, cache_key, through_cache
from evalglass.lanes.modelstep import StepRequest

from .test_agent_cache_keys import fingerprints, grown_keys, keyable, params, samples
from .test_agent_fast_paths import tools


def _steps(conversation: list[Any], cuts: list[int]) -> list[int]:
    """The conversation's length at each step: growing, ending with the whole."""
    return sorted({cut for cut in cuts if 0 < cut < len(conversation)} | {len(conversation)})


async def _answer(cache: CallCache, keyed: Any, answer: str, made: list[str]) -> str:
    """One step through the cache as the lane makes it: replayed, or made (noted) and stored."""

    async def call() -> str:
        made.append(answer)
        return answer

    def replay(hit: Hit) -> str | None:
        return str(hit.value["answer"])

    return await through_cache(
        cache, keyed.key, kind="agent", request=keyed, replay=replay, call=call, stored=lambda a: {"answer": a}
    )


@settings(max_examples=60, deadline=None)
@given(
    fingerprints,
    tools,
    params,
    samples,
    st.lists(keyable, min_size=2, max_size=8),
    st.lists(st.integers(1, 8), max_size=6),
    st.data(),
)
def test_two_conversations_differing_in_an_earlier_message_never_share_an_answer(
    fingerprint: str,
    offered: tuple[dict[str, Any], ...],
    sampling: tuple[tuple[str, Any], ...],
    sample: int,
    conversation: list[Any],
    cuts: list[int],
    data: st.DataObject,
) -> None:
    """Conversation B is A with one earlier message replaced (every later message the same): B's steps before that
    message are A's own (the same request: A's answer is B's), every step from it on is asked afresh and stored
    under its own key, and both conversations' requests rebuild whole from their chains."""
    index = data.draw(st.integers(0, len(conversation) - 2), label="index")
    replacement = data.draw(keyable.filter(lambda value: value != conversation[index]), label="replacement")
    other = [*conversation[:index], replacement, *conversation[index + 1 :]]
    steps = _steps(conversation, cuts)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "cache.sqlite"

        async def play(messages: list[Any], tag: str, made: list[str]) -> list[tuple[str, str, int]]:
            cache = CallCache(path, CacheMode.USE, run=tag)
            memo, start = grown_keys(fingerprint, "m", offered, sampling, sample)
            found = []
            try:
                for end in steps:
                    request = StepRequest("m", tuple(messages[:end]), offered, sampling)
                    keyed = memo.extend(request.messages, start, type(start()).add).current()
                    found.append((keyed.key, await _answer(cache, keyed, f"{tag}{end}", made), end))
            finally:
                cache.close()
            return found

        made_a: list[str] = []
        made_b: list[str] = []
        first = asyncio.run(play(conversation, "a", made_a))
        second = asyncio.run(play(other, "b", made_b))
        assert made_a == [f"a{end}" for end in steps]
        for (key_a, answer_a, end), (key_b, answer_b, _) in zip(first, second, strict=True):
            if end <= index:  # the same conversation so far: the same key, A's answer replayed
                assert (key_b, answer_b) == (key_a, answer_a)
            else:  # B's own request: never A's key or answer
                assert key_b != key_a and answer_b == f"b{end}" and answer_b in made_b
        with sqlite3.connect(path) as db:
            for messages, played in ((conversation, first), (other, second)):
                for key, _, end in played:
                    whole = address_json(StepRequest("m", tuple(messages[:end]), offered, sampling).key_body())
                    assert stored_request(db, key) == whole
                    assert (
                        cache_key(
                            fingerprint, StepRequest("m", tuple(messages[:end]), offered, sampling).key_body(), sample
                        )
                        == key
                    )


def _conversation(steps: int) -> list[dict[str, Any]]:
    """A tool-calling conversation of ``steps`` model steps, its messages as the lane holds them."""
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "Look everything up."}]}]
    for step in range(steps - 1):
        call = {"type": "tool_call", "id": f"c{step}", "name": "lookup", "arguments": {"item": "i", "page": step}}
        messages.append({"role": "assistant", "parts": [call], "finish_reason": "tool_calls"})
        result = {"item": "i", "page": step, "found": True, "text": "x" * 200}
        messages.append(
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{step}", "response": result}]}
        )
    return messages


def _store(path: Path, conversation: list[Any], ends: list[int], *, whole: bool) -> list[str]:
    """Each step's answer stored as the lane stores it (``whole``: as an EvalGlass before the chain did, the
    request whole); the steps' keys."""
    cache = CallCache(path, CacheMode.USE)
    memo, start = grown_keys("ab" * 32, "m", (), (), 0)
    keys = []
    try:
        for end in ends:
            request = StepRequest("m", tuple(conversation[:end]), (), ())
            keyed = memo.extend(request.messages, start, type(start()).add).current()
            cache.put(
                keyed.key, {"answer": f"stored {end}"}, kind="agent", request=request.key_body() if whole else keyed
            )
            keys.append(keyed.key)
    finally:
        cache.close()
    return keys


def test_a_sixty_step_trajectory_stores_its_conversation_once(tmp_path: Path) -> None:
    """The request column of a 60-step trajectory: one whole first request and 59 links, about the conversation's
    own size (the whole requests, as stored before, were 30 times that)."""
    conversation = _conversation(60)
    ends = [1 + 2 * step for step in range(60)]
    chained = _store(tmp_path / "chained.sqlite", conversation, ends, whole=False)
    whole = _store(tmp_path / "whole.sqlite", conversation, ends, whole=True)
    assert chained == whole  # the same keys either way
    sizes = {}
    for name in ("chained", "whole"):
        with sqlite3.connect(tmp_path / f"{name}.sqlite") as db:
            sizes[name] = db.execute("SELECT sum(length(request)) FROM calls").fetchone()[0]
            rebuilt = [stored_request(db, key) for key in chained]
        assert rebuilt == [address_json(StepRequest("m", tuple(conversation[:end]), (), ()).key_body()) for end in ends]
    last = len(address_json(StepRequest("m", tuple(conversation), (), ()).key_body()))
    assert sizes["chained"] < last + 60 * 100  # the conversation once, and a link's key and count per step
    assert sizes["whole"] > 25 * last


def test_entries_stored_whole_before_still_answer_and_later_steps_extend_them(tmp_path: Path) -> None:
    """A cache written by an EvalGlass that stored every request whole: its answers are served (keys and values
    are unchanged), and steps stored after them link to them; every request rebuilds."""
    path = tmp_path / "cache.sqlite"
    conversation = _conversation(6)
    ends = [1, 3, 5, 7, 9, 11]
    old = _store(path, conversation, ends[:3], whole=True)
    cache = CallCache(path, CacheMode.USE)
    memo, start = grown_keys("ab" * 32, "m", (), (), 0)
    made: list[str] = []
    try:
        for end in ends:
            keyed = memo.extend(tuple(conversation[:end]), start, type(start()).add).current()
            answer = asyncio.run(_answer(cache, keyed, str(end), made))
            assert answer == (f"stored {end}" if keyed.key in old else str(end))
    finally:
        cache.close()
    assert made == ["7", "9", "11"]
    with sqlite3.connect(path) as db:
        links = [row[0] for row in db.execute("SELECT request FROM calls") if b'"extends"' in row[0]]
        assert len(links) == 3
        keys = [row[0] for row in db.execute("SELECT key FROM calls")]
        for key in keys:
            assert stored_request(db, key) is not None


def test_a_chain_that_cannot_be_followed_rebuilds_nothing(tmp_path: Path) -> None:
    """A step whose step before was deleted (or stored without its request), or whose link was edited by hand so
    it no longer fits: no request, never a wrong one. The answer is untouched (the key, not the column, finds it)."""
    path = tmp_path / "cache.sqlite"
    conversation = _conversation(4)
    keys = _store(path, conversation, [1, 3, 5, 7], whole=False)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM calls WHERE key = ?", (keys[1],))
        assert stored_request(db, keys[0]) is not None
        assert stored_request(db, keys[2]) is None and stored_request(db, keys[3]) is None
        db.execute(
            "UPDATE calls SET request = ? WHERE key = ?",
            (b'{"added":[],"extends":"%b","from":9}' % keys[0].encode(), keys[2]),
        )
        assert stored_request(db, keys[3]) is None
        db.execute(
            "UPDATE calls SET request = ? WHERE key = ?",
            (b'{"added":[],"extends":"%b","from":1}' % keys[3].encode(), keys[2]),
        )
        assert stored_request(db, keys[3]) is None  # a cycle
    with CallCache(path, CacheMode.USE) as cache:
        assert cache.get(keys[3]) == {"answer": "stored 7"}
