"""A client for OpenAI-compatible chat endpoints (``provider: openai``) that turns every outcome into a value.

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
  is sent by :class:`~evalglass.lanes.httppost.JsonPoster` (orjson, an ``aiohttp`` keep-alive pool, the one status
  classification the native providers share, which matches the SDK's exception classes). About 0.3 ms of CPU per
  call.
* ``"httpx"`` (what ``"auto"`` picks when a proxy is configured): the SDK end to end with its stock HTTP stack,
  which honours proxies (about 1.5 ms per call).

The SDK's own HTTP stack costs about a millisecond and a half of CPU per call, which on a single event loop caps a
64-way concurrent run against a 50 ms endpoint at roughly a third of the throughput the executor allows; see
``benchmarks/bench_lanes.py``. (An earlier hand-written HTTP/1.1 client was replaced by aiohttp, a well-kept library
that meets the same throughput target.) Both paths classify every outcome the same way (the tests run each fault
against each transport).

What a call asks and answers (:class:`ChatRequest`, :class:`ChatReply`, :class:`Usage`) and the call through the
cache (:func:`answer`) are provider-neutral and live in ``lanes/chatcall.py``; they are re-exported here.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import httpx2
import openai

from evalglass import redaction
from evalglass.lanes.chatcall import (
    ChatAnswer,
    ChatReply,
    ChatRequest,
    TransportChoice,
    Usage,
    answer,
    call_with_retries,
    declined,
    openai_usage,
    recorded_tries,
)
from evalglass.lanes.executor import Executor
from evalglass.lanes.httppost import ErrorSignal, JsonPoster, api_key_of, parse_retry_after, status_fault
from evalglass.lanes.providers.wire import Malformed as _Malformed
from evalglass.lanes.providers.wire import loads_object
from evalglass.lanes.retry import CallOutcome, Fault, FaultKind, Ok, Retrier
from evalglass.lanes.specs import EndpointSpec

T = TypeVar("T")

_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
_MAX_MESSAGE = 500


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
        self._secret, self._config_fault = api_key_of(spec, environment)
        self._clock = clock
        # Faults quote bodies and exceptions: the key, and every other secret of the environment, are replaced
        # before any of it is cut to length.
        self._redactor = redaction.current(env, extra=(self._secret,) if self._secret else ())
        proxied = any(environment.get(name) for name in _PROXY_VARS)
        if transport == "auto":
            transport = "httpx" if proxied else "direct"
        self.transport: TransportChoice = transport
        self._openai = openai.AsyncOpenAI(
            api_key=self._secret or "not-needed", base_url=spec.base_url, max_retries=0, timeout=spec.timeout
        )
        self._poster: JsonPoster | None = None  # the direct transport, opened on first use inside the running loop

    def __repr__(self) -> str:  # never shows the key
        return f"ChatClient(base_url={self.spec.base_url!r}, model={self.spec.model!r})"

    async def aclose(self) -> None:
        await self._openai.close()
        if self._poster is not None:
            await self._poster.aclose()
            self._poster = None

    async def attempt(self, request: ChatRequest) -> Ok[ChatReply] | Fault:
        """Exactly one HTTP request; every outcome is a value."""
        return await self.post(request.body(), parse_completion)

    async def post(
        self, body: Mapping[str, Any], parse: Callable[[bytes], T], *, data: bytes | None = None
    ) -> Ok[T] | Fault:
        """Exactly one ``POST /chat/completions`` of ``body``, its answer read by ``parse`` (which raises a
        ValueError for an answer it cannot read: a malformed response); every outcome is a value. ``data``: the
        body as ``orjson.dumps`` writes it, when the caller has it already (the direct transport sends it)."""
        if self._config_fault is not None:
            return self._config_fault
        if self.transport == "direct":
            return await self._direct().post(self._url, body, parse, data=data)
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
                self._redactor.head(response.content.decode("utf-8", "replace"), 300),
            )

    async def call(self, request: ChatRequest, *, executor: Executor, retrier: Retrier) -> CallOutcome[ChatReply]:
        """The request with retries: each attempt runs through ``executor.submit`` under this endpoint's limits."""
        return await call_with_retries(self, request, executor=executor, retrier=retrier)

    def _direct(self) -> JsonPoster:
        """The aiohttp transport, with the SDK's headers (authorisation, user agent, platform, organisation)."""
        if self._poster is None:
            headers = {
                name: value
                for name, value in {**self._openai.default_headers, **self._openai.auth_headers}.items()
                if isinstance(value, str)
            }
            self._poster = JsonPoster(
                where=self.spec.base_url,
                headers=headers,
                timeout=self.spec.timeout,
                redactor=self._redactor,
                clock=self._clock,
                read_error=openai_error,
            )
            self._url = self.spec.base_url + "/chat/completions"
        return self._poster

    # ------------------------------------------------------------------ classification (the SDK's stack)
    def _classify(self, exc: BaseException) -> Fault:
        if isinstance(exc, openai.APITimeoutError):
            return Fault(FaultKind.TIMEOUT, f"no answer within {self.spec.timeout:g}s from {self.spec.base_url}")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            why = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
            return Fault(FaultKind.CONNECTION, self._redact(f"connection to {self.spec.base_url} failed ({why})"))
        if isinstance(exc, openai.APIStatusError):
            headers = exc.response.headers
            wait = parse_retry_after(headers.get("retry-after-ms"), headers.get("retry-after"), now=self._clock())
            return status_fault(exc.status_code, self.spec.base_url, _error_message(exc), wait, self._redactor)
        if isinstance(exc, openai.APIResponseValidationError | ValueError):
            return Fault(FaultKind.MALFORMED_RESPONSE, self._redact(f"unreadable answer: {exc}"))
        if isinstance(exc, httpx2.TransportError | OSError):
            return Fault(FaultKind.CONNECTION, self._redact(f"{type(exc).__name__}: {exc}"))
        return Fault(FaultKind.INTERNAL, self._redact(f"unexpected {type(exc).__name__}: {exc}"))

    def _redact(self, text: str) -> str:
        return self._redactor.head(text, _MAX_MESSAGE)


def openai_error(status: int, body: Any) -> ErrorSignal | None:
    """``{"error": {"message": ...}}`` (or the message at the top): the status alone says how to retry."""
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return ErrorSignal(str(error["message"]))
    return None


def parse_completion(raw: bytes) -> ChatReply:
    """The text answer in a chat-completion body; raises ``_Malformed`` (a ValueError) when there is none."""
    data = loads_object(raw)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Malformed("the answer has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _Malformed("the first choice has no message")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    finish = choices[0].get("finish_reason")
    if not isinstance(content, str):
        if message.get("tool_calls"):
            raise _Malformed("the model answered with tool calls, not text")
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            content = refusal  # structured outputs: the model declined, and this is what it said (DECLINED)
        elif declined(finish):
            content = ""  # the provider's filter stopped the answer before any text: an empty answer
        else:
            raise _Malformed("the message has no text content")
    usage = data.get("usage")
    return ChatReply(
        content=content,
        usage=openai_usage(usage) if isinstance(usage, dict) else None,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)


__all__ = [
    "ChatAnswer",
    "ChatClient",
    "ChatReply",
    "ChatRequest",
    "EndpointSpec",
    "TransportChoice",
    "Usage",
    "answer",
    "openai_error",
    "openai_usage",
    "parse_completion",
    "parse_retry_after",
    "recorded_tries",
]
