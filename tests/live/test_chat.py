"""The chat client: every outcome is a value, faults are classified, the API key stays secret."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
from collections.abc import Iterator

import orjson
import pytest

from evalglass.lanes.chat import ChatClient, ChatRequest, EndpointSpec, parse_completion, parse_retry_after
from evalglass.lanes.retry import Fault, FaultKind, Ok
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, SECRET, run

TRANSPORTS = ["direct", "httpx"]


def _spec(base_url: str, **fields: object) -> EndpointSpec:
    return EndpointSpec(base_url=base_url, model="m", api_key_env="EVALGLASS_TEST_KEY", **fields)  # type: ignore[arg-type]


def _attempt(base_url: str, text: str, transport: str = "direct", env=KEY_ENV, **fields: object) -> Ok | Fault:  # type: ignore[no-untyped-def,type-arg]
    async def go() -> Ok | Fault:  # type: ignore[type-arg]
        spec = _spec(base_url, **fields)
        client = ChatClient(spec, env=env, transport=transport)  # type: ignore[arg-type]
        try:
            return await client.attempt(ChatRequest.build(spec, [("user", text)]))
        finally:
            await client.aclose()

    return run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ok_carries_content_and_usage_and_sends_the_key_from_the_named_variable(
    server: FakeOpenAI, transport: str
) -> None:
    result = _attempt(server.base_url, "two words", transport, temperature=0.0, seed=7, max_tokens=5)
    assert isinstance(result, Ok)
    assert result.value.content == "two words"
    assert result.value.usage is not None and result.value.usage.completion_tokens == 2
    (request,) = server.requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "two words"}],
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 5,
    }


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("step", "kind", "status"),
    [
        ("429:2", FaultKind.RATE_LIMITED, 429),
        ("500", FaultKind.SERVER_ERROR, 500),
        ("503", FaultKind.SERVER_ERROR, 503),
        ("400", FaultKind.INVALID_REQUEST, 400),
        ("404", FaultKind.CLIENT_ERROR, 404),
        ("408", FaultKind.TIMEOUT, 408),
        ("malformed", FaultKind.MALFORMED_RESPONSE, 200),
        ("drop", FaultKind.CONNECTION, None),
        ("hang", FaultKind.TIMEOUT, None),
    ],
)
def test_every_fault_is_classified_never_raised(
    server: FakeOpenAI, transport: str, step: str, kind: FaultKind, status: int | None
) -> None:
    result = _attempt(server.base_url, f"q [[behaviour:{step}]]", transport, timeout=0.3)
    assert isinstance(result, Fault), result
    assert result.kind is kind and result.status == status
    if step == "429:2":
        assert result.retry_after == 2.0
    if step == "malformed":
        assert result.detail is not None and "chatcmpl-broken" in result.detail


def test_a_refused_connection_is_a_connection_fault() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _attempt(f"http://127.0.0.1:{port}/v1", "hi")
    assert isinstance(result, Fault) and result.kind is FaultKind.CONNECTION


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_key_is_scrubbed_from_fault_messages(server: FakeOpenAI, transport: str) -> None:
    result = _attempt(server.base_url, "[[behaviour:401]]", transport)
    assert isinstance(result, Fault) and result.kind is FaultKind.CLIENT_ERROR and result.status == 401
    assert "Incorrect API key provided" in result.message
    assert SECRET not in repr(result)


def test_a_missing_key_variable_is_a_configuration_fault_and_nothing_is_sent(server: FakeOpenAI) -> None:
    result = _attempt(server.base_url, "hi", env={})
    assert isinstance(result, Fault) and result.kind is FaultKind.CONFIGURATION
    assert "EVALGLASS_TEST_KEY" in result.message
    assert server.request_count == 0


def test_keyless_servers_need_no_variable(server: FakeOpenAI) -> None:
    async def go() -> Ok | Fault:  # type: ignore[type-arg]
        spec = EndpointSpec(base_url=server.base_url, model="m", api_key_env=None)
        client = ChatClient(spec, env={})
        result = await client.attempt(ChatRequest.build(spec, [("user", "hi")]))
        await client.aclose()
        return result

    assert isinstance(run(go()), Ok)


def test_the_spec_holds_a_variable_name_never_a_key() -> None:
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        EndpointSpec(base_url="http://x/v1", model="m", api_key_env="sk-abcdef0123456789")
    with pytest.raises(ValueError, match="http"):
        EndpointSpec(base_url="ftp://x", model="m")
    with pytest.raises(ValueError):
        EndpointSpec(base_url="http://x/v1", model="m", surprise=1)  # type: ignore[call-arg]
    client = ChatClient(_spec("http://127.0.0.1:9/v1"), env=KEY_ENV)
    assert SECRET not in repr(client)


def test_parse_completion_rejects_shapes_without_text() -> None:
    ok = {"choices": [{"message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}], "model": "m"}
    assert parse_completion(orjson.dumps(ok)).content == "x"
    parts = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}
    assert parse_completion(orjson.dumps(parts)).content == "ab"
    for bad in (b"[]", b"{}", b'{"choices": []}', b'{"choices": [{"message": {"content": null}}]}', b"nope"):
        with pytest.raises(ValueError):
            parse_completion(bad)
    # A model that declined answered: the refusal's text, or empty text when a filter stopped it (chatcall.DECLINED).
    refusal = {"choices": [{"message": {"content": None, "refusal": "I can't"}, "finish_reason": "stop"}]}
    assert parse_completion(orjson.dumps(refusal)).content == "I can't"
    filtered = {"choices": [{"message": {"content": None}, "finish_reason": "content_filter"}]}
    assert (
        parse_completion(orjson.dumps(filtered)).content,
        parse_completion(orjson.dumps(filtered)).finish_reason,
    ) == (
        "",
        "content_filter",
    )


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after(None, "1.5", now=0) == 1.5
    assert parse_retry_after("250", "9", now=0) == 0.25
    assert parse_retry_after(None, "Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)
    assert parse_retry_after(None, "soon", now=0) is None
    assert parse_retry_after(None, None, now=0) is None


# ------------------------------------------------------------------ the direct (aiohttp) transport's HTTP edge cases
COMPLETION = orjson.dumps({"choices": [{"message": {"role": "assistant", "content": "raw ok"}}]})


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[bytes]]]:
    """A socket server that answers each request with the next canned response (bytes written as-is)."""
    responses: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                buffer = b""
                while responses:
                    while b"\r\n\r\n" not in buffer:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        buffer += chunk
                    if b"\r\n\r\n" not in buffer:
                        break
                    head, _, rest = buffer.partition(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                    while len(rest) < length:
                        rest += conn.recv(65536)
                    buffer = rest[length:]
                    response = responses.pop(0)
                    conn.sendall(response)
                    lowered = response.lower()
                    close_delimited = b"content-length" not in lowered and b"transfer-encoding" not in lowered
                    if b"connection: close" in lowered or close_delimited:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", responses
    stop.set()
    thread.join(5)
    listener.close()


def _chunked(body: bytes, *, size: int = 7) -> bytes:
    out = b""
    for start in range(0, len(body), size):
        piece = body[start : start + size]
        out += b"%x\r\n%s\r\n" % (len(piece), piece)
    return out + b"0\r\n\r\n"


@pytest.mark.parametrize("transport", ["direct"])
def test_direct_transport_reads_chunked_gzip_continue_and_close_delimited_bodies(
    raw_server: tuple[str, list[bytes]], transport: str
) -> None:
    base_url, responses = raw_server
    zipped = gzip.compress(COMPLETION)
    responses.extend(
        [
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(COMPLETION), COMPLETION),
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n"
            b"content-encoding: gzip\r\n\r\n" + _chunked(zipped),
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n" + COMPLETION,
        ]
    )

    async def go() -> list[Ok | Fault]:  # type: ignore[type-arg]
        spec = EndpointSpec(base_url=base_url, model="m", api_key_env=None, timeout=5)
        client = ChatClient(spec, transport=transport)  # type: ignore[arg-type]
        results = [await client.attempt(ChatRequest.build(spec, [("user", "x")])) for _ in range(3)]
        await client.aclose()
        return results

    results = run(go())
    assert all(isinstance(r, Ok) and r.value.content == "raw ok" for r in results), results


@pytest.mark.parametrize("transport", ["direct"])
def test_direct_transport_reconnects_after_the_server_closed_an_idle_connection(
    server: FakeOpenAI, transport: str
) -> None:
    async def go() -> list[Ok | Fault]:  # type: ignore[type-arg]
        spec = EndpointSpec(base_url=server.base_url, model="m", api_key_env=None, timeout=5)
        client = ChatClient(spec, transport=transport)  # type: ignore[arg-type]
        first = await client.attempt(ChatRequest.build(spec, [("user", "one")]))
        server.close_connections()  # as servers do with idle keep-alive connections
        await asyncio.sleep(0.05)
        second = await client.attempt(ChatRequest.build(spec, [("user", "two")]))
        await client.aclose()
        return [first, second]

    assert all(isinstance(r, Ok) for r in run(go()))


def test_auto_picks_direct_without_a_proxy_and_the_sdk_stack_with_one() -> None:
    spec = EndpointSpec(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=None)
    assert ChatClient(spec, env={}).transport == "direct"
    assert ChatClient(spec, env={"HTTPS_PROXY": "http://proxy:3128"}).transport == "httpx"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_transport_sends_the_same_request(server: FakeOpenAI, transport: str) -> None:
    assert isinstance(_attempt(server.base_url, "same", transport, temperature=0.2, stop=["x"]), Ok)
    (request,) = server.requests
    assert request.body == {
        "model": "m",
        "messages": [{"role": "user", "content": "same"}],
        "temperature": 0.2,
        "stop": ["x"],
    }
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("AsyncOpenAI/Python")
