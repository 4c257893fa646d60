"""The gold fingerprint: blind to the recorded outputs and the examples' order, sensitive to everything else,
whatever the batching."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.engine.datasets.dataset import DatasetReader
from evalglass.engine.datasets.datasetfile import gold_fingerprint_of
from evalglass.engine.datasets.gold import GOLD_SCHEME, GoldHasher, _sorted_digests
from evalglass.engine.spec.config import load_config

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


def documented(rows: list[dict], excluded: tuple[str, ...] = ("output",)) -> str:
    """Scheme 2 as docs/config.md says it: each record without the left-out fields as JSON indented by two spaces one
    level into a list (the file's key order), SHA-256; the digests sorted; SHA-256 of the scheme, the count (8 bytes,
    big-endian) and the digests."""
    import hashlib
    import json

    digests = sorted(
        hashlib.sha256(
            json.dumps([{k: v for k, v in row.items() if k not in excluded}], indent=2, ensure_ascii=False).encode()[
                4:-2
            ]
        ).digest()
        for row in rows
    )
    return "sha256:" + hashlib.sha256(GOLD_SCHEME + len(rows).to_bytes(8, "big") + b"".join(digests)).hexdigest()


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
    """The gold fingerprint is scheme 2 over each record without its output (compact JSON, the file's key order): a
    record without the output field enters whole. The shared records keep their output."""
    before = [dict(row) for row in rows]
    hasher = GoldHasher(("output",))
    hasher.add(ExampleBatch([str(i) for i in range(len(rows))], list(range(len(rows))), rows, [None] * len(rows)))
    assert hasher.fingerprint == documented(rows)
    assert rows == before
    assert [list(row) for row in rows] == [list(row) for row in before]  # key order too (the output is put back)


# Pinned gold fingerprints (scheme 2, order-free, since 2026-12-05): a change of any of them makes every validation
# stale, so it is a scheme change to be documented (docs/config.md), never an accident. Scheme 1's values were
# 8f6dee12..., e69f7075..., 38946bf5..., 5b63a9af... (main at 4e79a57).
PINNED_ROWS = [
    {"id": "a", "question": "2+2?", "expected": "4", "output": "4"},
    {"id": "b", "output": {"text": "ça", "n": 2**70}, "question": "名前", "expected": ["x", None]},
    {"id": "c", "question": "q", "expected": 1.5},
    {"id": "d", "response": {"text": "t", "meta": [1, 2]}, "expected": True, "output": "o"},
]
PINNED = {
    ("output",): "sha256:5ce7d731869695e6dd4d78c692a56ce7d23d69b41b2eb12dd04b7b6b1b1f2623",
    ("response.text",): "sha256:38d70f9b89181c7011a5b4a8005fcb405f4bc92620fe2bd4ed167ef756f73ae9",
    ("expected",): "sha256:03af9627b39eee972829b93aa5cc56e98f11a0cfe96a613ac02bf02a791c57d0",
    (): "sha256:16b8358c737eaf6bacc15b0ccad46fb39167e5f833fad13c784ff5eefc9cfd39",
}


def test_the_pinned_records_hash_as_they_did_when_pinned() -> None:
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

    excluded = ("out_a", "out_b")
    base = fingerprint(rows, 4, excluded)
    assert fingerprint(rows, 3, excluded) == base  # a batch or example by example: the same bytes
    assert base == documented(rows, excluded)
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


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(["output", "q", "r"]), int64_values, max_size=3), min_size=1, max_size=12),
    st.sampled_from([(",", ":"), (", ", ": ")]),
    st.integers(1, 5),
)
def test_the_gold_fingerprint_of_a_file_is_the_documented_one_whatever_the_batching(rows, separators, size) -> None:
    """The dataset reader's batches of a real JSONL file (compact or spaced, any batch size) hash to the documented
    fingerprint."""
    import json
    import tempfile

    rows = [{"id": str(index), **row} for index, row in enumerate(rows)]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.jsonl"
        path.write_text("".join(json.dumps(row, separators=separators) + "\n" for row in rows))
        hasher = GoldHasher(("output",))
        for batch in DatasetReader(path, id_field="id", output_field="output").batches(size):
            hasher.add(batch)
    assert hasher.fingerprint == documented(rows)


def fingerprint_of_rows(rows: list[dict]) -> str:
    return fingerprint(rows, len(rows))


gold_rows = st.lists(
    st.fixed_dictionaries(
        {"id": st.text(min_size=1, max_size=3), "expected": values, "output": values},
        optional={"not_captured": st.lists(st.sampled_from(["output", "input"]), max_size=2)},
    ),
    min_size=1,
    max_size=10,
)


@settings(max_examples=200, deadline=None)
@given(gold_rows, st.randoms(use_true_random=False), st.integers(1, 5), st.data())
def test_the_order_of_the_examples_does_not_count_and_any_single_edit_does(rows, rng, size, data) -> None:
    """A permutation of the records (duplicates included: a multiset) keeps the fingerprint; any one edit of a gold
    value, an id or a ``not_captured`` mark, a record removed or one repeated changes it."""
    base = fingerprint(rows, size)
    shuffled = list(rows)
    rng.shuffle(shuffled)
    assert fingerprint(shuffled, data.draw(st.integers(1, 5))) == base
    index = data.draw(st.integers(0, len(rows) - 1))
    row = rows[index]

    def edited(**change: object) -> list[dict]:
        return [*rows[:index], {**row, **change}, *rows[index + 1 :]]

    assert fingerprint(edited(expected=["edited", row["expected"]]), size) != base
    assert fingerprint(edited(id=row["id"] + "x"), size) != base
    marks = row.get("not_captured")
    assert fingerprint(edited(not_captured=[*(marks or []), "reference"]), size) != base
    if marks is not None:
        without = dict(row)
        del without["not_captured"]
        assert fingerprint([*rows[:index], without, *rows[index + 1 :]], size) != base
    assert fingerprint([*rows, row], size) != base  # a record repeated: a multiset, not a set
    if len(rows) > 1:
        assert fingerprint(rows[:index] + rows[index + 1 :], size) != base


def test_a_large_set_of_digests_sorts_as_a_small_one_does() -> None:
    """From ``_NUMPY_FROM`` digests on numpy sorts them (its four big-endian words): the same bytes as sorting the
    digests themselves, so the fingerprint does not depend on the dataset's size class."""
    import hashlib

    digests = [hashlib.sha256(str(i).encode()).digest() for i in range(60_000)]
    digests += [digests[7], digests[7][:8] + bytes(24), digests[9][:31] + b"\x01"]  # a repeat, a shared first word
    assert _sorted_digests(bytearray(b"".join(digests))) == b"".join(sorted(digests))


def test_the_fingerprint_may_be_asked_again_and_the_hasher_fed_after() -> None:
    """The digests are sorted in place (no copy of a million records' digests): asking again gives the same
    fingerprint, and records added after a fingerprint count as if given before it (small and numpy sizes)."""
    for count in (5, 50_001):
        rows = [{"id": f"e{i}", "expected": i % 3, "output": "x"} for i in range(count)]
        whole = fingerprint(rows, 4096)
        hasher = GoldHasher(("output",))
        rows_reversed = rows[::-1]
        hasher.add(ExampleBatch([r["id"] for r in rows_reversed[:-2]], list(range(count - 2)), rows_reversed[:-2],
                                [None] * (count - 2)))  # fmt: skip
        first = hasher.fingerprint
        assert hasher.fingerprint == first
        hasher.add(ExampleBatch([r["id"] for r in rows_reversed[-2:]], [0, 1], rows_reversed[-2:], [None, None]))
        assert hasher.fingerprint == whole != first


def test_the_gold_fingerprint_of_a_config_is_that_of_its_dataset_records(tmp_path: Path) -> None:
    """``gold_fingerprint_of`` (what ``preflight`` compares with the ledger) reads the configured dataset as a run
    does and hashes its records without their output."""
    rows = [{"id": str(i), "expected": "a", "output": {"answer": "a", "n": i}} for i in range(300)]
    (tmp_path / "data.jsonl").write_text("".join(orjson.dumps(row).decode() + "\n" for row in rows))
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    (tmp_path / "evalglass.yaml").write_text(
        "version: 1\ndataset: {name: d, path: data.jsonl}\ntask: {type: recorded, field: output}\n"
        "metrics:\n  m: {type: contains, field: answer, reference: expected}\n"
        "gates:\n  g: {metric: m, proposed_threshold: 0.5}\n"
    )
    loaded = load_config(tmp_path / "evalglass.yaml")
    assert loaded.config.needs_gold
    assert gold_fingerprint_of(loaded) == fingerprint_of_rows(rows)
