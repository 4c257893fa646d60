"""One model step of an agent: send the conversation and the tools, get back an assistant turn with its tool calls
and usage, whatever the provider's wire shape.

The agent lane (``lanes/agent.py``) speaks only :class:`StepRequest` (the conversation in EvalGlass's message form,
``{role, parts}`` as plain JSON, and the tools offered as ``{name, description, parameters}``) and
:class:`AssistantTurn`. A client turns a request into its provider's wire shape and the answer back; the call cache
keys a step by the request, never by the wire, so a step means the same thing whichever client made it.
:class:`OpenAIStepClient` is the OpenAI chat-completions shape (through :class:`~evalglass.lanes.chat.ChatClient`'s
transport, retries classified alike); :class:`NativeStepClient` is a native API's (``provider: anthropic |
gemini``): the provider module of ``lanes/providers`` builds the body (Anthropic ``tool_use`` / ``tool_result``
blocks, Gemini ``functionCall`` / ``functionResponse`` parts) and reads the answer, its usage and its errors, over
the same :class:`~evalglass.lanes.providers.client.NativeClient` the chat lane and the judge use.
:func:`open_step_client` picks one by the spec's ``provider``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import orjson

from evalglass.core.fieldpath import ABSENT
from evalglass.lanes.chatcall import TransportChoice, Usage, declined, openai_usage
from evalglass.lanes.executor import EndpointLimit
from evalglass.lanes.providers.wire import ListBytes, Malformed, WireAnswer, WireBuilder, WireCall
from evalglass.lanes.retry import Fault, FaultKind, Ok
from evalglass.lanes.specs import EndpointSpec, Provider

S = TypeVar("S")

if TYPE_CHECKING:
    from evalglass.lanes.chat import ChatClient
    from evalglass.lanes.providers.client import NativeClient


class WireMemo:
    """One conversation in a client's wire form, kept from one step to the next.

    An agent sends the whole conversation at every step, and a conversation only grows: the agent lane appends to
    it and never changes a message it holds. So a step converts only the messages added since the last one it
    converted, not all of them again (which made the conversion quadratic in a trajectory's length). A conversation
    that is not the last one grown (shorter, or any message replaced by another object: checked by identity, in C,
    a pointer per message) is converted afresh, as is one a conversion failed half way through. Limit: a message
    changed in place after it was converted is not seen. The lane never does that (a tool's result and arguments
    are copies: ``lanes/agent.py``), and must not: it keeps its cache keys with a memo too (``callcache.KeyFrame``),
    where an unseen change would be a stale key, a wrong step replayed."""

    __slots__ = ("_fresh", "_seen", "_state")

    def __init__(self) -> None:
        self._seen: tuple[dict[str, Any], ...] = ()
        self._fresh: Callable[[], Any] | None = None
        self._state: Any = None

    def extend(
        self, conversation: tuple[dict[str, Any], ...], fresh: Callable[[], S], add: Callable[[S, Any], None]
    ) -> S:
        """The wire form of ``conversation`` (this memo's own: copy what is kept of it): ``fresh()`` an empty one,
        ``add(form, message)`` called for each message not added yet."""
        seen = self._seen
        count = len(seen)
        if self._fresh is not fresh or len(conversation) < count or not all(map(operator.is_, conversation, seen)):
            self._state, self._fresh, count = fresh(), fresh, 0
        state: S = self._state
        try:
            for index in range(count, len(conversation)):
                add(state, conversation[index])
        except BaseException:  # half converted: forgotten, so a retry converts the whole conversation again
            self._seen, self._fresh, self._state = (), None, None
            raise
        self._seen = conversation
        return state


@dataclass(frozen=True, slots=True)
class StepRequest:
    """One model step as asked: what the cache keys it by. Holds no secret."""

    model: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    params: tuple[tuple[str, Any], ...] = ()
    #: The conversation's wire form kept across its steps (:class:`WireMemo`; None: converted whole). How a step is
    #: sent, never what it asks: not compared, not in :meth:`key_body`.
    wire: WireMemo | None = field(default=None, compare=False, repr=False)

    def key_body(self) -> dict[str, Any]:
        return {"model": self.model, "messages": list(self.messages), "tools": list(self.tools), **dict(self.params)}

    def key_rest(self) -> dict[str, Any]:
        """:meth:`key_body` but for its ``messages``: what ``callcache.KeyFrame`` serialises once around them."""
        return {"model": self.model, "tools": list(self.tools), **dict(self.params)}


#: A tool call the model asked for: the one type the provider modules read answers into (``providers.wire``).
StepCall = WireCall


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """What the model answered in one step: text, tool calls, and what the step cost."""

    text: str | None
    calls: tuple[StepCall, ...]
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None

    def message(self) -> dict[str, Any]:
        """The turn as an assistant message of EvalGlass's form."""
        parts: list[dict[str, Any]] = [{"type": "text", "content": self.text}] if self.text else []
        parts.extend(call.part() for call in self.calls)
        message: dict[str, Any] = {"role": "assistant", "parts": parts}
        if self.finish_reason is not None:
            message["finish_reason"] = self.finish_reason
        return message

    def to_json(self) -> dict[str, Any]:
        """What the call cache keeps of the turn (the prompt-cache counts only when the API reported them, so an
        entry made without them keeps its bytes)."""
        return {
            "message": self.message(),
            "usage": None if self.usage is None else self.usage.to_json(),
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AssistantTurn:
        message = data["message"]
        parts = message["parts"]
        text = "".join(str(part["content"]) for part in parts if part.get("type") == "text") or None
        calls = tuple(StepCall.of_part(part) for part in parts if part.get("type") == "tool_call")
        usage = data.get("usage")
        return cls(
            text,
            calls,
            None if not isinstance(usage, Mapping) else Usage.from_json(usage),
            message.get("finish_reason"),
            data.get("model"),
        )


class ModelStepClient(Protocol):
    """Send a conversation and tool definitions, get back an assistant turn with tool calls and usage: exactly one
    request per :meth:`attempt`, every outcome a value (the agent lane retries through its ``Retrier``, under
    ``limit``)."""

    limit: EndpointLimit

    async def attempt(self, request: StepRequest) -> Ok[AssistantTurn] | Fault: ...

    async def aclose(self) -> None: ...


class OpenAIStepClient:
    """:class:`ModelStepClient` for the OpenAI chat-completions shape (``tools``, ``tool_calls``, ``role: tool``)."""

    def __init__(
        self, spec: EndpointSpec, *, env: Mapping[str, str] | None = None, transport: TransportChoice = "auto"
    ) -> None:
        from evalglass.lanes.chat import ChatClient

        self.chat: ChatClient = ChatClient(spec, env=env, transport=transport)
        self.limit = self.chat.limit

    async def attempt(self, request: StepRequest) -> Ok[AssistantTurn] | Fault:
        chat = self.chat
        if chat.transport != "direct":  # the SDK writes the body itself
            return await chat.post(openai_body(request), parse_openai_turn)
        body, kept = _openai_body(request)
        return await chat.post(body, parse_openai_turn, data=None if kept is None else kept.encoded(body))

    async def aclose(self) -> None:
        await self.chat.aclose()


class NativeStepClient:
    """:class:`ModelStepClient` for a native API (``provider: anthropic | gemini``): the request in the provider
    module's wire shape (with the request's :class:`WireMemo`, built a step's new messages at a time by the
    module's ``builder``), the answer read into a turn with the API's own usage fields; rate limits and overloads
    are the faults the module's ``read_error`` names (docs/providers.md), retried by the lane's policy."""

    def __init__(self, spec: EndpointSpec, *, env: Mapping[str, str] | None = None) -> None:
        from evalglass.lanes.providers.client import NativeClient

        self.native: NativeClient = NativeClient(spec, env=env)
        self.limit = self.native.limit

    async def attempt(self, request: StepRequest) -> Ok[AssistantTurn] | Fault:
        wire, memo = self.native.wire, request.wire
        try:
            if memo is None:
                body = wire.request_body(request.model, request.messages, request.tools, dict(request.params))
            else:
                built = memo.extend(request.messages, wire.builder, _add_native)
                body = built.body(request.model, request.tools, dict(request.params))
        except ValueError as exc:
            return Fault(FaultKind.INVALID_REQUEST, str(exc))
        return await self.native.post(body, self._turn, data=None if memo is None else built.encoded(body))

    def _turn(self, raw: bytes) -> AssistantTurn:
        answer = self.native.wire.parse_answer(raw)
        if answer.text is None and not answer.calls:
            raise Malformed(
                f"the answer has neither text nor tool calls (finish reason {answer.finish_reason or 'not given'})"
            )
        return AssistantTurn(answer.text, answer.calls, answer.usage, finish_of(answer), answer.model)

    async def aclose(self) -> None:
        await self.native.aclose()


def _add_native(built: WireBuilder, message: dict[str, Any]) -> None:
    built.add(message)


#: A native API's finish reasons in the chat-completions names a trajectory's ``finish`` and messages carry (as
#: sampling parameters do), so ``finish: stop`` means the same whichever API answered; any other reason is kept as
#: the API sent it (Anthropic ``refusal``, Gemini ``SAFETY`` ...).
_FINISH = {
    "end_turn": "stop",  # Anthropic
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "STOP": "stop",  # Gemini (which says STOP for a turn with function calls too)
    "MAX_TOKENS": "length",
}


def finish_of(answer: WireAnswer) -> str | None:
    """The answer's finish reason in the chat-completions names (``tool_calls`` for a turn that calls tools)."""
    reason = answer.finish_reason
    if reason is None:
        return None
    named = _FINISH.get(reason, reason)
    return "tool_calls" if named == "stop" and answer.calls else named


def open_step_client(
    spec: EndpointSpec, *, env: Mapping[str, str] | None = None, transport: TransportChoice = "auto"
) -> ModelStepClient:
    """The step client of the API ``spec.provider`` names (create it inside the event loop that uses it)."""
    if spec.provider is Provider.OPENAI:
        return OpenAIStepClient(spec, env=env, transport=transport)
    return NativeStepClient(spec, env=env)


def openai_body(request: StepRequest) -> dict[str, Any]:
    """The request in the chat-completions shape: a text part joined into ``content``, tool-call parts as
    ``tool_calls`` (arguments as JSON text, or the text the model sent when it was not JSON), each tool response
    as a ``role: tool`` message (its response as text: a JSON value is sent as JSON text).

    An agent sends the whole conversation at every step: with the request's :class:`WireMemo`, only the messages
    added since the last step are converted (the others' wire form is kept); the tools' wire form is made once per
    tuple of definitions (the lane offers the same tuple at every step)."""
    return _openai_body(request)[0]


def _openai_body(request: StepRequest) -> tuple[dict[str, Any], _OpenAIWire | None]:
    """:func:`openai_body`, and the kept wire form its messages are (None: converted whole, nothing kept)."""
    memo = request.wire
    kept: _OpenAIWire | None = None
    if memo is None:
        messages: list[dict[str, Any]] = []
        append = messages.append
        for message in request.messages:
            _openai_message(message, append)
    else:
        kept = memo.extend(request.messages, _OpenAIWire, _OpenAIWire.add)
        messages = list(kept.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.tools:
        body["tools"] = _openai_tools(request.tools)
    body.update(request.params)
    return body, kept


class _OpenAIWire:
    """A conversation in the chat-completions shape, kept by a :class:`WireMemo`: the wire messages, and the bytes
    orjson writes of each, made once (:class:`~evalglass.lanes.providers.wire.ListBytes`)."""

    __slots__ = ("_bytes", "messages")

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self._bytes = ListBytes()

    def add(self, message: dict[str, Any]) -> None:
        _openai_message(message, self.messages.append)

    def encoded(self, body: dict[str, Any]) -> bytes | None:
        """``orjson.dumps(body)`` for a body whose ``messages`` are this conversation's (None for another): a wire
        message never changes once converted."""
        return self._bytes.body_bytes(body, "messages", self.messages, len(self.messages))


def _openai_message(message: dict[str, Any], append: Callable[[dict[str, Any]], None]) -> None:
    """One message of EvalGlass's form in the chat-completions shape (a tool message: one per response part), in one
    pass over its parts."""
    role, parts = message["role"], message["parts"]
    if role == "tool":
        for part in parts:
            response = part.get("response")
            content = response if isinstance(response, str) else orjson.dumps(response).decode()
            append({"role": "tool", "tool_call_id": part.get("id"), "content": content})
        return
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in parts:
        kind = part["type"]
        if kind == "text":
            texts.append(str(part["content"]))
        elif kind == "tool_call":
            if "invalid_arguments" in part:
                arguments = part["invalid_arguments"]
            else:
                arguments = orjson.dumps(part.get("arguments")).decode()
            function = {"name": part["name"], "arguments": arguments}
            calls.append({"id": part.get("id"), "type": "function", "function": function})
    text = texts[0] if len(texts) == 1 else "".join(texts)
    if calls:
        append({"role": role, "content": text or None, "tool_calls": calls})
    else:
        append({"role": role, "content": text})


#: The last tuple of tool definitions and its wire form, as one tuple so that a reader on any thread sees a
#: matching pair (the wire form is only read: orjson serialises it).
_tools_memo: tuple[tuple[dict[str, Any], ...], list[dict[str, Any]]] = ((), [])


def _openai_tools(tools: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    global _tools_memo
    offered, made = _tools_memo
    if offered is tools:
        return made
    wire = [
        {
            "type": "function",
            "function": {
                key: value
                for key, value in (
                    ("name", tool["name"]),
                    ("description", tool.get("description")),
                    ("parameters", tool.get("parameters")),
                )
                if value is not None
            },
        }
        for tool in tools
    ]
    _tools_memo = (tools, wire)
    return wire


def _as_text(response: Any) -> str:
    return response if isinstance(response, str) else orjson.dumps(response).decode()


class _Malformed(ValueError):
    pass


def parse_openai_turn(raw: bytes) -> AssistantTurn:
    """The assistant turn in a chat-completion body: its text and tool calls (arguments parsed as JSON; text that is
    not JSON kept as sent). Raises ValueError (a malformed response) when the body holds no message."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _Malformed(f"the answer is not JSON ({exc})") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Malformed("the answer has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _Malformed("the first choice has no message")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    if content is not None and not isinstance(content, str):
        raise _Malformed("the message content is neither text nor null")
    calls: list[StepCall] = []
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list):
        raise _Malformed("the message's tool_calls is not a list")
    for index, call in enumerate(wire_calls):
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise _Malformed(f"tool call {index + 1} has no function name")
        call_id = call.get("id")
        calls.append(_call(call_id if isinstance(call_id, str) else None, name, function.get("arguments")))  # type: ignore[union-attr]
    finish = choices[0].get("finish_reason")
    if content is None and not calls:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            content = refusal  # the model declined: what it said ends the trajectory (chatcall.DECLINED)
        elif not declined(finish):  # a filtered answer is empty, as the chat shape's "" already was
            raise _Malformed("the message has neither text nor tool calls")
    usage = data.get("usage")
    return AssistantTurn(
        content or None,
        tuple(calls),
        openai_usage(usage) if isinstance(usage, dict) else None,
        finish if isinstance(finish, str) else None,
        data.get("model") if isinstance(data.get("model"), str) else None,
    )


def _call(call_id: str | None, name: str, arguments: Any) -> StepCall:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return StepCall(call_id, name, {})
    if not isinstance(arguments, str):  # a server that sends the object itself
        return StepCall(call_id, name, arguments)
    try:
        return StepCall(call_id, name, orjson.loads(arguments))
    except orjson.JSONDecodeError:
        return StepCall(call_id, name, ABSENT, arguments)


__all__ = [
    "AssistantTurn",
    "ModelStepClient",
    "NativeStepClient",
    "OpenAIStepClient",
    "StepCall",
    "StepRequest",
    "open_step_client",
    "openai_body",
    "parse_openai_turn",
]
