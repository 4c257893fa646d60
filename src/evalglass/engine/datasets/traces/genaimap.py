"""From spans to a trace record (``core.conversation.TraceRecord``): the declared mapping of GenAI telemetry.

Three conventions are read, each recognised per span by the attributes only it writes:

``gen_ai`` (the current OpenTelemetry GenAI conventions, after 1.36)
    ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``,
    ``gen_ai.tool.definitions`` (JSON text or structured values, on the span or on its
    ``gen_ai.client.inference.operation.details`` event), ``gen_ai.provider.name``; tool execution spans
    (``execute_tool``) with ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``,
    ``gen_ai.tool.call.result``.
``gen_ai_pre_1_36`` (1.36 and before)
    ``gen_ai.system``; messages as span events (``gen_ai.system.message``, ``gen_ai.user.message``,
    ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``), as the older
    ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events, as ``gen_ai.prompt`` / ``gen_ai.completion``
    JSON attributes, or as indexed attributes (``gen_ai.prompt.0.role``, ``gen_ai.completion.0.content``, ...);
    ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``.
``openinference`` (Phoenix, Arize)
    ``openinference.span.kind``; ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*`` (role,
    content, contents, tool calls), ``input.value`` / ``output.value`` where no messages are recorded,
    ``llm.model_name``, ``llm.provider``, ``llm.token_count.*``, ``llm.tools.N.tool.json_schema``; ``TOOL`` spans
    with ``tool.name``, ``tool_call.id``, ``input.value`` (arguments) and ``output.value`` (result).

Facts shared by all: ``gen_ai.operation.name``, ``gen_ai.request.model`` / ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens`` / ``output_tokens`` /
``cache_read.input_tokens`` / ``cache_creation.input_tokens``, ``error.type`` (else the span's error status: the
exception event's type, or ``_OTHER``), the latency (end minus start).

A **trace example** is rooted at a top-level GenAI span: its own messages when it records them, else the first
inference span below it gives the input and the last one the output; its usage is its own or the sum over the
inference spans below it; its tool calls are the tool-execution spans below it (else the tool calls its messages
name, with the responses later messages give). Content none of the sources holds is **not captured**: absent from
the record, and its path listed in ``not_captured``. An attribute of the wrong type (a token count that is text, a
messages attribute that is not a list of messages) makes the example malformed (:class:`MappingProblem`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from evalglass.engine.datasets.traces.otlpspans import Span
from evalglass.metrics.support import json_type_name
from evalglass.readers.jsonsource import JsonRefused, loads_lone_surrogates

GEN_AI = "gen_ai"
PRE_1_36 = "gen_ai_pre_1_36"
OPENINFERENCE = "openinference"
CONVENTIONS = (GEN_AI, PRE_1_36, OPENINFERENCE)

DETAILS_EVENT = "gen_ai.client.inference.operation.details"
INFERENCE_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_CURRENT_MARKERS = frozenset(
    {"gen_ai.provider.name", "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
)
_OLD_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
#: Attributes whose values are content (never copied into ``metadata``).
_NOT_CAPTURED_OUTPUT = ("output.text", "output.messages")


class MappingProblem(Exception):
    """An attribute the mapping reads holds a value of the wrong type or shape."""


def convention_of(span: Span, allowed: Sequence[str]) -> str | None:
    """The convention a span is written in, or None when it is not a GenAI span (or its convention is not read)."""
    attributes = span.attributes
    events = span.events
    found: str | None = None
    if "openinference.span.kind" in attributes:
        found = OPENINFERENCE
    elif not attributes.keys().isdisjoint(_CURRENT_MARKERS) or (
        events and any(name == DETAILS_EVENT for name, _ in events)
    ):
        found = GEN_AI
    elif "gen_ai.system" in attributes or (events and any(name in _OLD_MESSAGE_EVENTS for name, _ in events)):
        found = PRE_1_36
    elif "gen_ai.operation.name" in attributes:
        found = GEN_AI
    return found if found in allowed else None


def operation_of(span: Span, convention: str) -> str | None:
    if convention == OPENINFERENCE:
        kind = span.attributes.get("openinference.span.kind")
        return kind.lower() if isinstance(kind, str) else None
    operation = span.attributes.get("gen_ai.operation.name")
    return operation if isinstance(operation, str) else None


def is_inference(span: Span, convention: str) -> bool:
    operation = operation_of(span, convention)
    if convention == OPENINFERENCE:
        return operation == "llm"
    return operation in INFERENCE_OPERATIONS or (operation is None and convention == PRE_1_36)


def is_tool(span: Span, convention: str) -> bool:
    operation = operation_of(span, convention)
    return operation == ("tool" if convention == OPENINFERENCE else "execute_tool")


# -- typed reads --------------------------------------------------------------------------------------------------


def _text(attributes: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if value is None:
            continue
        if type(value) is str:
            return value
        raise MappingProblem(f"attribute {key} must be a string, got {json_type_name(value)} {_clip(value)}")
    return None


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Mends(threading.local):
    """The attributes whose JSON text was read with lone surrogate escapes as U+FFFD (:func:`_loads`) since the
    reader last took them (:func:`taken_mends`): (attribute, escapes replaced). Per thread, as mapping is."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int]] = []


#: Read by the dataset after each example it maps (an empty list costs one look-up), so that each mend becomes a
#: warning naming the example's span; nothing is changed silently.
MENDS = _Mends()


def taken_mends() -> list[tuple[str, int]]:
    """The mends noted since the last call (see :data:`MENDS`), which are forgotten."""
    found, MENDS.found = MENDS.found, []
    return found


def _loads(text: str, key: str) -> Any:
    """JSON text an instrumentation wrote into attribute ``key``, as orjson reads it, or with its lone surrogate
    escapes read as U+FFFD (noted in :data:`MENDS`) when that is all orjson refused: JavaScript's
    ``JSON.stringify`` writes ``"\\ud83d"`` for a string cut in the middle of an emoji, which RFC 8259 allows and
    orjson refuses, as JSON lines are read (``readers.jsonsource.loads_mending``). ``orjson.JSONDecodeError``
    otherwise, or :class:`~evalglass.readers.jsonsource.JsonRefused`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        read = loads_lone_surrogates(text.encode("utf-8", "surrogatepass"))
        if read is None:
            raise
        MENDS.found.append((key, read[1]))
        return read[0]


def structured_value(value: Any, key: str) -> Any:
    """A structured attribute: JSON text is parsed, an array or key-value list is taken as it is."""
    if type(value) is str:
        try:
            return _loads(value, key)
        except orjson.JSONDecodeError:
            raise MappingProblem(f"attribute {key} is not valid JSON: {_clip(value)}") from None
        except JsonRefused as exc:
            raise MappingProblem(f"attribute {key}: {exc}") from None
    return value


def _maybe_json(value: Any, key: str) -> Any:
    """Tool arguments and results (attribute ``key``): JSON text becomes its value, other text stays text."""
    if type(value) is str and value[:1] in ("{", "["):
        try:
            return _loads(value, key)
        except (orjson.JSONDecodeError, JsonRefused):
            return value
    return value


def checked_messages(value: Any, key: str) -> tuple[list[dict[str, Any]], bool]:
    """``gen_ai.*.messages``: a list of {role, parts: [{type, ...}]}; checked, kept as written. With it, whether a
    part is a ``tool_call``: without one ``tool_calls_from_messages`` finds no call in them (a response is kept only
    with its call), so most spans' messages are not walked again for calls; the check reads each part's type
    anyway."""
    messages = structured_value(value, key)
    if type(messages) is not list:
        raise MappingProblem(f"attribute {key} must be a list of messages, got {json_type_name(messages)}")
    calls = False
    for message in messages:
        if type(message) is not dict or type(message.get("role")) is not str:
            raise MappingProblem(f"attribute {key}: every message needs a role, got {_clip(message)}")
        parts = message.get("parts", _NO_PARTS)
        if type(parts) is not list:
            raise MappingProblem(f"attribute {key}: a message's parts must be a list")
        for part in parts:
            if type(part) is not dict or type(kind := part.get("type")) is not str:
                raise MappingProblem(f"attribute {key}: a message's parts must be objects with a type")
            if kind == "tool_call":
                calls = True
    return messages, calls


_NO_PARTS: list[Any] = []


def checked_parts(value: Any, key: str) -> list[dict[str, Any]]:
    parts = structured_value(value, key)
    if type(parts) is not list:
        raise MappingProblem(f"attribute {key} must be a list of parts with a type, got {_clip(parts)}")
    for part in parts:
        if type(part) is not dict or type(part.get("type")) is not str:
            raise MappingProblem(f"attribute {key} must be a list of parts with a type, got {_clip(parts)}")
    return parts


def text_of(message: Mapping[str, Any]) -> str:
    parts = message.get("parts", ())
    if len(parts) == 1:  # the commonest: one part (no list of texts to join)
        part = parts[0]
        return content if part.get("type") == "text" and type(content := part.get("content")) is str else ""
    texts = []
    for part in parts:
        if part.get("type") == "text" and type(content := part.get("content")) is str:
            texts.append(content)
    return texts[0] if len(texts) == 1 else "".join(texts)


def _text_message(role: str, content: Any) -> dict[str, Any]:
    if type(content) is not str:
        content = orjson.dumps(content).decode()
    return {"role": role, "parts": [{"type": "text", "content": content}]}


# -- what one span says ----------------------------------------------------------------------------------------------


class SpanContent:
    """The content and facts one span records, in the internal shape; ``None`` for content it does not hold."""

    __slots__ = (
        "finish_reasons",
        "input_messages",
        "output_messages",
        "request_model",
        "response_id",
        "response_model",
        "system_instructions",
        "tool_call_free",
        "tool_definitions",
        "usage",
    )

    def __init__(self) -> None:
        self.input_messages: list[dict[str, Any]] | None = None
        self.output_messages: list[dict[str, Any]] | None = None
        self.system_instructions: list[dict[str, Any]] | None = None
        self.tool_definitions: list[dict[str, Any]] | None = None
        self.request_model: str | None = None
        self.response_model: str | None = None
        self.response_id: str | None = None
        self.finish_reasons: list[str] | None = None
        self.usage: dict[str, int] = {}
        #: True when the span's input and output messages hold no part of type ``tool_call`` (see _current and
        #: checked_messages); False when they may.
        self.tool_call_free = False


#: The facts every convention's spans may carry: attribute → (what it is, its rank). Where a span carries several
#: names of one fact (a current and a deprecated one), the lowest rank wins.
_TEXT_FACTS: dict[str, tuple[str, int]] = {
    "gen_ai.request.model": ("request_model", 0),
    "llm.request.model_name": ("request_model", 1),
    "gen_ai.response.model": ("response_model", 0),
    "llm.response.model_name": ("response_model", 1),
    "llm.model_name": ("response_model", 2),
    "gen_ai.response.id": ("response_id", 0),
}
_TOKEN_FACTS: dict[str, tuple[str, int]] = {
    "gen_ai.usage.input_tokens": ("input_tokens", 0),
    "gen_ai.usage.prompt_tokens": ("input_tokens", 1),
    "llm.token_count.prompt": ("input_tokens", 2),
    "gen_ai.usage.output_tokens": ("output_tokens", 0),
    "gen_ai.usage.completion_tokens": ("output_tokens", 1),
    "llm.token_count.completion": ("output_tokens", 2),
    "gen_ai.usage.cache_read.input_tokens": ("cache_read_input_tokens", 0),
    "gen_ai.usage.cache_read_input_tokens": ("cache_read_input_tokens", 1),
    "llm.token_count.prompt_details.cache_read": ("cache_read_input_tokens", 2),
    "gen_ai.usage.cache_creation.input_tokens": ("cache_creation_input_tokens", 0),
    "gen_ai.usage.cache_creation_input_tokens": ("cache_creation_input_tokens", 1),
    "llm.token_count.prompt_details.cache_write": ("cache_creation_input_tokens", 2),
}
_USAGE_ORDER = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
#: Every fact attribute as (attribute, is a token count, what it is), in the order they are applied: by fact, the
#: lowest rank last (so it wins), and token counts in ``_USAGE_ORDER`` (so usage's keys come out in that order). One
#: look-up per name and no rank kept per fact: a span carries a handful of these names, most of them in every span.
_APPLIED: tuple[tuple[str, bool, str], ...] = tuple(
    (key, is_token, field)
    for key, is_token, field, _ in sorted(
        [
            *((key, False, field, rank) for key, (field, rank) in _TEXT_FACTS.items()),
            *((key, True, field, rank) for key, (field, rank) in _TOKEN_FACTS.items()),
        ],
        key=lambda fact: (fact[1], _USAGE_ORDER.index(fact[2]) if fact[1] else 0, fact[2], -fact[3]),
    )
)


def span_content(span: Span, convention: str) -> SpanContent:
    content = SpanContent()
    attributes = span.attributes
    (
        content.request_model,
        content.response_model,
        content.response_id,
        content.usage,
        content.finish_reasons,
    ) = facts(attributes, name_plan(attributes))
    if convention == GEN_AI:
        _current(span, content)
    elif convention == PRE_1_36:
        _pre_1_36(span, content)
    else:
        _openinference(span, content)
    if content.finish_reasons is None and content.output_messages:
        content.finish_reasons = finish_reasons_of(content.output_messages)
    return content


def finish_reasons_of(messages: list[dict[str, Any]]) -> list[str] | None:
    """The finish reasons output messages give, where the span has no finish-reasons attribute."""
    return [m["finish_reason"] for m in messages if type(m.get("finish_reason")) is str] or None


#: The names ``_APPLIED`` reads, and the plan of each set of attribute names seen (see ``name_plan``).
_FACT_NAMES = frozenset(key for key, _, _ in _APPLIED)
#: Where each text fact goes in what ``facts`` returns.
_TEXT_SLOTS = {"request_model": 0, "response_model": 1, "response_id": 2}
#: A set of attribute names' plan: its text facts as (attribute, slot), its token counts as (attribute, field), each
#: in ``_APPLIED``'s order (all text facts come before all token counts there, so two loops apply them in the same
#: order), and whether a span with these names and no events is in the current conventions (``convention_of``).
NamePlan = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, str], ...], bool]
_NAME_PLANS: dict[tuple[str, ...], NamePlan] = {}
#: Distinct sets of attribute names remembered; beyond them the plans start over (a file of ever-new names costs a
#: plan per span, never unbounded memory).
_NAME_PLANS_KEPT = 512


def name_plan(attributes: Mapping[str, Any]) -> NamePlan:
    """The plan of a span's attribute names: spans of one file mostly share one set of names, so what depends on
    the names alone (which of ``_APPLIED``'s eighteen facts are there, the convention) is found once per set."""
    names = tuple(attributes)
    plan = _NAME_PLANS.get(names)
    if plan is not None:
        return plan
    if len(_NAME_PLANS) >= _NAME_PLANS_KEPT:
        _NAME_PLANS.clear()
    present = _FACT_NAMES.intersection(names)
    plan = (
        tuple((key, _TEXT_SLOTS[field]) for key, is_token, field in _APPLIED if key in present and not is_token),
        tuple((key, field) for key, is_token, field in _APPLIED if key in present and is_token),
        # convention_of for a span without events
        "openinference.span.kind" not in names
        and (
            not _CURRENT_MARKERS.isdisjoint(names)
            or ("gen_ai.system" not in names and "gen_ai.operation.name" in names)
        ),
    )
    _NAME_PLANS[names] = plan
    return plan


#: What ``facts`` returns: request model, response model, response id, usage and finish reasons.
Facts = tuple[str | None, str | None, str | None, dict[str, int], list[str] | None]


def facts(attributes: Mapping[str, Any], plan: NamePlan) -> Facts:
    """The facts ``_APPLIED`` lists, read from the attributes the plan says the span has (the rest of the eighteen
    names are not looked up per span); a wrong-typed one is a MappingProblem."""
    get = attributes.get
    found: list[Any] = [None, None, None]
    for key, slot in plan[0]:
        value = get(key)
        if type(value) is str:
            found[slot] = value
        elif value is not None:
            raise MappingProblem(f"attribute {key} must be a string, got {json_type_name(value)} {_clip(value)}")
    usage: dict[str, int] = {}
    for key, field in plan[1]:
        value = get(key)
        if type(value) is not int:
            if value is None:
                continue
            if type(value) is float and value.is_integer():
                value = int(value)
            else:
                raise MappingProblem(f"attribute {key} must be an integer, got {json_type_name(value)} {_clip(value)}")
        if value < 0:  # no call uses fewer than no tokens; summed, it would hide another call's usage
            raise MappingProblem(f"attribute {key} must be a count (0 or more), got {value}")
        usage[field] = value
    reasons = get("gen_ai.response.finish_reasons")
    if reasons is not None:
        if type(reasons) is str:
            reasons = [reasons]
        elif type(reasons) is not list or not _all_text(reasons):
            raise MappingProblem("attribute gen_ai.response.finish_reasons must be a list of strings")
    return found[0], found[1], found[2], usage, reasons


def _all_text(values: list[Any]) -> bool:
    # A loop, not all() over a generator (a generator object per call): these lists are short, checked every span.
    for value in values:  # noqa: SIM110
        if type(value) is not str:
            return False
    return True


def _current(span: Span, content: SpanContent) -> None:
    events = span.events
    calls_in = calls_out = False
    sources = (
        [span.attributes, *(attributes for name, attributes in events if name == DETAILS_EVENT)]
        if events
        else (span.attributes,)
    )
    for attributes in sources:
        if content.input_messages is None and "gen_ai.input.messages" in attributes:
            content.input_messages, calls_in = checked_messages(
                attributes["gen_ai.input.messages"], "gen_ai.input.messages"
            )
        if content.output_messages is None and "gen_ai.output.messages" in attributes:
            content.output_messages, calls_out = checked_messages(
                attributes["gen_ai.output.messages"], "gen_ai.output.messages"
            )
        if content.system_instructions is None and "gen_ai.system_instructions" in attributes:
            content.system_instructions = checked_parts(
                attributes["gen_ai.system_instructions"], "gen_ai.system_instructions"
            )
        if content.tool_definitions is None and "gen_ai.tool.definitions" in attributes:
            content.tool_definitions = tool_definitions(
                structured_value(attributes["gen_ai.tool.definitions"], "gen_ai.tool.definitions"),
                "gen_ai.tool.definitions",
            )
    content.tool_call_free = not (calls_in or calls_out)


def tool_definitions(value: Any, key: str) -> list[dict[str, Any]]:
    if type(value) is not list:
        raise MappingProblem(f"attribute {key} must be a list of tool definitions, got {json_type_name(value)}")
    definitions = []
    for item in value:
        if type(item) is not dict:
            raise MappingProblem(f"attribute {key}: a tool definition must be an object, got {_clip(item)}")
        function: dict[str, Any] = item["function"] if type(item.get("function")) is dict else item
        name = function.get("name")
        if type(name) is not str:
            raise MappingProblem(f"attribute {key}: a tool definition needs a name, got {_clip(item)}")
        definition: dict[str, Any] = {"type": str(item.get("type") or "function"), "name": name}
        if type(function.get("description")) is str:
            definition["description"] = function["description"]
        if "parameters" in function:
            definition["parameters"] = _maybe_json(function["parameters"], f"{key} parameters")
        definitions.append(definition)
    return definitions


# -- pre-1.36 -------------------------------------------------------------------------------------------------------


def _pre_1_36(span: Span, content: SpanContent) -> None:
    attributes = span.attributes
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    uncaptured_in = uncaptured_out = False
    seen_in = seen_out = False
    for name, event in span.events:
        role = _OLD_MESSAGE_EVENTS.get(name)
        if role is not None:
            seen_in = True
            message = _old_message(event, role, name)
            if message is None:
                uncaptured_in = True
            else:
                inputs.append(message)
        elif name == "gen_ai.choice":
            seen_out = True
            body = event.get("message")
            if body is None:
                uncaptured_out = True
                continue
            body = structured_value(body, "gen_ai.choice message")
            if type(body) is not dict:
                raise MappingProblem("event gen_ai.choice: its message must be an object")
            message = _old_message(body, str(body.get("role") or "assistant"), "gen_ai.choice")
            if message is None:
                uncaptured_out = True
                continue
            if type(event.get("finish_reason")) is str:
                message["finish_reason"] = event["finish_reason"]
            outputs.append(message)
        elif name == "gen_ai.content.prompt" and "gen_ai.prompt" in event:
            content.input_messages = _plain_messages(event["gen_ai.prompt"], "gen_ai.prompt")
        elif name == "gen_ai.content.completion" and "gen_ai.completion" in event:
            content.output_messages = _plain_messages(event["gen_ai.completion"], "gen_ai.completion", "assistant")
    if seen_in and not uncaptured_in:
        content.input_messages = inputs
    if seen_out and not uncaptured_out:
        content.output_messages = outputs
    if content.input_messages is None and "gen_ai.prompt" in attributes:
        content.input_messages = _plain_messages(attributes["gen_ai.prompt"], "gen_ai.prompt")
    if content.output_messages is None and "gen_ai.completion" in attributes:
        content.output_messages = _plain_messages(attributes["gen_ai.completion"], "gen_ai.completion", "assistant")
    if content.input_messages is None:
        content.input_messages = _indexed_messages(attributes, "gen_ai.prompt.", "user")
    if content.output_messages is None:
        content.output_messages = _indexed_messages(attributes, "gen_ai.completion.", "assistant")
    functions = _indexed(attributes, "llm.request.functions.")
    if functions:
        content.tool_definitions = tool_definitions(functions, "llm.request.functions")
    _split_system(content)


def _old_message(body: Mapping[str, Any], role: str, where: str) -> dict[str, Any] | None:
    """A message of the 1.36-and-before events; None when its content was not captured."""
    parts: list[dict[str, Any]] = []
    if role == "tool":
        if "content" not in body:
            return None
        part: dict[str, Any] = {
            "type": "tool_call_response",
            "response": _maybe_json(body["content"], f"{where} content"),
        }
        if type(body.get("id")) is str:
            part["id"] = body["id"]
        return {"role": "tool", "parts": [part]}
    captured = False
    if "content" in body and body["content"] is not None:
        captured = True
        parts.append({"type": "text", "content": _content_text(body["content"], where)})
    calls = body.get("tool_calls")
    if calls is not None:
        calls = structured_value(calls, f"{where} tool_calls")
        if type(calls) is not list:
            raise MappingProblem(f"event {where}: tool_calls must be a list")
        for call in calls:
            if type(call) is not dict:
                raise MappingProblem(f"event {where}: a tool call must be an object")
            function: dict[str, Any] = call["function"] if type(call.get("function")) is dict else call
            part = {"type": "tool_call", "name": str(function.get("name", ""))}
            if type(call.get("id")) is str:
                part["id"] = call["id"]
            if "arguments" in function:
                part["arguments"] = _maybe_json(function["arguments"], f"{where} tool_calls")
                captured = True
            parts.append(part)
    if not captured:
        return None
    return {"role": role, "parts": parts}


def _content_text(content: Any, where: str) -> str:
    if type(content) is str:
        return content
    if type(content) is list:  # a list of {type: text, text} blocks
        return "".join(str(item.get("text", "")) for item in content if type(item) is dict)
    raise MappingProblem(f"event {where}: content must be text, got {json_type_name(content)}")


def _plain_messages(value: Any, key: str, default_role: str = "user") -> list[dict[str, Any]]:
    """``gen_ai.prompt`` / ``gen_ai.completion`` JSON: a list of {role, content} (or one such object)."""
    parsed = structured_value(value, key)
    if type(parsed) is dict:
        parsed = [parsed]
    if type(parsed) is not list:
        return [_text_message(default_role, parsed)]
    messages = []
    for item in parsed:
        if type(item) is not dict:
            raise MappingProblem(f"attribute {key}: a message must be an object, got {_clip(item)}")
        message = _old_message(item, str(item.get("role") or default_role), key)
        if message is not None:
            messages.append(message)
    return messages


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened indexed attributes (``prefix.N.rest``) as a list of {rest: value}, by N."""
    found: dict[int, dict[str, Any]] = {}
    size = len(prefix)
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[size:].partition(".")
        if index.isdigit() and rest:
            found.setdefault(int(index), {})[rest] = value
    return [found[index] for index in sorted(found)]


def _indexed_messages(attributes: Mapping[str, Any], prefix: str, default_role: str) -> list[dict[str, Any]] | None:
    items = _indexed(attributes, prefix)
    if not items:
        return None
    messages = []
    for item in items:
        role = item.get("role")
        body: dict[str, Any] = {}
        if "content" in item:
            body["content"] = item["content"]
        calls = _indexed(item, "tool_calls.")
        if calls:
            body["tool_calls"] = [
                {
                    k: v
                    for k, v in (("id", c.get("id")), ("name", c.get("name")), ("arguments", c.get("arguments")))
                    if v is not None
                }
                for c in calls
            ]
        if "tool_call_id" in item:
            body["id"] = item["tool_call_id"]
        message = _old_message(body, str(role or default_role), prefix.rstrip("."))
        if message is None:
            return None  # the roles are recorded, the content is not
        if type(item.get("finish_reason")) is str:
            message["finish_reason"] = item["finish_reason"]
        messages.append(message)
    return messages


def _split_system(content: SpanContent) -> None:
    """Conventions without a system-instructions attribute carry them as system messages: moved out of the input."""
    messages = content.input_messages
    if content.system_instructions is not None or messages is None:
        return
    system = [message for message in messages if message["role"] == "system"]
    content.system_instructions = [part for message in system for part in message.get("parts", ())]
    if system:
        content.input_messages = [message for message in messages if message["role"] != "system"]


# -- OpenInference ------------------------------------------------------------------------------------------------


def _openinference(span: Span, content: SpanContent) -> None:
    attributes = span.attributes
    content.input_messages = _oi_messages(attributes, "llm.input_messages")
    content.output_messages = _oi_messages(attributes, "llm.output_messages")
    if content.input_messages is None and "input.value" in attributes:
        content.input_messages = [_text_message("user", attributes["input.value"])]
    if content.output_messages is None and "output.value" in attributes:
        content.output_messages = [_text_message("assistant", attributes["output.value"])]
    reason = attributes.get("llm.finish_reason")
    if type(reason) is str and content.finish_reasons is None:
        content.finish_reasons = [reason]
    tools = _indexed(attributes, "llm.tools.")
    if tools:
        schemas = [structured_value(tool.get("tool.json_schema"), "llm.tools.tool.json_schema") for tool in tools]
        content.tool_definitions = tool_definitions(schemas, "llm.tools")
    _split_system(content)


def _oi_messages(attributes: Mapping[str, Any], key: str) -> list[dict[str, Any]] | None:
    if key in attributes:  # some exporters write the list structured
        value = structured_value(attributes[key], key)
        if type(value) is not list or any(type(item) is not dict for item in value):
            raise MappingProblem(f"attribute {key} must be a list of messages")
        items = [_flatten(item) for item in value]
    else:
        items = _indexed(attributes, key + ".")
    if not items:
        return None
    messages = []
    for item in items:
        role = item.get("message.role")
        if role is not None and type(role) is not str:
            raise MappingProblem(f"attribute {key}: message.role must be a string")
        parts: list[dict[str, Any]] = []
        captured = False
        if "message.content" in item:
            captured = True
            parts.append({"type": "text", "content": _content_text(item["message.content"], key)})
        for block in _indexed(item, "message.contents."):
            captured = True
            if block.get("message_content.type", "text") == "text":
                parts.append({"type": "text", "content": str(block.get("message_content.text", ""))})
            else:
                parts.append({"type": str(block.get("message_content.type"))})
        for call in _indexed(item, "message.tool_calls."):
            part: dict[str, Any] = {"type": "tool_call", "name": str(call.get("tool_call.function.name", ""))}
            if type(call.get("tool_call.id")) is str:
                part["id"] = call["tool_call.id"]
            if "tool_call.function.arguments" in call:
                captured = True
                part["arguments"] = _maybe_json(call["tool_call.function.arguments"], key)
            parts.append(part)
        if role == "tool" and type(item.get("message.tool_call_id")) is str and parts:
            text = text_of({"parts": parts})
            parts = [
                {"type": "tool_call_response", "id": item["message.tool_call_id"], "response": _maybe_json(text, key)}
            ]
        if not captured:
            return None
        message: dict[str, Any] = {"role": role or "user", "parts": parts}
        if type(item.get("message.name")) is str:
            message["name"] = item["message.name"]
        messages.append(message)
    return messages


def _flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, inner in value.items():
        if type(inner) is dict:
            flat.update(_flatten(inner, f"{prefix}{key}."))
        elif type(inner) is list and inner and all(type(item) is dict for item in inner):
            for index, item in enumerate(inner):
                flat.update(_flatten(item, f"{prefix}{key}.{index}."))
        else:
            flat[prefix + key] = inner
    return flat


# -- tool calls -----------------------------------------------------------------------------------------------------


def tool_call_of(span: Span, convention: str, not_captured: set[str]) -> dict[str, Any]:
    attributes = span.attributes
    call: dict[str, Any] = {"span_id": span.span_id}
    if convention == OPENINFERENCE:
        name = _text(attributes, "tool.name", "tool_call.function.name")
        call_id = _text(attributes, "tool_call.id", "tool.id")
        arguments_key = (
            "tool_call.function.arguments" if "tool_call.function.arguments" in attributes else "input.value"
        )
        result_key = "output.value"
    else:
        name = _text(attributes, "gen_ai.tool.name")
        call_id = _text(attributes, "gen_ai.tool.call.id")
        arguments_key, result_key = "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"
    call["name"] = name if name is not None else span.name
    call["id"] = call_id
    if arguments_key in attributes:
        call["arguments"] = _maybe_json(attributes[arguments_key], arguments_key)
    else:
        not_captured.add("output.tool_calls.arguments")
    if result_key in attributes:
        call["result"] = _maybe_json(attributes[result_key], result_key)
    elif not (span.error or "error.type" in attributes):
        not_captured.add("output.tool_calls.result")
    error = error_type(span)
    if error is not None:
        call["error_type"] = error
    return call


def tool_calls_from_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls assistant messages request, each with the response a later message gives it (by id)."""
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    for message in messages:
        for part in message.get("parts", ()):
            kind = part.get("type")
            if kind == "tool_call":
                call = {"id": part.get("id"), "name": part.get("name")}
                if "arguments" in part:
                    call["arguments"] = part["arguments"]
                calls.append(call)
                if type(part.get("id")) is str:
                    by_id[part["id"]] = call
            elif kind == "tool_call_response" and part.get("id") in by_id and "response" in part:
                by_id[part["id"]]["result"] = part["response"]
    return calls


def error_type(span: Span) -> str | None:
    error = span.attributes.get("error.type")
    if error is not None:
        return str(error)
    if not span.error:
        return None
    for name, attributes in span.events:
        if name == "exception" and type(attributes.get("exception.type")) is str:
            return str(attributes["exception.type"])
    return "_OTHER"
