"""Property: a metric's batch path returns, example for example, exactly what its per-example function returns.

The batch path is a speed-up only. Equal here means the same type and the same value (``1.0`` is not ``1``,
``-0.0`` is not ``0.0``) or an equal Score, for outputs and records of every shape: the common case the batch
loop handles itself and everything it hands back to the per-example function, wrong answers included (text that
``task.parse: json`` could not parse, outputs without the field), scored for either direction and with either
``on_invalid_output``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.outputparse import parse_json_output
from evalglass.core.stats import Direction
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext, Scorer, value_getter, values_getter
from evalglass.metrics.text import UNTIMED_TEXT

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["Paris", "paris ", "42", "a1", "yes", "NO", "-0.5", " 3 ", "a b c", "", "ß", "Straße"])
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["answer", "n", "x"]), children),
    max_leaves=8,
)
#: Text ``task.parse: json`` could not parse (cut off, in a code fence), as the pipeline hands it to metrics.
UNPARSED = st.sampled_from(['{"answer": "Par', '```json\n{"answer": "Paris"}\n```', "Sure!"]).map(parse_json_output)
ODD = st.sampled_from([ABSENT, {1, 2}, b"bytes", (1, "a"), {1: "int key"}, frozenset({"x"})]) | UNPARSED
OUTPUTS = VALUES | ODD | st.dictionaries(st.sampled_from(["answer", "n"]), VALUES | ODD, max_size=2)
RECORDS = st.dictionaries(st.sampled_from(["gold", "other"]), VALUES | ODD, max_size=2)

#: Every builtin configuration with a batch path, with and without a ``field``, with and without normalising.
CONFIGS: list[dict[str, Any]] = [
    {"type": "exact_match", "reference": "gold"},
    {"type": "exact_match", "reference": "gold", "field": "answer"},
    {"type": "exact_match", "reference": "gold", "normalize": {"case": True, "whitespace": True}},
    {"type": "exact_match", "reference": "gold", "normalize": {"punctuation": True, "unicode": True}},
    {"type": "exact_match", "expected": "Paris"},
    {"type": "exact_match", "expected": "paris", "normalize": {"case": True}, "field": "answer"},
    {"type": "regex", "pattern": r"\d+"},
    {"type": "regex", "pattern": r"^\d+$", "match": "fullmatch", "flags": ["multiline"], "field": "answer"},
    {"type": "numeric_bounds", "min": 0, "max": 800},
    {"type": "numeric_bounds", "min": 0, "max": 1, "field": "n"},
    {"type": "numeric_bounds", "min": -5, "inclusive": False, "coerce": True},
    {"type": "numeric_bounds", "max": 3.5},
    {"type": "contains", "value": "a"},
    {"type": "contains", "value": ["a", "b"], "mode": "all", "case_sensitive": False, "field": "answer"},
    {"type": "word_count", "min": 1, "max": 3},
    {"type": "word_count", "max": 0, "field": "answer"},
    {"type": "enum", "values": ["yes", "no", 1, None], "case_sensitive": False},
    {"type": "enum", "values": ["Paris", "ß"], "field": "answer"},
    {"type": "enum", "values": [42, -0.5, True, "no"]},  # text that spells a number or boolean (enum@5)
    {"type": "enum", "values": [3, False, "42", "true"], "case_sensitive": False, "field": "answer"},
    {"type": "exact_match", "reference": "gold", "field": "answer", "on_invalid_output": "exclude"},
    {"type": "numeric_bounds", "min": 0, "max": 1, "field": "n", "on_invalid_output": "exclude"},
    {"type": "contains", "value": "a", "on_invalid_output": "exclude"},
]
DIRECTIONS = st.sampled_from(list(Direction))


def _same(left: Any, right: Any) -> bool:
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return (math.isnan(left) and math.isnan(right)) or (
            left == right and math.copysign(1, left) == math.copysign(1, right)
        )
    return bool(left == right)


def _built(config: dict[str, Any], direction: Direction) -> Scorer:
    spec = parse_metric_spec(config)
    built = spec.build(BuildContext(Path("."), direction=direction))
    assert isinstance(built, Scorer) and built.batch is not None, "every configuration listed here has a batch path"
    return built


#: Each configuration built once per direction, as a run builds its metrics once and scores every batch with them.
SCORERS: dict[Direction, list[Scorer]] = {direction: [_built(c, direction) for c in CONFIGS] for direction in Direction}


def _assert_every_batch_gives_what_each_example_gives(
    rows: list[tuple[Any, Any]], direction: Direction = Direction.HIGHER_IS_BETTER
) -> None:
    """Every configuration in CONFIGS on the same rows.

    Drawing the rows costs several times what scoring them does, so each drawn batch serves all configurations:
    each one is checked on as many batches as when it drew its own (``max_examples``), drawn once for all of them."""
    examples = [Example(id=str(i), line=i + 1, fields=record, output=output) for i, (output, record) in enumerate(rows)]
    for config, built in zip(CONFIGS, SCORERS[direction], strict=True):
        assert built.batch is not None
        batch = built.batch(ExampleBatch.of(examples))
        one = [built.one(example) for example in examples]
        assert len(batch) == len(one), config
        for got, expected in zip(batch, one, strict=True):
            assert _same(got, expected), (config, got, expected)


def test_every_configuration_listed_has_a_batch_path() -> None:
    assert all(built.batch is not None for scorers in SCORERS.values() for built in scorers)
    assert len({repr(sorted(config.items())) for config in CONFIGS}) == len(CONFIGS)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rows=st.lists(st.tuples(OUTPUTS, RECORDS), max_size=12), direction=DIRECTIONS)
def test_the_batch_path_gives_what_each_example_gives(rows: list[tuple[Any, Any]], direction: Direction) -> None:
    _assert_every_batch_gives_what_each_example_gives(rows, direction)


TEXTS = st.text(max_size=8) | st.sampled_from(["Paris", "paris ", "42", "a1", "yes", "a b c", "", "ß", "Straße"])
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 800.0, 1e308, 3.5, -5.0])
GOLD = st.fixed_dictionaries({"gold": TEXTS})
#: Batches whose values all have one type: the batch paths' C-level lanes (with the odd NaN, infinity, overflowing
#: sum or non-text gold that must send a batch back to the per-value loop).
UNIFORM = (
    st.lists(st.tuples(TEXTS, GOLD), min_size=1, max_size=12)
    | st.lists(st.tuples(st.fixed_dictionaries({"answer": TEXTS, "n": FLOATS}), GOLD), min_size=1, max_size=12)
    | st.lists(st.tuples(FLOATS, GOLD), min_size=1, max_size=12)
    | st.lists(st.tuples(TEXTS, RECORDS), min_size=1, max_size=12)
    | st.lists(st.tuples(TEXTS | UNPARSED, GOLD), min_size=1, max_size=12)
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(rows=UNIFORM)
def test_uniform_batches_give_what_each_example_gives(rows: list[tuple[Any, Any]]) -> None:
    _assert_every_batch_gives_what_each_example_gives(rows)


def test_a_literal_expected_value_that_is_not_text_has_no_batch_path() -> None:
    spec = parse_metric_spec({"type": "exact_match", "expected": {"a": [1, 2]}})
    built = spec.build(BuildContext(Path(".")))
    assert isinstance(built, Scorer) and built.batch is None


def test_calling_a_batched_metric_scores_one_example() -> None:
    spec = parse_metric_spec({"type": "regex", "pattern": "x"})
    built = spec.build(BuildContext(Path(".")))
    assert built(Example(id="a", line=1, fields={}, output="xyz")) == 1.0


PATHS = ["answer", "a.b", "a.0", "a.b.c", 'a["x.y"]', "0"]
DOCUMENTS = st.recursive(
    SCALARS | ODD,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["answer", "a", "b", "c", "x.y", "0"]), children, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.parametrize("path", [*PATHS, None])
@given(documents=st.lists(DOCUMENTS, max_size=6))
def test_value_getters_agree_with_get_path(path: str | None, documents: list[Any]) -> None:
    expected = [document if path is None else get_path(document, parse_path(path)) for document in documents]
    single = value_getter(path)
    assert [single(document) for document in documents] == expected
    assert values_getter(path)(documents) == expected


#: Regex configurations for long texts: a pattern matched without a bound up to UNTIMED_TEXT characters, and one
#: that is always bounded (nested repetition).
REGEXES = [
    _built({"type": "regex", "pattern": r"\d+$"}, Direction.HIGHER_IS_BETTER),
    _built({"type": "regex", "pattern": r"a.*b", "match": "fullmatch"}, Direction.HIGHER_IS_BETTER),
    _built({"type": "regex", "pattern": r"(b+)+1"}, Direction.HIGHER_IS_BETTER),
]
LONG_TEXTS = st.builds(
    lambda head, size, tail: head + "a" * size + tail,
    st.text(alphabet="ab1 ", max_size=3),
    st.sampled_from([0, 10, UNTIMED_TEXT - 4, UNTIMED_TEXT - 1, UNTIMED_TEXT, UNTIMED_TEXT + 1]),
    st.text(alphabet="ab1 ", max_size=3),
)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(LONG_TEXTS | TEXTS, min_size=1, max_size=6))
def test_a_batch_of_texts_is_matched_as_each_text_is_on_either_side_of_the_bound(texts: list[str]) -> None:
    """The regex batch's one ``map`` (every text short enough to match without a bound) and its text-by-text path
    (a longer text among them) give what matching each example gives."""
    examples = [Example(id=str(i), line=i + 1, fields={}, output=text) for i, text in enumerate(texts)]
    for built in REGEXES:
        assert built.batch is not None
        got = built.batch(ExampleBatch.of(examples))
        expected = [built.one(example) for example in examples]
        assert all(_same(a, b) for a, b in zip(got, expected, strict=True)), (texts, got, expected)
