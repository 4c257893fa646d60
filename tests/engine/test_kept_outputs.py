"""The kept outputs (engine/runs/keptoutputs.py): what is written is what is read back, by id, whatever the values; the
file is named by its hash; any change to its bytes is refused."""

from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.runrecord import RunRecord
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.runs.integrity import ArtifactCheck
from evalglass.engine.runs.keptoutputs import (
    KeptOutputsWriter,
    kept_against_scores,
    kept_outputs,
)
from evalglass.errors import SetupError

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
OUTPUT = st.one_of(st.just(ABSENT), JSON)


def record_with(kept: Any) -> RunRecord:
    """The smallest run record that names the kept file (the readers look at nothing else of it)."""
    return RunRecord.model_construct(kept_outputs=kept, scores_sha256="sha256:" + "0" * 64)


def kept_problem(folder: Path, record: RunRecord) -> str | None:
    """What the artifacts' check (``engine.runs.integrity``, which every reader and verify make) says of the kept
    file: the first problem naming it, None when its bytes are the ones the run record names."""
    assert record.kept_outputs is not None
    problems = ArtifactCheck(folder, None).record_problems(record)
    return next((item.line for item in problems if item.file == record.kept_outputs.file), None)


def write(folder: Path, batches: list[list[tuple[str, Any]]], *, as_items: bool = False) -> RunRecord:
    writer = KeptOutputsWriter(folder)
    line = 0
    for batch in batches:
        if as_items:
            items: list[Example | BadLine] = []
            for example_id, output in batch:
                line += 1
                items.append(Example(example_id, line, {}, output))
            writer.add(items)
        else:
            ids = [example_id for example_id, _ in batch]
            lines = list(range(line + 1, line + 1 + len(batch)))
            line += len(batch)
            writer.add(ExampleBatch(ids=ids, lines=lines, records=[{}] * len(batch), outputs=[o for _, o in batch]))
    return record_with(writer.commit())


@settings(max_examples=40, deadline=None)
@given(
    outputs=st.lists(OUTPUT, max_size=40),
    size=st.integers(1, 7),
    as_items=st.booleans(),
)
def test_every_output_comes_back_by_its_id(outputs: list[Any], size: int, as_items: bool) -> None:
    pairs = [(f"id-{index}", output) for index, output in enumerate(outputs)]
    batches = [pairs[start : start + size] for start in range(0, len(pairs), size)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        record = write(folder, batches, as_items=as_items)
        kept = record.kept_outputs
        assert kept is not None and kept.examples == len(pairs)
        assert kept.file == f"blobs/{kept.sha256.removeprefix('sha256:')}.jsonl.gz"
        assert kept_problem(folder, record) is None
        found = kept_outputs(folder, record, {example_id for example_id, _ in pairs})
        assert len(found) == len(pairs)
        for example_id, output in pairs:
            assert found[example_id] is ABSENT if output is ABSENT else found[example_id] == output
        assert kept_against_scores(folder, record, [example_id for example_id, _ in pairs])[0] == []


def test_the_same_outputs_make_the_same_file(tmp_path: Path) -> None:
    batches = [[("a", "x"), ("b", {"k": [1, 2]})], [("c", ABSENT)]]
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, second = write(tmp_path / "one", batches), write(tmp_path / "two", batches)
    assert first.kept_outputs == second.kept_outputs
    assert gzip.decompress((tmp_path / "one" / first.kept_outputs.file).read_bytes()).count(b"\n") == 2


def test_a_malformed_line_has_no_output(tmp_path: Path) -> None:
    writer = KeptOutputsWriter(tmp_path)
    writer.add([Example("a", 1, {}, "yes"), BadLine("line:2", 2, "malformed_json", "not JSON")])
    record = record_with(writer.commit())
    assert kept_outputs(tmp_path, record, {"a", "line:2"}) == {"a": "yes", "line:2": ABSENT}


def test_any_changed_byte_is_refused_by_the_check_and_by_the_reader(tmp_path: Path) -> None:
    record = write(tmp_path, [[("a", "the scored answer"), ("b", "another")]])
    assert record.kept_outputs is not None
    path = tmp_path / record.kept_outputs.file
    data = bytearray(path.read_bytes())
    data[-9] ^= 1  # inside the gzip trailer's CRC: still a file, not the run's
    path.write_bytes(bytes(data))
    assert "is not the file the run record names (runrecord.kept_outputs.sha256" in (
        kept_problem(tmp_path, record) or ""
    )
    with pytest.raises(SetupError):
        kept_outputs(tmp_path, record, {"a"})
    path.unlink()
    assert "is missing" in (kept_problem(tmp_path, record) or "")


def test_verify_names_outputs_that_are_not_those_of_the_scored_lines(tmp_path: Path) -> None:
    record = write(tmp_path, [[("a", 1), ("b", 2)]])
    findings, statement = kept_against_scores(tmp_path, record, ["a", "c"])
    assert statement is None and [field for field, _, _ in findings] == [f"{record.kept_outputs.file} ids"]
    findings, _ = kept_against_scores(tmp_path, record, ["a", "b", "c"])
    assert findings


def test_a_run_record_cannot_point_the_readers_outside_the_run_folder() -> None:
    with pytest.raises(ValueError):
        RunRecord.model_validate(
            {"kept_outputs": {"file": "../../etc/passwd", "sha256": "sha256:0", "examples": 0}}, strict=False
        )


@settings(max_examples=40, deadline=None)
@given(outputs=st.lists(JSON, min_size=1, max_size=12), size=st.integers(1, 5))
def test_outputs_the_dataset_reader_already_wrote_are_kept_byte_for_byte_as_a_fresh_dump(
    outputs: list[Any], size: int
) -> None:
    """A batch read from a JSONL file carries the outputs as the reader's exactness check wrote them
    (OUTPUTS_JSON); the kept file made from those bytes is the file a fresh dump of each batch makes."""
    import orjson

    from evalglass.core.example import OUTPUTS_JSON
    from evalglass.engine.datasets.dataset import DatasetReader

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = folder / "d.jsonl"
        rows = [{"id": f"e{index}", "note": "a:b", "out": output} for index, output in enumerate(outputs)]
        data.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        batches = list(DatasetReader(data, id_field="id", output_field="out").batches(size))
        assert all(isinstance(batch, ExampleBatch) for batch in batches)
        remembered = [batch.derived(OUTPUTS_JSON, lambda: None) for batch in batches]  # type: ignore[union-attr]
        # Every row holds a colon inside a string, so no batch is flat enough to skip the dump: each one has it.
        assert all(written is not None for written in remembered)
        writers = {name: KeptOutputsWriter(make(folder / name)) for name in ("reused", "fresh", "items")}
        for batch in batches:
            assert isinstance(batch, ExampleBatch)
            writers["reused"].add(batch)
            writers["fresh"].add(
                ExampleBatch(ids=batch.ids, lines=batch.lines, records=batch.records, outputs=batch.outputs)
            )
            writers["items"].add(batch.examples())  # the whole block written by one dump, as before the reuse
        kept = {name: writer.commit() for name, writer in writers.items()}
        assert kept["reused"] == kept["fresh"] == kept["items"]
        files = {(folder / name / found.file).read_bytes() for name, found in kept.items()}
        assert len(files) == 1


def make(folder: Path) -> Path:
    folder.mkdir()
    return folder


#: Outputs that send a block down each of the writer's ways: JSON orjson writes (the joined bytes), ABSENT (a line
#: without output), a NaN and an infinity (kept as the standard library writes them when the reader can give them),
#: an integer beyond 64 bits (orjson cannot write it) and a null beside them.
PART_OUTPUTS = st.one_of(JSON, st.just(ABSENT), st.sampled_from([math.nan, -math.inf, 2**70, None, [1.5, -0.0]]))


@settings(max_examples=80, deadline=None)
@given(
    blocks=st.lists(st.lists(st.lists(PART_OUTPUTS, max_size=4), min_size=1, max_size=4), min_size=1, max_size=3),
    holds_non_finite=st.booleans(),
    as_items=st.sampled_from([None, 0, 1]),
)
def test_a_block_added_in_parts_is_the_line_it_is_added_whole(
    blocks: list[list[list[Any]]], holds_non_finite: bool, as_items: int | None
) -> None:
    """``ends_block``: a recorded run hands the writer a batch of long lines in parts; the file is byte for byte the
    one made when each block comes whole, whatever way each part's outputs take (bytes, ABSENT, a NaN from a reader
    that can give one, an output orjson cannot write), and a part may come as examples (a malformed line)."""
    number = iter(range(1_000_000))
    if not holds_non_finite:  # a reader that says it gives no NaN or infinity (a JSONL file's) gives none
        blocks = [[[o for o in outputs if o == o and o != -math.inf] for outputs in block] for block in blocks]

    def batch(outputs: list[Any], items: bool) -> ExampleBatch | list[Example | BadLine]:
        ids = [f"e{next(number)}" for _ in outputs]
        if items:
            return [Example(i, 1, {}, o) if o is not ABSENT else BadLine(i, 1, "malformed_json", "x") for i, o in
                    zip(ids, outputs, strict=True)]  # fmt: skip
        return ExampleBatch(ids=ids, lines=[1] * len(ids), records=[{}] * len(ids), outputs=outputs)

    whole, parted = [], []
    for block in blocks:
        items = [as_items is not None and index % 2 == as_items for index in range(len(block))]
        parts = [batch(outputs, item) for outputs, item in zip(block, items, strict=True)]
        parted += [(part, index == len(parts) - 1) for index, part in enumerate(parts)]
        joined: list[Any] = [x for part in parts for x in (part.examples() if isinstance(part, ExampleBatch) else part)]
        whole.append(joined if any(items) else ExampleBatch.of(joined))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        writers = {name: KeptOutputsWriter(make(folder / name)) for name in ("whole", "parts")}
        for part in whole:
            writers["whole"].add(part, holds_non_finite=holds_non_finite)
        for part, ends_block in parted:
            writers["parts"].add(part, holds_non_finite=holds_non_finite, ends_block=ends_block)
        kept = {name: writer.commit() for name, writer in writers.items()}
        assert kept["whole"] == kept["parts"]
        files = {(folder / name / found.file).read_bytes() for name, found in kept.items()}
        assert len(files) == 1
