"""Native providers against fake servers that speak each wire format: the request in the API's shape, usage from
its own fields, every fault classified for the retry policy, tool calls in the API's shape, the key kept secret."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from evalglass.lanes.chatcall import ChatRequest
from evalglass.lanes.chatclients import open_chat_client
from evalglass.lanes.httppost import ErrorSignal
from evalglass.lanes.providers import anthropic, gemini
from evalglass.lanes.providers.client import NativeClient
from evalglass.lanes.providers.wire import Malformed, WireAnswer
from evalglass.lanes.retry import Fault, FaultKind, Ok, Retrier, RetryPolicy
from evalglass.lanes.specs import EndpointSpec, Provider
from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_gemini import FakeGemini
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, SECRET, FakeSleep, run

PROVIDERS = ["anthropic", "gemini"]


def _fake(provider: str, **options: Any) -> FakeOpenAI:
    return FakeAnthropic(**options) if provider == "anthropic" else FakeGemini(**options)


@pytest.fixture(params=PROVIDERS)
def fake(request: pytest.FixtureRequest) -> Iterator[FakeOpenAI]:
    with _fake(request.param) as server:
        yield server


def _provider(server: FakeOpenAI) -> str:
    return "anthropic" if isinstance(server, FakeAnthropic) else "gemini"


def _spec(server: FakeOpenAI, **fields: Any) -> EndpointSpec:
    fields.setdefault("max_tokens", 64)
    fields.setdefault("api_key_env", "EVALGLASS_TEST_KEY")
    return EndpointSpec(provider=_provider(server), base_url=server.base_url, model="m-1", **fields)


def _attempt(server: FakeOpenAI, messages: list[tuple[str, str]], env: Any = KEY_ENV, **fields: Any) -> Ok | Fault:  # type: ignore[type-arg]
    async def go() -> Ok | Fault:  # type: ignore[type-arg]
        spec = _spec(server, **fields)
        client = open_chat_client(spec, env=env)
        try:
            return await client.attempt(ChatRequest.build(spec, messages))
        finally:
            await client.aclose()

    return run(go())


def test_anthropic_request_and_answer_are_the_messages_api_shape() -> None:
    with FakeAnthropic(cache_read=2, cache_write=1) as server:
        result = _attempt(
            server,
            [("system", "be brief"), ("user", "one two three four")],
            temperature=0.5,
            top_p=0.9,
            stop=("END",),
        )
        assert isinstance(result, Ok), result
        reply = result.value
        assert reply.content == "one two three four" and reply.finish_reason == "end_turn" and reply.model == "m-1"
        # input_tokens counts only what the cache neither read nor wrote: every input token is 4 + 2 (system) words.
        usage = reply.usage
        assert usage is not None
        assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (6, 4, 10)
        assert (usage.cache_read_tokens, usage.cache_write_tokens) == (2, 1)
        (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == SECRET and request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.body == {
        "model": "m-1",
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "one two three four"}]}],
        "max_tokens": 64,
        "temperature": 0.5,
        "top_p": 0.9,
        "stop_sequences": ["END"],
    }


def test_gemini_request_and_answer_are_the_generate_content_shape() -> None:
    with FakeGemini(cache_read=3) as server:
        result = _attempt(
            server,
            [("system", "be brief"), ("user", "one two three four")],
            temperature=0.5,
            top_p=0.9,
            stop=("END",),
            seed=7,
            json_mode=True,
        )
        assert isinstance(result, Ok), result
        reply = result.value
        assert reply.content == "one two three four" and reply.finish_reason == "STOP" and reply.model == "m-1"
        usage = reply.usage
        assert usage is not None
        # promptTokenCount already counts the cached tokens: they are part of the prompt, reported apart.
        assert (usage.prompt_tokens, usage.completion_tokens, usage.cache_read_tokens) == (6, 4, 3)
        assert usage.cache_write_tokens is None
        (request,) = server.requests
    assert request.path == "/v1beta/models/m-1:generateContent"
    assert request.headers["x-goog-api-key"] == SECRET and "authorization" not in request.headers
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "one two three four"}]}],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "generationConfig": {
            "maxOutputTokens": 64,
            "temperature": 0.5,
            "topP": 0.9,
            "seed": 7,
            "stopSequences": ["END"],
            "responseMimeType": "application/json",
        },
    }


#: (step, kind, status, retry_after) per provider: each API's own rate-limit and overload signals.
FAULTS = {
    "anthropic": [
        ("429:2", FaultKind.RATE_LIMITED, 429, 2.0),  # rate_limit_error with a retry-after header
        ("529", FaultKind.SERVER_ERROR, 529, None),  # overloaded_error
        ("500", FaultKind.SERVER_ERROR, 500, None),
        ("400", FaultKind.INVALID_REQUEST, 400, None),
        ("404", FaultKind.CLIENT_ERROR, 404, None),
        ("malformed", FaultKind.MALFORMED_RESPONSE, 200, None),
        ("drop", FaultKind.CONNECTION, None, None),
        ("hang", FaultKind.TIMEOUT, None, None),
    ],
    "gemini": [
        ("429:2", FaultKind.RATE_LIMITED, 429, 2.0),  # RESOURCE_EXHAUSTED, the wait in a RetryInfo detail
        ("503", FaultKind.SERVER_ERROR, 503, None),  # UNAVAILABLE
        ("500", FaultKind.SERVER_ERROR, 500, None),
        ("400", FaultKind.INVALID_REQUEST, 400, None),
        ("404", FaultKind.CLIENT_ERROR, 404, None),
        ("malformed", FaultKind.MALFORMED_RESPONSE, 200, None),
        ("drop", FaultKind.CONNECTION, None, None),
        ("hang", FaultKind.TIMEOUT, None, None),
    ],
}


@pytest.mark.parametrize(
    ("provider", "step", "kind", "status", "wait"),
    [(provider, *case) for provider, cases in FAULTS.items() for case in cases],
)
def test_every_fault_is_classified_never_raised(
    provider: str, step: str, kind: FaultKind, status: int | None, wait: float | None
) -> None:
    with _fake(provider) as server:
        result = _attempt(server, [("user", f"q [[behaviour:{step}]]")], timeout=0.3)
    assert isinstance(result, Fault), result
    assert (result.kind, result.status, result.retry_after) == (kind, status, wait)
    if step == "malformed":
        assert result.detail is not None and result.detail.startswith("{")


def test_a_slow_answer_within_the_timeout_is_an_answer_and_past_it_a_timeout(fake: FakeOpenAI) -> None:
    assert isinstance(_attempt(fake, [("user", "q [[behaviour:slow:0.05]]")], timeout=2), Ok)
    late = _attempt(fake, [("user", "late [[behaviour:slow:1]]")], timeout=0.2)
    assert isinstance(late, Fault) and late.kind is FaultKind.TIMEOUT


@pytest.mark.parametrize(
    ("provider", "steps", "waits"),
    [
        ("anthropic", "429:0.25,529,ok", [0.25]),  # the 429's retry-after is honoured; the overload backs off
        ("gemini", "429:0.25,503,ok", [0.25]),
    ],
)
def test_rate_limits_and_overloads_are_retried_by_the_policy(provider: str, steps: str, waits: list[float]) -> None:
    sleep = FakeSleep()
    retrier = Retrier(RetryPolicy(max_attempts=4, initial_delay=0.01, max_delay=0.01), sleep=sleep, random=lambda: 1)

    async def go() -> Any:
        with _fake(provider) as server:
            spec = _spec(server)
            client = NativeClient(spec, env=KEY_ENV)
            from evalglass.lanes.executor import AsyncioExecutor

            executor = AsyncioExecutor()
            try:
                return await client.call(
                    ChatRequest.build(spec, [("user", f"q [[behaviour:{steps}]]")]), executor=executor, retrier=retrier
                ), server.request_count
            finally:
                await client.aclose()
                await executor.aclose()

    outcome, requests = run(go())
    assert outcome.ok and requests == 3
    assert [attempt.outcome for attempt in outcome.attempts] == ["rate_limited", "server_error", "ok"]
    assert sleep.delays[0] == waits[0] and sleep.delays[1] == pytest.approx(0.01)


def test_a_retry_after_beyond_the_policy_ends_the_call_at_once() -> None:
    with FakeGemini() as server:
        spec = _spec(server)

        async def go() -> Any:
            from evalglass.lanes.executor import AsyncioExecutor

            client, executor = NativeClient(spec, env=KEY_ENV), AsyncioExecutor()
            try:
                retrier = Retrier(RetryPolicy(max_retry_after=5), sleep=FakeSleep())
                return await client.call(
                    ChatRequest.build(spec, [("user", "q [[behaviour:429:600]]")]), executor=executor, retrier=retrier
                )
            finally:
                await client.aclose()
                await executor.aclose()

        outcome = run(go())
        assert server.request_count == 1
    assert outcome.fault is not None and "Retry-After 600s exceeds max_retry_after 5s" in outcome.fault.message


def test_the_key_is_scrubbed_from_fault_messages(fake: FakeOpenAI) -> None:
    result = _attempt(fake, [("user", "q [[behaviour:401]]")])
    assert isinstance(result, Fault) and result.kind is FaultKind.CLIENT_ERROR
    assert SECRET not in result.message and "Incorrect API key" in result.message


def test_a_missing_key_variable_is_a_configuration_fault_and_nothing_is_sent(fake: FakeOpenAI) -> None:
    result = _attempt(fake, [("user", "q")], env={})
    assert isinstance(result, Fault) and result.kind is FaultKind.CONFIGURATION
    assert "EVALGLASS_TEST_KEY" in result.message and fake.request_count == 0


def test_the_fakes_refuse_what_the_real_apis_refuse() -> None:
    """Without the key (or Anthropic's version header) the fake answers as the service would: a client that forgot
    either fails these tests."""
    with FakeAnthropic() as server:
        keyless = _attempt(server, [("user", "q")], env={}, api_key_env=None)
        assert isinstance(keyless, Fault) and keyless.status == 401
    with FakeGemini() as server:
        keyless = _attempt(server, [("user", "q")], env={}, api_key_env=None)
        assert isinstance(keyless, Fault) and keyless.status == 403


# ---------------------------------------------------------------------- tool calls
def _weather_turns(body: dict[str, Any]) -> Any:
    """First turn: call the tool; once its result is in the conversation: answer with text."""
    has_result = "tool_result" in orjson.dumps(body).decode() or "functionResponse" in orjson.dumps(body).decode()
    if has_result:
        return "It is sunny."
    return {"content": "Let me look.", "tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]}


TOOLS = (
    {
        "name": "weather",
        "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_call_round_trip_in_each_api_shape(provider: str) -> None:
    """The agent's loop through a native API: a tool call comes back in EvalGlass's form, its result goes back in the
    API's shape (the fakes refuse a result that answers no call), and the model then answers."""

    async def go(server: FakeOpenAI) -> tuple[WireAnswer, WireAnswer]:
        client = NativeClient(_spec(server), env=KEY_ENV)
        wire = client.wire
        messages: list[dict[str, Any]] = [
            {"role": "system", "parts": [{"type": "text", "content": "Use tools."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]},
        ]
        try:
            first = await client.post(wire.request_body("m-1", messages, TOOLS, {"max_tokens": 64}), wire.parse_answer)
            assert isinstance(first, Ok), first
            (call,) = first.value.calls
            messages.append({"role": "assistant", "parts": [{"type": "text", "content": "Let me look."}, call.part()]})
            messages.append(
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": call.id, "response": {"sky": "sun"}}]}
            )
            second = await client.post(wire.request_body("m-1", messages, TOOLS, {"max_tokens": 64}), wire.parse_answer)
            assert isinstance(second, Ok), second
            return first.value, second.value
        finally:
            await client.aclose()

    with _fake(provider, turns=_weather_turns) as server:
        first, second = run(go(server))
        bodies = [request.body for request in server.requests]
    (call,) = first.calls
    assert (call.name, call.arguments, first.text) == ("weather", {"city": "Oslo"}, "Let me look.")
    assert call.id is not None and first.usage is not None and first.usage.completion_tokens
    assert second.text == "It is sunny." and not second.calls
    if provider == "anthropic":
        assert first.finish_reason == "tool_use"
        assert bodies[0]["tools"] == [
            {"name": "weather", "description": "Current weather of a city.", "input_schema": TOOLS[0]["parameters"]}
        ]
        assert bodies[1]["messages"][1:] == [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": call.id, "name": "weather", "input": {"city": "Oslo"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": '{"sky":"sun"}'}]},
        ]
    else:
        assert bodies[0]["tools"] == [{"functionDeclarations": [dict(TOOLS[0])]}]
        assert bodies[1]["contents"][1:] == [
            {
                "role": "model",
                "parts": [
                    {"text": "Let me look."},
                    {"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": call.id}},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "weather", "response": {"sky": "sun"}, "id": call.id}}],
            },
        ]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_result_that_answers_no_call_is_refused_by_the_fake(provider: str) -> None:
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "a1", "name": "weather", "arguments": {}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "zz", "response": 3}]},
    ]
    wire = anthropic if provider == "anthropic" else gemini
    body = wire.request_body("m-1", messages, TOOLS, {"max_tokens": 8})
    if provider == "gemini":  # Gemini matches by name: a response after a turn that called nothing answers nothing
        body["contents"][1]["parts"] = [{"text": "no call"}]

    async def go(server: FakeOpenAI) -> Ok[Any] | Fault:
        client = NativeClient(_spec(server), env=KEY_ENV)
        try:
            return await client.post(body, wire.parse_answer)
        finally:
            await client.aclose()

    with _fake(provider) as server:
        result = run(go(server))
    assert isinstance(result, Fault) and result.kind is FaultKind.INVALID_REQUEST


def test_a_chat_call_answered_with_tool_calls_only_is_malformed() -> None:
    with FakeAnthropic(turns=lambda body: {"tool_calls": [{"name": "f", "arguments": {}}]}) as server:
        result = _attempt(server, [("user", "q")])
    assert isinstance(result, Fault) and result.kind is FaultKind.MALFORMED_RESPONSE
    assert "tool calls, not text" in result.message


# ---------------------------------------------------------------------- the wire modules alone
def test_gemini_blocked_prompts_and_answers_are_empty_answers_with_the_reason() -> None:
    """A prompt or answer the safety system blocked is the system under test's answer (empty, the reason kept); a
    candidate without content for no stated reason is still malformed."""
    blocked = gemini.parse_answer(b'{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}')
    assert (blocked.text, blocked.calls, blocked.finish_reason) == ("", (), "PROHIBITED_CONTENT")
    stopped = gemini.parse_answer(b'{"candidates": [{"finishReason": "SAFETY"}]}')
    assert (stopped.text, stopped.finish_reason) == ("", "SAFETY")
    assert stopped.chat_reply().content == ""
    with pytest.raises(Malformed, match=r"no content \(finishReason STOP\)"):
        gemini.parse_answer(b'{"candidates": [{"finishReason": "STOP"}]}')
    with pytest.raises(Malformed, match="no candidates"):
        gemini.parse_answer(b'{"promptFeedback": {}}')
    thought = gemini.parse_answer(
        b'{"candidates": [{"content": {"parts": [{"text": "hmm", "thought": true}, {"text": "4"}]}}],'
        b'"usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "thoughtsTokenCount": 5,'
        b'"toolUsePromptTokenCount": 2}}'
    )
    assert thought.text == "4"
    assert thought.usage is not None and (thought.usage.prompt_tokens, thought.usage.completion_tokens) == (12, 6)


def test_anthropic_usage_counts_every_input_token_and_a_refusal_is_an_empty_answer() -> None:
    answer = anthropic.parse_answer(
        b'{"content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "ok"}], "stop_reason":'
        b'"end_turn", "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": 100,'
        b'"cache_creation_input_tokens": 7}}'
    )
    assert answer.text == "ok"
    assert answer.usage is not None and (answer.usage.prompt_tokens, answer.usage.total_tokens) == (110, 112)
    refused = anthropic.parse_answer(b'{"content": [], "stop_reason": "refusal"}')
    assert (refused.text, refused.finish_reason) == ("", "refusal")
    with pytest.raises(Malformed, match="no text"):
        anthropic.parse_answer(b'{"content": [], "stop_reason": "end_turn"}').chat_reply()


@pytest.mark.parametrize(
    ("reader", "status", "body", "expected"),
    [
        (
            anthropic.read_error,
            429,
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "cap",
                    "details": {"error_code": "enforced_spend_limit_reached"},
                },
            },
            FaultKind.CLIENT_ERROR,  # a spend cap: no retry lifts it
        ),
        (
            anthropic.read_error,
            500,
            {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
            FaultKind.SERVER_ERROR,
        ),
        (
            gemini.read_error,
            429,
            {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}},
            FaultKind.RATE_LIMITED,
        ),
        (
            gemini.read_error,
            503,
            {"error": {"code": 503, "status": "UNAVAILABLE", "message": "later"}},
            FaultKind.SERVER_ERROR,
        ),
    ],
)
def test_error_bodies_set_the_fault_kind(reader: Any, status: int, body: Any, expected: FaultKind) -> None:
    signal = reader(status, body)
    assert isinstance(signal, ErrorSignal) and signal.kind is expected


def test_gemini_reads_the_wait_from_retry_info() -> None:
    body = {
        "error": {
            "status": "RESOURCE_EXHAUSTED",
            "message": "q",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17.5s"}],
        }
    }
    signal = gemini.read_error(429, body)
    assert signal is not None and signal.retry_after == 17.5


# ---------------------------------------------------------------------- configuration
def test_each_provider_reads_its_own_key_variable_by_default() -> None:
    base = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "max_tokens": 5}
    assert EndpointSpec.model_validate(base).api_key_env == "OPENAI_API_KEY"
    assert EndpointSpec.model_validate({**base, "provider": "anthropic"}).api_key_env == "ANTHROPIC_API_KEY"
    assert EndpointSpec.model_validate({**base, "provider": "gemini"}).api_key_env == "GEMINI_API_KEY"
    assert EndpointSpec.model_validate({**base, "provider": "gemini", "api_key_env": None}).api_key_env is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"provider": "anthropic"}, "needs max_tokens"),
        ({"provider": "anthropic", "max_tokens": 5, "seed": 1}, "no parameter for seed"),
        ({"provider": "anthropic", "max_tokens": 5, "json_mode": True}, "no parameter for json_mode"),
        ({"provider": "bedrock"}, "provider"),
    ],
)
def test_what_an_api_cannot_do_is_refused_at_load(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        EndpointSpec.model_validate({"base_url": "http://127.0.0.1:1/v1", "model": "m", **fields})


def test_the_openai_provider_keeps_its_client_and_lane_keys() -> None:
    """A lane declared before providers existed keeps its cache keys (no provider in its definition); a native
    lane's definition names its provider."""
    from evalglass.lanes.chat import ChatClient
    from evalglass.lanes.chat_lane import chat_lane_definition
    from evalglass.lanes.specs import ChatLaneSpec

    lane = {"type": "chat", "base_url": "http://127.0.0.1:1/v1", "model": "m", "prompt": "{{ q }}", "max_tokens": 5}
    plain = ChatLaneSpec.model_validate(lane)
    assert "provider" not in chat_lane_definition(plain)
    native = ChatLaneSpec.model_validate({**lane, "provider": "gemini"})
    assert chat_lane_definition(native)["provider"] == "gemini"
    assert native.provider is Provider.GEMINI

    async def clients() -> tuple[str, str]:
        first, second = open_chat_client(plain, env={}), open_chat_client(native, env={})
        kinds = (type(first).__name__, type(second).__name__)
        await first.aclose()
        await second.aclose()
        return kinds

    assert run(clients()) == (ChatClient.__name__, NativeClient.__name__)


def test_a_native_call_needs_no_sdk() -> None:
    """A native lane's call, in a fresh interpreter, imports no provider SDK and not the OpenAI client either."""
    import subprocess
    import sys

    script = """
import asyncio, sys
from pathlib import Path
from pydantic import TypeAdapter
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.specs import TaskSpec
from evalglass.lanes.ports import LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.testing.fake_gemini import FakeGemini

async def go(url):
    spec = TypeAdapter(TaskSpec).validate_python({"type": "chat", "provider": "gemini", "base_url": url,
        "model": "m", "api_key_env": "K", "prompt": "{{ q }}", "cache": False})
    executor = AsyncioExecutor(2)
    lane = build_lane(spec, base_dir=Path.cwd(), executor=executor, cache=None)
    assert isinstance(await lane.produce("a", {"q": "hi"}, 0), LaneOutput)
    await lane.aclose()

with FakeGemini() as server:
    asyncio.run(go(server.base_url))
print(sorted(m for m in ("openai", "httpx", "httpx2", "anthropic", "google.genai", "evalglass.lanes.chat")
             if m in sys.modules))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env={**os.environ, "K": "key"}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
