"""The input and reference of each listed example (``view --examples``), read from the run's dataset, and only
while it still hashes to the fingerprint the run recorded: a changed dataset's record is not the one scored."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson

from evalglass.core.fieldpath import FieldPathError
from evalglass.core.runrecord import RunRecord
from evalglass.engine.datasets.readback import examples_by_id, read_as_rows_by_reader
from evalglass.engine.datasets.recordparts import present, record_parts
from evalglass.engine.explore.explorer import dataset_candidates, file_sha256
from evalglass.engine.explore.failing import ExampleRow, as_text
from evalglass.readers.jsonsource import without_bom


def with_inputs(folder: Path, record: RunRecord, rows: list[ExampleRow]) -> tuple[list[ExampleRow], str | None]:
    """The rows with their record's input and reference (text, whole), and why they are not shown when they are
    not (None when they are)."""
    if not rows:
        return rows, None
    found = [path for path in dict.fromkeys(dataset_candidates(folder, record)) if path.is_file()]
    if not found:
        return rows, f"the dataset ({record.dataset.path}) is not here: inputs and references are not shown"
    path = next((path for path in found if file_sha256(path) == record.dataset.fingerprint), None)
    if path is None:
        return rows, f"the dataset ({found[0]}) changed since the run: inputs and references are not shown"
    try:
        parts = record_parts(record.config)
    except FieldPathError:
        return rows, "the run record names a malformed field path: inputs and references are not shown"
    records: dict[str, dict[str, object]] = {}
    if read_as_rows_by_reader(record):  # (a CSV row's fields are its columns, as the run read them)
        examples = examples_by_id(record, path, {row.id for row in rows}) or {}
        records = {example_id: dict(example.fields) for example_id, example in examples.items()}
    else:
        lines = {row.line: row.id for row in rows}
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number in lines:
                    try:
                        data = orjson.loads(without_bom(raw) if number == 1 else raw)
                    except orjson.JSONDecodeError:
                        continue
                    if isinstance(data, dict):
                        records[lines[number]] = data
    filled = []
    for row in rows:
        data = records.get(row.id)
        if data is None:
            filled.append(row)
            continue
        reference = parts.reference(data) if parts.reference_fields else None
        filled.append(
            replace(
                row,
                input=as_text(parts.input(data)),
                reference=None if reference is None else as_text(present(reference)),
            )
        )
    return filled, None
