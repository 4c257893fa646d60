"""The gold fingerprint: blind to the recorded outputs, sensitive to everything else, whatever the batching."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import RECORDS_WITHOUT_JSON, Example, ExampleBatch
from evalglass.engine.datasets.dataset import DatasetReader
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


def fingerprint(rows: list[dict], size: int, excluded: tuple[str, ...] = ("output",)) -> str:
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
    assert fingerprint(rows, size_a, excluded=("expected",)) != base


def test_a_nested_output_path_is_removed_from_a_copy() -> None:
    row = {"id": "a", "response": {"text": "x", "meta": 1}}
    hasher = GoldHasher(("response.text",))
    hasher.add_item(Example("a", 1, row, "x"))
    other = GoldHasher(("response.text",))
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
    hasher = GoldHasher(("output",))
    hasher.add(ExampleBatch([str(i) for i in range(len(rows))], list(range(len(rows))), rows, [None] * len(rows)))
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    documented = b",".join(
        json.dumps({k: v for k, v in row.items() if k != "output"}, **compact).encode() for row in rows
    )
    expected = hashlib.sha256(documented).hexdigest()
    assert hasher.fingerprint == "sha256:" + expected
    assert rows == before
    assert [list(row) for row in rows] == [list(row) for row in before]  # key order too (the output is put back)


# Records whose gold fingerprints were computed by the code before several output fields could be left out (main at
# 4e79a57, `GoldHasher("output")` etc.): an approval of validated gold taken then must not go stale now.
PINNED_ROWS = [
    {"id": "a", "question": "2+2?", "expected": "4", "output": "4"},
    {"id": "b", "output": {"text": "ça", "n": 2**70}, "question": "名前", "expected": ["x", None]},
    {"id": "c", "question": "q", "expected": 1.5},
    {"id": "d", "response": {"text": "t", "meta": [1, 2]}, "expected": True, "output": "o"},
]
PINNED = {
    ("output",): "sha256:8f6dee12a256f3441d348f3714812f565e63ce8d4e7d5702c3ff638b156f28aa",
    ("response.text",): "sha256:e69f7075768b5d1b9544ec82da9a6c55146fc7679d3a5991f43576d47e3aedb6",
    ("expected",): "sha256:38946bf5f91670983f7e99a2c29da82f180eaa37d8a975db8b3330028e3a18af",
    (): "sha256:5b63a9afd8d67e19dc545ea368b88c6215ea8683ed6ce94e0f9327253a8d1c6d",
}


def test_a_single_output_field_hashes_the_bytes_it_always_did() -> None:
    for excluded, digest in PINNED.items():
        assert fingerprint(PINNED_ROWS, 4, excluded) == digest, excluded  # a batch
        assert fingerprint(PINNED_ROWS, 3, excluded) == digest, excluded  # example by example
        # Leaving out fields no record has changes nothing: a run whose other variants record elsewhere.
        assert fingerprint(PINNED_ROWS, 4, (*excluded, "out_b", "x.y.0")) == digest, excluded


several = st.lists(
    st.fixed_dictionaries(
        {"id": st.text(min_size=1, max_size=4), "expected": values, "out_a": values, "q": values, "out_b": values}
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=100, deadline=None)
@given(several, values, st.sampled_from(["out_a", "out_b"]), st.sampled_from(["expected", "q", "id"]), st.data())
def test_with_several_output_fields_no_output_counts_and_everything_else_does(
    rows, new_value, output, kept, data
) -> None:
    import hashlib
    import json

    excluded = ("out_a", "out_b")
    base = fingerprint(rows, 4, excluded)
    assert fingerprint(rows, 3, excluded) == base  # a batch or example by example: the same bytes
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    documented = b",".join(
        json.dumps({k: v for k, v in row.items() if k not in excluded}, **compact).encode() for row in rows
    )
    assert base == "sha256:" + hashlib.sha256(documented).hexdigest()
    index = data.draw(st.integers(0, len(rows) - 1))
    changed = [dict(row) for row in rows]
    changed[index][output] = new_value
    assert fingerprint(changed, 4, excluded) == base
    edited = [dict(row) for row in rows]
    edited[index][kept] = ["edited", edited[index][kept]]
    assert fingerprint(edited, 4, excluded) != base


def test_several_items_of_one_list_are_removed_without_shifting_each_other() -> None:
    def one(fields: dict, excluded: tuple[str, ...]) -> str:
        hasher = GoldHasher(excluded)
        hasher.add_item(Example("a", 1, fields, None))
        return hasher.fingerprint

    row = {"id": "a", "outs": ["x", "keep", "y", "keep too"], "expected": 1}
    wanted = one({"id": "a", "outs": ["keep", "keep too"], "expected": 1}, ())
    assert one(row, ("outs.0", "outs.2")) == wanted
    assert one(row, ("outs.2", "outs.0")) == wanted
    assert row["outs"] == ["x", "keep", "y", "keep too"]  # the shared record is untouched
    # An output field inside another is removed with it.
    assert one(row, ("outs", "outs.1")) == one({"id": "a", "expected": 1}, ())
    assert one(row, ("outs.1", "outs")) == one({"id": "a", "expected": 1}, ())


int64_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


def gold_of_file(path: Path, size: int, *, split: bool) -> tuple[str, int]:
    """The gold fingerprint of the JSONL file at ``path`` read ``size`` lines a batch, and how many batches came
    with the records without their output already written by the reader."""
    hasher = GoldHasher(("output",))
    kept = 0
    for batch in DatasetReader(path, id_field="id", output_field="output", split_output=split).batches(size):
        if isinstance(batch, ExampleBatch):
            kept += batch.derived((RECORDS_WITHOUT_JSON, "output"), lambda: None) is not None
        hasher.add(batch)
    return hasher.fingerprint, kept


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(["output", "q", "r"]), int64_values, max_size=3), min_size=1, max_size=12),
    st.sampled_from([(",", ":"), (", ", ": ")]),
    st.integers(1, 5),
)
def test_the_bytes_the_reader_keeps_for_gold_hash_as_the_hasher_itself_would(rows, separators, size) -> None:
    """A reader told the run takes gold (``split_output``) keeps the records without their output as it checks a
    batch (the fast path, where the output is every record's last key); the gold fingerprint from those bytes is
    the one the hasher makes on its own, and the documented one."""
    import hashlib
    import json
    import tempfile

    rows = [{"id": str(index), **row} for index, row in enumerate(rows)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.jsonl"
        path.write_text("".join(json.dumps(row, separators=separators) + "\n" for row in rows))
        split, _ = gold_of_file(path, size, split=True)
        alone, kept = gold_of_file(path, size, split=False)
    assert kept == 0
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    documented = b",".join(
        json.dumps({k: v for k, v in row.items() if k != "output"}, **compact).encode() for row in rows
    )
    assert split == alone == "sha256:" + hashlib.sha256(documented).hexdigest()


def test_a_reader_told_of_gold_keeps_the_records_without_the_output(tmp_path: Path) -> None:
    """The fast path is taken where it should be: nested outputs last in every record (the usual dataset)."""
    path = tmp_path / "data.jsonl"
    rows = [{"id": str(i), "expected": "a", "output": {"answer": "a", "n": i}} for i in range(7)]
    path.write_text("".join(orjson.dumps(row).decode() + "\n" for row in rows))
    fingerprint, kept = gold_of_file(path, 3, split=True)
    assert kept == 3
    assert fingerprint == gold_of_file(path, 3, split=False)[0] == fingerprint_of_rows(rows)


def fingerprint_of_rows(rows: list[dict]) -> str:
    return fingerprint(rows, len(rows))
