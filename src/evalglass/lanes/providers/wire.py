"""What every native provider module gives and takes, in EvalGlass's own terms.

A request's messages are EvalGlass's message form as plain JSON (``core/conversation.py``): ``{"role": ..., "parts":
[...]}`` with ``text`` parts (``content``), ``tool_call`` parts (``id``, ``name``, ``arguments``, or
``invalid_arguments``: the text a model sent that was not JSON) and ``tool_call_response`` parts (``id``,
``response``) in ``role: tool`` messages; tools are ``{name, description, parameters}`` (a JSON Schema); sampling
parameters carry the chat-completions names (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop``,
``response_format``), which each module renames. An answer is a :class:`WireAnswer`.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from evalglass.core.fieldpath import ABSENT
from evalglass.lanes.chatcall import ChatReply, Usage, declined
from evalglass.lanes.httppost import ErrorSignal


class Malformed(ValueError):
    """An answer the module cannot read: the client makes it a ``malformed_response`` fault."""


@dataclass(frozen=True, slots=True)
class WireCall:
    """A tool call the model asked for: ``arguments`` a JSON value (ABSENT with ``invalid``, the text sent when it
    was not JSON)."""

    id: str | None
    name: str
    arguments: Any
    invalid: str | None = None

    def part(self) -> dict[str, Any]:
        """The call as a ``tool_call`` part of EvalGlass's message form."""
        part: dict[str, Any] = {"type": "tool_call", "name": self.name}
        if self.id is not None:
            part["id"] = self.id
        if self.invalid is not None:
            part["invalid_arguments"] = self.invalid
        else:
            part["arguments"] = self.arguments
        return part

    @classmethod
    def of_part(cls, part: Mapping[str, Any]) -> WireCall:
        """The call a ``tool_call`` part holds (the inverse of :meth:`part`)."""
        invalid = part.get("invalid_arguments")
        return cls(part.get("id"), str(part["name"]), ABSENT if invalid is not None else part.get("arguments"), invalid)


@dataclass(frozen=True, slots=True)
class WireAnswer:
    """One model answer: its text (None when it has none), its tool calls, usage, why it stopped, which model."""

    text: str | None
    calls: tuple[WireCall, ...] = ()
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None

    @classmethod
    def read(cls, texts: list[str], calls: list[WireCall], usage: Usage | None, finish: Any, model: Any) -> WireAnswer:
        """An answer from what a module read: the texts joined (None when there were none, and "" for an answer
        declined for a stated reason without text or calls: :data:`~evalglass.lanes.chatcall.DECLINED`), finish
        reason and model when they are text."""
        refused = not texts and not calls and declined(finish)
        return cls(
            "".join(texts) if texts or refused else None,
            tuple(calls),
            usage,
            finish if isinstance(finish, str) else None,
            model if isinstance(model, str) else None,
        )

    def chat_reply(self) -> ChatReply:
        """The answer as a chat lane or judge reads it: text, or ``Malformed`` (tool calls are not an answer)."""
        if self.text is None:
            if self.calls:
                raise Malformed("the model answered with tool calls, not text")
            raise Malformed(f"the answer has no text (finish reason {self.finish_reason or 'not given'})")
        return ChatReply(self.text, self.usage, self.model, self.finish_reason)


class Wire(Protocol):
    """A provider module's functions (``lanes/providers/anthropic.py``, ``gemini.py``)."""

    def endpoint(self, base_url: str, model: str) -> str: ...

    def auth_headers(self, key: str | None) -> dict[str, str]: ...

    def request_body(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        params: Mapping[str, Any],
    ) -> dict[str, Any]: ...

    def builder(self) -> WireBuilder:
        """An empty conversation in the API's form, built a message at a time (``request_body`` is one fed every
        message)."""
        ...

    def parse_answer(self, raw: bytes) -> WireAnswer: ...

    def read_error(self, status: int, body: Any) -> ErrorSignal | None: ...


class WireBuilder(Protocol):
    """A conversation in a provider's form, built a message at a time: an agent's conversation grows by a step's
    few messages, and only those are converted (``modelstep.WireMemo``)."""

    def add(self, message: Mapping[str, Any]) -> None: ...

    def body(self, model: str, tools: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        """The request body of the conversation so far (raises ValueError for a parameter the API has not)."""
        ...

    def encoded(self, body: dict[str, Any]) -> bytes | None:
        """``orjson.dumps(body)`` of a body :meth:`body` made, written from its messages' kept bytes
        (:class:`ListBytes`); None for another body."""
        ...


class ListBytes:
    """The bytes ``orjson.dumps`` writes of a request body whose one list (the conversation) grows from step to
    step, made from each item's bytes, written once, instead of writing the whole conversation again at every step
    (quadratic in a trajectory's length).

    Exact: orjson writes a dict's items in order and a list as its items' bytes joined by commas, and an item's
    bytes do not depend on where it sits but for orjson's nesting limit, counted from the top: each item is written
    as deep as it sits in a body (two levels), so it is refused exactly when the whole body would be. The rest of
    the body (model, tools, parameters) is written whole at every step, with the list empty, and the split checked
    against those bytes. Limit: an item changed in place after it was written is not seen; items the caller says
    may still change (``final``) are written again each time."""

    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written: list[bytes] = []

    def body_bytes(self, body: Mapping[str, Any], key: str, items: list[Any], final: int) -> bytes | None:
        """``orjson.dumps(body)``, byte for byte, when ``body[key]`` holds ``items`` (the same objects, in order:
        None otherwise, and when the split does not check); ``items[:final]`` never change once written (``final``
        never shrinks for one ``ListBytes``). Raises TypeError, as ``orjson.dumps`` would, for what is not JSON."""
        listed = body.get(key)
        if not isinstance(listed, list) or len(listed) != len(items) or not all(map(operator.is_, listed, items)):
            return None
        written = self._written
        for item in items[len(written) : final]:
            written.append(orjson.dumps([[item]])[2:-2])
        fresh = [orjson.dumps([[item]])[2:-2] for item in items[len(written) :]]
        before: dict[str, Any] = {}
        for name, value in body.items():
            if name == key:
                break
            before[name] = value
        head = (orjson.dumps(before)[:-1] + b"," if before else b"{") + orjson.dumps(key) + b":["
        frame = orjson.dumps({**body, key: []})
        if not frame.startswith(head) or frame[len(head) : len(head) + 1] != b"]":
            return None
        return head + b",".join(written + fresh if fresh else written) + frame[len(head) :]


def text_messages(pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """A chat request's (role, content) pairs in EvalGlass's message form."""
    return [{"role": role, "parts": [{"type": "text", "content": content}]} for role, content in pairs]


def text_of(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text parts of a message, joined."""
    return "".join(str(part.get("content", "")) for part in parts if part.get("type") == "text")


def json_text(value: Any) -> str:
    """A tool's response as text: text as it is, any other JSON value as JSON text."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def call_of(call_id: str | None, name: str, arguments: Any) -> WireCall:
    """A call from arguments an API sent as an object (kept), as JSON text (parsed; kept as sent when it is not
    JSON), or not at all (no arguments: ``{}``)."""
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return WireCall(call_id, name, {})
    if not isinstance(arguments, str):
        return WireCall(call_id, name, arguments)
    try:
        return WireCall(call_id, name, orjson.loads(arguments))
    except orjson.JSONDecodeError:
        return WireCall(call_id, name, ABSENT, arguments)


def loads_object(raw: bytes) -> dict[str, Any]:
    """A 2xx body as a JSON object, or ``Malformed``."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Malformed(f"the answer is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise Malformed("the answer is JSON but not an object")
    return data


def error_object(body: Any) -> dict[str, Any] | None:
    """The ``error`` object both native APIs wrap their error answers in."""
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


__all__ = [
    "ListBytes",
    "Malformed",
    "Wire",
    "WireAnswer",
    "WireCall",
    "call_of",
    "error_object",
    "json_text",
    "loads_object",
    "text_messages",
    "text_of",
]
