"""The gold fingerprint: blind to the recorded output, sensitive to everything else, whatever the batching."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.engine.datasets.gold import GoldHasher

values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
records = st.lists(
    st.fixed_dictionaries({"id": st.text(min_size=1, max_size=4), "expected": values, "output": values}),
    min_size=1,
    max_size=12,
)


def fingerprint(rows: list[dict], size: int, excluded: str | None = "output") -> str:
    hasher = GoldHasher(excluded)
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        if size % 2:
            hasher.add([Example(row["id"], index, row, row.get("output")) for index, row in enumerate(chunk)])
        else:
            hasher.add(ExampleBatch([r["id"] for r in chunk], list(range(len(chunk))), chunk, [None] * len(chunk)))
    return hasher.fingerprint


@settings(max_examples=150, deadline=None)
@given(records, values, st.integers(1, 5), st.integers(1, 5), st.data())
def test_outputs_never_count_and_everything_else_does(rows, new_output, size_a, size_b, data) -> None:
    base = fingerprint(rows, size_a)
    assert fingerprint(rows, size_b) == base  # batching does not matter
    index = data.draw(st.integers(0, len(rows) - 1))
    new_outputs = [dict(row) for row in rows]
    new_outputs[index]["output"] = new_output
    assert fingerprint(new_outputs, size_b) == base
    edited = [dict(row) for row in rows]
    edited[index]["expected"] = ["edited", edited[index]["expected"]]
    assert fingerprint(edited, size_b) != base
    assert fingerprint(rows[:index] + rows[index + 1 :], size_b) != base if len(rows) > 1 else True
    # Leaving out a different field (task.field pointed at the reference) changes the fingerprint.
    assert fingerprint(rows, size_a, excluded="expected") != base


def test_a_nested_output_path_is_removed_from_a_copy() -> None:
    row = {"id": "a", "response": {"text": "x", "meta": 1}}
    hasher = GoldHasher("response.text")
    hasher.add_item(Example("a", 1, row, "x"))
    other = GoldHasher("response.text")
    other.add_item(Example("a", 1, {"id": "a", "response": {"text": "changed", "meta": 1}}, "changed"))
    assert hasher.fingerprint == other.fingerprint
    assert row["response"]["text"] == "x"  # the shared record is untouched


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "output", "q", "r"]), values, max_size=4), max_size=8))
def test_a_batch_is_hashed_as_documented_and_its_records_are_untouched(rows) -> None:
    """The gold fingerprint is the SHA-256 of each record without its output (compact JSON, the file's key order),
    joined by commas: a record without the output field enters whole. The shared records keep their output."""
    import hashlib
    import json

    before = [dict(row) for row in rows]
    hasher = GoldHasher("output")
    hasher.add(ExampleBatch([str(i) for i in range(len(rows))], list(range(len(rows))), rows, [None] * len(rows)))
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    documented = b",".join(
        json.dumps({k: v for k, v in row.items() if k != "output"}, **compact).encode() for row in rows
    )
    expected = hashlib.sha256(documented).hexdigest()
    assert hasher.fingerprint == "sha256:" + expected
    assert rows == before
    assert [list(row) for row in rows] == [list(row) for row in before]  # key order too (the output is put back)
