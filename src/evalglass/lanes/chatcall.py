"""One chat call as a lane or a judge makes it, whatever API serves it: what is asked (:class:`ChatRequest`), what
came back (:class:`ChatReply`, :class:`Usage`), what a client is (:class:`ChatCaller`), and the call through the
cache (:func:`answer`).

The request is the same value for every provider (the chat-completions names of messages and sampling parameters),
so the call cache keys a call by what was asked, never by the wire it travelled; each client translates it
(``lanes/chat.py`` for OpenAI-compatible endpoints, ``lanes/providers/`` for the native APIs;
``lanes/chatclients.py`` picks one). Nothing here imports an HTTP client or an SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from evalglass.core.finish import DECLINED as DECLINED
from evalglass.core.finish import TRUNCATED as TRUNCATED
from evalglass.core.finish import declined as declined
from evalglass.core.finish import truncated as truncated
from evalglass.lanes.callcache import CallStore, Hit, through_cache
from evalglass.lanes.specs import EndpointSpec

if TYPE_CHECKING:
    from evalglass.lanes.executor import EndpointLimit, Executor
    from evalglass.lanes.retry import Attempt, CallOutcome, Fault, Ok, Retrier

#: The OpenAI client's HTTP stack (``lanes/chat.py``): ``direct`` (aiohttp), ``httpx`` (the SDK's), ``auto``.
TransportChoice = Literal["auto", "direct", "httpx"]


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
        """The request in the chat-completions shape: what OpenAI-compatible endpoints are sent, and what the call
        cache hashes for every provider."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": role, "content": content} for role, content in self.messages],
        }
        body.update(self.params)
        return body


@dataclass(frozen=True, slots=True)
class Usage:
    """One call's tokens as its API reported them. ``prompt_tokens`` counts every input token, those read from or
    written to the provider's prompt cache included (``cache_read_tokens``, ``cache_write_tokens``: None when the
    API said nothing of them)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """What the call cache keeps: the cache counts only when reported, so entries made without them keep their
        bytes."""
        data: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cache_read_tokens is not None:
            data["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            data["cache_write_tokens"] = self.cache_write_tokens
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        return cls(**{key: count(data.get(key)) for key in _USAGE_KEYS})


def count(value: Any) -> int | None:
    """A token count an API reported: a non-negative integer, else None (never a guess)."""
    return value if type(value) is int and value >= 0 else None


_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens")


def openai_usage(usage: Mapping[str, Any]) -> Usage:
    """Chat completions' ``usage``: ``prompt_tokens`` already counts the cached ones, which
    ``prompt_tokens_details.cached_tokens`` reports when the endpoint has a prompt cache."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=count(usage.get("prompt_tokens")),
        completion_tokens=count(usage.get("completion_tokens")),
        total_tokens=count(usage.get("total_tokens")),
        cache_read_tokens=count(cached),
    )


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str
    usage: Usage | None = None
    model: str | None = None
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "usage": None if self.usage is None else self.usage.to_json(),
            "model": self.model,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatReply:
        usage = data.get("usage")
        return cls(
            content=str(data["content"]),
            usage=Usage.from_json(usage) if isinstance(usage, Mapping) else None,
            model=data.get("model"),
            finish_reason=data.get("finish_reason"),
        )


class ChatCaller(Protocol):
    """An endpoint's client as lanes and judges use it: exactly one request per :meth:`attempt`, retried by
    :meth:`call`; every outcome a value."""

    spec: EndpointSpec
    limit: EndpointLimit

    async def attempt(self, request: ChatRequest) -> Ok[ChatReply] | Fault: ...

    async def call(self, request: ChatRequest, *, executor: Executor, retrier: Retrier) -> CallOutcome[ChatReply]: ...

    async def aclose(self) -> None: ...


async def call_with_retries(
    client: ChatCaller, request: ChatRequest, *, executor: Executor, retrier: Retrier
) -> CallOutcome[ChatReply]:
    """``client``'s request with retries: each attempt runs through ``executor.submit`` under the endpoint's
    limits."""
    limit = client.limit

    async def one(_number: int) -> Ok[ChatReply] | Fault:
        return await executor.submit(lambda: client.attempt(request), endpoint=limit)

    return await retrier.run(one)


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
    client: ChatCaller,
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


__all__ = [
    "ChatAnswer",
    "ChatCaller",
    "ChatReply",
    "ChatRequest",
    "TransportChoice",
    "Usage",
    "answer",
    "call_with_retries",
    "count",
    "openai_usage",
    "recorded_tries",
]
