"""The fake server is a real HTTP server the openai SDK can talk to, serving slow requests concurrently."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import openai
import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import run


async def _ask(client: openai.AsyncOpenAI, text: str) -> str | None:
    completion = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return completion.choices[0].message.content


def test_the_sdk_gets_a_typed_completion_and_the_server_records_it(server: FakeOpenAI) -> None:
    async def go() -> str | None:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            return await _ask(client, "hello there")
        finally:
            await client.close()

    assert run(go()) == "hello there"
    (request,) = server.requests
    assert request.path == "/v1/chat/completions" and request.status == 200
    assert request.body["messages"][0]["content"] == "hello there"


def test_64_slow_requests_are_served_concurrently_not_one_after_another() -> None:
    with FakeOpenAI(latency=0.2) as server:

        async def go() -> float:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            started = time.perf_counter()
            await asyncio.gather(*(_ask(client, f"q{i}") for i in range(64)))
            await client.close()
            return time.perf_counter() - started

        elapsed = run(go())
        assert server.max_in_flight == 64
        assert server.request_count == 64
        assert elapsed < 0.2 * 64 / 4  # serialised would take 12.8 s


def test_directives_sequence_per_prompt_and_the_script_takes_precedence(server: FakeOpenAI) -> None:
    async def go() -> list[object]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        outcomes: list[object] = []
        for _ in range(3):
            try:
                outcomes.append(await _ask(client, "x [[behaviour:503,ok]]"))
            except openai.APIStatusError as exc:
                outcomes.append(exc.status_code)
        server.script("418")
        try:
            await _ask(client, "plain")
        except openai.APIStatusError as exc:
            outcomes.append(exc.status_code)
        await client.close()
        return outcomes

    assert run(go()) == [503, "x", "x", 418]
    assert [r.step for r in server.requests] == ["503", "ok", "ok", "418"]


def test_reply_mapping_and_callable() -> None:
    with FakeOpenAI(reply={"2+2?": "4"}) as server:

        async def go() -> list[str | None]:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            answers = [await _ask(client, "2+2?"), await _ask(client, "unknown")]
            await client.close()
            return answers

        assert run(go()) == ["4", "unknown"]
    with FakeOpenAI(reply=lambda body: body["model"].upper()) as server:

        async def go2() -> str | None:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            answer = await _ask(client, "anything")
            await client.close()
            return answer

        assert run(go2()) == "M"


def test_unknown_steps_are_refused_up_front() -> None:
    server = FakeOpenAI()
    with pytest.raises(ValueError, match="unknown fake-server step"):
        server.script("explode")


def test_runs_as_a_module_and_prints_its_url() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "evalglass.testing.fake_openai", "--port", "0", "--latency", "0.01"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        base_url = line.split()[-1]

        async def go() -> str | None:
            client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
            answer = await _ask(client, "ping")
            await client.close()
            return answer

        assert run(go()) == "ping"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_scripted_turns_answer_tool_calls_by_the_conversation_not_by_a_counter() -> None:
    """The SDK reads the scripted tool calls as typed tool calls; the turn answered depends only on the assistant
    turns the request holds, so asking the same step twice (a resumed run) gets the same answer."""
    turns = {"Plan a trip": [{"tool_calls": [{"name": "book", "arguments": {"day": 3}}]}, "Booked."]}

    async def go(server: FakeOpenAI) -> list[object]:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        user = {"role": "user", "content": "Plan a trip"}
        try:
            first = await client.chat.completions.create(model="m", messages=[user])
            again = await client.chat.completions.create(model="m", messages=[user])
            call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
            answered = [
                user,
                {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                {"role": "tool", "tool_call_id": call.id, "content": "ok"},
            ]
            last = await client.chat.completions.create(model="m", messages=answered)  # type: ignore[arg-type]
            return [first, again, last]
        finally:
            await client.close()

    with FakeOpenAI(turns=turns) as server:
        first, again, last = run(go(server))
    call = first.choices[0].message.tool_calls[0]  # type: ignore[attr-defined]
    assert (call.id, call.function.name, call.function.arguments) == ("call_0_0", "book", '{"day":3}')
    assert first.choices[0].finish_reason == "tool_calls"  # type: ignore[attr-defined]
    assert again.choices[0].message.tool_calls[0].id == "call_0_0"  # type: ignore[attr-defined]
    assert last.choices[0].message.content == "Booked." and last.choices[0].message.tool_calls is None  # type: ignore[attr-defined]
