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
  is serialised with orjson and sent over an ``aiohttp`` session's keep-alive connection pool; status codes are
  classified exactly as the SDK's exception classes would be. About 0.3 ms of CPU per call.
* ``"httpx"`` (what ``"auto"`` picks when a proxy is configured): the SDK end to end with its stock HTTP stack,
  which honours proxies (about 1.5 ms per call).

The SDK's own HTTP stack costs about a millisecond and a half of CPU per call, which on a single event loop caps a
64-way concurrent run against a 50 ms endpoint at roughly a third of the throughput the executor allows; see
``benchmarks/bench_lanes.py``. (An earlier hand-written HTTP/1.1 client was replaced by aiohttp, a well-kept library
that meets the same throughput target.) Both paths classify every outcome the same way (the tests run each fault
against each transport).
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx2
import openai
import orjson

from evalglass import redaction
from evalglass.lanes.callcache import CallStore, Hit, through_cache
from evalglass.lanes.executor import Executor
from evalglass.lanes.retry import Attempt, CallOutcome, Fault, FaultKind, Ok, Retrier
from evalglass.lanes.specs import EndpointSpec

TransportChoice = Literal["auto", "direct", "httpx"]
T = TypeVar("T")

_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
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


def recorded_tries(hit: Mapping[str, Any]) -> int:
    """The attempts a cached call took when it was made (entries cached before this was recorded: 1)."""
    tries = hit.get("attempts")
    return tries if type(tries) is int and tries >= 1 else 1


@dataclass(frozen=True, slots=True)
class ChatAnswer:
    """How one chat call ended, through the cache: the reply or the fault; ``cached`` when it was read from the cache
    (``replayed`` when that entry is this same run's, made before an interruption); ``attempts`` made now; ``tries``,
    the attempts the call took (a cached call keeps the count it was made with)."""

    reply: ChatReply | None
    fault: Fault | None
    cached: bool
    attempts: tuple[Attempt, ...]
    tries: int
    replayed: bool = False


async def answer(
    client: ChatClient,
    request: ChatRequest,
    *,
    key: str,
    cache: CallStore | None,
    kind: str,
    executor: Executor,
    retrier: Retrier,
) -> ChatAnswer:
    """One chat call (a lane's or a judge's) through the call cache: replayed, or made and stored on success."""

    def replay(hit: Hit) -> ChatAnswer | None:
        if isinstance(hit.value, dict) and "content" in hit.value:
            return ChatAnswer(ChatReply.from_json(hit.value), None, True, (), recorded_tries(hit.value), hit.replayed)
        return None

    async def call() -> ChatAnswer:
        outcome = await client.call(request, executor=executor, retrier=retrier)
        reply = outcome.value if outcome.fault is None else None
        return ChatAnswer(reply, outcome.fault, False, outcome.attempts, len(outcome.attempts))

    def stored(made: ChatAnswer) -> dict[str, Any] | None:
        return None if made.reply is None else {**made.reply.to_json(), "attempts": made.tries}

    return await through_cache(cache, key, kind=kind, request=request.body(), replay=replay, call=call, stored=stored)


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
        # Faults quote bodies and exceptions: the key, and every other secret of the environment, are replaced
        # before any of it is cut to length.
        self._redactor = redaction.current(env, extra=(self._secret,) if self._secret else ())
        proxied = any(environment.get(name) for name in _PROXY_VARS)
        if transport == "auto":
            transport = "httpx" if proxied else "direct"
        self.transport: TransportChoice = transport
        self._aiohttp: Any = None  # aiohttp.ClientSession, opened on first use inside the running loop
        self._openai = openai.AsyncOpenAI(api_key=api_key, base_url=spec.base_url, max_retries=0, timeout=spec.timeout)

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient(base_url={self.spec.base_url!r}, model={self.spec.model!r})"

    async def aclose(self) -> None:
        await self._openai.close()
        if self._aiohttp is not None:
            await self._aiohttp.close()
            self._aiohttp = None

    async def attempt(self, request: ChatRequest) -> Ok[ChatReply] | Fault:
        """Exactly one HTTP request; every outcome is a value."""
        return await self.post(request.body(), parse_completion)

    async def post(self, body: dict[str, Any], parse: Callable[[bytes], T]) -> Ok[T] | Fault:
        """Exactly one ``POST /chat/completions`` of ``body``, its answer read by ``parse`` (which raises a
        ValueError for an answer it cannot read: a malformed response); every outcome is a value. The agent lane's
        model steps (tools, tool calls) come through here too."""
        if self._config_fault is not None:
            return self._config_fault
        if self.transport == "direct":
            return await self._attempt_direct(body, parse)
        try:
            response = await self._openai.post("/chat/completions", body=body, cast_to=httpx2.Response)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._classify(exc)
        try:
            return Ok(parse(response.content))
        except ValueError as exc:
            return Fault(
                FaultKind.MALFORMED_RESPONSE,
                self._redact(str(exc)),
                response.status_code,
                None,
                self._redacted_head(response.content),
            )

    async def call(self, request: ChatRequest, *, executor: Executor, retrier: Retrier) -> CallOutcome[ChatReply]:
        """The request with retries: each attempt runs through ``executor.submit`` under this endpoint's limits."""
        limit = self.limit

        async def one(_number: int) -> Ok[ChatReply] | Fault:
            return await executor.submit(lambda: self.attempt(request), endpoint=limit)

        return await retrier.run(one)

    def _aiohttp_session(self) -> Any:
        """The session (SDK headers, unlimited pool: the executor is the limit) and what every request reuses."""
        if self._aiohttp is None:
            import aiohttp

            headers = {
                name: value
                for name, value in {**self._openai.default_headers, **self._openai.auth_headers}.items()
                if isinstance(value, str) and name.lower() != "content-length"
            }
            headers["Content-Type"] = "application/json"
            # aiohttp adds its own User-Agent unless one is set; the SDK's headers carry one, and asking aiohttp to
            # skip it instead costs ~25 us of CPU per request (its slow header path), so only when they do not.
            has_agent = any(name.lower() == "user-agent" for name in headers)
            self._aiohttp = aiohttp.ClientSession(
                headers=headers,
                connector=aiohttp.TCPConnector(limit=0, ssl=True),
                skip_auto_headers=() if has_agent else ("User-Agent",),
                timeout=aiohttp.ClientTimeout(total=self.spec.timeout),
                trust_env=False,
            )
            self._url = self.spec.base_url + "/chat/completions"
            self._payload_error: type[Exception] = aiohttp.ClientPayloadError
            self._connection_errors: tuple[type[Exception], ...] = (
                aiohttp.ClientConnectionError,
                aiohttp.ClientResponseError,
                OSError,
            )
        return self._aiohttp

    async def _attempt_direct(self, body: dict[str, Any], parse: Callable[[bytes], T]) -> Ok[T] | Fault:
        """One request over aiohttp's keep-alive pool, with the SDK's headers; classified like the SDK would."""
        session = self._aiohttp_session()
        status = 0
        content = b""
        headers: Any = None
        try:
            async with session.post(self._url, data=orjson.dumps(body)) as response:
                status = response.status
                content = await response.read()
                if status >= 400:
                    headers = httpx2.Headers(list(response.headers.items()))
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            return Fault(FaultKind.TIMEOUT, f"no answer within {self.spec.timeout:g}s from {self.spec.base_url}")
        except self._payload_error as exc:
            return Fault(FaultKind.CONNECTION, self._redact(f"connection to {self.spec.base_url} failed ({exc})"))
        except self._connection_errors as exc:
            return Fault(
                FaultKind.CONNECTION,
                self._redact(f"connection to {self.spec.base_url} failed ({type(exc).__name__}: {exc})"),
            )
        try:
            if headers is not None:
                return self._status_fault(status, headers, self._body_message(content, status))
            if not 200 <= status < 300:
                raise _Malformed(f"unexpected HTTP status {status}")
            return Ok(parse(content))
        except ValueError as exc:
            return Fault(
                FaultKind.MALFORMED_RESPONSE, self._redact(str(exc)), status, None, self._redacted_head(content)
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

    def _body_message(self, content: bytes, status: int) -> str:
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            return self._redacted_head(content, 200) or f"HTTP {status}"
        error = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        return self._redacted_head(content, 200)

    def _retry_after(self, headers: httpx2.Headers) -> float | None:
        return parse_retry_after(headers.get("retry-after-ms"), headers.get("retry-after"), now=self._clock())

    def _redact(self, text: str) -> str:
        return self._redactor.head(text, _MAX_MESSAGE)

    def _redacted_head(self, raw: bytes, limit: int = 300) -> str:
        """The start of a body: the whole body is decoded and redacted first, then cut."""
        return self._redactor.head(raw.decode("utf-8", "replace"), limit)


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
            raise _Malformed(f"the model refused: {message['refusal']}")  # cut (after redaction) by the caller
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


__all__ = [
    "ChatClient",
    "ChatReply",
    "ChatRequest",
    "EndpointSpec",
    "Usage",
    "parse_completion",
    "parse_retry_after",
]
