"""The dataset as a run reads it: the file's reader (``engine.datasets.datasetfile``), recorded outputs joined from
their own file when the config names one, and the gold fingerprint taken on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import parse_json_output
from evalglass.core.scorecard import DatasetSummary, OutputsSummary
from evalglass.engine.datasets.dataset import BadLine, DatasetReader
from evalglass.engine.datasets.datasetfile import open_reader
from evalglass.engine.datasets.gold import GoldHasher
from evalglass.engine.datasets.outputs import RecordedOutputs
from evalglass.engine.spec.config import LoadedConfig

#: A batch as the dataset's reader gives it.
Batch = ExampleBatch | list[Example | BadLine]


@dataclass(frozen=True)
class FileRead:
    """One file a run read its examples or outputs from, and the SHA-256 (``sha256:`` and hex) of every byte it
    read there, when one hash covers all of it (None: the file was read some other way too, or its reader takes no
    such hash: lm-eval's results file, an outputs file joined by index). What
    ``engine.jobs.pipeline.refuse_changed_inputs`` compares with the file's bytes when its state moved."""

    path: Path
    sha256: str | None
    #: The (device, inode) of each file the reader opened as ``path`` (empty: its reader does not say). One that is
    #: not the file the path named before host code ran is a file swapped in under the path (a link re-pointed, a
    #: folder renamed) and put back by the end, which the path's own state does not show.
    opened: frozenset[tuple[int, int]] = frozenset()


def source_files(loaded: LoadedConfig) -> tuple[Path, ...]:
    """Every file a :class:`DatasetSource` of ``loaded`` reads: what its format's reader opens (``Reader.files``: a
    second file such as lm-eval's results file too) and the recorded outputs file. The one list the run holds to
    its state while host code runs (``engine.jobs.pipeline.read_file_states``); nothing is opened here."""
    outputs = loaded.outputs_file
    return (*open_reader(loaded, hash_bytes=False).files(), *((outputs,) if outputs is not None else ()))


class DatasetSource:
    """Iterate once (by batch or by example); then :meth:`summary` describes what was read."""

    def __init__(
        self,
        loaded: LoadedConfig,
        keep: Callable[..., None] | None = None,
        outputs: Callable[[Batch], Batch] | None = None,
    ) -> None:
        """``keep``: given each batch (its outputs joined, not yet parsed) and whether the reader can give a NaN or
        an infinity, for the run to keep what it scores (``engine.runs.keptoutputs``); only :meth:`batches` calls
        it. ``outputs``: given each batch as the dataset file holds it, the batch with the outputs to score instead
        of the outputs file's (``verify`` puts in the outputs a run kept: ``engine.jobs.rescore``); the outputs file
        is then not read."""
        config = loaded.config
        self._keep = keep
        self._replace = outputs
        self.reader = open_reader(loaded)
        self.path = self.reader.path
        self._config = config
        self._gold = (
            GoldHasher(config.gold_excluded_fields, holds_non_finite=self.reader.holds_non_finite)
            if config.needs_gold
            else None
        )
        self._outputs: RecordedOutputs | None = None
        # Recorded outputs are parsed here; a live lane's, as the lane produces them (engine.produce.liverun).
        self._parse: Callable[[Any], Any] | None = None
        if config.parse_json and config.lane is None:
            self._parse = _samples_parser if config.samples else parse_json_output
        outputs_file = loaded.outputs_file
        if outputs_file is not None and outputs is None:
            self._outputs = RecordedOutputs(
                outputs_file,
                label=str(outputs_file),
                id_field=config.dataset.id_field,
                output_field=config.output_field,
            )

    def batches(self) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        for batch, _ in self._prepared((batch, True) for batch in self.reader.batches()):
            yield batch

    def parts(self) -> Iterator[tuple[Batch, bool]]:
        """What :meth:`batches` gives, a JSONL dataset's batch of long lines in parts
        (:meth:`~evalglass.engine.datasets.dataset.DatasetReader.parts`), each with whether it ends its batch: a
        block of the run's artifacts, which the keeper (and the run sink) join its parts into. Another reader's
        batch comes whole."""
        reader = self.reader
        if isinstance(reader, DatasetReader):
            return self._prepared(reader.parts())
        return self._prepared((batch, True) for batch in reader.batches())

    def _prepared(self, found: Iterator[tuple[Batch, bool]]) -> Iterator[tuple[Batch, bool]]:
        """Each batch (or part) as the run scores it: gold hashed, outputs joined or replaced, kept, parsed."""
        outputs, gold, parse, keep, replace = self._outputs, self._gold, self._parse, self._keep, self._replace
        for batch, ends_block in found:
            if gold is not None:
                gold.add(batch)
            if outputs is not None:
                batch = outputs.attach(batch)
            if replace is not None:
                batch = replace(batch)
            if keep is not None:
                keep(batch, holds_non_finite=self.reader.holds_non_finite, ends_block=ends_block)
            if parse is not None:
                batch = _parsed_batch(batch, parse)
            yield batch, ends_block

    def __iter__(self) -> Iterator[Example | BadLine]:
        outputs, gold, parse = self._outputs, self._gold, self._parse
        for item in self.reader:
            if gold is not None:
                gold.add_item(item)
            if outputs is not None and isinstance(item, Example):
                item = outputs.output_for(item)
            if parse is not None and isinstance(item, Example):
                item = Example(item.id, item.line, item.fields, parse(item.output), item.sample)
            yield item

    def summary(self) -> DatasetSummary:
        """After the whole dataset was read: its fingerprints and counts, and how the outputs joined."""
        outputs = None
        if self._outputs is not None:
            strict = bool(getattr(self._config.task, "strict", False))
            joined = self._outputs.finish(strict=strict)
            outputs = OutputsSummary(
                path=str(self._config.outputs_path),
                outputs=joined.outputs,
                unmatched=joined.unmatched,
                unmatched_ids=joined.unmatched_ids,
            )
        return DatasetSummary(
            name=self._config.dataset.name,
            path=self._config.dataset.path,
            fingerprint=self.reader.fingerprint,
            gold_fingerprint=self._gold.fingerprint if self._gold is not None else None,
            examples=self.reader.examples,
            malformed_lines=self.reader.bad_lines,
            first_malformed=tuple(self.reader.first_bad_lines),
            outputs=outputs,
        )

    @property
    def notes(self) -> tuple[str, ...]:
        """One line for each line the dataset (JSON lines, OTLP/JSON traces, another tool's results) and outputs
        files were read differently from their bytes (lone surrogate escapes read as U+FFFD), for the run's
        warnings."""
        read = self.reader.mended.notes
        return (*read, *(self._outputs.mended.notes if self._outputs is not None else ()))

    def reads(self) -> tuple[FileRead, ...]:
        """After :meth:`summary`: every file read, each with the hash of what was read there when one covers all of
        it. A JSONL, CSV or Parquet dataset is read in one pass whose every byte is its fingerprint
        (``DatasetReader``); another format's reader may open its file more than once (a header sniffed first), so
        its files are given no hash."""
        reader = self.reader
        whole = reader if isinstance(reader, DatasetReader) else None
        found = [
            FileRead(path, whole.fingerprint, frozenset(whole.opened))
            if whole is not None and path == whole.path
            else FileRead(path, None)
            for path in reader.files()
        ]
        if self._outputs is not None:
            outputs = self._outputs
            found.append(FileRead(outputs.path, outputs.read_sha256, frozenset((outputs.opened,))))
        return tuple(found)

    def close(self) -> None:
        if self._outputs is not None:
            self._outputs.close()


def _samples_parser(value: Any) -> Any:
    """With samples, each recorded sample is parsed (a value that is not a list is left for the pipeline to refuse)."""
    return [parse_json_output(sample) for sample in value] if isinstance(value, list) else value


def _parsed_batch(
    batch: ExampleBatch | list[Example | BadLine], parse: Callable[[Any], Any]
) -> ExampleBatch | list[Example | BadLine]:
    if isinstance(batch, ExampleBatch):
        outputs = [value if value is ABSENT else parse(value) for value in batch.outputs]
        return ExampleBatch(ids=batch.ids, lines=batch.lines, records=batch.records, outputs=outputs)
    return [
        item
        if isinstance(item, BadLine) or item.output is ABSENT
        else Example(item.id, item.line, item.fields, parse(item.output), item.sample)
        for item in batch
    ]
