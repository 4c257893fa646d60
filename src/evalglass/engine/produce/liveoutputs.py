"""``outputs.jsonl``, a live run's record of what each sample's lane call produced (or why there is none) and what
each judge said, in dataset order: scores say how good an output was; this file says what it was.

Written like ``scores.jsonl`` (a hidden partial file, renamed on commit, 0600, hashed as it is written) and holding
nothing time- or cache-dependent, so a resumed run writes the same bytes, and the same whichever way its lines were
scored (one at a time, in chunks, or as columns: ``engine.produce.livescorer``). The hash is what the run reads the
file back against (a judge of variants, a jury's tally) and what its digest list binds: host code runs as the same
user while the run goes on, and the file sits in the run folder it can find.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from evalglass import redaction
from evalglass.core.fingerprint import PREFIX
from evalglass.core.outputparse import stored_output
from evalglass.core.scorecard import CallTotals, count_call_attempts
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.produce.livescorer import ExampleResult, ScoredColumns
from evalglass.engine.runs.runfolder import OUTPUTS_FILE, PartialFile


class OutputsWriter:
    """``outputs.jsonl``: per example, each sample's output (or why there is none) and each judge's label and
    rationale, in dataset order. Scores say how good an output was; this file says what it was. Written like
    ``scores.jsonl`` (hidden partial file, renamed on commit, 0600) and holding nothing time- or cache-dependent,
    so a resumed run writes the same bytes."""

    def __init__(self, folder: Path) -> None:
        self.final = folder / OUTPUTS_FILE
        self._file = PartialFile(self.final, buffering=1 << 20)
        self._redactor = redaction.current()
        self._calls = self._attempts = 0
        self._hash = hashlib.sha256()

    @property
    def calls(self) -> CallTotals:
        return CallTotals(calls=self._calls, attempts=self._attempts)

    def write(self, result: ExampleResult) -> None:
        self.write_many([result])

    def write_many(self, results: Sequence[ExampleResult]) -> None:
        """Each result's row, in order, redacted and written at once (no secret's JSON form holds a raw newline, so
        none can straddle two rows)."""
        self._write(self._redactor.json_bytes(b"".join(map(self._row, results))))

    def write_columns(self, scored: ScoredColumns) -> None:
        """Each example's row of a batch scored as columns: the bytes :meth:`write_many` writes for the same
        outcomes (a lane whose outputs carry nothing but their value: no ``attempts`` but a failure's)."""
        batch, epochs = scored.batch, scored.epochs
        values, failures = scored.produced.values, scored.produced.failures
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        if epochs == 1 and not failures and _fit_in_rows(values):
            # The common case, as orjson writes ``{"id": .., "line": .., "samples": [{"sample": 0, "output": ..}]}``
            # (compact, keys in that order), from each id and output encoded alone: a tenth of building the dicts.
            data = b"".join(
                [
                    b'{"id":%b,"line":%d,"samples":[{"sample":0,"output":%b}]}\n' % row
                    for row in zip(map(dumps, batch.ids), batch.lines, map(dumps, values), strict=True)
                ]
            )
            self._write(self._redactor.json_bytes(data))
            return
        if epochs == 1 and not failures:
            rows = [
                {"id": example_id, "line": line, "samples": [{"sample": 0, **stored_output(value, "output")}]}
                for example_id, line, value in zip(batch.ids, batch.lines, values, strict=True)
            ]
        else:
            rows = []
            for index, (example_id, line) in enumerate(zip(batch.ids, batch.lines, strict=True)):
                samples: list[dict[str, Any]] = []
                for row in range(index * epochs, (index + 1) * epochs):
                    failure, sample = failures.get(row), row - index * epochs
                    if failure is None:
                        samples.append({"sample": sample, **stored_output(values[row], "output")})
                        continue
                    entry: dict[str, Any] = {
                        "sample": sample,
                        "error": {"code": failure.code, "message": failure.message},
                    }
                    if failure.tries:
                        entry["attempts"] = failure.tries
                        self._calls += 1
                        self._attempts += failure.tries
                    samples.append(entry)
                rows.append({"id": example_id, "line": line, "samples": samples})
        try:
            data = b"".join([dumps(row, option=newline) for row in rows])
        except TypeError:  # an output orjson refuses here: written the way write_many writes it
            data = b"".join(self._row_bytes(row) for row in rows)
        self._write(self._redactor.json_bytes(data))

    def _row(self, result: ExampleResult) -> bytes:
        row: dict[str, Any] = {"id": result.item.id, "line": result.item.line}
        if isinstance(result.item, BadLine):
            row["error"] = {"code": result.item.code, "message": result.item.message}
        if result.produced is not None:
            row["samples"] = result.produced
        if result.judged:
            row["judges"] = result.judged
        calls, attempts = count_call_attempts(row)
        self._calls += calls
        self._attempts += attempts
        return self._row_bytes(row)

    @staticmethod
    def _row_bytes(row: dict[str, Any]) -> bytes:
        try:
            return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:  # lanes refuse outputs that are not JSON; never a repr (its bytes differ between runs)
            row["samples"] = [_storable(sample) for sample in row.get("samples") or ()]
            return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)

    def _write(self, data: bytes) -> None:
        self._hash.update(data)
        self._file.write(data)

    def commit(self) -> str:
        """The file made final; its ``sha256:`` hash, of the bytes written."""
        self._file.commit()
        return PREFIX + self._hash.hexdigest()

    def abort(self) -> None:
        self._file.abort()


def _fit_in_rows(values: list[Any]) -> bool:
    """Whether orjson writes every value where it sits in an ``outputs.jsonl`` row, three containers deep (a value
    that is JSON alone can be too deeply nested for that: its row then says so, see ``OutputsWriter._row_bytes``)."""
    try:  # a python lane's answer that is not JSON (an UnparsedOutput dataclass) is stored as its text: not here
        orjson.dumps([[values]], option=orjson.OPT_PASSTHROUGH_DATACLASS)
    except TypeError:
        return False
    return True


def _storable(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample, or what it failed with, checked where it sits in its row (two containers deep): an output nested
    just short of orjson's limit is JSON alone but not in the row, which must then say so rather than fail."""
    try:
        orjson.dumps([[sample]])
    except TypeError as exc:
        return {"sample": sample.get("sample"), "error": {"code": "output_unserialisable", "message": str(exc)}}
    return sample


__all__ = ["OUTPUTS_FILE", "OutputsWriter"]
