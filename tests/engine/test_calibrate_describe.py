"""`evalglass calibrate`'s confusion matrix lines up: every count sits under its column header."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalglass.core.authority import AgreementInterval, CalibrationRecord
from evalglass.engine.jobs.calibrate import describe


def record(categories: tuple[int | str, ...], confusion: tuple[tuple[int, ...], ...]) -> CalibrationRecord:
    n = sum(map(sum, confusion))
    agreed = sum(confusion[i][i] for i in range(len(categories)))
    return CalibrationRecord(
        judge="j",
        judge_fingerprint="sha256:" + "0" * 64,
        created_at="2026-01-01T00:00:00Z",
        tool_version="0",
        model="m",
        rubric="rubric.md",
        labels_file="labels.jsonl",
        labels_sha256="0" * 64,
        n=n,
        excluded=0,
        categories=categories,
        confusion=confusion,
        agreed=agreed,
        agreement=agreed / n,
        agreement_interval=AgreementInterval(low=0.1, high=0.9, confidence=0.95),
        kappa=None,
        ordinal=False,
    )


@pytest.mark.parametrize(
    ("categories", "confusion"),
    [
        ((1, 2, 3), ((5, 1, 0), (0, 7, 2), (1, 0, 9))),
        (("good", "a-much-longer-label"), ((123456, 2), (3, 4))),
    ],
)
def test_confusion_rows_align_with_their_headers(categories, confusion):
    text = describe(record(categories, confusion), Path("calibrations/j.json"))
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "human \\ judge" in line)
    header, *rows = lines[start : start + 1 + len(categories)]
    # Each column header is right-aligned; the count under it must end at the same column.
    ends = [header.index(str(category)) + len(str(category)) for category in categories]
    assert ends == sorted(ends)
    for row, counts in zip(rows, confusion, strict=True):
        assert len(row) == len(header)
        for end, count in zip(ends, counts, strict=True):
            assert row[:end].endswith(str(count)), (row, header)
