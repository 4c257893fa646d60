"""A client for OpenAI-compatible chat endpoints that turns every outcome into a value.

One :class:`ChatClient` per endpoint wraps the ``openai`` SDK's ``AsyncOpenAI`` with ``max_retries=0``: the
:class:`~evalglass.lanes.retry.Retrier` is the only retry policy. :meth:`ChatClient.attempt` makes exactly one HTTP
request and returns :class:`~evalglass.lanes.retry.Ok` with a :class:`ChatReply` (content and usage), or a classified
:class:`~evalglass.lanes.retry.Fault`: a timeout, a dropped connection, HTTP 429 (with its Retry-After), 5xx, 4xx, a
malformed body, a missing API key. Nothing escapes as an exception.

Secrets: the API key is read from the environment variable the spec names (``api_key_env``), handed to the SDK and
kept nowhere else; fault messages are scrubbed of it. The spec holds only the variable's *name*, and the request body
(what the cache hashes and may store) never contains the key.

Transport (``transport=``), chosen per client:

* ``"direct"`` (what ``"auto"`` picks unless an HTTP proxy is configured in the environment): the SDK client
  supplies the request's headers (authorisation, user agent, platform, organisation/project) and base URL; the body
  is serialised with orjson and exchanged over :class:`LeanTransport`'s keep-alive HTTP/1.1 connections; status
  codes are classified exactly as the SDK's exception classes would be. About 0.2 ms of CPU per call.
* ``"lean"``: ``AsyncOpenAI.post`` over :class:`LeanTransport` (about 0.6 ms per call: the SDK's request building).
* ``"httpx"`` (what ``"auto"`` picks when a proxy is configured): the SDK end to end with its stock HTTP stack,
  which honours proxies (about 1.5 ms per call).

The SDK's own HTTP stack costs about a millisecond and a half of CPU per call, which on a single event loop caps a
64-way concurrent run against a 50 ms endpoint at roughly a third of the throughput the executor allows; see
``benchmarks/bench_lanes.py``. All three paths classify every outcome the same way (the tests run each fault
against each transport).
"""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import os
import re
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx2
import openai
import orjson

from evalglass.lanes.executor import Executor
from evalglass.lanes.retry import CallOutcome, Fault, FaultKind, Ok, Retrier
from evalglass.lanes.specs import EndpointSpec

TransportChoice = Literal["auto", "direct", "lean", "httpx"]

_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\"]+")
_MAX_MESSAGE = 500


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A fully rendered request: what is sent, what the cache hashes. Never holds a secret."""

    model: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def build(cls, spec: EndpointSpec, messages: list[tuple[str, str]]) -> ChatRequest:
        return cls(spec.model, tuple(messages), tuple(sorted(spec.sampling().items())))

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": role, "content": content} for role, content in self.messages],
        }
        body.update(self.params)
        return body


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "usage": None
            if self.usage is None
            else {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "total_tokens": self.usage.total_tokens,
            },
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatReply:
        usage = data.get("usage")
        return cls(
            content=str(data["content"]),
            usage=None if not isinstance(usage, Mapping) else Usage(**{k: usage.get(k) for k in _USAGE_KEYS}),
            model=data.get("model"),
            finish_reason=data.get("finish_reason"),
        )


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


class ChatClient:
    """One endpoint's SDK client. Create it inside the event loop that will use it; close it with ``aclose``."""

    def __init__(
        self,
        spec: EndpointSpec,
        *,
        env: Mapping[str, str] | None = None,
        transport: TransportChoice = "auto",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spec = spec
        self.limit = spec.endpoint_limit()
        environment = os.environ if env is None else env
        self._secret: str | None = None
        self._config_fault: Fault | None = None
        self._clock = clock
        api_key = "not-needed"
        if spec.api_key_env is not None:
            value = environment.get(spec.api_key_env, "")
            if not value:
                self._config_fault = Fault(
                    FaultKind.CONFIGURATION,
                    f"environment variable {spec.api_key_env} is not set: export it with the API key for "
                    f"{spec.base_url}, or set api_key_env: null for a server that needs no key",
                )
            else:
                api_key = self._secret = value
        proxied = any(environment.get(name) for name in _PROXY_VARS)
        if transport == "auto":
            transport = "httpx" if proxied else "direct"
        self.transport: TransportChoice = transport
        self._lean = LeanTransport() if transport in ("direct", "lean") else None
        http_client = httpx2.AsyncClient(transport=self._lean) if transport == "lean" else None
        self._direct: _DirectRoute | None = None
        self._openai = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=spec.base_url,
            max_retries=0,
            timeout=spec.timeout,
            http_client=http_client,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient(base_url={self.spec.base_url!r}, model={self.spec.model!r})"

    async def aclose(self) -> None:
        await self._openai.close()
        if self._lean is not None:
            await self._lean.aclose()

    async def attempt(self, request: ChatRequest) -> Ok[ChatReply] | Fault:
        """Exactly one HTTP request; every outcome is a value."""
        if self._config_fault is not None:
            return self._config_fault
        if self.transport == "direct":
            return await self._attempt_direct(request)
        try:
            response = await self._openai.post("/chat/completions", body=request.body(), cast_to=httpx2.Response)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._classify(exc)
        try:
            return Ok(parse_completion(response.content))
        except _Malformed as exc:
            return Fault(
                FaultKind.MALFORMED_RESPONSE,
                self._redact(str(exc)),
                response.status_code,
                None,
                self._redact(_head(response.content)),
            )

    async def call(self, request: ChatRequest, *, executor: Executor, retrier: Retrier) -> CallOutcome[ChatReply]:
        """The request with retries: each attempt runs through ``executor.submit`` under this endpoint's limits."""
        limit = self.limit

        async def one(_number: int) -> Ok[ChatReply] | Fault:
            return await executor.submit(lambda: self.attempt(request), endpoint=limit)

        return await retrier.run(one)

    def _route(self) -> _DirectRoute:
        """The SDK's own headers (auth, user agent, platform, organisation), serialised once."""
        if self._direct is None:
            url = httpx2.URL(self.spec.base_url + "/chat/completions")
            headers: dict[str, str] = {}
            for name, value in {**self._openai.default_headers, **self._openai.auth_headers}.items():
                if isinstance(value, str):
                    headers[name.lower()] = value
            headers.pop("content-length", None)
            default_port = 443 if url.scheme == "https" else 80
            headers["host"] = url.host if url.port in (None, default_port) else f"{url.host}:{url.port}"
            headers["content-type"] = "application/json"
            head = b"POST %s HTTP/1.1\r\n" % url.raw_path + b"".join(
                b"%s: %s\r\n" % (name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
            )
            self._direct = _DirectRoute(url.scheme, url.host, url.port or default_port, head)
        return self._direct

    async def _attempt_direct(self, request: ChatRequest) -> Ok[ChatReply] | Fault:
        assert self._lean is not None
        route = self._route()
        body = orjson.dumps(request.body())
        head = route.head + b"content-length: %d\r\n\r\n" % len(body)
        timeout = self.spec.timeout
        try:
            status, raw_headers, content = await self._lean.exchange(
                route.scheme, route.host, route.port, head, body, connect_timeout=timeout, read_timeout=timeout
            )
        except asyncio.CancelledError:
            raise
        except httpx2.TimeoutException:
            return Fault(FaultKind.TIMEOUT, f"no answer within {timeout:g}s from {self.spec.base_url}")
        except httpx2.TransportError as exc:
            return Fault(FaultKind.CONNECTION, self._redact(f"connection to {self.spec.base_url} failed ({exc})"))
        headers = httpx2.Headers(raw_headers)
        encoding = headers.get("content-encoding", "identity").lower()
        try:
            if encoding == "gzip":
                content = gzip.decompress(content)
            elif encoding == "deflate":
                content = zlib.decompress(content)
            elif encoding not in ("identity", ""):
                raise _Malformed(f"unsupported content-encoding {encoding!r}")
            if status >= 400:
                return self._status_fault(status, headers, _body_message(content, status))
            if not 200 <= status < 300:
                raise _Malformed(f"unexpected HTTP status {status}")
            return Ok(parse_completion(content))
        except (_Malformed, zlib.error, OSError, EOFError) as exc:
            return Fault(
                FaultKind.MALFORMED_RESPONSE, self._redact(str(exc)), status, None, self._redact(_head(content))
            )

    # ------------------------------------------------------------------ classification
    def _status_fault(self, status: int, headers: httpx2.Headers, detail: str) -> Fault:
        message = self._redact(f"HTTP {status} from {self.spec.base_url}: {detail}")
        if status == 429:
            return Fault(FaultKind.RATE_LIMITED, message, status, self._retry_after(headers))
        if status == 408:
            return Fault(FaultKind.TIMEOUT, message, status)
        if status >= 500:
            return Fault(FaultKind.SERVER_ERROR, message, status, self._retry_after(headers))
        if status == 400:
            return Fault(FaultKind.INVALID_REQUEST, message, status)
        return Fault(FaultKind.CLIENT_ERROR, message, status)

    def _classify(self, exc: BaseException) -> Fault:
        if isinstance(exc, openai.APITimeoutError):
            return Fault(FaultKind.TIMEOUT, f"no answer within {self.spec.timeout:g}s from {self.spec.base_url}")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return Fault(FaultKind.CONNECTION, self._redact(f"connection to {self.spec.base_url} failed ({why})"))
        if isinstance(exc, openai.APIStatusError):
            return self._status_fault(exc.status_code, exc.response.headers, _error_message(exc))
        if isinstance(exc, openai.APIResponseValidationError | ValueError):
            return Fault(FaultKind.MALFORMED_RESPONSE, self._redact(f"unreadable answer: {exc}"))
        if isinstance(exc, httpx2.TransportError | OSError):
            return Fault(FaultKind.CONNECTION, self._redact(f"{type(exc).__name__}: {exc}"))
        return Fault(FaultKind.INTERNAL, self._redact(f"unexpected {type(exc).__name__}: {exc}"))

    def _retry_after(self, headers: httpx2.Headers) -> float | None:
        return parse_retry_after(headers.get("retry-after-ms"), headers.get("retry-after"), now=self._clock())

    def _redact(self, text: str) -> str:
        if self._secret and len(self._secret) >= 4:
            text = text.replace(self._secret, "[redacted]")
        text = _BEARER.sub(r"\1[redacted]", text)
        return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


class _Malformed(ValueError):
    pass


def parse_completion(raw: bytes) -> ChatReply:
    """The text answer in a chat-completion body; raises ``_Malformed`` (a ValueError) when there is none."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _Malformed(f"the answer is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _Malformed("the answer is JSON but not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Malformed("the answer has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _Malformed("the first choice has no message")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if not isinstance(content, str):
        if message.get("refusal"):
            raise _Malformed(f"the model refused: {str(message['refusal'])[:200]}")
        if message.get("tool_calls"):
            raise _Malformed("the model answered with tool calls, not text")
        raise _Malformed("the message has no text content")
    usage = data.get("usage")
    return ChatReply(
        content=content,
        usage=Usage(**{k: v if isinstance(v := usage.get(k), int) else None for k in _USAGE_KEYS})
        if isinstance(usage, dict)
        else None,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        finish_reason=choices[0].get("finish_reason") if isinstance(choices[0].get("finish_reason"), str) else None,
    )


def parse_retry_after(milliseconds: str | None, value: str | None, *, now: float) -> float | None:
    """Seconds to wait from ``Retry-After-Ms`` or ``Retry-After`` (delta-seconds or an HTTP date), else None."""
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)


def _body_message(content: bytes, status: int) -> str:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return _head(content, 200) or f"HTTP {status}"
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return _head(content, 200)


@dataclass(frozen=True, slots=True)
class _DirectRoute:
    scheme: str
    host: str
    port: int
    head: bytes  # request line and every header but content-length


def _head(raw: bytes, limit: int = 300) -> str:
    text = raw[:limit].decode("utf-8", "replace")
    return text + ("…" if len(raw) > limit else "")


# ---------------------------------------------------------------------- transport
class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        return not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class LeanTransport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive over asyncio streams; one request per connection at a time; no proxies.

    Request and response bodies are read whole (chat completions are small, and we never stream). Content
    decoding (gzip, deflate) is left to ``httpx2.Response``. Timeouts come from the request's ``timeout``
    extension (set by the SDK from the spec's ``timeout``): ``connect`` for the TCP/TLS handshake, ``read`` for the
    whole exchange. Every failure raises an ``httpx2.TransportError`` subclass, which the SDK maps to
    ``APIConnectionError``/``APITimeoutError``. A connection is never reused after a failure or a cancellation.
    """

    def __init__(self, *, max_idle_per_host: int = 256) -> None:
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._max_idle = max_idle_per_host
        self._ssl: Any = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        timeouts = request.extensions.get("timeout") or {}
        body = await request.aread()
        head = b"%s %s HTTP/1.1\r\n%s\r\n" % (
            request.method.encode("ascii"),
            url.raw_path,
            b"".join(b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw),
        )
        status, headers, content = await self.exchange(
            url.scheme,
            url.host,
            url.port or (443 if url.scheme == "https" else 80),
            head,
            body,
            connect_timeout=timeouts.get("connect"),
            read_timeout=timeouts.get("read"),
            method=request.method,
            request=request,
        )
        return httpx2.Response(
            status,
            headers=headers,
            stream=httpx2.ByteStream(content),
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def exchange(
        self,
        scheme: str,
        host: str,
        port: int,
        head: bytes,
        body: bytes,
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
        method: str = "POST",
        request: httpx2.Request | None = None,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send one request (``head`` ends with the blank line) and read the whole answer.

        Raises ``httpx2.TimeoutException`` or another ``httpx2.TransportError``; never reuses a connection after a
        failure or a cancellation.
        """
        key = (scheme, host, port)
        connection = self._checkout(key)
        if connection is None:
            connection = await self._connect(request, host, port, scheme == "https", connect_timeout)
        reusable = False
        try:
            async with asyncio.timeout(read_timeout):
                connection.writer.write(head + body if body else head)
                await connection.writer.drain()
                status, headers, content, reusable = await _read_response(connection.reader, method)
        except TimeoutError as exc:
            raise httpx2.ReadTimeout(f"no complete answer from {host}:{port} in time", request=request) from exc
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as exc:
            raise httpx2.RemoteProtocolError(
                f"server at {host}:{port} closed the connection before a complete answer ({type(exc).__name__})",
                request=request,
            ) from exc
        except (OSError, ValueError) as exc:
            raise httpx2.ReadError(f"{type(exc).__name__}: {exc}", request=request) from exc
        finally:
            if reusable:
                self._checkin(key, connection)
            else:
                connection.close()
        return status, headers, content

    def _checkout(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        return None

    def _checkin(self, key: tuple[str, str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < self._max_idle and connection.usable():
            idle.append(connection)
        else:
            connection.close()

    async def _connect(
        self, request: httpx2.Request | None, host: str, port: int, https: bool, timeout: float | None
    ) -> _Connection:
        if https and self._ssl is None:
            self._ssl = httpx2.create_ssl_context()
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=self._ssl if https else None, limit=1 << 20
                )
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from exc
        except OSError as exc:
            raise httpx2.ConnectError(f"cannot connect to {host}:{port}: {exc}", request=request) from exc
        return _Connection(reader, writer)

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()


async def _read_response(
    reader: asyncio.StreamReader, method: str
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """Status, headers, body and whether the connection may be reused."""
    while True:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        version, status_text, *_ = lines[0].split(b" ", 2)
        status = int(status_text)
        if not 100 <= status < 200:
            break
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    keep_alive = version == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        value = value.strip()
        headers.append((name, value))
        lowered = name.lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lowered == b"connection":
            keep_alive = keep_alive and value.lower() != b"close"
    if method == "HEAD" or status in (204, 304):
        return status, headers, b"", keep_alive
    if chunked:
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                break
            parts.append((await reader.readexactly(size + 2))[:-2])
        return status, headers, b"".join(parts), keep_alive
    if length is not None:
        return status, headers, await reader.readexactly(length), keep_alive
    return status, headers, await reader.read(), False  # delimited by close


__all__ = [
    "ChatClient",
    "ChatReply",
    "ChatRequest",
    "EndpointSpec",
    "LeanTransport",
    "Usage",
    "parse_completion",
    "parse_retry_after",
]
