"""The Anthropic Messages API (``provider: anthropic``): ``POST {base_url}/messages``.

Request: the key in ``x-api-key`` and ``anthropic-version: 2023-06-01``; system messages joined into the top-level
``system``; each message's ``content`` a list of blocks (``text``; ``tool_use`` with ``id``, ``name``, ``input``;
``tool_result`` with ``tool_use_id`` and ``content`` in a user message, consecutive tool messages joined into one, as
the API wants every result of a turn in the message after it); tools as ``{name, description,
input_schema}``; ``max_tokens`` (required by the API, and so by the config), ``temperature``, ``top_p``,
``stop_sequences``. The API has no ``seed`` and no JSON mode: a config declaring either is refused at load
(``specs.EndpointSpec``).

Answer: the ``text`` blocks joined, ``tool_use`` blocks as calls, ``stop_reason``, and ``usage``. The API's
``input_tokens`` counts only the tokens neither read from nor written to its prompt cache, so ``prompt_tokens`` here
is ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens`` (every input token, as the other APIs
count), with the two cache counts kept apart for pricing.

Errors (``{"type": "error", "error": {"type": ..., "message": ...}}``): ``rate_limit_error`` (429) waits as its
``retry-after`` header says; ``overloaded_error`` (529, or any status) is a server error, retried with backoff (and
its ``retry-after`` when sent); a 429 whose ``error.details.error_code`` is ``enforced_spend_limit_reached`` is a
client error, not retried (the spend cap lifts at the month's end, not in seconds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalglass.lanes.chatcall import Usage, count
from evalglass.lanes.httppost import ErrorSignal
from evalglass.lanes.providers.wire import (
    ListBytes,
    Malformed,
    WireAnswer,
    WireCall,
    error_object,
    json_text,
    loads_object,
    text_of,
)
from evalglass.lanes.retry import FaultKind

API_VERSION = "2023-06-01"


def endpoint(base_url: str, model: str) -> str:
    return f"{base_url}/messages"


def auth_headers(key: str | None) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION}
    if key is not None:
        headers["x-api-key"] = key
    return headers


def request_body(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    built = builder()
    for message in messages:
        built.add(message)
    return built.body(model, tools, params)


class _Builder:
    """The Messages API form of a conversation, one message at a time (:meth:`add`), so that an agent's growing
    conversation is converted a step's new messages at a time (``modelstep.WireMemo``); :func:`request_body` is
    one fed every message. A later tool message may join the results of the last message (the API wants every
    result of a turn in the one user message after it): that message's list grows, in a body already sent too."""

    __slots__ = ("_bytes", "results", "system", "wire")

    def __init__(self) -> None:
        self.system: list[str] = []
        self.wire: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] | None = None  # the tool results of the user message being built
        self._bytes = ListBytes()

    def add(self, message: Mapping[str, Any]) -> None:
        role, parts = message["role"], message["parts"]
        if role == "system":
            self.system.append(text_of(parts))
        elif role == "tool":
            # The agent lane keeps a message per result: consecutive ones are joined.
            if self.results is None:
                self.results = []
                self.wire.append({"role": "user", "content": self.results})
            self.results.extend(_tool_result(part) for part in parts)
            return
        else:
            self.wire.append({"role": "assistant" if role == "assistant" else "user", "content": _blocks(parts)})
        self.results = None

    def body(self, model: str, tools: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": list(self.wire)}
        if self.system:
            body["system"] = "\n\n".join(self.system)
        if tools:
            body["tools"] = [_tool(tool) for tool in tools]
        for name, value in params.items():
            if name == "stop":
                body["stop_sequences"] = list(value)
            elif name in ("max_tokens", "temperature", "top_p"):
                body[name] = value
            else:  # refused at config load (seed, response_format); a caller that passes one anyway is told
                raise ValueError(f"the Messages API has no parameter {name!r}")
        return body

    def encoded(self, body: dict[str, Any]) -> bytes | None:
        """``orjson.dumps(body)`` of a body :meth:`body` made, from each message's bytes written once (None for
        another body): the last message may still be joined by later results, so it is written each time."""
        return self._bytes.body_bytes(body, "messages", self.wire, len(self.wire) - 1)


def builder() -> _Builder:
    """An empty conversation in the Messages API form, to :meth:`~_Builder.add` messages to."""
    return _Builder()


def _blocks(parts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(part["content"])})
        elif kind == "tool_call":
            # The API holds arguments as an object only: text another model sent that was not JSON goes as a note.
            arguments = (
                {"invalid_arguments": part["invalid_arguments"]}
                if "invalid_arguments" in part
                else part.get("arguments")
            )
            blocks.append({"type": "tool_use", "id": part.get("id"), "name": part["name"], "input": arguments or {}})
    return blocks


def _tool_result(part: Mapping[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": part.get("id"),
        "content": json_text(part.get("response")),
    }
    if part.get("is_error"):
        block["is_error"] = True
    return block


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description") is not None:
        wire["description"] = tool["description"]
    wire["input_schema"] = tool.get("parameters") or {"type": "object", "properties": {}}
    return wire


def parse_answer(raw: bytes) -> WireAnswer:
    data = loads_object(raw)
    content = data.get("content")
    if not isinstance(content, list):
        raise Malformed("the answer has no content blocks")
    texts: list[str] = []
    calls: list[WireCall] = []
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            raise Malformed(f"content block {index + 1} is not an object")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise Malformed(f"text block {index + 1} has no text")
            texts.append(text)
        elif kind == "tool_use":
            name, arguments = block.get("name"), block.get("input")
            if not isinstance(name, str):
                raise Malformed(f"tool_use block {index + 1} has no name")
            call_id = block.get("id")
            calls.append(WireCall(call_id if isinstance(call_id, str) else None, name, arguments or {}))
        # thinking, redacted_thinking and server-tool blocks are not the answer
    stop = data.get("stop_reason")  # ``refusal`` without text: the model declined, an empty answer (DECLINED)
    usage = data.get("usage")
    return WireAnswer.read(texts, calls, _usage(usage) if isinstance(usage, dict) else None, stop, data.get("model"))


def _usage(usage: Mapping[str, Any]) -> Usage:
    fresh, output = count(usage.get("input_tokens")), count(usage.get("output_tokens"))
    read, written = count(usage.get("cache_read_input_tokens")), count(usage.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    total = None if prompt is None or output is None else prompt + output
    return Usage(prompt, output, total, read, written)


def read_error(status: int, body: Any) -> ErrorSignal | None:
    error = error_object(body)
    if error is None:
        return None
    kind_name, message = error.get("type"), str(error.get("message") or f"HTTP {status}")
    details = error.get("details")
    if isinstance(details, dict) and details.get("error_code") == "enforced_spend_limit_reached":
        return ErrorSignal(f"{message} (spend limit reached: no retry lifts it)", FaultKind.CLIENT_ERROR)
    if kind_name == "overloaded_error":
        return ErrorSignal(f"overloaded: {message}", FaultKind.SERVER_ERROR)
    if kind_name == "rate_limit_error":
        return ErrorSignal(message, FaultKind.RATE_LIMITED)
    return ErrorSignal(f"{kind_name}: {message}" if isinstance(kind_name, str) else message)


__all__ = ["API_VERSION", "auth_headers", "builder", "endpoint", "parse_answer", "read_error", "request_body"]
