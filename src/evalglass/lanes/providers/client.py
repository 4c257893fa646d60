"""The client of a native model API: a provider module's wire translation sent over aiohttp, every outcome a value.

One client per endpoint, like :class:`~evalglass.lanes.chat.ChatClient` and with the same contract
(:class:`~evalglass.lanes.chatcall.ChatCaller`): :meth:`NativeClient.attempt` makes exactly one request, retried
by :meth:`NativeClient.call` under the spec's policy and the endpoint's limits. :meth:`NativeClient.post` sends any
body the module built (a chat request, or a model step with tools) and reads the answer with the parser given.

The key is read from the variable the spec names and kept only in the session's headers; fault messages pass
through the redactor (with the key added) before they are cut.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from evalglass import redaction
from evalglass.lanes.chatcall import ChatReply, ChatRequest, call_with_retries
from evalglass.lanes.executor import Executor
from evalglass.lanes.httppost import JsonPoster, api_key_of
from evalglass.lanes.providers import wire_of
from evalglass.lanes.providers.wire import WireAnswer, text_messages
from evalglass.lanes.retry import CallOutcome, Fault, FaultKind, Ok, Retrier
from evalglass.lanes.specs import EndpointSpec
from evalglass.version import __version__

T = TypeVar("T")


class NativeClient:
    """One native endpoint (``provider: anthropic | gemini``). Create it inside the event loop that uses it."""

    def __init__(
        self, spec: EndpointSpec, *, env: Mapping[str, str] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.spec = spec
        self.limit = spec.endpoint_limit()
        self.wire = wire_of(spec.provider)
        secret, self._config_fault = api_key_of(spec, os.environ if env is None else env)
        self.url = self.wire.endpoint(spec.base_url, spec.model)
        self._poster = JsonPoster(
            where=spec.base_url,
            # A User-Agent of our own also keeps aiohttp off its slower path for skipping its default one.
            headers={"User-Agent": f"evalglass/{__version__}", **self.wire.auth_headers(secret)},
            timeout=spec.timeout,
            redactor=redaction.current(env, extra=(secret,) if secret else ()),
            clock=clock,
            read_error=self.wire.read_error,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"NativeClient(provider={self.spec.provider.value!r}, base_url={self.spec.base_url!r})"

    async def aclose(self) -> None:
        await self._poster.aclose()

    async def post(
        self, body: Mapping[str, Any], parse: Callable[[bytes], T], *, data: bytes | None = None
    ) -> Ok[T] | Fault:
        """Exactly one request of a body the provider module built; ``parse`` raises ValueError for an answer it
        cannot read (a malformed response). ``data``: the body as ``orjson.dumps`` writes it, when the caller has it
        already (an agent's step: the builder's ``encoded``)."""
        if self._config_fault is not None:
            return self._config_fault
        return await self._poster.post(self.url, body, parse, data=data)

    async def attempt(self, request: ChatRequest) -> Ok[ChatReply] | Fault:
        """One chat call: the request's messages and sampling parameters in the provider's shape, its text back."""
        try:
            body = self.wire.request_body(request.model, text_messages(request.messages), (), dict(request.params))
        except ValueError as exc:
            return Fault(FaultKind.INVALID_REQUEST, str(exc))
        return await self.post(body, self._reply)

    def _reply(self, raw: bytes) -> ChatReply:
        answer: WireAnswer = self.wire.parse_answer(raw)
        return answer.chat_reply()

    async def call(self, request: ChatRequest, *, executor: Executor, retrier: Retrier) -> CallOutcome[ChatReply]:
        return await call_with_retries(self, request, executor=executor, retrier=retrier)


__all__ = ["NativeClient"]
