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

from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.engine.explore.failing import example_rows
from evalglass.engine.runs.artifacts import load_columns, score_rows
from evalglass.engine.runs.schemas import schema_of
from evalglass.engine.runs.scoresblock import (
    BadBlock,
    block_schema,
    decode_block,
    decode_score,
    encode_block,
    encode_score,
)
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
    from evalglass.engine.runs.artifacts import load_scorecard

    card = load_scorecard(folder)
    with pytest.raises(SetupError, match="unreadable"):
        list(example_rows(folder, card, limit=None))


@pytest.mark.parametrize(
    "line",
    [
        b'{"ids": ["a:b", "c"], "lines": [1, 2], "scores": {"m": [1.0, 0.0]}}',
        b'{"ids": ["a:b"], "lines": [1], "scores": {"m": [1.0]}, "ids": ["c"]}',
        b'{"ids": ["a\\u003ab"], "lines": [1], "scores": {"m": [1.0]}, "lines": [2]}',
        b'{"ids": ["a"], "lines": [1], "scores": {"m": [1.0], "m": [0.0]}}',
        b'{"ids": ["a"], "lines": [100000000000000000001], "scores": {"m": [1.0]}}',
        b'{"ids": ["a"], "lines": [1], "scores": {"m": [{"status": "error", "status": "scored"}]}}',
        b'{"ids": ["a"], "lines": [1], "scores": {"m": [' + b"[" * 130 + b"1.0" + b"]" * 130 + b"]}}",
        b'{"ids": ["a"], "lines": [1], "scores": {"m:x": [1.0]}, "clusters": ["k:1"]}',
    ],
)
def test_the_fast_exactness_proof_agrees_with_the_exact_reader(line: bytes) -> None:
    """A block of plain scores is proven exact by counting colons; whatever it accepts, the exact reader accepts,
    and whatever the exact reader refuses, decoding refuses too."""
    from evalglass.readers import jsonsource

    try:
        jsonsource.loads(line)
    except jsonsource.JsonRefused:
        with pytest.raises(jsonsource.JsonRefused):
            decode_block(line)
        return
    decode_block(line)


@settings(max_examples=200, deadline=None)
@given(block=blocks(), extra=st.sampled_from([b"", b', "ids": ["x"]', b', "scores": {}', b', "lines": [1]']))
def test_a_repeated_key_is_never_read(block: Any, extra: bytes) -> None:
    raw = encode_block(*block).rstrip(b"\n")
    line = raw[:-1] + extra + b"}"
    if extra:
        with pytest.raises(ValueError, match="appears twice"):
            decode_block(line)
    else:
        decode_block(line)


TEXT = st.text(min_size=1, max_size=8)
DIAGNOSTICS = st.builds(
    Diagnostic,
    code=st.sampled_from(["tool_call_mismatch", "a", "x_1"]),
    message=TEXT,
    detail=st.none() | st.text(max_size=5),
)
SCORES = st.one_of(
    st.builds(Score.measured, st.floats(allow_nan=False, allow_infinity=False), evidence=st.tuples() | st.tuples(TEXT)),
    st.builds(Score.noted, st.floats(allow_nan=False, allow_infinity=False), st.just("tool_call_mismatch"), TEXT),
    st.builds(
        Score,
        status=st.just(Status.SCORED),
        validity=st.sampled_from([Validity.VALID, Validity.INVALID]),
        value=st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5),
        diagnostics=st.lists(DIAGNOSTICS, min_size=1, max_size=3).map(tuple),
        evidence=st.lists(st.text(max_size=4), max_size=2).map(tuple),
    ),
    st.builds(Score.error, st.just("metric_raised"), TEXT, st.none() | TEXT),
    st.builds(Score.non_evaluable, st.just("field_missing"), TEXT),
    st.builds(Score.unmeasured, st.sampled_from([Status.BLOCKED, Status.SKIPPED]), st.just("output_missing"), TEXT),
)


@settings(max_examples=300)
@given(score=SCORES)
def test_a_score_is_encoded_as_pydantic_writes_it(score: Score) -> None:
    """The hand-built encoding of a full score is pydantic's dump, key for key and in order (the bytes of the block
    are the same)."""
    encoded = encode_score(score)
    if score.included and not score.diagnostics and not score.evidence:
        assert encoded == score.value
    else:
        dumped = score.model_dump(mode="json", exclude_defaults=True)
        assert orjson.dumps(encoded) == orjson.dumps(dumped)
        assert encoded == dumped
        assert decode_score(encoded) == score
