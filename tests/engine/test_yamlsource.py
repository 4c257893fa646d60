"""The YAML reader's plain path (one walk) answers exactly as its general path (check, construct, index) does.

`parse_yaml` builds most documents in one walk and hands everything else (merge keys, unusual tags, every problem
it refuses) to the general path. These tests hold the two to the same answer on generated documents: the same value
(the same types, the same key order), the same line of every key path, and for a refused document the same one-line
error, so the fast path can never accept what the general one refuses.
"""

from __future__ import annotations

import datetime as dt
import gc
import re
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.errors import SetupError
from evalglass.readers import yamlsource
from evalglass.readers.yamlsource import MAX_ALIAS_TEXT, parse_yaml

PATH = Path("doc.yaml")

SCALARS = [
    "1", "-7", "0x1F", "0o17", "1_000", "+12", "190:20:30", "9223372036854775807", "-9223372036854775808",
    "9223372036854775808", "-9223372036854775809", "99999999999999999999", "1.5", ".nan", "-.inf", "1e3", "yes", "No",
    "on", "off", "true", "null", "~", "''", "2026-11-01", "2026-02-30", "2026-11-01 10:00:00", "'quoted'", '"a\\tb"',
    "plain text", "Q&A", "!!str 5", "!!int '7'", "!!float '2'", "!!binary aGVsbG8=", "!foo x", "'&x'", "!!bool yes",
    "!!null ''", "!!timestamp 2026-01-01",
]  # fmt: skip
KEYS = [
    "a", "b", "c", "d", "e", "name", "a", "yes", "'yes'", "1", "'1'", "null", "~", "<<", "2026-01-01", "!!str 1", "[k]", "{k: v}",
    "*k0 ", "&k0 name", "!!set {a}",
]  # fmt: skip


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A flow sequence or mapping of ``children``, items sometimes on their own lines (so lines vary)."""
    separator = st.sampled_from([", ", ",\n  "])
    sequence = st.tuples(st.lists(children, max_size=4), separator).map(lambda x: "[" + x[1].join(x[0]) + "]")
    pairs = st.lists(st.tuples(st.sampled_from(KEYS), children), max_size=4)
    mapping = st.tuples(pairs, separator).map(lambda x: "{" + x[1].join(f"{k}: {v}" for k, v in x[0]) + "}")
    tagged = st.tuples(st.sampled_from(["!!set ", "!!omap ", "!!seq ", "!!map ", "!bar "]), sequence | mapping)
    return sequence | mapping | tagged.map("".join)


def _anchored(value: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(st.integers(0, 2), value).map(lambda x: f"&a{x[0]} {x[1]}")


VALUES = st.recursive(
    st.sampled_from([*SCALARS, "*a0", "*a1", "*a2"]) | _anchored(st.sampled_from(SCALARS)),
    lambda children: _flow(children) | _anchored(_flow(children)),
    max_leaves=12,
)


def _tidy_anchors(text: str) -> str:
    """Rename every anchor defined again and replace every alias used before its anchor by a number: PyYAML refuses
    both while composing, before either path runs, so such documents would test nothing."""
    defined: set[str] = set()
    renamed = iter(range(1_000_000))

    def tidy(match: re.Match[str]) -> str:
        sign, name = match.group(1), match.group(2)
        if sign == "*":
            return match.group(0) if name in defined else "7"
        if name in defined:
            return f"&{name}x{next(renamed)}"
        defined.add(name)
        return match.group(0)

    return re.sub(r"(?<![\w'])([&*])(a\d|k0)\b", tidy, text)


BLOCK_DOCUMENTS = (
    st.lists(st.tuples(st.sampled_from(KEYS), VALUES), min_size=1, max_size=6)
    .map(lambda pairs: "".join(f"{key}: {value}\n" for key, value in pairs))
    .map(_tidy_anchors)
)


def _nested(depth: int, inner: str) -> str:
    return "[" * depth + inner + "]" * depth


# Aliases that expand past the depth bound only once expanded, or add more values than aliases may.
DEEP_DOCUMENTS = st.builds(
    lambda outer, inner, shape: (
        f"x: &d {_nested(inner, '1')}\ny: {_nested(outer, '*d')}\n" if shape else _nested(outer, "1")
    ),
    st.integers(0, 70),
    st.integers(0, 70),
    st.booleans(),
)
BOMBS = st.builds(
    lambda fan, levels: "".join(
        f"{name}: &{name} [{', '.join([f'*{previous}' if previous else 'lol'] * fan)}]\n"
        for previous, name in zip(["", *"abcdefgh"], "abcdefghi"[:levels], strict=False)
    ),
    st.integers(1, 12),
    st.integers(1, 8),
)

python_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.dates(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
# What yaml.safe_dump writes for shared Python values (anchors, aliases), as generated configs carry them.
DUMPED = st.builds(
    lambda shared, other, flow: yaml.safe_dump(
        {"x": shared, "y": [shared, other], "z": shared}, default_flow_style=flow
    ),
    python_values,
    python_values,
    st.sampled_from([False, True, None]),
)


def outcome(text: str) -> tuple[object, ...]:
    """What ``parse_yaml`` answers: the value (by ``repr``, so NaN equals NaN and types count), the line index,
    and whether the cycle collector is back on; or the error's line."""
    before = gc.isenabled()
    try:
        doc = parse_yaml(text.encode(), PATH, what="config")
    except SetupError as exc:
        return ("refused", exc.line(), gc.isenabled() == before)
    except Exception as exc:  # a surprise must be the same surprise on both paths
        return ("raised", type(exc).__name__, str(exc), gc.isenabled() == before)
    return ("read", repr(doc.data), doc.lines, gc.isenabled() == before)


def general_outcome(text: str) -> tuple[object, ...]:
    with mock.patch.object(yamlsource._PlainBuilder, "build_document", return_value=None):
        return outcome(text)


def assert_same_answer(text: str) -> None:
    fast = outcome(text)
    assert fast == general_outcome(text), text
    assert fast[-1] is True  # the collector is back on, whatever happened


@settings(max_examples=400)
@given(BLOCK_DOCUMENTS | VALUES.map(_tidy_anchors) | DEEP_DOCUMENTS | DUMPED)
def test_the_plain_path_answers_as_the_general_path(text: str) -> None:
    assert_same_answer(text)


@settings(max_examples=40)
@given(BOMBS)
def test_aliases_adding_values_answer_as_the_general_path(text: str) -> None:
    assert_same_answer(text)


@pytest.mark.parametrize("copies", [15, 16, 17])
def test_aliases_adding_text_answer_as_the_general_path(copies: int) -> None:
    text = f"s: &s {'x' * (1 << 20)}\nl: [{', '.join(['*s'] * copies)}]\n"
    assert_same_answer(text)
    refused = outcome(text)[0] == "refused"
    assert refused == (copies * (1 << 20) > MAX_ALIAS_TEXT)


def test_a_generated_config_with_shared_values_takes_the_plain_path() -> None:
    """What `yaml.safe_dump` writes for a config whose metrics share settings (anchors and aliases, dates, numbers)
    is read in one walk, not handed to the general path: the walk is what makes a large suite cheap to read."""
    shared = {"case": True}
    text = yaml.safe_dump(
        {
            "version": 1,
            "metrics": {f"m{i}": {"type": "exact_match", "normalize": shared, "max": 2**40} for i in range(3)},
            "approved_on": dt.date(2026, 11, 1),
            "threshold": 0.5,
        },
        sort_keys=False,
    )
    assert "&id001" in text and "*id001" in text
    loader = yaml.CSafeLoader(text)
    built = yamlsource._PlainBuilder(loader).build_document(loader.get_single_node())
    assert built is not None
    data, lines = built
    assert data["metrics"]["m2"]["normalize"] == {"case": True}
    assert data["approved_on"] == dt.date(2026, 11, 1)
    assert lines[("metrics", "m2", "normalize", "case")] == lines[("metrics", "m0", "normalize", "case")]
    assert general_outcome(text) == outcome(text)


@pytest.mark.parametrize("depth", [63, 64, 65, 66])
@pytest.mark.parametrize("through_alias", [False, True])
def test_nesting_at_the_bound_answers_as_the_general_path(depth: int, through_alias: bool) -> None:
    inner = depth // 2
    text = (
        f"x: &d {_nested(inner, '1')}\ny: {_nested(depth - inner - 1, '*d')}\n"
        if through_alias
        else f"x: {_nested(depth - 1, '1')}\n"
    )
    assert_same_answer(text)
    assert (outcome(text)[0] == "refused") == (depth > 64)


def test_a_recursive_alias_answers_as_the_general_path() -> None:
    for text in ["x: &a [1, *a]\n", "x: &a {k: [*a]}\n", "x: &a {k: &b [*b]}\n"]:
        assert_same_answer(text)
        assert "contains it" in outcome(text)[1]


# The same scalar text written plain and quoted means different things ('1' is text, 1 an integer): the reader
# answers "which tag?" once per distinct (text, style), and must answer as PyYAML's own loader does.
SCALAR_TEXTS = st.sampled_from(["1", "yes", "null", "~", "1.5", "2026-12-01", "abc", "0x1f", "", ".inf", "1_000"])
STYLED = st.builds(
    lambda text, style: {"plain": text or "''", "single": f"'{text}'", "double": f'"{text}"'}[style],
    SCALAR_TEXTS,
    st.sampled_from(["plain", "single", "double"]),
)


@settings(max_examples=200)
@given(st.lists(STYLED, min_size=1, max_size=30))
def test_repeated_scalars_in_every_style_read_as_pyyaml_reads_them(scalars: list[str]) -> None:
    text = "".join(f"k{index}: {scalar}\nl{index}: [{scalar}, {scalars[0]}]\n" for index, scalar in enumerate(scalars))
    read = parse_yaml(text.encode(), PATH, what="config").data
    assert repr(read) == repr(yaml.safe_load(text))


# Values whose constructor PyYAML lets fail with a bare error (a date that is none, an explicit tag on text it does
# not fit), and NUL characters written as escapes: each must be one line naming its line, never another exception.
CONSTRUCTOR_TRAPS = [
    "2026-13-45", "0000-01-01", "2026-02-30", "2001-12-14 25:59:43", "!!timestamp 5", "!!int x", "!!float y",
    "!!bool maybe", "!!null x", "!!binary '%%'", '"a\\0b"', '"\\x00"', "'ok'", "2026-01-01", "!!int '7'",
]  # fmt: skip


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", '"k\\0"', "c"]), st.sampled_from(CONSTRUCTOR_TRAPS + SCALARS)),
        min_size=1,
        max_size=4,
    )
)
def test_any_value_is_read_or_refused_at_its_line(pairs: list[tuple[str, str]]) -> None:
    text = "".join(f"{key}: {value}\n" for key, value in pairs)
    try:
        parse_yaml(text.encode(), PATH, what="config")
    except SetupError as exc:
        assert re.search(rf"{PATH}:\d+", str(exc.stderr_lines()[0])), exc.stderr_lines()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("expires_on: 2026-13-45\n", "'2026-13-45' reads as a date to YAML, but it is not one"),
        ("x: 1\nexpires_on: 0000-01-01\n", "'0000-01-01' reads as a date"),
        ('path: "data\\0.jsonl"\n', "NUL character"),
        ("n: !!int x\n", "'x' is not a valid int"),
    ],
)
def test_a_value_no_constructor_can_build_is_named_at_its_line(text: str, needle: str) -> None:
    with pytest.raises(SetupError) as caught:
        parse_yaml(text.encode(), PATH, what="config")
    line = caught.value.stderr_lines()[0]
    assert f"{PATH}:{text.count(chr(10))}" in line and needle in line, line


def test_an_integer_of_hundreds_of_digits_is_named_short() -> None:
    """The refusal names the integer as written, but a 400-digit one is cut to its ends (it filled the line)."""
    with pytest.raises(SetupError) as caught:
        parse_yaml(("n: 1" + "0" * 400 + "\n").encode(), PATH, what="config")
    line = caught.value.stderr_lines()[0]
    assert f"{PATH}:1" in line and "10000000000000000000…00000000 (401 characters)" in line, line
    assert len(line) < 200, line
