"""tool_calls: every worked case of docs/metrics.md as written there, the rules around them (missing and malformed
gold, unreadable trajectories, what a note says), and the multiset properties of the counting, by hypothesis."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score, Status, Validity
from evalglass.core.trajectory import Call
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.callmatch import CallArguments, CallMatcher, ToolRule, json_subset, matched_count
from tests.metrics.helpers import assert_unmeasured, assert_worst, measure

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


# ---------------------------------------------------------------------- the documented cases, as written
def _calls(cell: str) -> list[dict[str, Any]]:
    """``name{json}; name`` (or ``—``) as a list of calls; a call without braces has no arguments."""
    text = cell.strip().strip("`")
    if text == "—":
        return []
    calls = []
    for item in text.split("; "):
        name, brace, rest = item.partition("{")
        calls.append({"name": name} if not brace else {"name": name, "arguments": json.loads(brace + rest)})
    return calls


def _made(cell: str) -> Any:
    raw = re.fullmatch(r"`(\w+)` with arguments text `(.*)`", cell.strip())
    if raw is not None:  # as the OpenAI shape carries arguments: text, here text that is not JSON
        name, text = raw.groups()
        return [{"role": "assistant", "tool_calls": [{"function": {"name": name, "arguments": text}}]}]
    return _calls(cell)


def documented_cases() -> list[tuple[str, dict[str, Any], list[dict[str, Any]], Any, str]]:
    section = DOCS.read_text(encoding="utf-8").split("## tool_calls", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (.+?) \| (.+?) \| (.+?) \|$", section, flags=re.MULTILINE)
    cases = []
    for number, rule, expected, made, result in rows:
        text = rule.strip("`")
        config = yaml.safe_load(text if text.startswith("{") else "{" + text + "}")
        cases.append((number, config, _calls(expected), _made(made), result))
    return cases


CASES = documented_cases()


def test_the_documented_table_is_read_whole() -> None:
    assert [int(number) for number, *_ in CASES] == list(range(1, 32))


@pytest.mark.parametrize(("number", "rule", "expected", "made", "result"), CASES, ids=[case[0] for case in CASES])
def test_every_documented_case_scores_as_documented(
    number: str, rule: dict[str, Any], expected: list[dict[str, Any]], made: Any, result: str
) -> None:
    scored = measure({"type": "tool_calls", "reference": "gold", **rule}, made, gold=expected)
    words = result.replace("`", "").split()
    if words[0] == "non_evaluable":
        assert_unmeasured(scored, Status.NON_EVALUABLE, words[1])
        return
    value = scored if type(scored) is float else scored.value if isinstance(scored, Score) else None
    assert value == pytest.approx(float(words[0]), abs=1e-3), (number, scored)
    if isinstance(scored, Score):
        assert scored.status is Status.SCORED and scored.validity is Validity.VALID


def test_the_cases_other_tools_got_wrong_say_what_was_counted() -> None:
    duplicates = measure(
        {"type": "tool_calls", "reference": "gold", "mode": "any_order"},
        [{"name": "search", "arguments": {"q": "rome"}}] * 2,
        gold=[{"name": "search", "arguments": {"q": "paris"}}],
    )
    assert isinstance(duplicates, Score) and duplicates.diagnostics[0].code == "tool_calls_mismatch"
    message = duplicates.diagnostics[0].message
    assert "0 of 1 expected calls matched by 2 made (precision 0, recall 0, F1 0)" in message
    assert 'expected but not made: search({"q":"paris"})' in message
    assert 'made but not expected: search({"q":"rome"}), search({"q":"rome"})' in message


# ---------------------------------------------------------------------- the rules around the counting
def test_a_pass_with_extra_calls_carries_its_counts_as_evidence() -> None:
    found = measure(
        {"type": "tool_calls", "reference": "gold", "mode": "superset"},
        [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}],
        gold=[{"name": "a", "arguments": {}}],
    )
    assert isinstance(found, Score) and found.value == 1.0 and found.diagnostics[0].code == "tool_calls_counted"
    assert "(precision 0.5, recall 1, F1 0.667)" in found.diagnostics[0].message
    perfect = measure(
        {"type": "tool_calls", "reference": "gold", "mode": "exact"}, [{"name": "a"}], gold=[{"name": "a"}]
    )
    assert perfect == 1.0  # a perfect pairing is a bare number: nothing to report


def test_missing_gold_is_a_gap_in_the_reference_never_a_score() -> None:
    result = measure({"type": "tool_calls", "reference": "gold", "mode": "exact"}, [{"name": "a"}])
    assert_unmeasured(result, Status.NON_EVALUABLE, "reference_missing")
    # looked at before the answer: an unreadable answer without gold is still the gold's gap
    assert_unmeasured(
        measure({"type": "tool_calls", "reference": "gold", "mode": "exact"}, 42),
        Status.NON_EVALUABLE,
        "reference_missing",
    )


@pytest.mark.parametrize("gold", ["search", 3, None, [{"arguments": {}}], {"tool_calls": "x"}])
def test_malformed_gold_is_the_references_problem(gold: Any) -> None:
    result = measure({"type": "tool_calls", "reference": "gold", "mode": "exact"}, [], gold=gold)
    assert_unmeasured(result, Status.NON_EVALUABLE, "reference_wrong_type")


@pytest.mark.parametrize("output", [3, "I called the weather tool", [{"role": "user", "content": "x"}, 7]])
def test_an_unreadable_trajectory_is_a_wrong_answer(output: Any) -> None:
    config = {"type": "tool_calls", "reference": "gold", "mode": "exact"}
    assert_worst(measure(config, output, gold=[]), 0.0, "trajectory_unreadable")
    left_out = measure({**config, "on_invalid_output": "exclude"}, output, gold=[])
    assert_unmeasured(left_out, Status.ERROR, "trajectory_unreadable")


def test_a_trajectory_in_a_field_missing_is_a_wrong_answer() -> None:
    config = {"type": "tool_calls", "reference": "gold", "mode": "exact", "field": "trajectory"}
    assert_worst(measure(config, {"answer": "x"}, gold=[]), 0.0, "output_field_missing")


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"type": "tool_calls", "reference": "gold"}, "needs a 'mode'"),
        ({"type": "tool_calls", "reference": "gold", "measure": "f1", "mode": "exact"}, "remove 'mode'"),
        ({"type": "tool_calls", "reference": "gold", "mode": "exact", "extra_calls": "forbid"}, "in_order only"),
        ({"type": "tool_calls", "mode": "exact"}, "reference"),
        ({"type": "tool_calls", "reference": "g", "mode": "exact", "vacuous": "fail"}, "vacuous"),
        ({"type": "tool_calls", "reference": "g", "mode": "exact", "tools": {"t": {"schema": {"type": 3}}}}, "schema"),
        (
            {
                "type": "tool_calls",
                "reference": "g",
                "mode": "exact",
                "tools": {"t": {"arguments": {"a": {"match": "exact", "tolerance": 1}}}},
            },
            "match: numeric",
        ),
    ],
)
def test_rules_that_do_not_say_what_they_count_are_refused(config: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_metric_spec(config)
    assert says in str(caught.value)


def test_the_batch_path_gives_exactly_what_one_example_at_a_time_gives() -> None:
    from evalglass.core.example import Example, ExampleBatch
    from evalglass.metrics.base import BuildContext, Scorer

    outputs: list[Any] = [
        [{"name": "a", "arguments": {"x": 1}}],
        {"tool_calls": [{"name": "a", "arguments": {"x": 2}}]},
        7,
        ABSENT,
        [{"role": "assistant", "content": [{"type": "tool_use", "name": "a", "input": {"x": 1}}]}],
    ]
    records: list[dict[str, Any]] = [{"gold": [{"name": "a", "arguments": {"x": 1}}]}] * 4 + [{}]
    for rule in ({"mode": "any_order"}, {"measure": "f1"}, {"mode": "in_order", "extra_calls": "forbid"}):
        function = parse_metric_spec({"type": "tool_calls", "reference": "gold", **rule}).build(BuildContext(Path(".")))
        assert isinstance(function, Scorer) and function.batch is not None
        examples = [
            Example(f"e{i}", i + 1, record, output)
            for i, (record, output) in enumerate(zip(records, outputs, strict=True))
        ]
        assert function.batch(ExampleBatch.of(examples)) == [function.one(example) for example in examples]


# ---------------------------------------------------------------------- the multiset properties
TOOLS = st.sampled_from(["a", "b", "c"])
ARGUMENTS = st.sampled_from([{}, {"x": 1}, {"x": 2}, {"x": 1, "y": True}])
CALLS = st.lists(st.builds(Call, TOOLS, ARGUMENTS), max_size=6)
EXACT = CallMatcher(CallArguments.EXACT, {})
#: The same relation (JSON equality) through the general pairing: a tool rule takes the matcher off the key path.
EXACT_GENERAL = CallMatcher(CallArguments.EXACT, {name: ToolRule() for name in ("a", "b", "c")})


def _multiset(calls: list[Call]) -> Counter[str]:
    return Counter(json.dumps([call.name, call.arguments], sort_keys=True) for call in calls)


def _score(rule: dict[str, Any], made: list[Call], expected: list[Call]) -> Any:
    as_json = [{"name": call.name, "arguments": call.arguments} for call in made]
    gold = [{"name": call.name, "arguments": call.arguments} for call in expected]
    result = measure({"type": "tool_calls", "reference": "gold", "vacuous": "pass", **rule}, as_json, gold=gold)
    return result if type(result) is float else result.value if isinstance(result, Score) else None


@settings(max_examples=300, deadline=None)
@given(made=CALLS, expected=CALLS)
def test_matched_is_the_multiset_intersection_and_the_modes_are_multiset_relations(
    made: list[Call], expected: list[Call]
) -> None:
    mine, gold = _multiset(made), _multiset(expected)
    matched = matched_count(EXACT.pairing(made, expected))
    assert matched == sum((mine & gold).values()) == matched_count(EXACT_GENERAL.pairing(made, expected))
    assert _score({"mode": "any_order"}, made, expected) == float(mine == gold)
    assert _score({"mode": "subset"}, made, expected) == float(mine <= gold)
    assert _score({"mode": "superset"}, made, expected) == float(mine >= gold)
    if made or expected:
        assert _score({"measure": "f1"}, made, expected) == pytest.approx(2 * matched / (len(made) + len(expected)))


@settings(max_examples=200, deadline=None)
@given(made=CALLS, expected=CALLS, data=st.data())
def test_order_never_enters_a_multiset_rule_and_always_enters_exact(
    made: list[Call], expected: list[Call], data: st.DataObject
) -> None:
    shuffled_made = data.draw(st.permutations(made))
    shuffled_expected = data.draw(st.permutations(expected))
    for rule in ({"mode": "any_order"}, {"mode": "subset"}, {"mode": "superset"}, {"measure": "f1"}):
        assert _score(rule, made, expected) == _score(rule, shuffled_made, shuffled_expected)
    assert _score({"mode": "exact"}, shuffled_made, expected) == float(shuffled_made == expected)


@settings(max_examples=200, deadline=None)
@given(made=CALLS, expected=CALLS, copies=st.integers(min_value=1, max_value=3))
def test_a_duplicate_call_is_a_call(made: list[Call], expected: list[Call], copies: int) -> None:
    """Repeating a call made adds at most as many matches as the expected calls it equals can take, and never
    raises precision unless it is itself expected more often than made."""
    if not made:
        return
    extra = [made[0]] * copies
    before = matched_count(EXACT.pairing(made, expected))
    after = matched_count(EXACT.pairing(made + extra, expected))
    (key,) = _multiset([made[0]])
    room = max(0, _multiset(expected)[key] - _multiset(made)[key])
    assert after == before + min(copies, room)
    if room == 0:
        assert after / (len(made) + copies) <= before / len(made)


def _assignments(made: int, expected: int, taken: tuple[int | None, ...] = ()) -> Iterator[tuple[int | None, ...]]:
    """Every assignment of calls made to expected calls, each once: per expected call, one call made not yet taken,
    or none (1,546 for 5 and 5, where the permutations of the calls and 5 ``None`` repeat each up to 120 times)."""
    if len(taken) == expected:
        yield taken
        return
    yield from _assignments(made, expected, (*taken, None))
    for index in range(made):
        if index not in taken:
            yield from _assignments(made, expected, (*taken, index))


@settings(max_examples=300, deadline=None)
@given(
    made=st.lists(
        st.builds(Call, st.just("f"), st.sampled_from([{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}])), max_size=5
    ),
    expected=st.lists(
        st.builds(Call, st.just("f"), st.sampled_from([{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}])), max_size=5
    ),
)
def test_the_subset_pairing_is_as_large_as_any_pairing(made: list[Call], expected: list[Call]) -> None:
    """json_subset is not an equivalence, so a greedy pairing can come short: the pairing found is the largest
    (brute force over every assignment)."""
    matcher = CallMatcher(CallArguments.JSON_SUBSET, {})
    fits = [[json_subset(call.arguments, wanted.arguments) for wanted in expected] for call in made]
    best = max(
        sum(1 for position, index in enumerate(assignment) if index is not None and fits[index][position])
        for assignment in _assignments(len(made), len(expected))
    )
    pairing = matcher.pairing(made, expected)
    assert matched_count(pairing) == best
    used = [index for index in pairing if index >= 0]
    assert len(used) == len(set(used))
    for position, index in enumerate(pairing):
        if index >= 0:
            assert matcher.matches(made[index], expected[position])


# ---------------------------------------------------------------------- one batch read once for every metric
SHARED_RULES: list[dict[str, Any]] = [
    {"mode": "any_order"},
    {"measure": "f1"},
    {"measure": "precision"},
    {"mode": "subset", "vacuous": "pass"},
    {"mode": "exact"},
    {"mode": "in_order", "extra_calls": "forbid"},
    {"mode": "superset", "arguments": "json_subset"},
    {"measure": "recall", "tools": {"a": {"arguments": {"x": {"tolerance": 0.5}}}}},
]
#: Arguments as recorded: JSON values (1 and 1.0 equal, true not 1), none at all, text that is not JSON, and values
#: that are not JSON (NaN, a set), which make a count by key an error.
RAW_ARGUMENTS = st.sampled_from(
    [{}, {"x": 1}, {"x": 1.0}, {"x": True}, {"x": 2, "y": [1, {"z": None}]}, {"x": float("nan")}, {"x": {1, 2}}]
)
RAW_CALL = st.one_of(
    st.builds(lambda name, arguments: {"name": name, "arguments": arguments}, TOOLS, RAW_ARGUMENTS),
    st.builds(lambda name: {"name": name}, TOOLS),
    st.builds(lambda name: {"name": name, "invalid_arguments": "{x"}, TOOLS),
)
RAW_OUTPUT = st.one_of(
    st.lists(RAW_CALL, max_size=5),
    st.builds(lambda calls: {"tool_calls": calls}, st.lists(RAW_CALL, max_size=5)),
    st.just(7),
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(RAW_OUTPUT, st.one_of(st.lists(RAW_CALL, max_size=5), st.just("x"))), max_size=6))
def test_metrics_sharing_a_batch_score_each_example_as_it_is_scored_alone(rows: list[tuple[Any, Any]]) -> None:
    """Every tool_calls metric of a run reads a batch's calls (and pairs them by key) once, whichever asks first:
    each still scores every example exactly as its one-example path does on a fresh example."""
    from evalglass.core.example import Example, ExampleBatch
    from evalglass.metrics.base import BuildContext, Scorer

    def examples() -> list[Example]:
        return [Example(f"e{i}", i + 1, {"gold": gold}, output) for i, (output, gold) in enumerate(rows)]

    functions = []
    for rule in SHARED_RULES:
        function = parse_metric_spec({"type": "tool_calls", "reference": "gold", **rule}).build(BuildContext(Path(".")))
        assert isinstance(function, Scorer) and function.batch is not None
        functions.append(function)
    batch = ExampleBatch.of(examples())
    shared = [function.batch(batch) for function in functions]  # type: ignore[misc]
    alone = [[function.one(example) for example in examples()] for function in functions]
    assert shared == alone


# ---------------------------------------------------------------------- keys made in C for flat arguments
#: Values a flat argument object holds, with the pairs JSON equality tells apart or not (1 and 1.0, 0 and -0.0,
#: true and 1, "1" and 1), what orjson cannot write (an integer beyond 64 bits), and text holding what separates
#: two objects in one dump of a list of them ("},{", which the keys of a list are cut at).
FLAT_VALUES = st.sampled_from(
    [1, 1.0, 0, -0.0, 0.0, 2.5, True, False, None, "1", "a", "", "},{", '"},{"', "}", 2**64, -(2**63), [1], {}]
)
FLAT_ARGUMENTS = st.dictionaries(st.sampled_from(["x", "y", "z"]), FLAT_VALUES, max_size=3)


@settings(max_examples=400, deadline=None)
@given(first=FLAT_ARGUMENTS, second=FLAT_ARGUMENTS)
def test_a_key_made_in_c_is_equal_exactly_when_the_arguments_are_equal_as_json(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    """The key a flat object gets without a Python walk: only for text, integer, boolean and null values (a float,
    a nested value or an integer orjson cannot write get none, and the general key decides), and then equal for two
    objects exactly when json_key says they are equal."""
    from evalglass.core.jsonvalue import json_key
    from evalglass.metrics.callmatch import flat_arguments_key

    keys = flat_arguments_key(first), flat_arguments_key(second)
    for arguments, key in zip((first, second), keys, strict=True):
        simple = all(type(value) in (str, int, bool, type(None)) and -(2**63) <= value < 2**64 if type(value) is int
                     else type(value) in (str, bool, type(None)) for value in arguments.values())  # fmt: skip
        assert (key is not None) == simple
    if None not in keys:
        assert (keys[0] == keys[1]) == (json_key(first) == json_key(second))


@settings(max_examples=300, deadline=None)
@given(
    made=st.lists(st.tuples(TOOLS, st.one_of(FLAT_ARGUMENTS, st.none())), max_size=6),
    expected=st.lists(st.tuples(TOOLS, st.one_of(FLAT_ARGUMENTS, st.none())), max_size=6),
    shape=st.sampled_from(["list", "trajectory"]),
)
def test_calls_keyed_from_their_items_pair_as_the_rule_says(
    made: list[tuple[str, Any]], expected: list[tuple[str, Any]], shape: str
) -> None:
    """Calls in EvalGlass's own form are keyed straight from their items, in C where their arguments are flat: the
    pairing is the rule's, written out here: each expected call, in order, takes the first call made not yet taken
    with its name and JSON-equal arguments; then each expected call without arguments takes the first call of its
    tool left. Duplicates count, 1 matches 1.0, true does not match 1."""
    from evalglass.core.jsonvalue import json_key
    from evalglass.metrics.callmatch import ReadCalls

    def items(calls: list[tuple[str, Any]]) -> list[dict[str, Any]]:
        return [{"name": name} if arguments is None else {"name": name, "arguments": arguments}
                for name, arguments in calls]  # fmt: skip

    taken: set[int] = set()
    rule = [-1] * len(expected)
    for position, (name, wanted) in enumerate(expected):
        for index, (tool, sent) in enumerate(made):
            if wanted is None or sent is None or index in taken or tool != name:
                continue
            if json_key(sent) == json_key(wanted):
                rule[position] = index
                taken.add(index)
                break
    for position, (name, wanted) in enumerate(expected):
        if wanted is None:
            free = [index for index, (tool, _) in enumerate(made) if tool == name and index not in taken]
            if free:
                rule[position] = free[0]
                taken.add(free[0])
    output = items(made) if shape == "list" else {"tool_calls": items(made), "text": "done"}
    assert EXACT.pairing_of(ReadCalls.of(output), ReadCalls.of(items(expected))) == rule
    assert (
        EXACT.pairing(
            [Call(name, ABSENT if arguments is None else arguments) for name, arguments in made],
            [Call(name, ABSENT if arguments is None else arguments) for name, arguments in expected],
        )
        == rule
    )


_ARGUMENT_ORDER = """
import math
from evalglass.core.jsonvalue import NotJsonError
from evalglass.core.trajectory import Call
from evalglass.metrics.callmatch import ArgumentRule, CallArguments, CallMatcher, ToolRule
matcher = CallMatcher(CallArguments.EXACT, {"t": ToolRule(arguments={"unit": ArgumentRule(match="ignore")})})
expected = Call("t", {"x": math.nan, "y": 1, "z": 2, "u": 4})
made = Call("t", {"w": 1, "y": 1, "v": 3, "s": 5})
try:
    print(matcher.matches(made, expected))
except NotJsonError:
    print("not json")
"""


def test_expected_arguments_not_json_are_an_error_under_a_per_argument_rule_whatever_the_hash_seed() -> None:
    """Under a per-argument rule an expected NaN was an error or a plain non-match depending on which argument a
    set's order (moving with PYTHONHASHSEED between processes) met first; it is the reference's error, as when
    whole arguments are compared."""
    seen = {
        subprocess.run(
            [sys.executable, "-c", _ARGUMENT_ORDER],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert seen == {"not json\n"}
