"""The invariant behind the gold fingerprint: a field it leaves out (a recorded output in the dataset file) is never
also gold or an input, so no gold and no input escapes it (``core.goldfields.field_conflicts``)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.fieldpath import parse_path
from evalglass.core.goldfields import (
    TOOL_RUN_FIELDS,
    FieldRole,
    FieldUse,
    field_conflicts,
    gold_excluded_fields,
    others_outputs,
    record_without,
)

PATHS = ["a", "b", "a.x", "a.y", "b.z", "c"]


@st.composite
def uses(draw: st.DrawFn) -> list[FieldUse]:
    found: list[FieldUse] = []
    for index in range(draw(st.integers(1, 6))):
        role = draw(st.sampled_from(list(FieldRole)))
        owner = draw(st.sampled_from(["variant 'p'", "variant 'q'", "metric 'm'", "the dataset"]))
        at = ("uses", index)
        found.append(
            FieldUse(draw(st.sampled_from(PATHS)), role, owner, at, f"use{index}", in_file=draw(st.booleans()))
        )
    return found


def overlaps(first: str, second: str) -> bool:
    left, right = parse_path(first), parse_path(second)
    return left[: len(right)] == right[: len(left)]


@given(uses())
def test_an_accepted_config_leaves_out_no_gold_and_no_input(found: list[FieldUse]) -> None:
    problems = dict(field_conflicts(found))
    outputs = [use for use in found if use.role is FieldRole.OUTPUT]
    for output in outputs:
        clashing = [
            other
            for other in found
            if other is not output
            and overlaps(output.path, other.path)
            and (
                other.role is FieldRole.REFERENCE
                or (output.in_file and other.role is not FieldRole.OUTPUT)
                or (other.role is FieldRole.OUTPUT and other.owner != output.owner and output.in_file and other.in_file)
            )
        ]
        if not clashing:
            assert output.at not in problems
        elif all(other.role is not FieldRole.OUTPUT for other in clashing):
            assert output.at in problems  # reported at this output's own key
        else:  # two outputs share a field: reported once, at one of them
            assert output.at in problems or any(other.at in problems for other in clashing)
    assert set(problems) <= {output.at for output in outputs}  # only outputs are reported


def test_one_line_per_output_saying_what_else_the_field_is() -> None:
    found = [
        FieldUse("id", FieldRole.OUTPUT, "the task", ("task", "field"), "task.field"),
        FieldUse("id", FieldRole.ID, "the dataset", ("dataset", "id_field")),
        FieldUse("id", FieldRole.REFERENCE, "metric 'm'", ("metrics", "m", "reference")),
    ]
    ((at, message),) = field_conflicts(found)
    assert at == ("task", "field") and message.startswith("task.field 'id' is the dataset's id_field 'id'")
    assert "record outputs in a field of their own" in message


#: Field names as a dataset may hold them (dots, spaces, digits, quotes, brackets, non-ASCII), named by a path in its
#: quoted form (``["a.b"]``), the one form that reads any name as one key.
NAMES = st.text(st.characters(blacklist_characters="\\", blacklist_categories=("Cs",)), min_size=1, max_size=6).filter(
    lambda name: ".." not in name  # a path may not hold "..", quoted or not (fieldpath.parse_path)
)


def quoted(name: str) -> str:
    return '["' + name.replace('"', '\\"') + '"]'


@given(st.dictionaries(NAMES, st.integers() | st.text(max_size=3), max_size=6), st.data())
def test_the_record_as_gold_sees_it_lacks_exactly_the_output_fields(
    record: dict[str, Any], data: st.DataObject
) -> None:
    """Whatever the fields are called: the shown record has every field but the outputs, each with its value (the
    same object), and the dataset's record is left as it was (it is shared with the metrics)."""
    names = (st.sampled_from(sorted(record)) | NAMES) if record else NAMES
    hidden = data.draw(st.lists(names, max_size=4, unique=True))
    before = copy.deepcopy(record)
    shown = record_without([quoted(name) for name in hidden])(record)
    assert record == before
    assert list(shown) == [name for name in record if name not in hidden]
    assert all(shown[name] is record[name] for name in shown)
    if not set(hidden) & set(record):
        assert shown is record  # nothing to hide: no copy


@given(st.dictionaries(st.sampled_from(["a", "b"]), st.dictionaries(st.sampled_from(["x", "y"]), st.integers())))
def test_a_nested_output_is_removed_from_a_copy_and_its_siblings_kept(record: dict[str, Any]) -> None:
    before = copy.deepcopy(record)
    shown = record_without(["a.x", "b"])(record)
    assert record == before
    assert "b" not in shown
    if "a" in record:
        assert shown["a"] == {key: value for key, value in record["a"].items() if key != "x"}


@given(
    variants=st.dictionaries(
        st.sampled_from(["p", "q", "r"]),
        st.fixed_dictionaries({"field": st.sampled_from(["out_p", "out_q", "out_r", "source"])}),
        max_size=3,
    ),
    own=st.sampled_from([None, "out_p", "out_q", "out_r"]),
    tool=st.booleans(),
)
def test_a_python_metric_is_hidden_exactly_the_other_tasks_outputs(
    variants: dict[str, Any], own: str | None, tool: bool
) -> None:
    """What a python metric is not shown (``others_outputs``) is left out of gold, is never its own answer, never the
    tool's run fields, and is every other output gold leaves out: no field it reads escapes gold but its answer."""
    excluded = gold_excluded_fields({"type": "recorded", "field": "out_p"}, variants, "inspect" if tool else None)
    hidden = others_outputs(excluded, own)
    assert set(hidden) <= set(excluded)
    assert own not in hidden and not set(hidden) & set(TOOL_RUN_FIELDS)
    assert set(excluded) - set(hidden) <= {own, *TOOL_RUN_FIELDS}
    record = dict.fromkeys(("id", "question", *excluded, "out_p", "out_q"), "v")
    shown = record_without(hidden)(record)
    assert set(record) - set(shown) == set(hidden) and "question" in shown
