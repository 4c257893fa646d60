"""The two hash forms over JSON are persisted (ledgers and run records hold fingerprints; the call cache and
calibration records hold content addresses): their values are pinned, so unifying the two encoders, or changing
either, fails here before it silently stales every stored approval, calibration or cached call."""

from __future__ import annotations

import pytest

from evalglass.core.fingerprint import address_json, canonical_json, content_address, fingerprint_of
from evalglass.engine.produce.cache import cache_key
from evalglass.metrics.llm_judge import LlmJudgeSpec, judge_fingerprint

PAYLOAD = {"x": 1e16, "k": [1, "é"]}
SMALL = {"x": 1e-7}


def test_fingerprint_values_are_the_ones_ledgers_hold() -> None:
    assert fingerprint_of(PAYLOAD) == "sha256:2f7e5647cd7808e26bb30ab7fe46f1dc2dbcd495f6b98ac4397947d49c6ce880"


def test_content_addresses_are_the_ones_caches_and_calibrations_hold() -> None:
    assert cache_key("abc", PAYLOAD, 2) == "c0d72b3623da9056b203bbdb5b08149fcb24e60fb43ddcc525319907536ba442"
    spec = LlmJudgeSpec.model_validate(
        {"type": "llm_judge", "model": "m", "rubric": "r.md", "scale": {"min": 1, "max": 5}, "base_url": "http://h/v1"}
    )
    # json-score@3 (the judge fingerprint names its parser, json-score-v3): every calibration stale once, on purpose
    # (README, "Changes that need re-approval"); under json-score-v2 this was 4b0faf147144...9aa7fecbd7b8b, under
    # json-score-v1 a6c0631962fd...fd37676db7222.
    assert judge_fingerprint(spec, b"rubric text") == (
        "b63f2cb6cb2e9aefbe0fb8a54a060dbb69fb373f06286590000e351eb138c1b9"
    )
    lane = {"type": "python", "function": "a.py:f", "source_sha256": None}
    assert content_address(lane) == "c8a62b35208b5ce7f466113a315c2d4fa628c1c0f667ba17ad3030ff5afc4790"


def test_the_two_encoders_differ_which_is_why_both_exist() -> None:
    assert canonical_json(SMALL) == b'{"x":1e-07}'
    assert address_json(SMALL) == b'{"x":1e-7}'
    assert address_json({"x": float("nan")}) == b'{"x":null}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
