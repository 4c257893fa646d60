"""The fingerprint a ledger approves a calibration record by (``CalibrationRecord.digest``): the record's content,
not its file's formatting, and every value of it."""

from __future__ import annotations

import hashlib
import json
import random
import re

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import CalibrationRecord, calibration_line
from evalglass.core.fingerprint import FINGERPRINT_PATTERN


def _record(agreed: int, n: int, labels: str, created: str) -> CalibrationRecord:
    return CalibrationRecord(
        judge="j",
        judge_fingerprint="f" * 64,
        judge_endpoint="openai http://127.0.0.1:1/v1",
        created_at=created,
        tool_version="0",
        model="m",
        rubric="r.md",
        labels_file=labels,
        labels_sha256="sha256:" + "0" * 64,
        n=n,
        excluded=0,
        categories=(0, 1),
        confusion=((agreed, 0), (n - agreed, 0)),
        agreed=agreed,
        agreement=agreed / n,
        agreement_interval={"low": 0.1, "high": 0.9, "confidence": 0.95},
        kappa=None,
        ordinal=False,
    )


records = st.builds(
    _record,
    agreed=st.integers(0, 50),
    n=st.integers(50, 60),
    labels=st.text(min_size=1, max_size=20),
    created=st.sampled_from(["2026-05-01T00:00:00Z", "2026-12-04T05:26:00.296569Z"]),
)


@given(records, st.integers(0, 2**32), st.sampled_from([None, 1, 4]))
def test_a_record_re_formatted_keeps_its_digest(record: CalibrationRecord, seed: int, indent: int | None) -> None:
    """Keys reordered, indented or not, the same content read back has the same digest."""
    items = list(record.model_dump(mode="json").items())
    random.Random(seed).shuffle(items)
    text = json.dumps(dict(items), indent=indent, ensure_ascii=seed % 2 == 0)
    again = CalibrationRecord.model_validate(json.loads(text))
    assert again.digest == record.digest
    assert calibration_line(again) == f'calibration: "{record.digest}"'


@given(records, records)
def test_records_that_differ_in_any_value_differ_in_digest(a: CalibrationRecord, b: CalibrationRecord) -> None:
    assert re.match(FINGERPRINT_PATTERN, a.digest)
    assert (a.digest == b.digest) == (a.model_dump(mode="json") == b.model_dump(mode="json"))


def test_a_record_without_the_optional_fields_keeps_the_digest_it_had() -> None:
    """A record written before `judge_endpoint` existed dumps without it (not as null), so its digest is the one
    the same content always had; a field added later must keep that rule (CalibrationRecord.digest)."""
    old = _record(40, 50, "l.jsonl", "2026-05-01T00:00:00Z").model_copy(update={"judge_endpoint": None})
    assert "judge_endpoint" not in old.model_dump(mode="json")
    canonical = json.dumps(old.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert old.digest == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
