"""A scores file means the same rows however its examples are cut into blocks, and reads back as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.score import Score
from evalglass.engine.runs.artifacts import ScoresWriter, load_columns, score_rows
from evalglass.engine.runs.scoresblock import encode_score
from evalglass.errors import SetupError

TEXT = st.text(max_size=6) | st.sampled_from(['","', '",', '\\",', "%s", "%", "100%b", '"', "\\", "\n", "é€", "a,b"])
SCORES = st.sampled_from(
    [
        Score.error("metric_raised", 'it said "no", twice'),
        Score.non_evaluable("field_missing", "no field 'x'"),
        Score.untrusted(3.0, "off_scale", "judge said 3 on a 0..1 scale"),
        Score.measured(0.5, evidence=("trace-1",)),
        Score.measured(1.0),
    ]
).map(encode_score)
ENCODED = (
    st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1.0, 0.0, -0.0, 1e300, 5e-324, 0.1]) | SCORES
)


@st.composite
def runs(draw: Any) -> tuple[list[dict[str, Any]], list[str], bool, bool, list[int]]:
    """Rows of a run (as :func:`score_rows` gives them), its metric names, samples, clustered, and block cuts."""
    count = draw(st.integers(0, 8))
    names = draw(st.lists(TEXT, unique=True, max_size=4))
    samples, clustered = draw(st.booleans()), draw(st.booleans())
    entry = st.lists(ENCODED, min_size=1, max_size=3) if samples else ENCODED
    rows = []
    for index in range(count):
        row: dict[str, Any] = {
            "id": draw(TEXT),
            "line": index + 1,
            "scores": {name: draw(entry) for name in names},
        }
        if clustered:
            row["cluster"] = draw(st.none() | TEXT)
        rows.append(row)
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=3)))
    return rows, names, samples, clustered, cuts


def _write(folder: Path, rows: list[dict[str, Any]], names: list[str], clustered: bool, cuts: list[int]) -> str:
    folder.mkdir(exist_ok=True)
    writer = ScoresWriter(folder)
    for start, end in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        block = rows[start:end]
        writer.write_block(
            [row["id"] for row in block],
            [row["line"] for row in block],
            {name: [row["scores"][name] for row in block] for name in names},
            [row["cluster"] for row in block] if clustered else None,
        )
    return writer.commit()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(run=runs())
def test_blocks_read_back_as_the_rows_they_hold(tmp_path: Path, run: Any) -> None:
    rows, names, samples, clustered, cuts = run
    _write(tmp_path / "cut", rows, names, clustered, cuts)
    _write(tmp_path / "whole", rows, names, clustered, [])
    path = tmp_path / "cut" / "scores.jsonl"
    assert list(score_rows(path)) == rows
    cut = load_columns(path, names, samples=samples, clustered=clustered)
    whole = load_columns(tmp_path / "whole" / "scores.jsonl", names, samples=samples, clustered=clustered)
    assert cut.examples == whole.examples == len(rows)
    for name in names:
        assert list(cut.columns[name]) == list(whole.columns[name])
        flat = [entry for row in rows for entry in (row["scores"][name] if samples else [row["scores"][name]])]
        assert [encode_score(score) for score in cut.columns[name]] == flat
    assert cut.example_of_row == whole.example_of_row
    assert cut.cluster_ids == whole.cluster_ids


def test_a_block_must_have_a_score_per_example(tmp_path: Path) -> None:
    writer = ScoresWriter(tmp_path)
    with pytest.raises(ValueError, match="one score per metric"):
        writer.write_block(["a", "b"], [1, 2], {"m": [1.0]}, None)
    writer.abort()
    (tmp_path / "scores.jsonl").write_text('{"ids": ["a", "b"], "lines": [1, 2], "scores": {"m": [1.0]}}\n')
    with pytest.raises(SetupError, match="one score per example") as raised:
        load_columns(tmp_path / "scores.jsonl", ["m"], samples=False, clustered=False)
    assert raised.value.where == f"{tmp_path / 'scores.jsonl'}:1"
