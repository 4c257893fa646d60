"""A conversation read from every shape it is recorded in: EvalGlass's messages and trajectories, the OpenAI chat
shape, the Anthropic messages shape, and lists of calls; what none of them is, refused with where and why."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.conversation import Message, Trajectory
from evalglass.core.fieldpath import ABSENT
from evalglass.core.trajectory import (
    Call,
    Unreadable,
    count_model_turns,
    own_call_items,
    read_calls,
    read_messages,
)

#: One agent run (look up the weather in Paris, then answer), in each shape a tool may record it.
OPENAI = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"celsius": 21}'},
    {"role": "assistant", "content": "21 degrees."},
]
ANTHROPIC = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"celsius": 21}'}]},
    {"role": "assistant", "content": [{"type": "text", "text": "21 degrees."}]},
]
EVALGLASS = [
    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Paris"}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"celsius": 21}}]},
    {"role": "assistant", "parts": [{"type": "text", "content": "21 degrees."}]},
]
TRAJECTORY = {
    "messages": EVALGLASS,
    "tool_calls": [{"id": "c1", "name": "weather", "arguments": {"city": "Paris"}, "result": {"celsius": 21}}],
    "text": "21 degrees.",
    "finish": "stop",
    "steps": 2,
}
PARIS_ARGS = {"city": "Paris"}
PARIS = [Call("weather", PARIS_ARGS)]


@pytest.mark.parametrize(
    "value",
    [
        OPENAI,
        ANTHROPIC,
        EVALGLASS,
        TRAJECTORY,
        {"messages": OPENAI},
        [{"name": "weather", "arguments": {"city": "Paris"}}],
        [{"type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}],
        [{"type": "tool_use", "id": "t", "name": "weather", "input": {"city": "Paris"}}],
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": '{"city":"Paris"}'}},
    ],
    ids=[
        "openai",
        "anthropic",
        "evalglass",
        "trajectory",
        "messages-key",
        "calls",
        "openai-calls",
        "tool-use",
        "legacy",
    ],
)
def test_every_shape_gives_the_same_calls(value: Any) -> None:
    assert read_calls(value) == PARIS
    # Read from its items (without Call objects) exactly when the shape is EvalGlass's own list of calls.
    items = own_call_items(value)
    if items is not None:
        assert [Call(item["name"], item.get("arguments", ABSENT)) for item in items] == read_calls(value)
    assert (items is not None) == (
        value is TRAJECTORY or value == [{"name": "weather", "arguments": {"city": "Paris"}}]
    )


@pytest.mark.parametrize(
    "value",
    [
        [{"name": "a", "invalid_arguments": "{x"}],
        [{"name": "a"}, {"name": "b", "type": "tool_use", "input": {}}],
        [{"role": "assistant", "name": "a", "content": "hi"}],
        {"role": "assistant", "tool_calls": [{"name": "a"}]},
        {"tool_calls": [{"name": 3}]},
        {"tool_calls": ({"name": "a"},)},
        [{"name": "a"}, 7],
    ],
    ids=["invalid-arguments", "tool-use-among-them", "a-message", "a-message-object", "no-name", "tuple", "not-a-call"],
)
def test_only_calls_in_evalglass_own_form_are_read_from_their_items(value: Any) -> None:
    """Any other item (one read by another rule, or one that is unreadable) leaves the list to read_calls."""
    assert own_call_items(value) is None


def test_every_message_shape_gives_the_same_turns_and_messages() -> None:
    assert count_model_turns(OPENAI) == count_model_turns(ANTHROPIC) == count_model_turns(EVALGLASS) == 2
    assert count_model_turns(TRAJECTORY) == 2  # its own count
    assert count_model_turns({"tool_calls": []}) is None  # a trace output: the turns are not in it
    assert count_model_turns([{"name": "weather"}]) is None
    calls_in = [[part for part in message["parts"] if part["type"] == "tool_call"] for message in read_messages(OPENAI)]
    assert calls_in[2] == [{"type": "tool_call", "name": "weather", "arguments": {"city": "Paris"}}]
    anthropic = read_messages(ANTHROPIC)
    assert anthropic[1]["parts"][0] == {"type": "text", "content": "Let me look."}
    assert anthropic[2]["parts"] == [{"type": "tool_call_response", "id": "toolu_1", "response": '{"celsius": 21}'}]
    for message in [*read_messages(OPENAI), *anthropic, *read_messages(EVALGLASS)]:
        Message.model_validate(message)  # EvalGlass's declared message form


def test_arguments_that_are_not_json_are_kept_as_sent_and_never_parsed_leniently() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [
            {"function": {"name": "weather", "arguments": "{city: Paris}"}},
            {"function": {"name": "now", "arguments": ""}},
        ],
    }
    assert read_calls([message]) == [Call("weather", ABSENT, "{city: Paris}"), Call("now", {})]
    parts = read_messages([message])[0]["parts"]
    assert parts[0] == {"type": "tool_call", "name": "weather", "invalid_arguments": "{city: Paris}"}
    assert read_calls([{"name": "weather", "invalid_arguments": "{city"}]) == [Call("weather", ABSENT, "{city")]


def test_a_call_without_arguments_is_not_a_call_with_empty_ones() -> None:
    assert read_calls([{"name": "now"}]) == [Call("now", ABSENT)]
    assert read_calls([{"name": "now", "arguments": None}]) == [Call("now", None)]


def test_an_empty_conversation_has_no_calls() -> None:
    assert read_calls([]) == [] and read_calls({"messages": []}) == [] and read_calls({"tool_calls": []}) == []
    assert count_model_turns([]) == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (3, "the trajectory is a number"),
        ("called weather", "the trajectory is text"),
        ({"answer": "x"}, "a conversation is a list of messages"),
        ({"tool_calls": "weather"}, "'tool_calls' is text"),
        ([{"role": "user", "content": "hi"}, "oops"], "message 2 is text"),
        ([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}], "message 1 tool call 1 has no"),
        ([{"role": "assistant", "tool_calls": {"a": 1}}], "message 1: 'tool_calls' is an object"),
        ([{"name": "a"}, {"arguments": {}}], "call 2 has no name"),
        ([{"role": "assistant", "parts": "x"}], "'parts' is text"),
    ],
)
def test_what_is_no_conversation_is_unreadable_saying_where(value: Any, says: str) -> None:
    with pytest.raises(Unreadable) as caught:
        read_calls(value)
    assert says in str(caught.value)


def test_the_declared_trajectory_form_is_what_the_readers_read() -> None:
    trajectory = Trajectory.model_validate(TRAJECTORY)
    dumped = json.loads(trajectory.model_dump_json(exclude_none=True))
    assert read_calls(dumped) == PARIS and count_model_turns(dumped) == 2
    assert Trajectory.model_validate({**TRAJECTORY, "finish": "max_steps", "final_state": {"cart": []}})


def test_calls_recorded_outside_the_messages_are_shown_with_what_they_were_answered() -> None:
    trace_output = {  # a trace record's output: the last model call's messages, every tool call with its result
        "messages": [{"role": "assistant", "parts": [{"type": "text", "content": "21 degrees."}]}],
        "tool_calls": [
            {"id": "c1", "name": "weather", "arguments": {"city": "Paris"}, "result": {"celsius": 21}},
            {"id": "c2", "name": "weather", "arguments": {"city": "Atlantis"}, "error_type": "ValueError"},
        ],
    }
    assert read_messages(trace_output) == [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "weather", "arguments": PARIS_ARGS}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": {"celsius": 21}, "id": "c1"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c2", "name": "weather", "arguments": {"city": "Atlantis"}}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "response": "ValueError", "error": True, "id": "c2"}],
        },
        trace_output["messages"][0],
    ]
    assert read_messages(TRAJECTORY) == read_messages(EVALGLASS)  # its messages hold its calls: none added twice
    calls = [{"name": "weather", "arguments": {"city": "Paris"}}, {"name": "now", "error": "clock stopped"}]
    assert [message["role"] for message in read_messages(calls)] == ["assistant", "assistant", "tool"]
    assert read_messages(calls)[2]["parts"][0]["response"] == "clock stopped"
    for message in read_messages(trace_output):
        Message.model_validate(message)


def test_a_part_that_is_not_an_object_is_unreadable() -> None:
    with pytest.raises(Unreadable, match="message 1 part 2 is text"):
        read_messages([{"role": "assistant", "parts": [{"type": "text", "content": "a"}, "b"]}])
    with pytest.raises(Unreadable, match="'messages' is text"):
        read_messages({"messages": "hi", "tool_calls": []})


# -- arguments recorded as JSON text ----------------------------------------------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
_ARGUMENTS = st.dictionaries(
    st.text(max_size=6), st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6), max_size=4
)


@given(
    calls=st.lists(st.tuples(st.sampled_from(["search", "book"]), _ARGUMENTS), max_size=4),
    shape=st.sampled_from(["own", "responses", "genai"]),
    indent=st.sampled_from([None, 1]),
    reverse=st.booleans(),
)
def test_arguments_recorded_as_an_object_s_text_read_as_that_object_in_every_shape(
    calls: list[tuple[str, dict[str, Any]]], shape: str, indent: int | None, reverse: bool
) -> None:
    def text(arguments: dict[str, Any]) -> str:
        ordered = dict(reversed(arguments.items())) if reverse else arguments
        return json.dumps(ordered, indent=indent)

    as_objects = [{"name": name, "arguments": arguments} for name, arguments in calls]
    if shape == "own":
        recorded: Any = [{"name": name, "arguments": text(arguments)} for name, arguments in calls]
    elif shape == "responses":
        recorded = [
            {"type": "function_call", "call_id": f"c{i}", "name": name, "arguments": text(arguments)}
            for i, (name, arguments) in enumerate(calls)
        ]
    else:
        parts = [
            {"type": "tool_call", "id": f"c{i}", "name": n, "arguments": text(a)} for i, (n, a) in enumerate(calls)
        ]
        recorded = [{"role": "user", "parts": []}, {"role": "assistant", "parts": parts}]
    assert read_calls(recorded) == read_calls(as_objects)


@given(st.text(max_size=20).filter(lambda t: not t.lstrip().startswith("{")))
def test_arguments_text_that_is_not_an_object_s_stays_text(text: str) -> None:
    assert read_calls([{"name": "search", "arguments": text}]) == [Call("search", text)]
    # The OpenAI shape's text holding a JSON string (arguments encoded twice) stays that string.
    twice = json.dumps(json.dumps({"q": text}))
    assert read_calls([{"function": {"name": "search", "arguments": twice}}]) == [
        Call("search", json.dumps({"q": text}))
    ]
