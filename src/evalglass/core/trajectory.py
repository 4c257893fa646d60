"""A conversation or an agent's trajectory, read from whichever shape it was recorded in.

EvalGlass's own form is the message form of :mod:`evalglass.core.conversation` (``{role, parts}``), and a
trajectory is a :class:`~evalglass.core.conversation.Trajectory` (a trace record's ``output`` is one). Recorded
outputs also come in the shapes other tools write, and are read here without converting them first:

* **a trajectory object**: a mapping with ``tool_calls`` (and no ``role``): EvalGlass's form, a trace record's
  ``output``, an agent lane's output;
* **a list of messages**, or a mapping with ``messages``: each message EvalGlass's ``{role, parts}``, the OpenAI
  chat shape (``content``, ``tool_calls: [{id, type: function, function: {name, arguments}}]``, the legacy
  ``function_call``, ``{role: tool, tool_call_id, content}``), or the Anthropic messages shape (``content`` blocks:
  ``text``, ``tool_use {id, name, input}``, ``tool_result {tool_use_id, content, is_error}``); a single message (a
  mapping with ``role``) is a list of one;
* **a list of calls**: items without ``role``: ``{name, arguments}``, an OpenAI tool call ``{function: {name,
  arguments}}``, or an Anthropic ``tool_use`` block.

A list is read as messages or as calls by its first item. Arguments the OpenAI shape sends as text are parsed as
JSON; text that is not JSON is kept as :attr:`Call.invalid` (and matches no expected call). Anything else (a number,
a message that is not an object, a call without a name) is :class:`Unreadable`, with where and why: what the system
under test produced, and so a wrong answer.

A trajectory object records some things twice: its calls in ``tool_calls`` and in its messages, its model turns in
``steps`` and in its messages, each result in its message and on its call (by id), how it ended in ``finish`` and in
its last turn. When these disagree the record does not add up, and no reader here picks one of them: it is
:class:`Inconsistent` (:func:`check_consistent`), the record's fault, never a measurement of the system (an
``error``, never a number). What may legitimately differ: the messages may hold fewer calls than ``tool_calls``, the
last ones (a trace record's output holds only the last model call's messages), and fewer model turns than ``steps``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

import orjson

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score
from evalglass.core.uniform import all_of_type

#: Roles whose messages are the model's turns (``model``: Gemini's name for it).
MODEL_ROLES = frozenset({"assistant", "model"})


class Unreadable(ValueError):
    """The value is not a conversation in any shape EvalGlass reads; the message says where and why."""


class Inconsistent(Unreadable):
    """A trajectory whose redundant fields disagree; the message names the fields. Not the system's wrong answer but
    a record that does not add up: a metric scores it :meth:`score` (an ``error``), never as the wrong answer an
    :class:`Unreadable` output is (a caller that catches only :class:`Unreadable` still never reads it)."""

    def score(self, example: Example) -> Score:
        return Score.error(
            "trajectory_inconsistent",
            f"example {example.id} (line {example.line}): the trajectory does not add up: {self}; fix the record "
            "that wrote it (neither field is taken for the other)",
        )


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as made: its name, its arguments (a JSON value; ABSENT when the call carries none) and, when
    the model sent arguments that are not JSON, that text (``arguments`` is then ABSENT)."""

    name: str
    arguments: Any
    invalid: str | None = None


def read_calls(value: Any) -> list[Call]:
    """Every tool call of a conversation or trajectory, in the order made; raises :class:`Unreadable`."""
    if type(value) is dict or isinstance(value, Mapping):
        if "role" in value:
            return _message_calls(value, 0)
        calls = value.get("tool_calls", ABSENT)
        if calls is not ABSENT:
            if not isinstance(calls, list | tuple):
                raise Unreadable(f"'tool_calls' is {_kind(calls)}, not a list of calls")
            made = [_call(item, "tool call", index) for index, item in enumerate(calls)]
            if not _REDUNDANT.isdisjoint(value):
                _check(value, calls, [(call.name, call.arguments, call.invalid) for call in made])
            return _with_object_texts(made, calls)
        messages = value.get("messages", ABSENT)
        if messages is ABSENT:
            raise Unreadable(_NOT_A_CONVERSATION)
        return read_calls_of_list(messages, "'messages'")
    if isinstance(value, list | tuple):
        return read_calls_of_list(value, "the conversation")
    raise Unreadable(f"the trajectory is {_kind(value)}: {_NOT_A_CONVERSATION}")


def own_call_items(value: Any) -> list[dict[str, Any]] | None:
    """The call items of a trajectory object's ``tool_calls``, or of a list of calls, when every one is EvalGlass's
    own ``{name, arguments}`` (no ``function``, ``type``, ``invalid_arguments`` or ``role``; arguments not text), which
    :func:`read_calls` reads as ``Call(name, arguments)`` at once; None for any other shape (:func:`read_calls`
    decides, and says what is wrong). For a caller that needs each call's name and arguments, not the
    :class:`Call` objects."""
    found = own_calls(value)
    return None if found is None else found[0]


def own_calls(value: Any) -> tuple[list[dict[str, Any]], list[str], list[Any]] | None:
    """:func:`own_call_items`, with each call's name and arguments (ABSENT for none) as read for the consistency
    check, for a caller that keys them (a replay's metrics): read once, not once more by that caller."""
    if type(value) is dict:
        if "role" in value:
            return None
        items = value.get("tool_calls")
    else:
        items = value
    if type(items) is not list:
        return None
    names: list[Any] = []
    count = len(items)
    if count and not (  # each test one loop in C over the whole list (a trajectory holds many calls)
        list(map(type, items)).count(dict) == count  # all_of_type, inlined (a call less, twice a trajectory)
        and _NOT_OWN_CALL.isdisjoint(chain.from_iterable(items))
        and list(map(type, names := list(map(dict.get, items, repeat("name"))))).count(str) == count
    ):
        return None
    try:  # a subscript costs less than dict.get; a call without arguments (rare) takes the second reading
        arguments = [item["arguments"] for item in items]
    except KeyError:
        arguments = [item.get("arguments", ABSENT) for item in items]
    if str in set(map(type, arguments)):
        return None  # arguments as JSON text: read_calls reads what the text holds (_with_object_text)
    if items is not value and not _REDUNDANT.isdisjoint(value) and not _adds_up(value, items, names, arguments):
        # check_consistent(value), the calls keyed from what was just read: each (name, arguments, no invalid text)
        _check(value, items, list(zip(names, arguments, repeat(None))))
    return items, names, arguments


#: A call item with any of these keys is not read as EvalGlass's own ``{name, arguments}`` at once.
_NOT_OWN_CALL = frozenset({"function", "type", "invalid_arguments", "role"})


def read_calls_of_list(items: Any, what: str) -> list[Call]:
    if not isinstance(items, list | tuple):
        raise Unreadable(f"{what} is {_kind(items)}, not a list")
    if not items:
        return []
    first = items[0]
    if isinstance(first, Mapping) and "role" in first:
        found: list[Call] = []
        for index, message in enumerate(items):
            found.extend(_message_calls(message, index))
        return found
    return _with_object_texts([_call(item, "call", index) for index, item in enumerate(items)], items)


def count_model_turns(value: Any) -> int | None:
    """How many times the model answered: a trajectory's ``steps``, else its assistant messages. None when the
    value holds calls but not the turns that made them (a trace record's output lists only the last model call's
    messages), which only the source could tell. Raises :class:`Unreadable`."""
    if isinstance(value, Mapping) and "role" not in value:
        steps = value.get("steps", ABSENT)
        if steps is not ABSENT:
            if type(steps) is not int or steps < 0:
                raise Unreadable(f"'steps' is {_kind(steps)}, not a count")
            if "tool_calls" in value or "messages" in value:
                check_consistent(value)
            return steps
        if "tool_calls" in value:
            if not _REDUNDANT.isdisjoint(value):
                check_consistent(value)
            return None
        messages = value.get("messages", ABSENT)
        if messages is ABSENT:
            raise Unreadable(_NOT_A_CONVERSATION)
        value = messages
    elif isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple):
        raise Unreadable(f"the trajectory is {_kind(value)}: {_NOT_A_CONVERSATION}")
    if value and not (isinstance(value[0], Mapping) and "role" in value[0]):
        return None  # a list of calls: the turns that made them are not in it
    turns = 0
    for index, message in enumerate(value):
        turns += _role(message, index) in MODEL_ROLES
    return turns


def read_messages(value: Any) -> list[dict[str, Any]]:
    """The conversation as EvalGlass's messages (``{role, parts}`` as plain JSON), whatever shape it came in. Raises
    :class:`Unreadable`.

    A call recorded outside the messages (a list of calls, a trajectory's ``tool_calls``) becomes an assistant
    message with the call, then a tool message with its result or error when the record holds one. A trajectory
    whose messages hold fewer calls than its ``tool_calls`` (a trace record's output: its messages are the last
    model call's) gets the calls they lack, in order, before them: the calls came before that last answer."""
    if isinstance(value, Mapping) and "role" not in value:
        messages = value.get("messages", ABSENT)
        calls = value.get("tool_calls", ABSENT)
        if messages is ABSENT:
            if calls is not ABSENT:
                if not isinstance(calls, list | tuple):
                    raise Unreadable(f"'tool_calls' is {_kind(calls)}, not a list of calls")
                return _calls_as_messages(calls, "tool call")
            raise Unreadable(_NOT_A_CONVERSATION)
        if not isinstance(messages, list | tuple):
            raise Unreadable(f"'messages' is {_kind(messages)}, not a list of messages")
        read = read_messages(messages)
        if calls is ABSENT or not isinstance(calls, list | tuple):
            return read
        check_consistent(value)
        shown = sum(part.get("type") == "tool_call" for message in read for part in message["parts"])
        return _calls_as_messages(calls[: max(0, len(calls) - shown)], "tool call") + read
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple):
        raise Unreadable(f"the conversation is {_kind(value)}: {_NOT_A_CONVERSATION}")
    if value and not (isinstance(value[0], Mapping) and "role" in value[0]):
        return _calls_as_messages(value, "call")
    return [_message(message, index) for index, message in enumerate(value)]


# ---------------------------------------------------------------------- consistency
#: The keys of a trajectory object that repeat what its ``tool_calls`` say (beside ``tool_calls`` itself).
_REDUNDANT = frozenset({"messages", "steps", "finish"})


def check_consistent(value: Mapping[str, Any]) -> None:
    """Raise :class:`Inconsistent` when a trajectory object's redundant fields disagree (the module's docstring
    says which may differ); :class:`Unreadable` when one is of the wrong shape. One pass over the messages, once
    per trajectory read."""
    calls = value.get("tool_calls", ABSENT)
    if calls is ABSENT:
        _check(value, (), None)
        return
    if not isinstance(calls, list | tuple):
        raise Unreadable(f"'tool_calls' is {_kind(calls)}, not a list of calls")
    _check(value, calls, _call_keys(calls, "tool call", numbered=True))


#: A call as the consistency check compares it: (name, arguments, invalid), :class:`Call`'s fields as a tuple, so a
#: replay reading tens of thousands of trajectories compares calls without making a :class:`Call` for each.
_CallKey = tuple[str, Any, str | None]


def _call_keys(items: Sequence[Any], what: str, *, numbered: bool) -> list[_CallKey]:
    """:func:`_call_key` of each item, in order (``numbered``: an error names the item's position after ``what``).
    EvalGlass's own call is keyed in the comprehension itself (:func:`_own_call`'s test, inlined: a replay keys
    hundreds of thousands), any other item by :func:`_call_key`."""
    return [
        (item["name"], item.get("arguments", ABSENT), None)
        if type(item) is dict
        and type(item.get("name")) is str
        and "function" not in item
        and item.get("invalid_arguments") is None
        and item.get("type") != "tool_use"
        else _call_key(item, what, index if numbered else None)
        for index, item in enumerate(items)
    ]


def _call_key(item: Any, what: str, position: int | None = None) -> _CallKey:
    """:func:`_call` of ``item`` as a :data:`_CallKey`, EvalGlass's own call read at once (:func:`_own_call`)."""
    own = _own_call(item)
    if own is not None:
        return own
    call = _call(item, what, position)
    return call.name, call.arguments, call.invalid


def _own_call(item: Any) -> _CallKey | None:
    """EvalGlass's own ``{name, arguments}`` call as a key, the usual case, read at once; None for any other shape."""
    if type(item) is dict and "function" not in item:
        name = item.get("name")
        if type(name) is str and item.get("type") != "tool_use" and item.get("invalid_arguments") is None:
            return name, item.get("arguments", ABSENT), None
    return None


def _part_keys(parts: list[dict[str, Any]]) -> list[_CallKey]:
    """:func:`_call_keys` of the messages' call parts, unnumbered: objects whose ``type`` is ``tool_call`` (so never
    an Anthropic ``tool_use`` block), which the comprehension does not ask again."""
    return [
        (part["name"], part.get("arguments", ABSENT), None)
        if type(part.get("name")) is str and "function" not in part and part.get("invalid_arguments") is None
        else _call_key(part, "message part")
        for part in parts
    ]


def _check(value: Mapping[str, Any], items: Sequence[Any], made: list[_CallKey] | None) -> None:
    """:func:`check_consistent` of ``value`` whose ``tool_calls`` are ``items``, read as ``made`` (None: the record
    has no ``tool_calls``; its calls are in its messages only)."""
    steps, finish, messages = value.get("steps"), value.get("finish"), value.get("messages", ABSENT)
    if type(steps) is int and steps == 0 and made:
        raise Inconsistent(f"'steps' is 0, while 'tool_calls' holds {len(made)} calls (a call is made in a turn)")
    if messages is ABSENT:
        return
    if not isinstance(messages, list | tuple):
        raise Unreadable(f"'messages' is {_kind(messages)}, not a list of messages")
    said_parts: list[dict[str, Any]] = []  # the calls' parts, keyed after the loop (one comprehension)
    results: list[Mapping[str, Any]] = []
    calling_turns = 0
    last_turn: tuple[int, list[dict[str, Any]]] | None = None  # the last model message: where its calls start, parts
    for index, message in enumerate(messages):
        # EvalGlass's own messages (an agent lane's) are read as they are, a one-part message (an agent lane's
        # usual one) at once; any other shape through _message, which raises naming what is wrong (after any call
        # before it that cannot be read: the order a reader meets them).
        parts: Any = message.get("parts") if type(message) is dict else None
        role = message.get("role") if type(parts) is list else None
        if type(role) is str and len(parts) == 1 and type(part := parts[0]) is dict:
            kind = part.get("type")
            if role in MODEL_ROLES:
                last_turn = (len(said_parts), parts)
                calling_turns += kind == "tool_call"
            if kind == "tool_call":
                said_parts.append(part)
            elif kind == "tool_call_response":
                results.append(part)
            continue
        if type(role) is not str or not all_of_type(parts, dict):
            try:
                role = _role(message, index)
                parts = _message(message, index)["parts"]
            except Unreadable:
                _part_keys(said_parts)
                raise
        start = len(said_parts)
        for part in parts:
            kind = part.get("type")
            if kind == "tool_call":
                said_parts.append(part)
            elif kind == "tool_call_response":
                results.append(part)
        if role in MODEL_ROLES:
            last_turn = (start, parts)
            calling_turns += len(said_parts) > start
    said = _part_keys(said_parts)
    if made is not None and made[len(made) - len(said) :] != said:  # equal calls: the usual case, checked at once
        _same_calls(made, _ran_calls(items, said, last_turn[1] if last_turn else [], results))
    if type(steps) is int and steps < calling_turns:
        raise Inconsistent(f"'steps' is {steps}, while the messages hold {calling_turns} model turns that call tools")
    last_calls = said[last_turn[0] :] if last_turn is not None else None
    if last_calls is not None and ((finish == "stop" and last_calls) or (finish == "max_steps" and not last_calls)):
        did = f"calls {_shown(Call(*last_calls[0]))}" if last_calls else "calls no tool"
        raise Inconsistent(f"'finish' is {finish}, while the last model turn in the messages {did}")
    if results:
        recorded = {item["id"]: item for item in items if type(item) is dict and type(item.get("id")) is str}
        _same_results(recorded, said_parts, results)


def _adds_up(value: Mapping[str, Any], items: list[dict[str, Any]], names: list[str], arguments: list[Any]) -> bool:
    """True when :func:`_check` of ``value`` (whose ``tool_calls`` are the own-form ``items``, with these ``names``
    and ``arguments``) finds nothing wrong, proven for the usual record (an agent lane's: one-part messages, every
    call of ``tool_calls`` in them, each result answering a call of ``tool_calls`` by text id and holding its
    ``result``); False when not proven, and :func:`_check` decides (it raises or not, and says what is wrong). Never a
    verdict of its own: it accepts only what :func:`_check`'s reading of one-part messages accepts, by the same
    comparisons (the same operands, in the same order), and defers anything else.

    Why a second reading: a replay checks every trajectory, and on this interpreter a subscript inside ``try`` costs
    well under half what ``dict.get`` does (a method call); so each message is read by subscripts and each call
    compared where it is met, with no key tuple made per call."""
    messages = value.get("messages")
    if type(messages) is not list:
        return False
    steps, finish = value.get("steps"), value.get("finish")
    made = len(names)
    said = turns = 0
    last = -1  # where the last model turn's calls start among the messages' calls; -1: no model turn
    results: list[dict[str, Any]] = []
    try:
        for message in messages:
            if type(message) is not dict:
                return False
            parts, role = message["parts"], message["role"]
            if type(parts) is not list or type(role) is not str:
                return False
            (part,) = parts
            if type(part) is not dict:
                return False
            kind = part["type"]
            if kind == "tool_call":
                # Compared with the call at the same position of tool_calls: every call of tool_calls must be in
                # the messages (checked after the loop), so the messages' calls are its last ones from the first.
                name = part["name"]
                if (
                    said == made
                    or type(name) is not str
                    or names[said] != name
                    or arguments[said] != part["arguments"]
                    or "function" in part
                    or "invalid_arguments" in part
                ):
                    return False
                if role in MODEL_ROLES:
                    last = said
                    turns += 1
                said += 1
                continue
            if kind == "tool_call_response":
                results.append(part)
            if role in MODEL_ROLES:
                last = said
        if said != made or (type(steps) is int and (steps < turns or (steps == 0 and made))):
            return False
        if last >= 0 and ((finish == "stop" and said > last) or (finish == "max_steps" and said == last)):
            return False
        if results:
            ids = [item["id"] for item in items]
            if list(map(type, ids)).count(str) != made:
                return False
            recorded = dict(zip(ids, items))  # noqa: B905 - ids read from items, one each
            for part in results:
                answered = part["id"]
                if type(answered) is not str or recorded[answered]["result"] != part["response"]:
                    return False
    except (KeyError, ValueError):  # a key this reading needs is missing, or a message is not of one part
        return False
    return True


def _ran_calls(
    items: Sequence[Any], said: list[_CallKey], last_parts: list[dict[str, Any]], results: list[Mapping[str, Any]]
) -> list[_CallKey]:
    """The calls of the messages that ``tool_calls`` should hold. A trace's ``tool_calls`` are the tool spans that
    ran (each carries its ``span_id``), while its messages are its last model call's, which may end asking for
    calls that never ran (the application stopped, a step budget ran out): those trailing requests of the last
    model turn, that no message answers, are what happened, not a disagreement. Any other record's ``tool_calls``
    are the calls made, so every call its messages hold counts."""
    if not items or not all(type(item) is dict and "span_id" in item for item in items):
        return said
    answered = {part.get("id") for part in results}
    kept = len(said)
    last_ids = [part.get("id") for part in last_parts if part.get("type") == "tool_call"]  # the last model turn's
    for call_id in reversed(last_ids):
        if call_id is not None and call_id in answered:
            break
        kept -= 1
    return said[:kept]


def _same_calls(made: list[_CallKey], said: list[_CallKey]) -> None:
    """The calls the messages hold are the last of ``tool_calls``, in order (a trace's messages are its last model
    call's), with the same names, and the same arguments where both record them."""
    if len(said) > len(made):
        raise Inconsistent(f"the messages hold {len(said)} tool calls, 'tool_calls' only {len(made)}")
    first = len(made) - len(said)
    for offset, (recorded, shown) in enumerate(zip(made[first:], said, strict=True)):
        (name, arguments, _), (shown_name, shown_arguments, _) = recorded, shown
        if name != shown_name or (
            arguments is not ABSENT and shown_arguments is not ABSENT and arguments != shown_arguments
        ):
            raise Inconsistent(
                f"'tool_calls' call {first + offset + 1} is {_shown(Call(*recorded))}, the messages' call there is "
                f"{_shown(Call(*shown))}"
            )


def _same_results(
    recorded: dict[str, Any], said_parts: list[dict[str, Any]], results: Sequence[Mapping[str, Any]]
) -> None:
    """Each result the messages hold answers a call of the record (by id: ``recorded`` holds each call of
    ``tool_calls`` with a text id, ``said_parts`` the calls of the messages), and holds what that call's own
    ``result`` in ``tool_calls`` says (for a call that did not fail). Without ids on the calls no result can be
    matched to one, and nothing is checked. The ids of the messages' calls are gathered only for a result that
    answers no call of ``tool_calls`` (in a replay, none does)."""
    said_ids: set[str] | None = None
    for part in results:
        answered = part.get("id")
        if type(answered) is not str:
            continue
        call = recorded.get(answered)
        if call is None:  # answered by a call of the messages only, or by none
            if said_ids is None:
                said_ids = {said["id"] for said in said_parts if type(said.get("id")) is str}
                if not recorded and not said_ids:
                    return
            if answered not in said_ids:
                raise Inconsistent(f"a tool result answers call id {answered!r}, which no call of the record has")
            continue
        result = call.get("result", _NO_RESULT)
        # The comparison first: it is false for a result that agrees (every one, in a record that adds up).
        if (
            result != part.get("response")
            and result is not _NO_RESULT
            and call.get("error") is None
            and call.get("error_type") is None
            and not part.get("error")
        ):
            raise Inconsistent(f"call {answered!r}: its 'result' in 'tool_calls' is not the result its message holds")


#: A call without a ``result`` (one lookup says both whether it has one and what it is).
_NO_RESULT = object()


def shown_call(call: Call) -> str:
    """A call as messages show it: ``name(arguments)`` (``...`` for none), its text when it is not JSON."""
    if call.invalid is not None:
        return f"{call.name}(<not JSON: {call.invalid}>)"
    if call.arguments is ABSENT:
        return f"{call.name}(...)"
    try:
        return f"{call.name}({orjson.dumps(call.arguments).decode()})"
    except (TypeError, orjson.JSONEncodeError):
        return f"{call.name}({call.arguments!r})"


def _shown(call: Call) -> str:
    text = shown_call(call)
    return text if len(text) <= 120 else text[:119] + "…"


# ---------------------------------------------------------------------- calls
_NOT_A_CONVERSATION = (
    "a conversation is a list of messages (EvalGlass, OpenAI or Anthropic shape) or of tool calls, or an object with "
    "'messages' or 'tool_calls'"
)


def _message_calls(message: Any, index: int, read: Callable[[Any, str, int | None], Call] | None = None) -> list[Call]:
    """The tool calls one message makes, in any of the three message shapes, each read by ``read``
    (:func:`_measured_call` unless given)."""
    read_one = _measured_call if read is None else read
    if not isinstance(message, Mapping):
        raise Unreadable(f"message {index + 1} is {_kind(message)}, not an object")
    parts = message.get("parts", ABSENT)
    if parts is not ABSENT:
        if not isinstance(parts, list | tuple):
            raise Unreadable(f"message {index + 1}: 'parts' is {_kind(parts)}, not a list")
        return [
            read_one(part, f"message {index + 1} part", number)
            for number, part in enumerate(parts)
            if isinstance(part, Mapping) and part.get("type") == "tool_call"
        ]
    found: list[Call] = []
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list | tuple):
            raise Unreadable(f"message {index + 1}: 'tool_calls' is {_kind(calls)}, not a list")
        found.extend(read_one(item, f"message {index + 1} tool call", number) for number, item in enumerate(calls))
    legacy = message.get("function_call")
    if legacy is not None:
        found.append(read_one({"function": legacy}, f"message {index + 1} function_call", None))
    content = message.get("content")
    if isinstance(content, list | tuple):
        found.extend(
            read_one(block, f"message {index + 1} block", number)
            for number, block in enumerate(content)
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        )
    return found


def _call(item: Any, what: str, position: int | None = None) -> Call:
    """One call in any of its shapes: EvalGlass's ``{name, arguments, invalid_arguments}``, OpenAI's ``{function:
    {name, arguments}}`` (arguments as JSON text), Anthropic's ``{type: tool_use, name, input}``. ``what`` and the
    0-based ``position`` say where it is; the text is made only for an error (a trajectory holds many calls)."""
    own = _own_call(item)  # the usual case: EvalGlass's own call, read at once
    if own is not None:
        return Call(*own)
    if not isinstance(item, Mapping):
        raise Unreadable(f"{_where(what, position)} is {_kind(item)}, not an object")
    function = item.get("function", ABSENT)
    if function is not ABSENT:
        if not isinstance(function, Mapping):
            raise Unreadable(f"{_where(what, position)}: 'function' is {_kind(function)}, not an object")
        name = function.get("name")
        if type(name) is not str:
            raise Unreadable(f"{_where(what, position)} has no function name")
        arguments = function.get("arguments", ABSENT)
        if type(arguments) is str:
            return _from_text(name, arguments)
        return Call(name, arguments)
    name = item.get("name")
    if type(name) is not str:
        raise Unreadable(f"{_where(what, position)} has no name")
    if item.get("type") == "tool_use":
        return Call(name, item.get("input", ABSENT))
    invalid = item.get("invalid_arguments")
    if invalid is not None:
        if type(invalid) is not str:
            raise Unreadable(f"{_where(what, position)}: 'invalid_arguments' is {_kind(invalid)}, not text")
        return Call(name, ABSENT, invalid)
    return Call(name, item.get("arguments", ABSENT))


def _measured_call(item: Any, what: str, position: int | None = None) -> Call:
    """:func:`_call`, as a metric measures it (:func:`read_calls`): see :func:`_with_object_text`."""
    return _with_object_text(_call(item, what, position), item)


_ARGUMENTS = attrgetter("arguments")


def _with_object_texts(calls: list[Call], items: Sequence[Any]) -> list[Call]:
    """:func:`_with_object_text` of each call read from ``items``; the list itself when no argument is text (the
    usual case, told by one pass that makes no call)."""
    if str not in map(type, map(_ARGUMENTS, calls)):  # in C: no Python frame per call
        return calls
    return [_with_object_text(call, item) for call, item in zip(calls, items, strict=True)]


def _with_object_text(call: Call, item: Any) -> Call:
    """``call`` (read from ``item``) with arguments recorded as text holding a JSON object read as that object.

    Every API sends a call's arguments as an object, and the OpenAI chat shape as its JSON text, which :func:`_call`
    parses. The same text recorded in another shape (OpenAI's function object alone, ``{name, arguments}``; the
    Responses API's ``function_call`` items; OpenTelemetry GenAI ``tool_call`` parts as instrumentations record
    them) is that object too: compared as a string, a right call matched nothing. Only an object's text is read:
    other text stays as recorded, and so do arguments the OpenAI shape's text held as a JSON string (arguments
    encoded twice are the model's failure, not a recording detail). The consistency check and a judge's
    transcript read the record as written (:func:`_call`)."""
    text = call.arguments
    if type(text) is not str or not text.lstrip().startswith("{") or not isinstance(item, Mapping):
        return call
    if "function" in item:  # the OpenAI shape: its text was parsed already
        return call
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return call
    return Call(call.name, value) if type(value) is dict else call


def _where(what: str, position: int | None) -> str:
    return what if position is None else f"{what} {position + 1}"


def _from_text(name: str, text: str) -> Call:
    """OpenAI's arguments: JSON text. Empty text is no arguments (``{}``), as the API treats it."""
    if not text.strip():
        return Call(name, {})
    try:
        return Call(name, orjson.loads(text))
    except orjson.JSONDecodeError:
        return Call(name, ABSENT, text)


# ---------------------------------------------------------------------- messages
def _role(message: Any, index: int) -> str:
    if not isinstance(message, Mapping):
        raise Unreadable(f"message {index + 1} is {_kind(message)}, not an object")
    role = message.get("role")
    if type(role) is not str:
        raise Unreadable(f"message {index + 1} has no role")
    return role


def _message(message: Any, index: int) -> dict[str, Any]:
    role = _role(message, index)
    parts = message.get("parts", ABSENT)
    if parts is not ABSENT:
        if not isinstance(parts, list | tuple):
            raise Unreadable(f"message {index + 1}: 'parts' is {_kind(parts)}, not a list")
        for number, part in enumerate(parts):
            if not isinstance(part, Mapping):
                raise Unreadable(f"message {index + 1} part {number + 1} is {_kind(part)}, not an object")
        return {"role": role, "parts": [dict(part) for part in parts]}
    found: list[dict[str, Any]] = []
    content = message.get("content")
    if role == "tool":  # OpenAI: the result of one call
        found.append(_response(message.get("tool_call_id"), content))
    elif isinstance(content, str):
        if content:
            found.append({"type": "text", "content": content})
    elif isinstance(content, list | tuple):
        found.extend(_block(block, f"message {index + 1} block {number + 1}") for number, block in enumerate(content))
    elif content is not None:
        raise Unreadable(f"message {index + 1}: 'content' is {_kind(content)}, not text or a list of blocks")
    # The calls as recorded (not :func:`_measured_call`): a transcript shows the record as it was written.
    found.extend(_call_part(call) for call in _message_calls({"tool_calls": message.get("tool_calls")}, index, _call))
    if message.get("function_call") is not None:
        legacy = {"function_call": message["function_call"]}
        found.extend(_call_part(call) for call in _message_calls(legacy, index, _call))
    return {"role": role, "parts": found}


def _block(block: Any, where: str) -> dict[str, Any]:
    """One content block (OpenAI content parts, Anthropic blocks) as a part."""
    if not isinstance(block, Mapping):
        raise Unreadable(f"{where} is {_kind(block)}, not an object")
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": str(block.get("text", ""))}
    if kind == "tool_use":
        return _call_part(_call(block, where))
    if kind == "tool_result":
        part = _response(block.get("tool_use_id"), block.get("content"))
        if block.get("is_error") is True:
            part["error"] = True
        return part
    return {"type": str(kind) if kind else "unknown", **{key: value for key, value in block.items() if key != "type"}}


def _response(call_id: Any, content: Any) -> dict[str, Any]:
    if isinstance(content, list | tuple):  # result blocks: their text, joined
        content = "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    part: dict[str, Any] = {"type": "tool_call_response", "response": content}
    if call_id is not None:
        part["id"] = str(call_id)
    return part


def _call_part(call: Call) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "name": call.name}
    if call.invalid is not None:
        part["invalid_arguments"] = call.invalid
    elif call.arguments is not ABSENT:
        part["arguments"] = call.arguments
    return part


def _calls_as_messages(items: Sequence[Any], what: str) -> list[dict[str, Any]]:
    """Each call as the assistant message that made it, and its result (or error) as the tool message after it."""
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        part = _call_part(_call(item, what, index))
        call_id = item.get("id")
        if type(call_id) is str:
            part = {"type": "tool_call", "id": call_id, **{k: v for k, v in part.items() if k != "type"}}
        messages.append({"role": "assistant", "parts": [part]})
        answered = _recorded_response(item)
        if answered is not None:
            if type(call_id) is str:
                answered["id"] = call_id
            messages.append({"role": "tool", "parts": [answered]})
    return messages


def _recorded_response(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a recorded call was answered (EvalGlass's ``result``, or ``error``/``error_type``), None when the record
    holds neither (an OpenAI or Anthropic call, a result not captured)."""
    error, error_type = item.get("error"), item.get("error_type")
    if error is not None or error_type is not None:
        text = str(error if error is not None else error_type)
        return {"type": "tool_call_response", "response": text, "error": True}
    if "result" in item:
        return {"type": "tool_call_response", "response": item["result"]}
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Sequence):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a Python {type(value).__name__}"


__all__ = [
    "MODEL_ROLES",
    "Call",
    "Inconsistent",
    "Unreadable",
    "check_consistent",
    "count_model_turns",
    "own_call_items",
    "own_calls",
    "read_calls",
    "read_calls_of_list",
    "read_messages",
    "shown_call",
]
