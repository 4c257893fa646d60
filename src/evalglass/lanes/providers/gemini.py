"""The Gemini API (``provider: gemini``): ``POST {base_url}/models/{model}:generateContent``.

Request: the key in ``x-goog-api-key``; system messages as ``systemInstruction``; ``contents`` with roles ``user``
and ``model``, each a list of ``parts`` (``text``; ``functionCall`` with ``name`` and ``args``; ``functionResponse``
with ``name`` and ``response``, an object: a response that is not one goes as ``{"result": ...}``); tools as one
``{"functionDeclarations": [...]}``; sampling parameters in ``generationConfig`` (``temperature``, ``topP``,
``maxOutputTokens``, ``seed``, ``stopSequences``; JSON mode as ``responseMimeType: application/json``). A
function response names its function: the call with the same id, else the call at the same position in the
preceding model turn; consecutive tool messages are joined into one user turn, as the API wants every response to
a turn's calls in the turn after it.

Answer: the first candidate's ``text`` parts joined (parts marked ``thought`` are not the answer), its
``functionCall`` parts as calls, ``finishReason``; no candidate (a blocked prompt) or a candidate without content (a
blocked answer) is malformed, with the reason the API gave. ``usageMetadata``: ``promptTokenCount`` (it already
counts ``cachedContentTokenCount``, kept apart as the cache read) plus ``toolUsePromptTokenCount``;
``candidatesTokenCount`` plus ``thoughtsTokenCount`` (billed as output).

Errors (``{"error": {"code", "message", "status", "details"}}``): ``RESOURCE_EXHAUSTED`` (429) is rate limiting,
waiting as the ``google.rpc.RetryInfo`` detail's ``retryDelay`` says when no header does; ``UNAVAILABLE`` (503) and
other 5xx are server errors, retried with backoff.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from evalglass.lanes.chatcall import Usage, count, declined
from evalglass.lanes.httppost import ErrorSignal
from evalglass.lanes.providers.wire import (
    ListBytes,
    Malformed,
    WireAnswer,
    WireCall,
    call_of,
    error_object,
    loads_object,
    text_of,
)
from evalglass.lanes.retry import FaultKind

_GENERATION = {"temperature": "temperature", "top_p": "topP", "max_tokens": "maxOutputTokens", "seed": "seed"}
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def endpoint(base_url: str, model: str) -> str:
    return f"{base_url}/models/{quote(model.removeprefix('models/'), safe='-._~')}:generateContent"


def auth_headers(key: str | None) -> dict[str, str]:
    return {} if key is None else {"x-goog-api-key": key}


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
    """The Gemini form of a conversation, one message at a time (:meth:`add`), so that an agent's growing
    conversation is converted a step's new messages at a time (``modelstep.WireMemo``); :func:`request_body` is
    one fed every message. A later tool message may join the responses of the last user turn: that turn's list
    grows, in a body already sent too."""

    __slots__ = ("_bytes", "contents", "last_calls", "names", "responses", "system")

    def __init__(self) -> None:
        self.system: list[str] = []
        self.contents: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}  # call id -> function name
        self.last_calls: list[str] = []  # the names of the latest model turn's calls, in order
        self.responses: list[dict[str, Any]] | None = None  # the function responses of the user turn being built
        self._bytes = ListBytes()

    def add(self, message: Mapping[str, Any]) -> None:
        role, parts = message["role"], message["parts"]
        if role == "system":
            self.system.append(text_of(parts))
            return
        if role == "tool":
            # Every response to a turn's calls goes in the one user turn after it (the agent lane keeps a message
            # per result: consecutive ones are joined), a response without an id named by its position among them.
            if self.responses is None:
                self.responses = []
                self.contents.append({"role": "user", "parts": self.responses})
            responses = self.responses
            for part in parts:
                if part.get("type") == "tool_call_response":
                    responses.append(_function_response(part, self.names, self.last_calls, len(responses)))
            return
        self.responses = None
        wire_parts: list[dict[str, Any]] = []
        calls: list[str] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                wire_parts.append({"text": str(part["content"])})
            elif kind == "tool_call":
                name = str(part["name"])
                call: dict[str, Any] = {"name": name, "args": _arguments(part)}
                if part.get("id") is not None:
                    call["id"] = part["id"]
                    self.names[str(part["id"])] = name
                calls.append(name)
                wire_parts.append({"functionCall": call})
        if role == "assistant":
            self.last_calls = calls
        self.contents.append({"role": "model" if role == "assistant" else "user", "parts": wire_parts})

    def body(self, model: str, tools: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": list(self.contents)}
        if self.system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(self.system)}]}
        if tools:
            body["tools"] = [{"functionDeclarations": [_declaration(tool) for tool in tools]}]
        generation: dict[str, Any] = {}
        for name, value in params.items():
            if name in _GENERATION:
                generation[_GENERATION[name]] = value
            elif name == "stop":
                generation["stopSequences"] = list(value)
            elif name == "response_format":
                generation["responseMimeType"] = "application/json"
            else:
                raise ValueError(f"the Gemini API has no parameter {name!r}")
        if generation:
            body["generationConfig"] = generation
        return body

    def encoded(self, body: dict[str, Any]) -> bytes | None:
        """``orjson.dumps(body)`` of a body :meth:`body` made, from each message's bytes written once (None for
        another body): the last message may still be joined by later results, so it is written each time."""
        return self._bytes.body_bytes(body, "contents", self.contents, len(self.contents) - 1)


def builder() -> _Builder:
    """An empty conversation in the Gemini form, to :meth:`~_Builder.add` messages to."""
    return _Builder()


def _arguments(part: Mapping[str, Any]) -> Any:
    """``args`` is an object: text another model sent that was not JSON goes as a note."""
    if "invalid_arguments" in part:
        return {"invalid_arguments": part["invalid_arguments"]}
    arguments = part.get("arguments")
    return arguments if isinstance(arguments, dict) else ({} if arguments is None else {"value": arguments})


def _function_response(
    part: Mapping[str, Any], names: Mapping[str, str], last_calls: Sequence[str], position: int
) -> dict[str, Any]:
    call_id = part.get("id")
    name = names.get(str(call_id)) if call_id is not None else None
    if name is None:
        name = last_calls[position] if position < len(last_calls) else str(part.get("name", ""))
    response = part.get("response")
    wire: dict[str, Any] = {"name": name, "response": response if isinstance(response, dict) else {"result": response}}
    if call_id is not None:
        wire["id"] = call_id
    return {"functionResponse": wire}


def _declaration(tool: Mapping[str, Any]) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool["name"]}
    if tool.get("description") is not None:
        declaration["description"] = tool["description"]
    if tool.get("parameters") is not None:
        declaration["parameters"] = tool["parameters"]
    return declaration


def parse_answer(raw: bytes) -> WireAnswer:
    data = loads_object(raw)
    candidates = data.get("candidates")
    usage = data.get("usageMetadata")
    if not isinstance(candidates, list) or not candidates:
        feedback = data.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if isinstance(reason, str) and reason:
            # The provider blocked the prompt: the system under test's answer, empty (DECLINED), with the reason.
            parsed = _usage(usage) if isinstance(usage, dict) else None
            return WireAnswer("", (), parsed, reason, data.get("modelVersion"))
        raise Malformed("the answer has no candidates")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise Malformed("the first candidate is not an object")
    finish = candidate.get("finishReason")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        if declined(finish):  # a candidate the safety system stopped before it said anything
            parts = []
        else:
            raise Malformed(f"the first candidate has no content (finishReason {finish or 'not given'})")
    texts: list[str] = []
    calls: list[WireCall] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise Malformed(f"part {index + 1} is not an object")
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
        call = part.get("functionCall")
        if isinstance(call, dict):
            name = call.get("name")
            if not isinstance(name, str):
                raise Malformed(f"function call in part {index + 1} has no name")
            call_id = call.get("id")
            calls.append(call_of(call_id if isinstance(call_id, str) else None, name, call.get("args")))
    parsed = _usage(usage) if isinstance(usage, dict) else None
    return WireAnswer.read(texts, calls, parsed, finish, data.get("modelVersion"))


def _usage(usage: Mapping[str, Any]) -> Usage:
    prompt, candidates = count(usage.get("promptTokenCount")), count(usage.get("candidatesTokenCount"))
    if prompt is not None:
        prompt += count(usage.get("toolUsePromptTokenCount")) or 0
    thoughts = count(usage.get("thoughtsTokenCount"))
    output = candidates if thoughts is None else (candidates or 0) + thoughts
    total = None if prompt is None or output is None else prompt + output
    return Usage(prompt, output, total, count(usage.get("cachedContentTokenCount")))


def read_error(status: int, body: Any) -> ErrorSignal | None:
    error = error_object(body)
    if error is None:
        return None
    state, message = error.get("status"), str(error.get("message") or f"HTTP {status}")
    text = f"{state}: {message}" if isinstance(state, str) else message
    if state == "RESOURCE_EXHAUSTED":
        return ErrorSignal(text, FaultKind.RATE_LIMITED, _retry_delay(error.get("details")))
    if state in ("UNAVAILABLE", "INTERNAL"):
        return ErrorSignal(text, FaultKind.SERVER_ERROR, _retry_delay(error.get("details")))
    return ErrorSignal(text)


def _retry_delay(details: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``"retryDelay": "30s"``), else None."""
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DELAY.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


__all__ = ["auth_headers", "builder", "endpoint", "parse_answer", "read_error", "request_body"]
