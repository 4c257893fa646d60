"""``outputs.jsonl`` rows of a batch scored as columns (``OutputsWriter.write_columns``, which encodes the common
case from each id and output alone) are byte for byte the rows the per-example writer (``write_many``) writes for
the same outcomes: any JSON output (text needing escapes, numbers, nesting up to and past what fits in a row),
failed samples, several samples per example."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example, ExampleBatch
from evalglass.engine.produce.liveoutputs import OutputsWriter
from evalglass.engine.produce.livescorer import ExampleResult, ScoredColumns
from evalglass.lanes.ports import LaneColumn, LaneFailure


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
# Alone, JSON; in a row, three containers deeper: the deepest of these no longer fit there.
_outputs = _json | st.sampled_from([_nested(depth) for depth in (1, 200, 250, 251, 252, 253, 254)])


@st.composite
def _batches(draw: st.DrawFn) -> tuple[list[str], int, list[Any], dict[int, LaneFailure]]:
    ids = draw(st.lists(_text, min_size=1, max_size=8))
    epochs = draw(st.integers(1, 3))
    values = draw(st.lists(_outputs, min_size=len(ids) * epochs, max_size=len(ids) * epochs))
    failed = draw(st.sets(st.integers(0, len(values) - 1), max_size=len(values)))
    tries = draw(st.integers(0, 2))
    failures = {row: LaneFailure("task_raised", f"boom {row}", row % epochs, tries=tries) for row in failed}
    for row in failed:
        values[row] = None
    return ids, epochs, values, failures


def _per_example(ids: list[str], epochs: int, values: list[Any], failures: dict[int, LaneFailure]) -> list[Any]:
    results = []
    for index, example_id in enumerate(ids):
        produced: list[dict[str, Any]] = []
        for sample in range(epochs):
            row = index * epochs + sample
            failure = failures.get(row)
            if failure is None:
                produced.append({"sample": sample, "output": values[row]})
                continue
            entry: dict[str, Any] = {"sample": sample, "error": {"code": failure.code, "message": failure.message}}
            if failure.tries:
                entry["attempts"] = failure.tries
            produced.append(entry)
        item = Example(example_id, index + 1, {"n": index}, None)
        results.append(ExampleResult(item, epochs, {}, produced, {}))
    return results


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_batches())
def test_rows_of_columns_are_the_rows_of_examples(
    tmp_path_factory: Any, batch: tuple[list[str], int, list[Any], dict[int, LaneFailure]]
) -> None:
    ids, epochs, values, failures = batch
    folder: Path = tmp_path_factory.mktemp("outputs")
    (folder / "columns").mkdir()
    (folder / "examples").mkdir()
    columns, examples = OutputsWriter(folder / "columns"), OutputsWriter(folder / "examples")
    rows = ExampleBatch(
        ids=ids,
        lines=list(range(1, len(ids) + 1)),
        records=[{"n": n} for n in range(len(ids))],
        outputs=[None] * len(ids),
    )
    columns.write_columns(ScoredColumns(rows, epochs, {}, LaneColumn(list(values), dict(failures)), (len(ids),)))
    examples.write_many(_per_example(ids, epochs, values, failures))
    columns.commit()
    examples.commit()
    assert (folder / "columns" / "outputs.jsonl").read_bytes() == (folder / "examples" / "outputs.jsonl").read_bytes()
    assert columns.calls == examples.calls
