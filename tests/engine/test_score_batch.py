"""``score_batch`` (the recorded producer, feeding the run sink) scores a batch as the row-by-row loop it replaced
did: same columns, same bytes on disk.

The oracle is that loop: every metric called example by example (a raising call becomes an ``error`` score), each
result appended to its column (a result the column refuses becomes an error score), the batch written as one
block. Metrics here mix builtins that have a batch path with host-style functions
that return anything at all, so both the batch path and its fallbacks are exercised.
"""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalglass.core.columns import ScoreColumn
from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score, ScoreContractError
from evalglass.core.scorecard import DatasetSummary
from evalglass.engine.datasets.dataset import BadLine, field_getter
from evalglass.engine.produce.recordedrun import score_batch
from evalglass.engine.produce.scoring import BuiltMetric, expand
from evalglass.engine.produce.sink import Produced, RowShape, RunSink, cluster_key
from evalglass.engine.runs.artifacts import ScoresWriter, score_rows
from evalglass.engine.runs.scoresblock import encode_score
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext, Scorer


def _builtin(config: dict[str, Any]) -> Scorer:
    built = parse_metric_spec(config).build(BuildContext(Path(".")))
    assert isinstance(built, Scorer)
    return built


def _anything(example: Example) -> Any:
    """A host metric that returns whatever the output says: ints, bools, NaN, None, text, Scores, or raises."""
    output = example.output
    if isinstance(output, dict) and "return" in output:
        value = output["return"]
        if value == "raise":
            raise RuntimeError("host metric failed")
        if value == "score":
            return Score.non_evaluable("not_applicable_here", "nothing to measure")
        if value == "nan":
            return math.nan
        return value
    return 0.5


def _raising_batch(examples: Any) -> Any:
    raise ValueError("the batch path broke")


METRICS = [
    BuiltMetric("exact", _builtin({"type": "exact_match", "reference": "expected", "field": "answer"}), False),
    BuiltMetric("digits", _builtin({"type": "regex", "pattern": r"\d+", "field": "answer"}), False),
    BuiltMetric("fast", _builtin({"type": "numeric_bounds", "min": 0, "max": 800, "field": "latency_ms"}), False),
    BuiltMetric("host", Scorer(_anything), False),
    BuiltMetric("broken_batch", Scorer(_anything, _raising_batch), False),
    BuiltMetric("short_batch", Scorer(_anything, lambda examples: [1.0] * (len(examples) // 2)), False),
]

ANSWERS = st.sampled_from(["beta 92", "alpha", "7", ""]) | st.integers(-2, 2) | st.none()
OUTPUTS = (
    st.fixed_dictionaries(
        {"answer": ANSWERS, "latency_ms": st.floats(allow_nan=True) | st.integers(-5, 900) | st.booleans()},
        optional={"return": st.sampled_from([1, True, "raise", "score", "nan", None, "text", 2.5, -0.0, 10**400])},
    )
    | st.just(ABSENT)
    | st.lists(st.just({"answer": "7", "latency_ms": 3.0}), max_size=2)
)
ITEMS = st.tuples(OUTPUTS, st.sampled_from(["beta 92", "7", None]), st.sampled_from([None, "c1", "c2", 3]))
#: A malformed dataset line among the examples (the reader's BadLine): scored as an error by every metric.
BAD = "bad line"


def old_score_batch(
    items: list[Example | BadLine],
    metrics: list[BuiltMetric],
    columns: dict[str, ScoreColumn],
    writer: ScoresWriter,
    shape: RowShape,
) -> None:
    """The row-by-row score_batch (sequential metrics), writing the batch as one block."""

    def guarded(metric: BuiltMetric, example: Example) -> Any:
        try:
            return metric.scorer.one(example)
        except Exception as exc:
            return Score.error("metric_raised", f"metric '{metric.name}' raised {type(exc).__name__}: {exc}")

    expanded = [expand(item, shape.samples) for item in items]
    measurable = [example for rows in expanded if isinstance(rows, list) for example in rows]
    results = [iter([guarded(metric, example) for example in measurable]) for metric in metrics]
    block: dict[str, list[Any]] = {metric.name: [] for metric in metrics}
    clusters: list[str | None] | None = [] if shape.cluster_of is not None else None
    for item, rows in zip(items, expanded, strict=True):
        cluster = None
        if shape.cluster_of is not None and isinstance(item, Example):
            cluster = cluster_key(shape.cluster_of(item.fields))
        if clusters is not None:
            clusters.append(cluster)
        if isinstance(rows, Score):  # a bad line or a missing output: the same score for every metric
            shape.add_example(1, cluster)
            for metric in metrics:
                columns[metric.name].append(rows)
                block[metric.name].append([encode_score(rows)] if shape.samples else encode_score(rows))
            continue
        shape.add_example(len(rows), cluster)
        for metric, produced in zip(metrics, results, strict=True):
            encoded = [_appended(columns[metric.name], metric.name, next(produced)) for _ in rows]
            block[metric.name].append(encoded if shape.samples else encoded[0])
    writer.write_block([item.id for item in items], [item.line for item in items], block, clusters)


def _appended(column: ScoreColumn, name: str, result: Any) -> Any:
    """The result appended, or the error it becomes when the column refuses it; the JSON the scores file keeps."""
    try:
        column.append(result)
    except (ScoreContractError, TypeError) as exc:
        result = Score.error("metric_bad_result", f"metric '{name}' returned {result!r}: {exc}")
        column.append(result)
    return result if type(result) is float else encode_score(result)


_NO_DATASET = Produced(DatasetSummary(name="d", path="data.jsonl", fingerprint="sha256:" + "0" * 64, examples=0))


def _sink(folder: Path, items: list[Example | BadLine], shape: RowShape, names: list[str]) -> RunSink:
    return RunSink(names, shape, ScoresWriter(folder), lambda: iter(items), folder / "data.jsonl")


def _column_state(column: ScoreColumn) -> tuple[Any, ...]:
    return (
        column.values().tobytes(),
        column.states().tobytes(),
        [(row, [(d.code, d.message.split(" raised ")[0]) for d in diags]) for row, diags in column.diagnostic_rows()],
    )


@pytest.mark.parametrize("clustered", [False, True])
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(rows=st.lists(ITEMS | st.just(BAD), max_size=10))
@example(
    rows=[({"answer": "7", "latency_ms": 3.0, "return": "nan"}, "7", "c1"), ({"answer": "x", "latency_ms": 1}, None, 3)]
)
@example(rows=[({"answer": "7", "latency_ms": math.inf, "return": 10**400}, "7", None)])
@example(
    rows=[({"answer": "7", "latency_ms": 1.5, "return": True}, "7", None), ({"answer": 7, "latency_ms": 2}, "7", None)]
)
@example(rows=[({"answer": "7", "latency_ms": 1.5, "return": "raise"}, "7", None)])
@example(rows=[({"answer": "7", "latency_ms": 1.5}, "7", "c1"), BAD, (ABSENT, "7", "c2"), ({"answer": "7"}, "7", None)])
@example(
    rows=[({"answer": "7", "latency_ms": 1.5, "return": -0.0}, "7", None), ({"answer": "", "latency_ms": 0}, "", "c2")]
)
def test_a_batch_scores_as_row_by_row(tmp_path: Path, clustered: bool, rows: list[Any]) -> None:
    items: list[Example | BadLine] = [
        BadLine(id=f"line:{i + 1}", line=i + 1, code="malformed_json", message=f"data.jsonl:{i + 1}: not JSON")
        if row == BAD
        else Example(id=f"ex-{i}", line=i + 1, fields={"expected": row[1], "group": row[2]}, output=row[0])
        for i, row in enumerate(rows)
    ]
    cluster_of = field_getter("group") if clustered else None
    results = []
    for label, scorer in (("new", "new"), ("old", "old")):
        folder = tmp_path / label
        folder.mkdir(exist_ok=True)
        shape = RowShape(samples=False, cluster_of=cluster_of)
        if scorer == "new":
            sink = _sink(folder, items, shape, [metric.name for metric in METRICS])
            score_batch(items, METRICS, sink, None)
            columns, digest = sink.columns, sink.commit(_NO_DATASET).scores_sha256
        else:
            columns = {metric.name: ScoreColumn() for metric in METRICS}
            writer = ScoresWriter(folder)
            old_score_batch(items, METRICS, columns, writer, shape)
            digest = writer.commit()
        results.append(
            (
                (folder / "scores.jsonl").read_bytes(),
                digest,
                {name: _column_state(column) for name, column in columns.items()},
                shape.examples,
                shape.cluster_ids.tolist(),
                dict(shape.cluster_keys),
            )
        )
    new, old = results
    assert new[2] == old[2]
    assert new[3:] == old[3:]
    if b"metric_raised" not in old[0]:  # tracebacks differ in their frames; everything else is byte for byte
        assert new[:2] == old[:2]


def test_a_batch_with_a_bad_line_or_a_missing_output_takes_the_row_by_row_path(tmp_path: Path) -> None:
    items: list[Example | BadLine] = [
        Example(id="a", line=1, fields={"expected": "7"}, output={"answer": "7", "latency_ms": 3}),
        BadLine(id="line:2", line=2, code="malformed_json", message="data.jsonl:2: not valid JSON"),
        Example(id="c", line=3, fields={"expected": "7"}, output=ABSENT),
    ]
    metrics = METRICS[:3]
    shape = RowShape(samples=False, cluster_of=None)
    sink = _sink(tmp_path, items, shape, [metric.name for metric in metrics])
    score_batch(items, metrics, sink, None)
    sink.commit(_NO_DATASET)
    assert shape.examples == 3
    assert [column.states().tolist() for column in sink.columns.values()] == [[0, 8, 2]] * 3
    assert [row["id"] for row in score_rows(tmp_path / "scores.jsonl")] == ["a", "line:2", "c"]


@pytest.mark.parametrize("clustered", [False, True])
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(rows=st.lists(ITEMS | st.just(BAD), min_size=1, max_size=10), cuts=st.lists(st.integers(1, 9), max_size=3))
def test_a_block_scored_in_parts_is_written_as_the_block_scored_whole(
    tmp_path: Path, clustered: bool, rows: list[Any], cuts: list[int]
) -> None:
    """A batch of long lines comes to the recorded producer in parts (``ends_block`` False but for the last): the
    sink writes them as the one block the whole batch makes, byte for byte, with the same columns and row shape."""
    items: list[Example | BadLine] = [
        BadLine(id=f"line:{i + 1}", line=i + 1, code="malformed_json", message=f"data.jsonl:{i + 1}: not JSON")
        if row == BAD
        else Example(id=f"ex-{i}", line=i + 1, fields={"expected": row[1], "group": row[2]}, output=row[0])
        for i, row in enumerate(rows)
    ]
    bounds = sorted({0, len(items), *(cut for cut in cuts if cut < len(items))})
    parts = [items[start:end] for start, end in pairwise(bounds)]
    cluster_of = field_getter("group") if clustered else None
    metrics = [metric for metric in METRICS if metric.name != "host"]  # no traceback text in the bytes compared
    found = []
    for label, batches in (("whole", [items]), ("parts", parts)):
        folder = tmp_path / label
        folder.mkdir(exist_ok=True)
        shape = RowShape(samples=False, cluster_of=cluster_of)
        sink = _sink(folder, items, shape, [metric.name for metric in metrics])
        for index, batch in enumerate(batches):
            score_batch(batch, metrics, sink, None, ends_block=index == len(batches) - 1)
        digest = sink.commit(_NO_DATASET).scores_sha256
        found.append(
            (
                (folder / "scores.jsonl").read_bytes(),
                digest,
                {name: _column_state(column) for name, column in sink.columns.items()},
                shape.examples,
                shape.cluster_ids.tolist(),
                dict(shape.cluster_keys),
            )
        )
    assert found[0] == found[1]
    assert found[0][0].count(b"\n") == 1  # one block
