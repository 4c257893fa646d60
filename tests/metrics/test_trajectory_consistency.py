"""A trajectory whose redundant fields disagree (its calls in ``tool_calls`` and in its messages, ``steps`` and its
model turns, a result and the calls' ids, ``finish`` and its last turn) does not add up: every metric on it is an
error naming the field, never a number read from one of the fields (``tool_calls: []`` beside three calls in the
messages once read ``loop`` 1.0). What may differ does: messages holding only the last calls (a trace's output)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalglass.core.conversation import Trajectory
from evalglass.core.trajectory import (
    Inconsistent,
    Unreadable,
    check_consistent,
    count_model_turns,
    read_calls,
    read_messages,
)
from tests.e2e.project import run_cli


def trajectory(calls: list[tuple[str, dict[str, Any]]], *, stopped: bool = True) -> dict[str, Any]:
    """A trajectory as an agent lane records it: one model turn per call, each answered, then (``stopped``) an
    answer without a call (``finish: stop``), else ``finish: max_steps``."""
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "Book a table"}]}]
    made: list[dict[str, Any]] = []
    for n, (name, arguments) in enumerate(calls):
        call_id = f"call_{n}"
        part = {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
        messages.append({"role": "assistant", "parts": [part]})
        messages.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": n}]})
        made.append({"id": call_id, "name": name, "arguments": arguments, "result": n})
    if stopped:
        messages.append({"role": "assistant", "parts": [{"type": "text", "content": "Done."}]})
    record = {
        "messages": messages,
        "tool_calls": made,
        "steps": len(calls) + stopped,
        "finish": "stop" if stopped else "max_steps",
    }
    Trajectory.model_validate(record)  # the shape `evalglass schema trajectory` describes
    return record


LOOPING = [("search", {"q": "table"})] * 3


def tampered(record: dict[str, Any], how: str) -> dict[str, Any]:
    changed = copy.deepcopy(record)
    if how == "no_calls":
        changed["tool_calls"] = []
    elif how == "fewer_calls":
        changed["tool_calls"] = changed["tool_calls"][1:]
    elif how == "renamed":
        changed["tool_calls"][-1]["name"] = "cancel"
    elif how == "arguments":
        changed["tool_calls"][0]["arguments"] = {"q": "chair"}
    elif how == "steps":
        changed["steps"] = 1
    elif how == "finish":
        changed["finish"] = "max_steps"
    elif how == "result_id":
        changed["messages"][2]["parts"][0]["id"] = "call_99"
    elif how == "result":
        changed["tool_calls"][0]["result"] = "another"
    else:
        raise AssertionError(how)
    return changed


TAMPERS = ["no_calls", "fewer_calls", "renamed", "arguments", "steps", "finish", "result_id", "result"]


def run(tmp_path: Path, outputs: list[Any]) -> Any:
    evals = tmp_path / "evals"
    evals.mkdir()
    rows = [{"id": f"t{n}", "output": output, "gold": [{"name": "search"}]} for n, output in enumerate(outputs)]
    (evals / "trajectories.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = {
        "version": 1,
        "dataset": {"name": "trajectories", "path": "trajectories.jsonl"},
        "metrics": {
            "loop": {"type": "loop"},
            "calls": {"type": "steps", "count": "tool_calls"},
            "turns": {"type": "steps", "count": "model_turns", "max": 10},
            "called": {"type": "tool_calls", "reference": "gold", "mode": "subset"},
        },
    }
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (evals / "authority.yaml").write_text("version: 1\n")
    return run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)


def test_calls_missing_from_tool_calls_are_an_error_naming_the_field_not_a_pass(tmp_path: Path) -> None:
    """The brief's case: ``tool_calls: []`` while the messages hold three identical calls read loop 1.0."""
    looping = trajectory(LOOPING)
    result = run(tmp_path, [looping, tampered(looping, "no_calls")])
    assert result.code == 0, result.err
    card = result.json()
    for name in ("loop", "calls", "turns", "called"):
        found = next(m for m in card["metrics"] if m["name"] == name)
        codes = {d["code"]: d for d in found["population"]["top_diagnostics"]}
        assert "trajectory_inconsistent" in codes, (name, codes)
        assert codes["trajectory_inconsistent"]["count"] == 1
        example = codes["trajectory_inconsistent"]["example"]
        assert "line 2" in example and "'tool_calls'" in example, example
        assert found["population"]["included"] == 1, (name, found["population"])
    loop = next(m for m in card["metrics"] if m["name"] == "loop")
    assert loop["estimate"]["point"] == 0.0  # the one that adds up loops


@pytest.mark.parametrize("how", TAMPERS)
def test_each_redundant_field_that_disagrees_is_named(how: str) -> None:
    record = tampered(trajectory([("search", {"q": "table"}), ("book", {"at": 8})]), how)
    for read in (read_calls, count_model_turns, read_messages):
        with pytest.raises(Inconsistent):
            read(record)


def test_messages_holding_only_the_last_calls_add_up() -> None:
    """A trace record's output: ``tool_calls`` every call, the messages only the last model call's."""
    record = trajectory([("search", {"q": "a"}), ("book", {"at": 8})], stopped=False)
    del record["steps"], record["finish"]
    record["messages"] = [message for message in record["messages"] if message["role"] == "assistant"][-1:]
    check_consistent(record)
    assert [call.name for call in read_calls(record)] == ["search", "book"]
    assert [m["parts"][0]["name"] for m in read_messages(record) if m["role"] == "assistant"] == ["search", "book"]


NAMES = st.sampled_from(["search", "book", "cancel"])
CALLS = st.lists(st.tuples(NAMES, st.fixed_dictionaries({"q": st.integers(0, 3)})), max_size=6)


@settings(max_examples=60, deadline=None)
@given(calls=CALLS, stopped=st.booleans())
def test_a_trajectory_that_adds_up_reads_as_recorded(calls: list[tuple[str, dict[str, Any]]], stopped: bool) -> None:
    record = trajectory(calls, stopped=stopped)
    check_consistent(record)
    assert [(call.name, call.arguments) for call in read_calls(record)] == calls
    assert count_model_turns(record) == len(calls) + stopped


@settings(max_examples=60, deadline=None)
@given(calls=CALLS.filter(lambda calls: len(calls) >= 2), dropped=st.integers(0, 5))
def test_a_call_dropped_from_tool_calls_never_reads_as_fewer_calls(
    calls: list[tuple[str, dict[str, Any]]], dropped: int
) -> None:
    """Dropping any call from ``tool_calls`` disagrees with the messages, unless it leaves them its last calls."""
    record = trajectory(calls)
    index = dropped % len(calls)
    record["tool_calls"].pop(index)
    with pytest.raises(Inconsistent):
        read_calls(record)


def _verdict(check: Any, *args: Any) -> str:
    try:
        check(*args)
    except Inconsistent:
        return "inconsistent"
    return "agrees"


@settings(max_examples=150, deadline=None)
@given(calls=CALLS, stopped=st.booleans(), hows=st.lists(st.sampled_from(TAMPERS), max_size=2))
def test_the_replays_reader_never_passes_what_the_full_check_refuses(
    calls: list[tuple[str, dict[str, Any]]], stopped: bool, hows: list[str]
) -> None:
    """``own_call_items`` (the replay's path: calls compared as tuples) decides every tampered trajectory as the
    full check does: what it lets through, the full check lets through; what it refuses, the full check refuses."""
    from evalglass.core.trajectory import own_call_items

    record = trajectory(calls, stopped=stopped)
    for how in hows:
        try:
            record = tampered(record, how)
        except IndexError:  # a tamper that needs more calls than the record has
            continue
    assert _verdict(own_call_items, record) == _verdict(check_consistent, record), hows


# A call item in every shape a reader meets, and some that are not calls: EvalGlass's own (with and without
# arguments, with an id, with a null or a text ``invalid_arguments``), OpenAI's, Anthropic's, and broken ones.
ARGUMENTS = st.one_of(st.fixed_dictionaries({"q": st.integers(0, 3)}), st.just([1, 2]), st.none(), st.just("text"))
CALL_ITEMS = st.one_of(
    st.builds(lambda name, arguments: {"name": name, "arguments": arguments}, NAMES, ARGUMENTS),
    st.builds(lambda name: {"name": name}, NAMES),
    st.builds(
        lambda name, n: {"type": "tool_call", "id": f"call_{n}", "name": name, "arguments": {"q": n}},
        NAMES,
        st.integers(0, 3),
    ),
    st.builds(lambda name: {"name": name, "invalid_arguments": None, "arguments": {}}, NAMES),
    st.builds(lambda name: {"name": name, "invalid_arguments": "{oops"}, NAMES),
    st.builds(lambda name: {"function": {"name": name, "arguments": '{"q": 1}'}}, NAMES),
    st.builds(lambda name: {"type": "tool_use", "name": name, "input": {"q": 2}}, NAMES),
    st.sampled_from(
        [{"arguments": {}}, {"name": 3}, "search", 7, None, {"function": "x"}, {"name": "a", "invalid_arguments": 5}]
    ),
)


def _keys_or_error(read: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return read(*args, **kwargs)
    except Unreadable as exc:
        return ("unreadable", str(exc))


@settings(max_examples=300, deadline=None)
@given(items=st.lists(CALL_ITEMS, max_size=6), numbered=st.booleans())
def test_calls_keyed_at_once_are_the_calls_read_one_by_one(items: list[Any], numbered: bool) -> None:
    """The consistency check keys EvalGlass's own calls in one comprehension (and ``own_call_items`` from the names
    it read): the same keys, and the same first error, as reading each item by ``_call``."""
    from evalglass.core.trajectory import _call_key, _call_keys

    one_by_one = _keys_or_error(
        lambda: [_call_key(item, "tool call", index if numbered else None) for index, item in enumerate(items)]
    )
    assert _keys_or_error(_call_keys, items, "tool call", numbered=numbered) == one_by_one


@settings(max_examples=200, deadline=None)
@given(
    calls=CALLS.filter(bool),
    broken_call=st.integers(0, 20),
    broken_message=st.integers(0, 20),
    which=st.sampled_from(["call", "message", "both"]),
)
def test_what_cannot_be_read_is_named_in_reading_order(
    calls: list[tuple[str, dict[str, Any]]], broken_call: int, broken_message: int, which: str
) -> None:
    """A call that cannot be read and a message that cannot be: whichever comes first in the messages is named, by
    every reader (the calls of the messages are keyed after the loop, so this order is held here)."""
    record = trajectory(calls)
    messages = record["messages"]
    call_at = [index for index, message in enumerate(messages) if message["parts"][0].get("type") == "tool_call"]
    broken_call_at = call_at[broken_call % len(call_at)]
    broken_message_at = broken_message % len(messages)
    if which in ("call", "both"):
        del messages[broken_call_at]["parts"][0]["name"]
    if which in ("message", "both"):
        messages[broken_message_at] = {"parts": []}  # no role
    if which == "call" or (which == "both" and broken_call_at < broken_message_at):
        expected = "message part has no name"
    else:
        expected = f"message {broken_message_at + 1} has no role"
    for read in (check_consistent, read_calls, count_model_turns):
        with pytest.raises(Unreadable) as caught:
            read(record)
        assert str(caught.value) == expected, (read, which)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(CALL_ITEMS.filter(lambda item: type(item) is dict), max_size=6))
def test_the_messages_call_parts_are_keyed_as_any_call_is(items: list[dict[str, Any]]) -> None:
    """The messages' call parts (objects of ``type: tool_call``) are keyed by their own comprehension: the same keys,
    and the same first error, as :func:`_call_keys` gives them."""
    from evalglass.core.trajectory import _call_keys, _part_keys

    parts = [{**item, "type": "tool_call"} for item in items]
    assert _keys_or_error(_part_keys, parts) == _keys_or_error(_call_keys, parts, "message part", numbered=False)


_MISSING = object()


def _results_rule(recorded: dict[str, Any], said: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """The results' rule as the module docstring states it, every id gathered first: each result with a text id
    answers a call of either list, and holds what the recorded call's ``result`` says unless the call failed."""
    ids = set(recorded) | {part["id"] for part in said if type(part.get("id")) is str}
    if not ids:
        return "agrees"
    for part in results:
        answered = part.get("id")
        if type(answered) is not str:
            continue
        if answered not in ids:
            return f"a tool result answers call id {answered!r}, which no call of the record has"
        call = recorded.get(answered)
        result = _MISSING if call is None else call.get("result", _MISSING)
        failed = call is None or call.get("error") is not None or call.get("error_type") is not None
        if result is not _MISSING and not failed and not part.get("error") and result != part.get("response"):
            return f"call {answered!r}: its 'result' in 'tool_calls' is not the result its message holds"
    return "agrees"


IDS = st.sampled_from(["a", "b", "c"]) | st.none() | st.integers(0, 1)
RESULTS = st.one_of(st.integers(0, 2), st.none(), st.just({"ok": True}))
RECORDED_CALLS = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"])},
    optional={"result": RESULTS, "error": st.none() | st.just("boom"), "error_type": st.none() | st.just("E")},
)
RESULT_PARTS = st.fixed_dictionaries(
    {"type": st.just("tool_call_response")}, optional={"id": IDS, "response": RESULTS, "error": st.booleans()}
)


@settings(max_examples=400, deadline=None)
@given(
    calls=st.lists(RECORDED_CALLS, max_size=4),
    said=st.lists(st.fixed_dictionaries({"type": st.just("tool_call")}, optional={"id": IDS}), max_size=3),
    results=st.lists(RESULT_PARTS, max_size=4),
)
def test_results_are_checked_by_the_stated_rule(
    calls: list[dict[str, Any]], said: list[dict[str, Any]], results: list[dict[str, Any]]
) -> None:
    """``_same_results`` gathers the ids of the messages' calls only for a result no recorded call answers, and
    compares a result before reading whether its call failed: the same verdict, and the same first refusal, as the
    rule with every id gathered first."""
    from evalglass.core.trajectory import _same_results

    recorded = {call["id"]: call for call in calls}
    try:
        _same_results(recorded, said, results)
        found = "agrees"
    except Inconsistent as exc:
        found = str(exc)
    assert found == _results_rule(recorded, said, results)


# Arbitrary trajectories, most of them malformed somewhere: messages of every role (and none), parts of every kind
# (and not objects), calls with and without names and ids, results that agree or not, steps and finish of any kind.
_PART = st.one_of(
    st.builds(lambda text: {"type": "text", "content": text}, st.sampled_from(["hi", ""])),
    st.builds(
        lambda name, n, extra: {"type": "tool_call", "id": f"c{n}", "name": name, "arguments": {"q": n}, **extra},
        NAMES | st.just(7),
        st.integers(0, 3),
        st.sampled_from([{}, {}, {"function": {"name": "x"}}, {"invalid_arguments": None}, {"invalid_arguments": "{"}]),
    ),
    st.builds(
        lambda n, response, error: {"type": "tool_call_response", "id": f"c{n}", "response": response, **error},
        st.integers(0, 4),
        st.integers(0, 3),
        st.sampled_from([{}, {}, {"error": True}]),
    ),
    st.sampled_from([{"type": "tool_call"}, {"content": "no type"}, "text", None]),
)
_MESSAGE = st.one_of(
    st.builds(
        lambda role, parts: {"role": role, "parts": parts},
        st.sampled_from(["user", "assistant", "tool", "model", "system"]),
        st.lists(_PART, max_size=3),
    ),
    st.sampled_from(
        [{"parts": []}, {"role": "assistant"}, {"role": 3, "parts": []}, {"role": "tool", "parts": "x"}, 5]
    ),
)


@st.composite
def _trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """A trajectory that adds up (:func:`trajectory`), then edited at random: messages of any shape inserted or put
    in place of others, ``steps`` and ``finish`` redrawn, a recorded result changed or a call's error recorded."""
    record = trajectory(draw(CALLS), stopped=draw(st.booleans()))
    messages = record["messages"]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(messages)))
        if draw(st.booleans()) or not messages:
            messages.insert(at, draw(_MESSAGE))
        else:
            messages[min(at, len(messages) - 1)] = draw(_MESSAGE)
    if draw(st.booleans()):
        record["steps"] = draw(st.integers(0, 12) | st.none())
    if draw(st.booleans()):
        record["finish"] = draw(st.sampled_from(["stop", "max_steps", "error"]))
    for call in record["tool_calls"]:
        call.update(draw(st.sampled_from([{}, {}, {}, {"result": "other"}, {"error": "boom"}])))
    return record


def _outcome(read: Any, value: Any) -> tuple[str, str]:
    try:
        read(value)
    except Unreadable as exc:
        return type(exc).__name__, str(exc)
    return "reads", ""


@settings(max_examples=600, deadline=None)
@given(record=_trajectories())
def test_own_messages_read_at_once_decide_as_any_mapping_read_carefully(record: dict[str, Any]) -> None:
    """The check reads EvalGlass's own messages as they are (a one-part message at once); a message that is any other
    mapping goes through the careful reading. The same record either way, including malformed ones, gets the same
    verdict: it adds up, or the same exception with the same words; and the replay's reader agrees."""
    from types import MappingProxyType

    from evalglass.core.trajectory import own_call_items

    careful = {**record, "messages": [MappingProxyType(m) if isinstance(m, dict) else m for m in record["messages"]]}
    expected = _outcome(check_consistent, careful)
    assert _outcome(check_consistent, record) == expected
    assert _outcome(own_call_items, record) == expected
    assert _outcome(read_calls, record)[0] == ("reads" if expected[0] == "reads" else expected[0])


@settings(max_examples=600, deadline=None)
@given(
    record=_trajectories() | st.builds(lambda calls, stopped: trajectory(calls, stopped=stopped), CALLS, st.booleans()),
    edited=st.booleans(),
    cut=st.integers(-2, 3),
    edited_calls=st.booleans(),
    users=st.booleans(),
    steps=st.sampled_from([None, 0, 1]),
)
@example(  # the messages hold the first of two calls only: not the last ones, so it does not add up
    record=trajectory([("search", {"q": 1}), ("book", {"q": 2})], stopped=False),
    edited=True,
    cut=-1,
    edited_calls=False,
    users=False,
    steps=None,
)
def test_what_the_replays_proof_accepts_the_check_accepts(
    record: dict[str, Any], edited: bool, cut: int, edited_calls: bool, users: bool, steps: int | None
) -> None:
    """``_adds_up`` (the replay's reading of a usual record, which proves it adds up or defers to ``_check``) accepts
    an agent lane's record as it is recorded, and accepts nothing the careful check refuses: edited at random, with
    messages or calls cut from the front or the end, calls moved into a user's message, ``steps`` small."""
    from types import MappingProxyType

    from evalglass.core.fieldpath import ABSENT
    from evalglass.core.trajectory import _adds_up

    if not edited:
        record = trajectory([("search", {"q": n}) for n in range(len(record["tool_calls"]))], stopped=True)
    else:
        if cut > 0:
            record["messages"] = record["messages"][cut:]
        elif cut < 0:
            record["messages"] = record["messages"][: cut * 2]
            record["tool_calls"] = record["tool_calls"][: cut if edited_calls else None]
        if steps is not None:
            record["steps"] = steps
        for message in record["messages"][: 2 if users else 0]:  # a call in a user's message: one turn fewer
            if isinstance(message, dict) and message.get("role") == "assistant":
                message["role"] = "user"
    items = record["tool_calls"]
    names = [item["name"] for item in items]
    arguments = [item.get("arguments", ABSENT) for item in items]
    proven = _adds_up(record, items, names, arguments)
    careful = {**record, "messages": [MappingProxyType(m) if isinstance(m, dict) else m for m in record["messages"]]}
    if proven or not edited:
        assert _outcome(check_consistent, careful) == ("reads", "")
    assert proven or edited
