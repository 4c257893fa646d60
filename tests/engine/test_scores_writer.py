"""``ScoresWriter.write_rows`` writes a batch byte for byte as ``write`` writes its rows one at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.score import Score
from evalglass.engine.artifacts import ScoresWriter, score_to_json

TEXT = st.text(max_size=6) | st.sampled_from(['","', '",', '\\",', "%s", "%", "100%b", '"', "\\", "\n", "é€", "a,b"])
SCORES = st.sampled_from(
    [
        Score.error("metric_raised", 'it said "no", twice'),
        Score.non_evaluable("field_missing", "no field 'x'"),
        Score.untrusted(3.0, "off_scale", "judge said 3 on a 0..1 scale"),
        Score.measured(0.5, evidence=("trace-1",)),
        Score.measured(1.0),
    ]
).map(score_to_json)
ENCODED = (
    st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1.0, 0.0, -0.0, 1e300, 5e-324, 0.1]) | SCORES
)


@st.composite
def batches(draw: Any) -> tuple[list[str], list[int], list[str], list[list[Any]], list[str | None] | None]:
    rows = draw(st.integers(0, 6))
    names = draw(st.lists(TEXT, unique=True, max_size=4))
    samples = draw(st.booleans())
    entry = st.lists(ENCODED, min_size=1, max_size=3) if samples else ENCODED
    encoded = [draw(st.lists(entry, min_size=rows, max_size=rows)) for _ in names]
    ids = draw(st.lists(TEXT, min_size=rows, max_size=rows))
    lines = draw(st.lists(st.integers(1, 10**12), min_size=rows, max_size=rows))
    clusters = draw(st.none() | st.lists(st.none() | TEXT, min_size=rows, max_size=rows))
    return ids, lines, names, encoded, clusters


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(batch=batches())
def test_a_batch_is_written_as_its_rows_one_by_one(tmp_path: Path, batch: Any) -> None:
    ids, lines, names, encoded, clusters = batch
    one, many = tmp_path / "one", tmp_path / "many"
    one.mkdir(exist_ok=True)
    many.mkdir(exist_ok=True)
    by_row = ScoresWriter(one)
    for row, example_id in enumerate(ids):
        scores = {name: column[row] for name, column in zip(names, encoded, strict=True)}
        by_row.write(example_id, lines[row], scores, clusters[row] if clusters is not None else None)
    by_batch = ScoresWriter(many)
    by_batch.write_rows(ids, lines, names, encoded, clusters)
    assert by_batch.commit() == by_row.commit()
    assert by_batch.final.read_bytes() == by_row.final.read_bytes()
