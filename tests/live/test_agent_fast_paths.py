"""The agent lane's per-step fast paths, held to the plain forms they replace by property tests: the OpenAI request
body (one pass per message, the tools' wire form made once) and the check of a tool call's arguments (the
signature read once; ``inspect.Signature.bind`` only when that check refuses)."""

from __future__ import annotations

import inspect
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.lanes.hosttools import _keywords
from evalglass.lanes.modelstep import StepRequest, WireMemo, _openai_body, openai_body


def reference_body(request: StepRequest) -> dict[str, Any]:
    """The body as the lane built it before the fast path (kept here as the specification)."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        role, parts = message["role"], message["parts"]
        if role == "tool":
            messages.extend(
                {
                    "role": "tool",
                    "tool_call_id": part.get("id"),
                    "content": part["response"]
                    if isinstance(part.get("response"), str)
                    else orjson.dumps(part.get("response")).decode(),
                }
                for part in parts
            )
            continue
        text = "".join(str(part["content"]) for part in parts if part["type"] == "text")
        calls = [
            {
                "id": part.get("id"),
                "type": "function",
                "function": {
                    "name": part["name"],
                    "arguments": part["invalid_arguments"]
                    if "invalid_arguments" in part
                    else orjson.dumps(part.get("arguments")).decode(),
                },
            }
            for part in parts
            if part["type"] == "tool_call"
        ]
        wire: dict[str, Any] = {"role": role, "content": text if text or not calls else None}
        if calls:
            wire["tool_calls"] = calls
        messages.append(wire)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.tools:
        wire_tools = []
        for tool in request.tools:
            function = {key: tool.get(key) for key in ("name", "description", "parameters")}
            wire_tools.append({"type": "function", "function": {k: v for k, v in function.items() if v is not None}})
        body["tools"] = wire_tools
    body.update(request.params)
    return body


names = st.sampled_from(["lookup", "weather", "a_b"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def tool_call_parts(draw: st.DrawFn) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "name": draw(names)}
    if draw(st.booleans()):
        part["id"] = draw(st.text(min_size=1, max_size=5))
    if draw(st.booleans()):
        part["invalid_arguments"] = draw(st.text(max_size=5))
    else:
        part["arguments"] = draw(json_values)
    return part


text_parts = st.builds(lambda content: {"type": "text", "content": content}, st.text(max_size=5) | st.integers())
response_parts = st.builds(
    lambda response, ident: {"type": "tool_call_response", "response": response, **ident},
    json_values,
    st.just({}) | st.builds(lambda ident: {"id": ident}, st.text(min_size=1, max_size=4)),
)
messages = st.one_of(
    st.builds(
        lambda role, parts: {"role": role, "parts": parts},
        st.sampled_from(["system", "user"]),
        st.lists(text_parts, max_size=3),
    ),
    st.builds(
        lambda parts: {"role": "assistant", "parts": parts, "finish_reason": "tool_calls"},
        st.lists(text_parts | tool_call_parts(), max_size=4),
    ),
    st.builds(lambda parts: {"role": "tool", "parts": parts}, st.lists(response_parts, min_size=1, max_size=3)),
)
tools = st.lists(
    st.builds(
        lambda name, description, parameters: {
            "name": name,
            **({"description": description} if description is not None else {}),
            "parameters": parameters,
        },
        names,
        st.none() | st.text(max_size=5),
        st.just({"type": "object"}) | st.just(None),
    ),
    max_size=3,
).map(tuple)


@settings(max_examples=300, deadline=None)
@given(st.lists(messages, max_size=6), tools, st.sampled_from([(), (("temperature", 0.0),), (("seed", 1), ("n", 1))]))
def test_the_request_body_is_the_plain_conversion_byte_for_byte(
    conversation: list[dict[str, Any]], offered: tuple[dict[str, Any], ...], params: tuple[tuple[str, Any], ...]
) -> None:
    request = StepRequest("m", tuple(conversation), offered, params)
    expected = orjson.dumps(reference_body(request))
    assert orjson.dumps(openai_body(request)) == expected
    assert orjson.dumps(openai_body(request)) == expected  # the tools' wire form reused for the same tuple
    again = StepRequest("m", tuple(conversation), tuple(dict(tool) for tool in offered), params)
    assert orjson.dumps(openai_body(again)) == expected  # and made afresh for another


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=8), tools, st.lists(st.integers(0, 8), min_size=1, max_size=6))
def test_the_request_body_built_step_by_step_is_the_plain_conversion_byte_for_byte(
    conversation: list[dict[str, Any]], offered: tuple[dict[str, Any], ...], cuts: list[int]
) -> None:
    """A trajectory's steps send ever longer prefixes of one conversation: with the wire form kept from step to
    step (only new messages converted), each body is byte for byte the one converted whole, and so is a step sent
    again (a retry) or a conversation that is not the memo's grown (converted afresh); the cache key, made from
    ``key_body``, does not see the memo."""
    memo = WireMemo()
    for cut in [*sorted(cuts), len(conversation), len(conversation)]:
        prefix = tuple(conversation[:cut])
        request = StepRequest("m", prefix, offered, (("temperature", 0.0),), memo)
        expected = orjson.dumps(reference_body(request))
        assert orjson.dumps(openai_body(request)) == expected
        plain = StepRequest("m", prefix, offered, (("temperature", 0.0),))
        assert request == plain and request.key_body() == plain.key_body()
    if conversation:
        other = ({"role": "user", "parts": [{"type": "text", "content": "another"}]}, *conversation[1:])
        request = StepRequest("m", tuple(other), offered, (), memo)
        assert orjson.dumps(openai_body(request)) == orjson.dumps(reference_body(request))
        shorter = StepRequest("m", tuple(conversation[:-1]), offered, (), memo)
        assert orjson.dumps(openai_body(shorter)) == orjson.dumps(reference_body(shorter))
        # A message that fails half converted (its second part is not a part) fails the step, and the memo keeps
        # no half of it.
        half = {"role": "tool", "parts": [{"type": "tool_call_response", "response": 1}, None]}
        broken = StepRequest("m", (*conversation[:-1], half), offered, (), memo)
        with pytest.raises(AttributeError):
            openai_body(broken)
        assert orjson.dumps(openai_body(shorter)) == orjson.dumps(reference_body(shorter))


body_params = st.dictionaries(
    st.sampled_from(["temperature", "seed", "stop", "n", "tools", "model", "messages", "zz"]),
    json_values | st.integers(2**64, 2**65),
    max_size=3,
).map(lambda found: tuple(found.items()))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(messages, max_size=8),
    tools,
    body_params,
    st.text(max_size=4),
    st.lists(st.integers(0, 8), min_size=1, max_size=6),
)
def test_a_body_written_from_its_kept_messages_bytes_is_orjsons_byte_for_byte(
    conversation: list[dict[str, Any]],
    offered: tuple[dict[str, Any], ...],
    params: tuple[tuple[str, Any], ...],
    model: str,
    cuts: list[int],
) -> None:
    """The bytes a step sends over the direct transport, written from each wire message's bytes kept from step to
    step, are ``orjson.dumps`` of the body (or its refusal, TypeError, of a value that is not JSON); a body whose
    messages are not the kept ones (a parameter named ``messages``, another list) is written whole (None)."""
    memo = WireMemo()
    for cut in [*sorted(cuts), len(conversation), len(conversation)]:
        request = StepRequest(model, tuple(conversation[:cut]), offered, params, memo)
        body, kept = _openai_body(request)
        assert kept is not None and body == openai_body(request)
        try:
            expected = orjson.dumps(body)
        except TypeError:
            expected = None
        if "messages" in dict(params):
            # Not the conversation's list (unless both are empty): written whole by the caller (None), or written
            # here only as orjson would, refusal included.
            try:
                assert kept.encoded(body) in (None, expected)
            except TypeError:
                assert expected is None
            continue
        if expected is None:
            with pytest.raises(TypeError):
                kept.encoded(body)
            continue
        assert kept.encoded(body) == expected
        if body["messages"]:
            assert kept.encoded({**body, "messages": body["messages"][:-1]}) is None
            assert kept.encoded({**body, "messages": [dict(item) for item in body["messages"]]}) is None


PARAMETER_KINDS = [
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
]


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    chosen = draw(st.lists(st.sampled_from(["a", "b", "c", "state"]), unique=True, max_size=4))
    parameters: list[inspect.Parameter] = []
    kinds = sorted(draw(st.lists(st.sampled_from([0, 1, 2]), min_size=len(chosen), max_size=len(chosen))))
    var_positional = draw(st.booleans())
    seen_default = False
    for name, index in zip(chosen, kinds, strict=True):
        kind = PARAMETER_KINDS[index]
        if (
            var_positional
            and kind is inspect.Parameter.KEYWORD_ONLY
            and not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
        ):
            parameters.append(inspect.Parameter("args", inspect.Parameter.VAR_POSITIONAL))
        # positional parameters without a default may not follow one with a default
        positional = kind is not inspect.Parameter.KEYWORD_ONLY
        default = draw(st.booleans()) or (positional and seen_default)
        seen_default = seen_default or (positional and default)
        parameters.append(inspect.Parameter(name, kind, default=0 if default else inspect.Parameter.empty))
    if draw(st.booleans()):
        parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


@settings(max_examples=500, deadline=None)
@given(
    signatures(),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "state", "args", "kwargs"]), st.integers(), max_size=5),
)
def test_arguments_the_quick_check_passes_are_ones_bind_accepts(
    signature: inspect.Signature, arguments: dict[str, int]
) -> None:
    keywords = _keywords(signature)
    try:
        signature.bind(**arguments)
        binds = True
    except TypeError:
        binds = False
    if keywords is None:  # a positional-only parameter: every call goes through bind
        assert any(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in signature.parameters.values())
        return
    assert keywords.fit(arguments) == binds


ECHO_TOOLS = """
def echo(value=None):
    return value

def boom(value=None):
    raise ValueError(f"boom {value!r}")
"""

turn_calls = st.lists(
    st.builds(
        lambda name, arguments: {"name": name, "arguments": arguments},
        st.sampled_from(["echo", "boom", "missing"]),
        st.builds(lambda value: {"value": value}, json_values) | st.sampled_from(["{not json", "[1, 2]"]),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=25, deadline=None)
@given(st.lists(turn_calls, max_size=8), st.text(max_size=6))
def test_the_bytes_an_agent_sends_at_every_step_are_the_plain_conversion_s(
    tmp_path_factory: Any, turns: list[list[dict[str, Any]]], answer: str
) -> None:
    """Against the fake server, which records each body's bytes: every step's request is byte for byte the whole
    conversation so far converted the plain way, and the trajectory's call id is the cache key of its first step
    made from the plain request (the kept wire form changes neither)."""
    import asyncio

    from evalglass.lanes.callcache import cache_key
    from evalglass.lanes.executor import AsyncioExecutor
    from evalglass.lanes.ports import LaneOutput
    from evalglass.lanes.registry import build_lane
    from evalglass.testing.fake_openai import FakeOpenAI

    from .conftest import parse_task_spec

    base = tmp_path_factory.mktemp("echo")
    (base / "echo.py").write_text(ECHO_TOOLS)
    script = [*({"tool_calls": calls} for calls in turns), answer or "done"]
    with FakeOpenAI(turns={"Go": script}) as server:
        spec = {
            "type": "agent",
            "base_url": server.base_url,
            "model": "m",
            "api_key_env": None,
            "system": "Be brief.",
            "prompt": "{{ q }}",
            "tools": {"echo": "echo.py:echo", "boom": "echo.py:boom"},
            "temperature": 0.0,
            "max_steps": 20,
        }

        async def go() -> Any:
            lane = build_lane(parse_task_spec(spec), base_dir=base, executor=AsyncioExecutor(4), env={})
            try:
                return lane, await lane.produce("e0", {"q": "Go"}, 0)
            finally:
                await lane.aclose()

        lane, outcome = asyncio.run(go())
        sent = [request.raw for request in server.requests]
    assert isinstance(outcome, LaneOutput), outcome
    conversation = outcome.value["messages"]
    starts = [index for index, message in enumerate(conversation) if message["role"] == "assistant"]
    assert len(sent) == len(starts) == len(script)
    for raw, end in zip(sent, starts, strict=True):
        plain = StepRequest("m", tuple(conversation[:end]), lane.definitions, lane.params)
        assert raw == orjson.dumps(reference_body(plain))
    first = StepRequest("m", tuple(conversation[: starts[0]]), lane.definitions, lane.params)
    assert outcome.call_id == cache_key(lane.fingerprint, first.key_body(), 0)


def anthropic_reference(model: str, messages: Any, tools: Any, params: Any) -> dict[str, Any]:
    """The Messages API body as the lane built it before it was built a step at a time (the specification)."""
    from evalglass.lanes.providers.anthropic import _blocks, _tool, _tool_result
    from evalglass.lanes.providers.wire import text_of

    system: list[str] = []
    wire: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None
    for message in messages:
        role, parts = message["role"], message["parts"]
        if role == "system":
            system.append(text_of(parts))
        elif role == "tool":
            if results is None:
                results = []
                wire.append({"role": "user", "content": results})
            results.extend(_tool_result(part) for part in parts)
            continue
        else:
            wire.append({"role": "assistant" if role == "assistant" else "user", "content": _blocks(parts)})
        results = None
    body: dict[str, Any] = {"model": model, "messages": wire}
    if system:
        body["system"] = "\n\n".join(system)
    if tools:
        body["tools"] = [_tool(tool) for tool in tools]
    body.update(params)
    return body


def gemini_reference(model: str, messages: Any, tools: Any, params: Any) -> dict[str, Any]:
    """The Gemini body as the lane built it before it was built a step at a time (the specification)."""
    from evalglass.lanes.providers.gemini import _arguments, _declaration, _function_response
    from evalglass.lanes.providers.wire import text_of

    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    last_calls: list[str] = []
    responses: list[dict[str, Any]] | None = None
    for message in messages:
        role, parts = message["role"], message["parts"]
        if role == "system":
            system.append(text_of(parts))
            continue
        if role == "tool":
            if responses is None:
                responses = []
                contents.append({"role": "user", "parts": responses})
            for part in parts:
                if part.get("type") == "tool_call_response":
                    responses.append(_function_response(part, names, last_calls, len(responses)))
            continue
        responses = None
        wire_parts: list[dict[str, Any]] = []
        calls: list[str] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                wire_parts.append({"text": str(part["content"])})
            elif kind == "tool_call":
                name = str(part["name"])
                call: dict[str, Any] = {"name": name, "args": _arguments(part)}
                if part.get("id") is not None:
                    call["id"] = part["id"]
                    names[str(part["id"])] = name
                calls.append(name)
                wire_parts.append({"functionCall": call})
        if role == "assistant":
            last_calls = calls
        contents.append({"role": "model" if role == "assistant" else "user", "parts": wire_parts})
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if tools:
        body["tools"] = [{"functionDeclarations": [_declaration(tool) for tool in tools]}]
    if params:
        body["generationConfig"] = {"temperature": params["temperature"]}
    return body


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["anthropic", "gemini"]),
    st.lists(messages, max_size=8),
    tools,
    st.lists(st.integers(0, 8), min_size=1, max_size=6),
)
def test_a_native_body_built_step_by_step_is_the_plain_conversion_byte_for_byte(
    provider: str, conversation: list[dict[str, Any]], offered: tuple[dict[str, Any], ...], cuts: list[int]
) -> None:
    """As for the OpenAI shape: the Anthropic and Gemini bodies of ever longer prefixes of one conversation, built a
    step's new messages at a time, are byte for byte those converted whole the way the lane did before, tool
    results joined into one user turn across the steps as within one; and so are the bytes written from each
    message's bytes kept across the steps (the last message, which later results may join, written again)."""
    import importlib

    module = importlib.import_module(f"evalglass.lanes.providers.{provider}")
    reference = anthropic_reference if provider == "anthropic" else gemini_reference
    params = {"temperature": 0.0}
    memo = WireMemo()
    for cut in [*sorted(cuts), len(conversation), len(conversation)]:
        prefix = tuple(conversation[:cut])
        built = memo.extend(prefix, module.builder, lambda form, message: form.add(message))
        expected = orjson.dumps(reference("m", prefix, offered, params))
        body = built.body("m", offered, params)
        assert orjson.dumps(body) == expected
        assert built.encoded(body) == expected  # written from the messages' bytes kept across the steps
        if body.get("messages", body.get("contents")):
            listed = "messages" if provider == "anthropic" else "contents"
            assert built.encoded({**body, listed: [dict(item) for item in body[listed]]}) is None
        assert orjson.dumps(module.request_body("m", prefix, offered, params)) == expected
