"""The optional C reading of a replay's calls (``evalglass._native._calls``) against the pure functions it speeds up.

The pure functions are the reference: the C functions may answer None (the pure one decides) for anything, but what
they answer otherwise must be what the pure function answers, and the metrics' results (scores, notes, refusals and
their words) must be the same with the C path as with the pure one, on well-formed and adversarial records.
"""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalglass.core.fieldpath import ABSENT
from evalglass.core.trajectory import Unreadable, own_calls
from evalglass.metrics import callmatch
from evalglass.metrics.toolcalls import ToolCallsSpec, _read
from tests.metrics.test_trajectory_consistency import _MESSAGE, _trajectories, trajectory

native = pytest.importorskip("evalglass._native._calls", reason="the C extension was not built here")


@contextmanager
def pure() -> Iterator[None]:
    """The metrics' call sites with the C path off (as ``EVALGLASS_PURE=1`` leaves them)."""
    kept = callmatch._native
    callmatch._native = None
    try:
        yield
    finally:
        callmatch._native = kept


def _outcome(read: Callable[[], Any]) -> Any:
    try:
        return "value", read()
    except Exception as exc:  # every refusal, with its words
        return type(exc).__name__, str(exc)


def _same(a: Any, b: Any) -> bool:
    """Equal, with a NaN equal to a NaN (a float that is its own key in neither path)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or repr(a) == repr(b)


# Argument values a JSON parser can give, and some only Python code can: the cases where "equal" is subtle.
_SCALARS = st.sampled_from(
    [0, 1, -1, 1.0, 0.0, -0.0, True, False, None, "", "1", "a", "é", "日本", "\ud800", 2**63 - 1, 2**63, 2**64, -(2**63),
     -(2**63) - 1, 10**30, float("nan"), float("inf")]
)  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["a", "b", "q"]), inner, max_size=2),
    max_leaves=4,
)
_KEYS = st.sampled_from(["q", "page", "step", "a", "ключ"]) | st.sampled_from([1, None, ("t",)])
_ARGUMENTS = st.one_of(
    st.dictionaries(st.sampled_from(["q", "page", "step"]), _SCALARS, max_size=3),
    st.dictionaries(_KEYS, _VALUES, max_size=3),
    _VALUES,
    st.just(ABSENT),
    st.just("{}"),
)
_NAMES = st.sampled_from(["search", "book", "é"])


def _call(name: str, arguments: Any, extra: dict[str, Any]) -> dict[str, Any]:
    item: dict[Any, Any] = {"name": name, **extra}
    if arguments is not ABSENT:
        item["arguments"] = arguments
    return item


_CALL_ITEMS = st.builds(
    _call,
    _NAMES,
    _ARGUMENTS,
    st.sampled_from([{}, {}, {}, {"type": "tool_use"}, {"function": {}}, {"invalid_arguments": None}, {3: "x"}]),
)
_CALL_LISTS = st.lists(_CALL_ITEMS, max_size=5)


@st.composite
def _records(draw: st.DrawFn) -> Any:
    """An agent lane's trajectory, or one edited at random (the consistency tests' edits), or with adversarial
    arguments put on both sides of a call, or a list of calls, or something else altogether."""
    kind = draw(st.sampled_from(["lane", "edited", "arguments", "list", "other"]))
    if kind == "lane":
        calls = draw(st.lists(st.tuples(_NAMES, st.dictionaries(st.sampled_from(["q", "p"]), _SCALARS)), max_size=6))
        return trajectory(calls, stopped=draw(st.booleans()))
    if kind == "edited":
        return draw(_trajectories())
    if kind == "arguments":
        record = trajectory([("search", {"q": n}) for n in range(draw(st.integers(1, 4)))], stopped=draw(st.booleans()))
        at = draw(st.integers(0, len(record["tool_calls"]) - 1))
        given, shown = draw(_VALUES), draw(_VALUES)
        record["tool_calls"][at]["arguments"] = given
        part = record["messages"][1 + 2 * at]["parts"][0]
        part["arguments"] = copy.deepcopy(given) if draw(st.booleans()) else shown
        if draw(st.booleans()):
            record["tool_calls"][at]["result"] = draw(_VALUES)
        if draw(st.booleans()):
            record[draw(st.sampled_from(["steps", "finish"]))] = draw(
                st.sampled_from([None, 0, 2**70, -1, True, 1.0, "stop", "max_steps", ["stop"]])
            )
        if draw(st.booleans()):
            record["messages"].insert(draw(st.integers(0, 3)), draw(_MESSAGE))
        calls = record["tool_calls"]
        if draw(st.booleans()):  # two calls with one id (and different results): the last one is the id's
            calls[draw(st.integers(0, len(calls) - 1))]["id"] = calls[draw(st.integers(0, len(calls) - 1))]["id"]
        if draw(st.booleans()):  # the messages cut at the end or the start: fewer calls than tool_calls
            cut = draw(st.integers(-4, 4))
            record["messages"] = record["messages"][cut:] if cut > 0 else record["messages"][: cut or None]
        return record
    if kind == "list":
        return draw(_CALL_LISTS)
    return draw(st.sampled_from([{"role": "assistant", "parts": []}, {"tool_calls": "x"}, {}, 5, None, "calls"]))


def _edited(record: dict[str, Any], edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    edit(record)
    return record


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_records())
@example(record=trajectory([("search", {"q": 1})] * 3, stopped=True))
@example(  # the messages hold the first call of two, not the last: it does not add up
    record=_edited(
        trajectory([("search", {"q": 1}), ("book", {"q": 2})], stopped=False),
        lambda record: record.update(messages=record["messages"][:-2]),
    )
)
@example(  # two calls with one id: the last one's result is the id's, which its result disagrees with
    record=_edited(
        trajectory([("search", {"q": 1}), ("book", {"q": 2})], stopped=True),
        lambda record: (record["tool_calls"][1].update(id="call_0"), record["messages"].pop(4)),
    )
)
def test_the_c_reading_answers_only_what_the_pure_reading_answers(record: Any) -> None:
    """``own_calls`` in C returns (items, names, arguments) only where the pure function returns the same without
    raising; None otherwise (the pure function decides). An agent lane's record as recorded is always answered."""
    pure_outcome = _outcome(lambda: own_calls(record))
    answered = native.own_calls(record, ABSENT)
    if answered is not None:
        assert pure_outcome[0] == "value" and pure_outcome[1] is not None
        items, names, arguments = pure_outcome[1]
        assert answered[0] is items
        assert answered[1] == names and all(a is b for a, b in zip(answered[2], arguments, strict=True))


@settings(max_examples=200, deadline=None)
@given(calls=st.lists(st.tuples(_NAMES, st.dictionaries(st.sampled_from(["q", "p"]), _SCALARS)), max_size=6))
def test_an_agent_lanes_record_is_read_in_c(calls: list[tuple[str, dict[str, Any]]]) -> None:
    """The usual record (what the C path is for) never falls back: the speed claim holds for the stated class."""
    for stopped in (True, False):
        record = trajectory(calls, stopped=stopped)
        assert native.own_calls(record, ABSENT) is not None
        assert native.own_calls(record["tool_calls"], ABSENT) is not None


_SPECS = [
    {"mode": "any_order"},
    {"measure": "f1"},
    {"measure": "precision"},
    {"mode": "exact"},
    {"mode": "in_order", "extra_calls": "forbid"},
    {"mode": "subset"},
    {"mode": "superset", "vacuous": "pass"},
    {"mode": "any_order", "arguments": "json_subset"},
]


def _judged(spec: dict[str, Any], made: Any, expected: Any) -> Any:
    judge = ToolCallsSpec.model_validate({"reference": "gold", **spec})._judge()
    result = judge(_read(made), _read(expected))
    if isinstance(result, Unreadable):
        return type(result).__name__, str(result)
    return result


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(made=_records() | _CALL_LISTS, expected=_CALL_LISTS, spec=st.sampled_from(_SPECS))
@example(made=[{"name": "search", "arguments": {"q": 1}}], expected=[{"name": "search", "arguments": {"q": 1.0}}],
         spec={"mode": "any_order"})  # fmt: skip
@example(made=[{"name": "search", "arguments": {"q": True}}], expected=[{"name": "search", "arguments": {"q": 1}}],
         spec={"measure": "f1"})  # fmt: skip
def test_the_metrics_score_the_same_with_the_c_path_and_without(
    made: Any, expected: list[dict[str, Any]], spec: dict[str, Any]
) -> None:
    """Every ``tool_calls`` result (score, note, refusal and its words) is the same with the C path as without."""
    with pure():
        reference = _outcome(lambda: _judged(spec, copy.deepcopy(made), copy.deepcopy(expected)))
    got = _outcome(lambda: _judged(spec, made, expected))
    assert _same(got, reference)


@settings(max_examples=1500, deadline=None)
@given(made=_CALL_LISTS, expected=_CALL_LISTS)
@example(  # the same calls in another order, and a duplicate: the greedy order by position is the pure one's
    made=[{"name": "a", "arguments": {"q": 1}}, {"name": "a", "arguments": {"q": 1}}, {"name": "b", "arguments": {}}],
    expected=[{"name": "b", "arguments": {}}, {"name": "a", "arguments": {"q": 1}}],
)
def test_pairs_made_in_c_are_the_pure_pairs(made: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """``pair_flat`` answers a pairing only where ``_pairing_by_key`` gives the same one; None otherwise."""
    read = [_read(made), _read(expected)]
    if any(not isinstance(calls, callmatch.ReadCalls) or calls._names is None for calls in read):
        return
    names, arguments = read[0]._names, read[0]._arguments
    wanted_names, wanted = read[1]._names, read[1]._arguments
    paired = native.pair_flat(names, arguments, wanted_names, wanted)
    with pure():
        reference = _outcome(lambda: callmatch._pairing_by_key(_read(made), _read(expected)))
    if paired is not None:
        assert reference == ("value", paired)


def test_pairs_of_flat_lists_are_made_in_c() -> None:
    """Flat arguments of every kind C covers are paired in C (the class the speed claim is for)."""
    made = [{"q": "é", "n": 2**63 - 1, "b": True, "z": None}, {"q": "a"}, {}]
    wanted = [{}, {"q": "a"}, {"z": None, "b": True, "n": 2**63 - 1, "q": "é"}, {"q": "b"}]
    assert native.pair_flat(["s", "s", "t"], made, ["t", "s", "s", "s"], wanted) == [2, 1, 0, -1]
    for value in (1.0, 2**63, "\ud800", [1], {"a": 1}):  # each decided by the pure path
        assert native.pair_flat(["s"], [{"q": value}], ["s"], [{"q": value}]) is None
    assert native.pair_flat(["s"], [ABSENT], ["s"], [{}]) is None


def _nested(depth: int) -> Any:
    nested: Any = 1
    for _ in range(depth):
        nested = [nested]
    return nested


def test_values_nested_near_the_recursion_limit_are_decided_as_the_pure_reading_decides() -> None:
    """A comparison of deeply nested arguments fails (RecursionError) or not at the same depth either way."""
    limit = sys.getrecursionlimit()
    outcomes = []
    for depth in range(limit - 60, limit + 5, 3):
        record = trajectory([("search", {"q": 1})], stopped=True)
        record["tool_calls"][0]["arguments"] = _nested(depth)
        record["messages"][1]["parts"][0]["arguments"] = _nested(depth)
        with pure():
            reference = _outcome(lambda record=record: type(callmatch.ReadCalls.of(record)).__name__)
        got = _outcome(lambda record=record: type(callmatch.ReadCalls.of(record)).__name__)
        assert got == reference, depth
        outcomes.append(reference[0])
    assert "value" in outcomes and "RecursionError" in outcomes  # the boundary is inside the range tried


def test_no_reference_is_leaked_or_lost() -> None:
    """Every object the C functions read has the same reference count after 2,000 calls as before, whether they
    answer or fall back (an edited record) or fail inside (a comparison that raises)."""

    class Raises:
        def __eq__(self, other: object) -> bool:
            raise ValueError("no")

        __hash__ = None  # type: ignore[assignment]

    good = trajectory([("search", {"q": n}) for n in range(5)], stopped=True)
    edited = copy.deepcopy(good)
    edited["finish"] = "max_steps"
    raising = copy.deepcopy(good)
    raising["tool_calls"][0]["arguments"] = Raises()
    flat = [{"q": "a", "n": 1}, {"q": "b"}]
    watched = [good, good["tool_calls"], good["messages"], good["messages"][1], good["tool_calls"][0]["arguments"],
               good["tool_calls"][0]["result"], edited, raising, raising["tool_calls"][0]["arguments"], flat, flat[0],
               "search", ABSENT]  # fmt: skip
    before = [sys.getrefcount(value) for value in watched]
    for _ in range(2000):
        assert native.own_calls(good, ABSENT) is not None
        assert native.own_calls(edited, ABSENT) is None
        assert native.own_calls(raising, ABSENT) is None
        assert native.pair_flat(["search", "book"], flat, ["book", "search"], flat[::-1]) == [1, 0]
        assert native.pair_flat(["search", "search"], flat, ["search", "search"], flat) == [0, 1]
    assert [sys.getrefcount(value) for value in watched] == before


def test_a_value_changed_by_its_own_comparison_is_read_safely() -> None:
    """A comparison that runs Python code changing the record (not JSON, but a host's output may hold anything)
    cannot make the C reading touch freed memory: it answers as the pure reading does, or falls back."""
    record = trajectory([("search", {"q": 1}), ("book", {"q": 2})], stopped=True)

    class Clears:
        def __eq__(self, other: object) -> bool:
            record["messages"].clear()
            record["tool_calls"][1].clear()
            return True

        def __ne__(self, other: object) -> bool:
            return not self.__eq__(other)

        __hash__ = None  # type: ignore[assignment]

    record["tool_calls"][0]["arguments"] = Clears()
    record["messages"][1]["parts"][0]["arguments"] = Clears()
    answered = native.own_calls(record, ABSENT)
    assert answered is None or answered[0] is record["tool_calls"]


@pytest.mark.parametrize(("pure_env", "loaded"), [("1", False), ("", True), ("0", True)])
def test_evalglass_pure_turns_the_c_path_off(pure_env: str, loaded: bool) -> None:
    env = {**os.environ, "EVALGLASS_PURE": pure_env}
    done = subprocess.run(
        [sys.executable, "-c", "from evalglass._native import calls; print(calls is not None)"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == str(loaded)


_COLLECTION_CHANGES_THE_RECORD = """
import gc, sys
from evalglass._native import calls
from evalglass.core.fieldpath import ABSENT

mode = sys.argv[1]
armed = False
hits = 0
state = {}


def change(phase, info):
    global armed, hits
    if phase == "start" and armed:
        armed = False
        hits += 1
        if mode == "items":
            state["record"]["tool_calls"].clear()
        elif mode == "messages":
            state["record"]["messages"] = None
        else:
            state["names"].clear()
            state["args"].clear()


gc.callbacks.append(change)
for i in range(200):
    call = {"name": "a", "arguments": {"x": 1}, "id": "c", "result": [1]}
    part = {"type": "tool_call", "name": "a", "arguments": {"x": 1}}
    state["record"] = {
        "tool_calls": [dict(call, id=str(j)) for j in range(50)],
        "messages": [{"role": "assistant", "parts": [dict(part)]} for _ in range(50)],
    }
    if mode == "items":
        del state["record"]["messages"]
    state["names"], state["args"] = ["a"] * 40, [{"x": j} for j in range(40)]
    garbage = [[] for _ in range(200)]
    gc.set_threshold(1)
    armed = True
    if mode == "pairs":
        calls.pair_flat(state["names"], state["args"], ["a"] * 40, [{"x": 39 - j} for j in range(40)])
    else:
        calls.own_calls(state["record"], ABSENT)
    armed = False
    gc.set_threshold(700)
print(hits)
"""


@pytest.mark.parametrize("mode", ["items", "messages", "pairs"])
def test_a_collection_that_changes_the_record_mid_read_cannot_crash_the_process(mode: str) -> None:
    """A list or tuple the C code allocates can start a collection that runs Python code (``__del__``,
    ``gc.callbacks``) and shrinks or frees the record being read: the C path holds its own references and
    re-checks lengths, so the process lives (a build that did not crashed here with SIGSEGV)."""
    done = subprocess.run(
        [sys.executable, "-c", _COLLECTION_CHANGES_THE_RECORD, mode],
        capture_output=True,
        text=True,
        env={**os.environ, "EVALGLASS_PURE": ""},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 0  # the collection did run mid-read
