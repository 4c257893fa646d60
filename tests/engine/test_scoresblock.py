"""One codec for the scores block: what the writer encodes, every reader decodes the same way, and the schema
``evalglass schema scores`` prints accepts exactly that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.score import Score
from evalglass.engine.artifacts import load_columns, score_rows
from evalglass.engine.failing import example_rows
from evalglass.engine.schemas import schema_of
from evalglass.engine.scoresblock import BadBlock, block_schema, decode_block, decode_score, encode_block, encode_score
from evalglass.errors import SetupError
from tests.e2e.project import make_project

ENCODED = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [encode_score(Score.error("metric_raised", "boom")), encode_score(Score.non_evaluable("field_missing", "no x"))]
)


@st.composite
def blocks(draw: Any) -> tuple[list[str], list[int], dict[str, list[Any]], list[str | None] | None]:
    size = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text(max_size=5), min_size=size, max_size=size))
    lines = draw(st.lists(st.integers(1, 10**6), min_size=size, max_size=size))
    names = draw(st.lists(st.text(min_size=1, max_size=4), unique=True, max_size=3))
    samples = draw(st.booleans())
    entry = st.lists(ENCODED, min_size=1, max_size=3) if samples else ENCODED
    scores = {name: draw(st.lists(entry, min_size=size, max_size=size)) for name in names}
    clusters = draw(st.none() | st.lists(st.none() | st.text(max_size=3), min_size=size, max_size=size))
    return ids, lines, scores, clusters


@settings(max_examples=200, deadline=None)
@given(block=blocks())
def test_a_block_decodes_to_what_was_encoded_and_the_schema_accepts_it(block: Any) -> None:
    ids, lines, scores, clusters = block
    raw = encode_block(ids, lines, scores, clusters)
    decoded = decode_block(raw)
    assert (decoded.ids, decoded.lines, decoded.scores, decoded.clusters) == (ids, lines, scores, clusters)
    jsonschema.validate(orjson.loads(raw), block_schema())
    for entries in scores.values():
        for entry in entries:
            for one in entry if isinstance(entry, list) else [entry]:
                assert encode_score(decode_score(one)) == one


def test_the_schema_command_prints_the_codecs_schema() -> None:
    assert schema_of("scores") == {"$schema": "https://json-schema.org/draft/2020-12/schema", **block_schema()}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b'{"ids": ["a", "b"], "lines": [1, 2], "scores": {"m": [1.0]}}', "does not have one score per example"),
        (b'{"ids": ["a"], "lines": [1, 2], "scores": {}}', "not a block"),
        (b'{"ids": ["a"], "lines": [1], "scores": {}, "clusters": ["x", "y"]}', "not a block"),
        (b'{"ids": "a", "lines": [1], "scores": {}}', "not a block"),
        (b"[1, 2]", "not a block"),
        (b"{nope", "not a block"),
    ],
)
def test_a_line_that_is_not_a_block_is_refused(line: bytes, why: str) -> None:
    with pytest.raises(BadBlock, match=why):
        decode_block(line)


# A repeated key: orjson alone keeps the last value, so a reader that parsed with it saw a passing example where
# the exact readers refuse the line. The failing-examples reader used plain orjson before the codec.
REPEATED = b'{"ids": ["ex-4"], "lines": [4], "scores": {"exact": [0.0]}, "scores": {"exact": [1.0]}}\n'


def test_no_reader_reads_a_line_with_a_repeated_key(tmp_path: Path) -> None:
    project = make_project(tmp_path, metrics={"exact": {"type": "exact_match", "reference": "expected"}})
    assert project.run("--out", "out").code in (0, 1)
    folder = project.root / "out"
    scores = folder / "scores.jsonl"
    scores.write_bytes(scores.read_bytes() + REPEATED)

    with pytest.raises(ValueError, match="appears twice"):
        list(score_rows(scores))
    with pytest.raises(SetupError, match="refused"):
        load_columns(scores, ["exact"], samples=False, clustered=False)
    from evalglass.engine.artifacts import load_scorecard

    card = load_scorecard(folder)
    with pytest.raises(SetupError, match="unreadable"):
        list(example_rows(folder, card, limit=None))
