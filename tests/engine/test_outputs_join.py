"""The outputs join (in step, then by index) gives what a plain dict join would, whatever the order."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.engine.datasets.outputs import RecordedOutputs
from evalglass.errors import SetupError


@st.composite
def join_cases(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, object]], int]:
    ids = draw(st.lists(st.text("abc0123", min_size=1, max_size=4), unique=True, max_size=30))
    kept = [example_id for example_id in ids if draw(st.booleans()) or draw(st.booleans())]
    extras = draw(st.lists(st.text("xyz", min_size=1, max_size=3), unique=True, max_size=4))
    outputs = [
        (example_id, draw(st.integers(-(2**63), 2**63 - 1) | st.text(max_size=3) | st.none()))
        for example_id in kept + extras
    ]
    if draw(st.booleans()):
        outputs = draw(st.permutations(outputs))
    batch = draw(st.integers(1, 7))
    return ids, outputs, batch


@settings(max_examples=150, deadline=None)
@given(join_cases())
def test_join_matches_a_dict_join(case: tuple[list[str], list[tuple[str, object]], int]) -> None:
    ids, outputs, size = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "outputs.jsonl"
        path.write_text("".join(json.dumps({"id": i, "output": value}) + "\n" for i, value in outputs))
        join = RecordedOutputs(path, label="outputs.jsonl", id_field="id", output_field="output")
        got: list[object] = []
        for start in range(0, len(ids), size):
            chunk = ids[start : start + size]
            batch = ExampleBatch(ids=chunk, lines=list(range(len(chunk))), records=[{}] * len(chunk), outputs=[])
            result = join.attach(batch)
            assert isinstance(result, ExampleBatch)
            got += result.outputs
        summary = join.finish(strict=False)
    expected = dict(outputs)
    assert got == [expected.get(example_id, ABSENT) for example_id in ids]
    unmatched = [example_id for example_id, _ in outputs if example_id not in set(ids)]
    assert summary.unmatched == len(unmatched) and summary.outputs == len(outputs)
    assert set(summary.unmatched_ids) <= set(unmatched) and len(summary.unmatched_ids) == min(5, len(unmatched))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 7), st.integers(0, 6), st.sampled_from([2**63, -(2**63) - 1, 10**30]))
def test_an_output_orjson_would_read_inexactly_is_refused_with_its_line(size: int, at: int, big: int) -> None:
    """orjson turns an integer beyond 64 bits into a float: the join refuses the line (in step or not) instead of
    scoring a different number than the file holds."""
    ids = [f"e{i}" for i in range(7)]
    lines = [json.dumps({"id": i, "output": 1}) for i in ids]
    lines[at] = json.dumps({"id": ids[at], "output": big})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "outputs.jsonl"
        path.write_text("\n".join(lines) + "\n")
        join = RecordedOutputs(path, label="outputs.jsonl", id_field="id", output_field="output")
        with pytest.raises(SetupError) as raised:
            for start in range(0, len(ids), size):
                chunk = ids[start : start + size]
                join.attach(
                    ExampleBatch(ids=chunk, lines=list(range(len(chunk))), records=[{}] * len(chunk), outputs=[])
                )
            join.finish(strict=False)
    assert raised.value.where == f"outputs.jsonl:{at + 1}"
