"""The outputs join (in step, then by index) gives what a plain dict join would, whatever the order."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.example import ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.engine.outputs import RecordedOutputs


@st.composite
def join_cases(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, object]], int]:
    ids = draw(st.lists(st.text("abc0123", min_size=1, max_size=4), unique=True, max_size=30))
    kept = [example_id for example_id in ids if draw(st.booleans()) or draw(st.booleans())]
    extras = draw(st.lists(st.text("xyz", min_size=1, max_size=3), unique=True, max_size=4))
    outputs = [(example_id, draw(st.integers() | st.text(max_size=3) | st.none())) for example_id in kept + extras]
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
