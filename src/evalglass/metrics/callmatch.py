"""When a tool call made matches a tool call expected, and how many of them match: the counting rules of the
``tool_calls`` metric, stated once.

**One call matches one expected call** when the names are equal, the call's arguments are JSON (text the model sent
that is not JSON matches nothing), they satisfy the tool's ``schema`` (when one is declared), and they compare with
the expected call's arguments under the declared rules. An expected call without ``arguments`` names only the tool:
any arguments match it.

Arguments compare as JSON (``true`` is not ``1``, ``1`` is ``1.0``, key order does not matter) by the metric's
``arguments`` rule, ``exact`` or ``json_subset`` (every key the expected object has, the call has, with a value that
is itself a JSON subset; arrays compare element by element, at equal length; scalars are equal). A tool may give
its own rule to single (top-level) arguments: ``exact``, ``json_subset``, ``ignore`` (left out on both sides), or
``numeric`` (both numbers, ``|made - expected| <= tolerance + relative * |expected|``).

**Counting is a multiset.** Each call made is matched to at most one expected call and each expected call to at
most one call made; the number matched is the largest such pairing (a maximum bipartite matching, found exactly,
not greedily: a greedy pairing can leave a call unmatched that another pairing matches). Duplicates count: two
identical calls against one expected call are one match and one extra call.
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from enum import StrEnum
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from evalglass._native import calls as _native
from evalglass.core.fieldpath import ABSENT
from evalglass.core.jsonvalue import NotJsonError, json_key
from evalglass.core.trajectory import Call, own_calls, read_calls

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


class ArgumentMatch(StrEnum):
    EXACT = "exact"
    JSON_SUBSET = "json_subset"
    NUMERIC = "numeric"
    IGNORE = "ignore"


class CallArguments(StrEnum):
    """How a call's arguments compare with the expected ones, unless a tool's rule says otherwise per argument."""

    EXACT = "exact"
    JSON_SUBSET = "json_subset"


class ArgumentRule(BaseModel):
    """One argument's rule. ``tolerance`` or ``relative`` alone means ``match: numeric``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    match: ArgumentMatch = ArgumentMatch.EXACT
    tolerance: float | None = Field(default=None, ge=0, allow_inf_nan=False, description="Absolute tolerance.")
    relative: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Tolerance relative to the expected value."
    )

    @model_validator(mode="before")
    @classmethod
    def _numeric_by_tolerance(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "match" not in data and ("tolerance" in data or "relative" in data):
            return {**data, "match": ArgumentMatch.NUMERIC.value}
        return data

    @model_validator(mode="after")
    def _tolerance_is_numeric(self) -> "ArgumentRule":
        numeric = self.match is ArgumentMatch.NUMERIC
        if not numeric and (self.tolerance is not None or self.relative is not None):
            raise ValueError("'tolerance' and 'relative' apply to 'match: numeric' only")
        return self


class ToolRule(BaseModel):
    """What a call of one tool must satisfy beyond its name: a JSON Schema for its arguments, and per-argument
    rules."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, populate_by_name=True)

    schema_: dict[str, JsonValue] | bool | None = Field(
        default=None, alias="schema", description="A JSON Schema every call's arguments must satisfy."
    )
    arguments: dict[str, ArgumentRule] = Field(
        default_factory=dict, description="Per top-level argument: its rule (exact, json_subset, ignore, numeric)."
    )

    @model_validator(mode="after")
    def _schema_is_valid(self) -> "ToolRule":
        if self.schema_ is not None:
            from evalglass.metrics.schemas import SchemaProblemError, validator_class

            try:
                validator_class(self.schema_)
            except SchemaProblemError as exc:
                raise ValueError(str(exc)) from None
        return self


Match = Callable[[Call, Call], bool]


class ReadCalls:
    """The calls of one output or reference, read once, with each call's key made the first time a count by key
    asks for it: a batch's columns are read once for every ``tool_calls`` metric that compares them
    (``ExampleBatch.derived``), not once per metric.

    Calls in EvalGlass's own form (:func:`own_calls`: an agent lane's trajectory, a list of expected calls) are
    keyed straight from their items; their :class:`Call` objects are made only when asked for (a result short of
    perfect shows a few of them; the modes that compare in order read them all)."""

    __slots__ = (
        "_arguments",
        "_calls",
        "_described",
        "_failure",
        "_items",
        "_keys",
        "_named",
        "_names",
        "_paired",
        "size",
    )

    def __init__(
        self,
        calls: list[Call] | None = None,
        items: list[dict[str, Any]] | None = None,
        names: list[str] | None = None,
        arguments: list[Any] | None = None,
    ) -> None:
        """``calls`` read, or own-form ``items`` with each one's ``names`` and ``arguments`` (ABSENT for none)."""
        self._calls = calls
        self._items = items
        #: How many calls (``len``, as an attribute: the metrics read it for every example).
        self.size = len(calls) if calls is not None else len(items or ())
        self._names = names
        self._arguments = arguments
        self._keys: list[Hashable] | None = None
        self._named: list[tuple[str, Hashable]] | bool | None = False
        self._failure: NotJsonError | None = None
        #: The pairing by key with one list of expected calls (the same object) and how many calls it pairs, kept
        #: for the next metric to ask.
        self._paired: tuple[ReadCalls, list[int], int] | None = None
        #: The text describing one pairing with one list of expected calls (the same objects), for the next metric.
        self._described: tuple[ReadCalls, list[int], str] | None = None

    @classmethod
    def of(cls, value: Any) -> "ReadCalls":
        """The calls ``value`` holds, in any shape :func:`read_calls` reads; raises :class:`Unreadable`."""
        # The C reading answers the usual record or None; the pure function decides everything else.
        found = None if _native is None else _native.own_calls(value, ABSENT)
        if found is None:
            found = own_calls(value)
        return cls(read_calls(value)) if found is None else cls(None, *found)

    @property
    def calls(self) -> list[Call]:
        if self._calls is None:
            self._calls = [Call(item["name"], item.get("arguments", ABSENT)) for item in self._items or ()]
        return self._calls

    def __len__(self) -> int:
        return self.size

    def call(self, index: int) -> Call:
        """The call at ``index``, made alone when the others are not needed."""
        if self._calls is not None or self._items is None:
            return self.calls[index]
        item = self._items[index]
        return Call(item["name"], item.get("arguments", ABSENT))

    def parts(self, index: int) -> tuple[str, Any, str | None]:
        """The name, arguments (ABSENT for none) and text not JSON (or None) of the call at ``index``: what
        :meth:`call` holds, without making the :class:`Call` (a note shows a few calls of thousands of lists)."""
        if self._calls is not None or self._items is None:
            call = self.calls[index]
            return call.name, call.arguments, call.invalid
        item = self._items[index]
        return item["name"], item.get("arguments", ABSENT), None

    def keys(self) -> list[Hashable]:
        """Each call's key (:func:`json_key` of its arguments; ``*`` for none; None for arguments that are not
        JSON text), in order. Raises the :class:`NotJsonError` of the first call whose arguments are not JSON
        values, every time it is asked."""
        if self._keys is None:
            if self._failure is not None:
                raise self._failure
            try:
                self._keys = [None if call.invalid is not None else _key(call.arguments) for call in self.calls]
            except NotJsonError as exc:
                self._failure = exc
                raise
        return self._keys

    def described(
        self, expected: "ReadCalls", pairing: list[int], describe: Callable[["ReadCalls", "ReadCalls", list[int]], str]
    ) -> str:
        """``describe(self, expected, pairing)``, made once and kept for the next metric that describes the same
        pairing of the same two lists (the same objects: :meth:`CallMatcher.pairing_of` shares a pairing by key), so
        the metrics of a batch that leave calls unpaired say which once. ``describe`` must read nothing else."""
        kept = self._described
        if kept is not None and kept[0] is expected and kept[1] is pairing:
            return kept[2]
        text = describe(self, expected, pairing)
        self._described = (expected, pairing, text)
        return text

    def flat_keys(self) -> list[tuple[str, Hashable]] | None:
        """Each call's name and :func:`flat_arguments_key` (``*`` for none), in order, when every call has one;
        None when any call's arguments are not such an object (or are not JSON text), so the pairing takes
        :meth:`keys`."""
        if self._named is False:
            if self._names is not None and self._arguments is not None:
                self._named = _flat_keys_of(self._names, self._arguments)
            else:
                self._named = _flat_keys_of_calls(self.calls)
        return self._named  # type: ignore[return-value]


def _flat_keys_of(names: list[str], arguments: list[Any]) -> list[tuple[str, Hashable]] | None:
    """:meth:`ReadCalls.flat_keys` of own-form calls (their names, and arguments or ABSENT): when every call carries
    a flat object, checked and keyed with C loops over the whole list (a trajectory holds many calls)."""
    if not arguments or list(map(type, arguments)).count(dict) != len(arguments):  # all_of_type, inlined
        keys = [_NAME_ONLY if value is ABSENT else flat_arguments_key(value) for value in arguments]
        return None if None in keys else list(zip(names, keys, strict=True))
    if not _FLAT_TYPES.issuperset(map(type, chain.from_iterable(map(dict.values, arguments)))):
        return None
    try:
        written = _sorted_dump(arguments)
    except orjson.JSONEncodeError:
        return None
    # One dump for the list, "[{a},{b}]", cut into each object's inner text at "},{". Between two objects that
    # text always occurs, and its occurrences never overlap; so when it occurs exactly once fewer times than there
    # are objects, no string holds it and the cut is exact. Else (a string holding "},{"), one dump a call.
    inner = written[2:-2]
    if inner.count(b"},{") == len(arguments) - 1:  # so the cut gives one piece a call: zip's strict check (a
        return list(zip(names, inner.split(b"},{")))  # noqa: B905 - keyword call, measured) would be redundant
    return list(zip(names, [_sorted_dump(value)[1:-1] for value in arguments], strict=True))


def _flat_keys_of_calls(calls: list[Call]) -> list[tuple[str, Hashable]] | None:
    named: list[tuple[str, Hashable]] = []
    for call in calls:
        if call.invalid is not None:
            return None
        arguments = call.arguments
        key = _NAME_ONLY if arguments is ABSENT else flat_arguments_key(arguments)
        if key is None:
            return None
        named.append((call.name, key))
    return named


def flat_arguments_key(arguments: Any) -> bytes | None:
    """A key equal for two flat objects (text keys; text, integer, boolean or null values) exactly when they are
    equal as JSON, made in C: orjson's dump with sorted keys, without its braces (so the keys of a list of calls
    can be cut from one dump of the list). Without a float in either, JSON equality is equality of that text
    (``true`` and ``1`` are written apart, and no ``1.0`` can equal a ``1``). None for anything else (a float, a
    nested value, an integer beyond 64 bits, a key that is not text): :func:`json_key` decides those, and a key of
    one kind (bytes) never equals a key of the other (a tuple), so a list is keyed all one way or all the other."""
    if type(arguments) is not dict or not _FLAT_TYPES.issuperset(map(type, arguments.values())):
        return None
    try:
        return _sorted_dump(arguments)[1:-1]
    except orjson.JSONEncodeError:
        return None


_sorted_dump = partial(orjson.dumps, option=orjson.OPT_SORT_KEYS)
_FLAT_TYPES = frozenset({str, int, bool, type(None)})


class CallMatcher:
    """The match relation of the rules above, built once per metric, and the counts every mode reads."""

    def __init__(self, arguments: CallArguments, tools: Mapping[str, ToolRule]) -> None:
        self.subset = arguments is CallArguments.JSON_SUBSET
        self.tools = {name: _CompiledRule(rule) for name, rule in tools.items()}
        #: Only JSON equality of whole arguments: calls compare by a hashable key, counted with a Counter.
        self.by_key = not self.subset and not self.tools

    def matches(self, made: Call, expected: Call) -> bool:
        if made.name != expected.name or made.invalid is not None:
            return False
        tool = self.tools.get(expected.name)
        validator = None if tool is None else tool.validator
        if validator is not None and (made.arguments is ABSENT or not validator.is_valid(made.arguments)):
            return False
        wanted = expected.arguments
        if wanted is ABSENT:
            return True
        given = made.arguments
        if given is ABSENT:
            return False
        if tool is not None and tool.arguments and type(wanted) is dict and type(given) is dict:
            return self._by_argument(given, wanted, tool.arguments)
        return json_subset(given, wanted) if self.subset else json_key(given) == json_key(wanted)

    def _by_argument(self, given: dict[str, Any], wanted: dict[str, Any], rules: Mapping[str, ArgumentRule]) -> bool:
        # Expected arguments that are not JSON (a NaN) are the reference's error whichever argument is met first,
        # as with whole arguments compared; and the arguments are met in the order written, never a set's order,
        # which moves with the hash seed between processes.
        json_key(wanted)
        keys = list(wanted) if self.subset else [*wanted, *(key for key in given if key not in wanted)]
        default = ArgumentMatch.JSON_SUBSET if self.subset else ArgumentMatch.EXACT
        for key in keys:
            rule = rules.get(key)
            kind = default if rule is None else rule.match
            if kind is ArgumentMatch.IGNORE:
                continue
            if key not in given or key not in wanted:
                return False
            if not _argument_matches(given[key], wanted[key], kind, rule):
                return False
        return True

    def pairing(self, made: Sequence[Call], expected: Sequence[Call]) -> list[int]:
        """For each expected call, the index of the call made it is paired with (-1: none), in a pairing of the
        largest size."""
        return self.pairing_of(ReadCalls(list(made)), ReadCalls(list(expected)))

    def pairing_of(self, made: ReadCalls, expected: ReadCalls) -> list[int]:
        """:meth:`pairing` of calls read once: their keys made once, and a pairing by key made once for every
        metric that pairs the same two (by key, the pairing depends on nothing else). The list is shared: read it,
        never change it."""
        return self.counted(made, expected)[0]

    def counted(self, made: ReadCalls, expected: ReadCalls) -> tuple[list[int], int]:
        """:meth:`pairing_of` and how many calls it pairs (:func:`matched_count`), both kept with a pairing by key
        for the next metric that pairs the same two."""
        if not self.by_key:
            pairing = _maximum_pairing(made.calls, expected.calls, self.matches)
            return pairing, matched_count(pairing)
        paired = made._paired
        if paired is not None and paired[0] is expected:
            return paired[1], paired[2]
        pairing = _pairing_by_key(made, expected)
        matched = matched_count(pairing)
        made._paired = (expected, pairing, matched)
        return pairing, matched

    def in_order(self, made: Sequence[Call], expected: Sequence[Call]) -> int:
        """How many expected calls, from the first, appear in order among the calls made (each call made used once):
        ``len(expected)`` when all do. Taking the earliest call that matches each is optimal for a subsequence."""
        position = 0
        for found, wanted in enumerate(expected):
            while position < len(made) and not self.matches(made[position], wanted):
                position += 1
            if position == len(made):
                return found
            position += 1
        return len(expected)

    def first_difference(self, made: Sequence[Call], expected: Sequence[Call]) -> int | None:
        """The first position where the two sequences differ (a length counts), or None when they match call for
        call."""
        for index, (call, wanted) in enumerate(zip(made, expected, strict=False)):
            if not self.matches(call, wanted):
                return index
        return None if len(made) == len(expected) else min(len(made), len(expected))


class _CompiledRule:
    __slots__ = ("arguments", "validator")

    def __init__(self, rule: ToolRule) -> None:
        self.arguments = rule.arguments
        self.validator: Validator | None = None
        if rule.schema_ is not None:
            from evalglass.metrics.schemas import validator_class

            self.validator = validator_class(rule.schema_)(rule.schema_)


def _argument_matches(given: Any, wanted: Any, kind: ArgumentMatch, rule: ArgumentRule | None) -> bool:
    if kind is ArgumentMatch.JSON_SUBSET:
        return json_subset(given, wanted)
    if kind is ArgumentMatch.NUMERIC and rule is not None and _number(wanted):
        if not _number(given):
            return False
        allowed = (rule.tolerance or 0.0) + (rule.relative or 0.0) * abs(wanted)
        return bool(abs(given - wanted) <= allowed)
    return json_key(given) == json_key(wanted)


def _number(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and math.isfinite(value))


def json_subset(given: Any, wanted: Any) -> bool:
    """Whether ``wanted`` is a JSON subset of ``given``: every key of an expected object is in the given object with
    a value that is itself a subset; arrays element by element at equal length; scalars equal as JSON."""
    if type(wanted) is dict:
        return type(given) is dict and all(
            key in given and json_subset(given[key], value) for key, value in wanted.items()
        )
    if type(wanted) is list:
        return (
            type(given) is list
            and len(given) == len(wanted)
            and all(json_subset(item, want) for item, want in zip(given, wanted, strict=True))
        )
    return json_key(given) == json_key(wanted)


_NAME_ONLY = ("*",)


def _pairing_by_key(made: ReadCalls, expected: ReadCalls) -> list[int]:
    """The largest pairing when calls match exactly when their names and JSON keys are equal (an expected call
    without arguments matches any call of its tool that carries JSON arguments): exact expectations are paired
    first, the name-only ones take what is left of their tool, which no pairing can better."""
    if _native is not None and made._names is not None and expected._names is not None:
        # Two own-form lists of flat arguments paired in C (None: any other case, decided below).
        paired: list[int] | None = _native.pair_flat(made._names, made._arguments, expected._names, expected._arguments)
        if paired is not None:
            return paired
    named, wanted_named = made.flat_keys(), expected.flat_keys()
    if named is not None and wanted_named is not None:
        if named == wanted_named:  # the same calls in the same order: each pairs with its own position
            return list(range(len(named)))
        return _pairing_of_keys(named, wanted_named)
    named_or_invalid = [
        None if call.invalid is not None else (call.name, key)
        for call, key in zip(made.calls, made.keys(), strict=True)
    ]
    # An expected call without JSON arguments (none, or text that is not JSON) names only its tool.
    wanted_keys = [
        (call.name, _NAME_ONLY if call.arguments is ABSENT else key)
        for call, key in zip(expected.calls, expected.keys(), strict=True)
    ]
    return _pairing_of_keys(named_or_invalid, wanted_keys)


def _pairing_of_keys(
    made: Sequence[tuple[str, Hashable] | None], expected: Sequence[tuple[str, Hashable]]
) -> list[int]:
    """:func:`_pairing_by_key` over each call's name and key (None: a call made whose arguments are not JSON text,
    which matches nothing; ``*``: no arguments, which as an expected call names only the tool)."""
    free: dict[tuple[str, Hashable], list[int]] = {}
    for index, named in enumerate(made):
        if named is not None:
            free.setdefault(named, []).append(index)
    pairing = [-1] * len(expected)
    taken: set[int] = set()
    name_only: list[int] = []
    for position, wanted in enumerate(expected):
        if wanted[1] is _NAME_ONLY:
            name_only.append(position)
            continue
        candidates = free.get(wanted)
        if candidates:
            index = candidates.pop(0)
            pairing[position] = index
            taken.add(index)
    for position in name_only:
        tool = expected[position][0]
        for index, named in enumerate(made):
            if named is not None and named[0] == tool and index not in taken:
                pairing[position] = index
                taken.add(index)
                break
    return pairing


def _key(arguments: Any) -> Hashable:
    return _NAME_ONLY if arguments is ABSENT else json_key(arguments)


def _maximum_pairing(made: Sequence[Call], expected: Sequence[Call], match: Match) -> list[int]:
    """A maximum bipartite matching (augmenting paths found breadth-first, so no recursion limit), comparing only
    calls of the same tool."""
    by_name: dict[str, list[int]] = {}
    for index, call in enumerate(made):
        by_name.setdefault(call.name, []).append(index)
    options = [[i for i in by_name.get(wanted.name, ()) if match(made[i], wanted)] for wanted in expected]
    owner = [-1] * len(made)  # made call -> the expected call it is paired with
    pairing = [-1] * len(expected)
    for start in range(len(expected)):
        if not options[start]:
            continue
        reached_from: dict[int, int] = {}
        queue = [start]
        for wanted in queue:
            for index in options[wanted]:
                if index in reached_from:
                    continue
                reached_from[index] = wanted
                if owner[index] == -1:
                    current = index
                    while True:  # flip the path back to ``start``
                        position = reached_from[current]
                        previous = pairing[position]
                        pairing[position], owner[current] = current, position
                        if position == start:
                            break
                        current = previous
                    break
                queue.append(owner[index])
            else:
                continue
            break
    return pairing


def matched_count(pairing: Sequence[int]) -> int:
    return len(pairing) - pairing.count(-1)


__all__ = [
    "ArgumentMatch",
    "ArgumentRule",
    "CallArguments",
    "CallMatcher",
    "ReadCalls",
    "ToolRule",
    "json_subset",
    "matched_count",
]
