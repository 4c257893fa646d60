"""The dataset file: the reader for its format (chosen by its extension), and its gold fingerprint.

Every run path (recorded and live, and the duplicate-id re-scan) opens its dataset here, so a format is read, or
refused, the same way everywhere. ``preflight`` takes the gold fingerprint here too, without the run's summary and
recorded-outputs machinery (``engine.datasets.source``), which would import numpy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from evalglass.core.example import Example, ExampleBatch
from evalglass.engine.datasets.dataset import BadLine, DatasetReader
from evalglass.engine.datasets.gold import GoldHasher
from evalglass.engine.spec.config import LoadedConfig
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import MendedLines

#: Extensions read as JSON Lines (anything not listed below is read as JSONL too, as it always was).
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonlines")
#: Read by their own readers.
TABULAR_SUFFIXES = (".csv", ".parquet")
#: Formats a user might reasonably hand over that are not read: refused by name rather than read as broken JSONL.
REFUSED_SUFFIXES = (".json", ".tsv", ".xlsx", ".xls", ".feather", ".arrow", ".avro", ".orc", ".pkl", ".pickle")
SUPPORTED = "JSON Lines (.jsonl), CSV (.csv) or Parquet (.parquet, with the parquet extra)"


class Reader(Protocol):
    path: Path
    examples: int
    bad_lines: int
    first_bad_lines: list[int]

    @property
    def holds_non_finite(self) -> bool:
        """Whether a value it gives can hold a NaN or an infinity (JSONL parsed by orjson and CSV text cannot;
        Parquet, trace files and other tools' logs can): the gold fingerprint looks for one only then."""
        ...

    @property
    def fingerprint(self) -> str: ...

    def files(self) -> tuple[Path, ...]:
        """Every file the reader opens, its format's second file too (lm-eval's results file): the run holds
        each to its state while host code runs (``engine.datasets.source.source_files``)."""
        ...

    #: The lines read with lone surrogate escapes as U+FFFD (:func:`~evalglass.readers.jsonsource.loads_mending`).
    @property
    def mended(self) -> MendedLines: ...

    def __iter__(self) -> Iterator[Example | BadLine]: ...

    def batches(self) -> Iterator[ExampleBatch | list[Example | BadLine]]: ...


def open_reader(loaded: LoadedConfig, *, hash_bytes: bool = True) -> Reader:
    """The reader for the dataset file's format; a format that is not read is refused with the ones that are.
    ``hash_bytes=False``: the caller will not ask for the file's SHA-256, so it is not taken. A caller taking the
    gold fingerprint reads as any other: the fingerprint (scheme 2) hashes each record on its own."""
    path = loaded.dataset_path
    config = loaded.config
    declared = config.dataset.format
    if declared == "otlp":
        from evalglass.engine.datasets.traces.otlpdataset import OtlpReader

        return OtlpReader(
            path,
            options=config.dataset.trace_options,
            id_field=config.dataset.id_field,
            output_field=config.output_field,
            hash_bytes=hash_bytes,
        )
    if config.dataset.tool_results:
        from evalglass.engine.datasets.toollogs.toolreaders import open_tool_reader

        return open_tool_reader(
            str(declared),
            path,
            id_field=config.dataset.id_field,
            output_field=config.output_field,
            hash_bytes=hash_bytes,
            answer_filter=config.dataset.answer_filter,
        )
    suffix = f".{declared}" if declared is not None else path.suffix.lower()
    if suffix == ".csv" or suffix == ".parquet":
        from evalglass.engine.datasets.tabular import TabularReader

        return TabularReader(
            path, id_field=config.dataset.id_field, output_field=config.output_field, hash_bytes=hash_bytes
        )
    if suffix in REFUSED_SUFFIXES:
        raise SetupError(
            f"cannot read a {suffix} dataset",
            where=str(path),
            fix=f"EvalGlass reads {SUPPORTED}; convert the file, one example per line or row",
        )
    return DatasetReader(
        path, id_field=config.dataset.id_field, output_field=config.output_field, hash_bytes=hash_bytes
    )


def gold_fingerprint_of(loaded: LoadedConfig) -> str:
    """The gold fingerprint exactly as a run takes it, without scoring anything (what ``preflight`` compares the
    ledger's gold validation with)."""
    reader = open_reader(loaded, hash_bytes=False)
    hasher = GoldHasher(loaded.config.gold_excluded_fields, holds_non_finite=reader.holds_non_finite)
    for batch in reader.batches():
        hasher.add(batch)
    return hasher.fingerprint


def comparison_identity(loaded: LoadedConfig) -> tuple[str, str, list[str]]:
    """What a comparison with a baseline reads of this run's dataset, exactly as a run takes it, in one pass and
    without scoring anything: (gold fingerprint, the file's fingerprint, every example's id in file order).
    ``preflight`` asks whether a baseline is comparable with these."""
    reader = open_reader(loaded)
    hasher = GoldHasher(loaded.config.gold_excluded_fields, holds_non_finite=reader.holds_non_finite)
    ids: list[str] = []
    for batch in reader.batches():
        hasher.add(batch)
        ids.extend(batch.ids if isinstance(batch, ExampleBatch) else (item.id for item in batch))
    return hasher.fingerprint, reader.fingerprint, ids
