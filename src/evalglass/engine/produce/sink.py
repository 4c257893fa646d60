"""The run sink: the one owner of a run's scored output, whichever producer scored it.

A producer (``engine.produce.recordedrun``: recorded outputs, batch by batch; ``engine.produce.liverun``: a lane's
outputs and judges on one event loop) streams the dataset and scores its lines; it hands the sink what it read and what
it scored, and the sink alone does the rest, the same way for both:

* checks ids for repeats (:meth:`RunSink.note_ids`, :meth:`RunSink.check_ids`): one 8-byte hash per id in
  :class:`~evalglass.engine.produce.seenids.SeenIds`; a "maybe" re-reads the lines so far to name both lines (or finds a
  rare collision and goes on). A producer asks when it must know: the live one before a batch's calls are made,
  the recorded one once, after the stream;
* appends results to the metrics' compact columns (:meth:`RunSink.add`; the column re-checks the score contract and
  a result it refuses becomes a ``metric_bad_result`` error), records how rows map to examples and clusters
  (:class:`RowShape`, the cluster key read here and nowhere else), and writes each batch of dataset lines as one
  block of ``scores.jsonl`` through the :class:`ScoresSink` port;
* keeps the recorded outputs a run without a lane scored (:class:`OutputsKeeper`, handed each batch by the
  producer's dataset source through :attr:`RunSink.keep`);
* commits the blocks (and the kept outputs) and returns the run's :class:`Scored`.

So ``decide_run``, ``verify`` and the artifacts cannot tell the two producers apart, and neither producer writes a
block, computes a cluster or keeps ids itself.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import RunShape
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.runrecord import KeptOutputs
from evalglass.core.score import Score, ScoreContractError
from evalglass.core.scorecard import CallTotals, DatasetSummary
from evalglass.core.usage import TokenUsage
from evalglass.engine.datasets.dataset import BadLine, field_getter
from evalglass.engine.produce.seenids import SeenIds
from evalglass.engine.runs.scoresblock import encode_score, encode_scored
from evalglass.errors import SetupError

if TYPE_CHECKING:
    from evalglass.engine.datasets.source import FileRead
    from evalglass.engine.runs.artifacts import ScoresWriter
    from evalglass.engine.spec.config import Config, LoadedConfig

    def _is_a_scores_sink(writer: ScoresWriter) -> ScoresSink:  # mypy checks the writer against the port
        return writer


class ScoresSink(Protocol):
    """Where the run sink writes its blocks, in dataset order (the port): ``artifacts.ScoresWriter``
    (``scores.jsonl``) today; another store (a database) plugs in here. ``commit`` makes the blocks final and
    returns their ``sha256:`` fingerprint; ``abort`` leaves nothing behind."""

    def write_block(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None: ...

    def commit(self) -> str: ...

    def abort(self) -> None: ...


class OutputsKeeper(Protocol):
    """Where a recorded run keeps the outputs it scored (the port): ``keptoutputs.KeptOutputsWriter``. A producer's
    dataset source hands it each batch as read (``DatasetSource(keep=sink.keep)``), before ``parse: json``."""

    def add(
        self,
        batch: ExampleBatch | Sequence[Example | BadLine],
        *,
        holds_non_finite: bool = False,
        ends_block: bool = True,
    ) -> None: ...

    def commit(self) -> KeptOutputs: ...

    def abort(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Rows:
    """Consecutive dataset lines, scored: what a producer hands the sink (one block of ``scores.jsonl`` per entry of
    ``blocks``)."""

    ids: list[str]
    lines: list[int]
    #: Each line's record (its cluster is read from it); None for a line that is not an example (malformed).
    records: Sequence[Mapping[str, Any] | None]
    #: Per metric, one result (a float or a Score) per sample row, the lines' rows in order.
    results: Mapping[str, list[Any]]
    #: Sample rows per line: the same for every line, or each line's own.
    per_line: int | Sequence[int] = 1
    #: Lines per block, in order; None: all in one block.
    blocks: Sequence[int] | None = None


@dataclass(frozen=True)
class Produced:
    """What a producer knows once its stream ends and the sink does not: the dataset as read, and a live run's calls
    and tokens."""

    dataset: DatasetSummary
    calls: CallTotals | None = None
    usage: tuple[TokenUsage, ...] = ()
    #: Call-cache entries found and not trusted (their MAC did not verify): asked again.
    untrusted_cache_entries: int = 0
    #: Lines read differently from their bytes (``DatasetSource.notes``), one line each, for the run's warnings.
    notes: tuple[str, ...] = ()
    #: The files read and the hash of what was read there (``DatasetSource.reads``).
    reads: tuple[FileRead, ...] = ()
    #: A live run's ``outputs.jsonl``, as its writer hashed it: what the run reads it back against.
    outputs_sha256: str | None = None


class Producer(Protocol):
    """A way of scoring the dataset (recorded outputs, or a live lane and judges), given the run's sink: the one
    thing the orchestrator (``engine.jobs.pipeline``) asks of either."""

    def produce(self, sink: RunSink) -> Produced: ...


@dataclass
class Scored:
    """The dataset, scored: every metric's column, how rows map to examples, and the dataset as it was read."""

    columns: dict[str, ScoreColumn]
    shape: RowShape
    dataset: DatasetSummary
    scores_sha256: str
    usage: tuple[TokenUsage, ...] = ()
    calls: CallTotals | None = None  # live runs: see CallTotals
    untrusted_cache_entries: int = 0  # live runs: see Produced
    kept: KeptOutputs | None = None  # recorded outputs: see OutputsKeeper
    reads: tuple[FileRead, ...] = ()  # see Produced
    outputs_sha256: str | None = None  # live runs: see Produced
    checks_sha256: str | None = None  # per-example checks' records (checks.jsonl), as written; None: none ran


@dataclass
class RowShape:
    """How rows relate to examples and clusters, collected while streaming (compact arrays, no objects)."""

    samples: bool
    cluster_of: Callable[[Mapping[str, Any]], Any] | None
    #: The samples each recorded example must hold (a recorded task's declared ``epochs``), None: any number.
    sample_count: int | None = None
    example_of_row: array[int] = field(default_factory=lambda: array("q"))
    cluster_ids: array[int] = field(default_factory=lambda: array("q"))
    cluster_keys: dict[str, int] = field(default_factory=dict)
    examples: int = 0

    def add_example(self, rows: int, cluster: str | None) -> None:
        if self.samples:
            self.example_of_row.extend([self.examples] * rows)
        if self.cluster_of is not None:
            key = cluster if cluster is not None else f"\x00unclustered:{self.examples}"
            self.cluster_ids.append(self.cluster_keys.setdefault(key, len(self.cluster_keys)))
        self.examples += 1

    def add_lines(self, count: int, per_line: int | Sequence[int], clusters: list[str | None] | None) -> None:
        """``add_example`` for ``count`` lines of ``per_line`` rows each (``clusters``: one per line)."""
        if not self.samples and self.cluster_of is None:
            self.examples += count
            return
        rows = [per_line] * count if isinstance(per_line, int) else per_line
        for index, line_rows in enumerate(rows):
            self.add_example(line_rows, clusters[index] if clusters is not None else None)

    def run_shape(self) -> RunShape:
        return RunShape(
            examples=self.examples,
            example_of_row=np.frombuffer(self.example_of_row, dtype=np.int64) if self.samples else None,
            clusters=np.frombuffer(self.cluster_ids, dtype=np.int64) if self.cluster_of is not None else None,
        )


def new_row_shape(config: Config) -> RowShape:
    cluster_field = config.dataset.cluster_field
    return RowShape(
        samples=config.samples,
        cluster_of=field_getter(cluster_field) if cluster_field is not None else None,
        sample_count=config.recorded_sample_count,
    )


class RunSink:
    """The run's scored output: its columns, row shape, id check and scores blocks (see the module docstring).

    ``reread`` reads the dataset's lines again from the start (what a "maybe" from the id table is confirmed on),
    ``path`` is the file the duplicate-id error names; ``expected`` sizes the id table when the line count is known.
    """

    def __init__(
        self,
        names: Sequence[str],
        shape: RowShape,
        writer: ScoresSink,
        reread: Callable[[], Iterable[Example | BadLine]],
        path: Path,
        expected: int = 0,
        keeper: OutputsKeeper | None = None,
    ) -> None:
        self.columns = {name: ScoreColumn() for name in names}
        self.shape = shape
        self._writer = writer
        self._keeper = keeper
        self._reread = reread
        self._path = path
        self._seen = SeenIds(expected=expected)
        self._noted = array("q")  # hashes noted since the last check
        self._last_line = 0
        self._part: _Part | None = None  # the parts of a block not yet ended (``add``'s ``ends_block``)

    @property
    def samples(self) -> bool:
        """True when a line has a list of sample rows (``Rows.per_line``); else one row each."""
        return self.shape.samples

    @property
    def keep(self) -> Callable[..., None] | None:
        """What the dataset source hands each batch's recorded outputs to (None: this run keeps none)."""
        return None if self._keeper is None else self._keeper.add

    def note_ids(self, batch: ExampleBatch | Sequence[Example | BadLine]) -> None:
        """Remember a batch's ids (one hash each; a malformed line's made-up id takes part) for :meth:`check_ids`."""
        # The highest line noted, not the last: another tool's results need not come in ascending lines.
        if isinstance(batch, ExampleBatch):
            self._noted.fromlist(list(map(hash, batch.ids)))  # faster than extending from the iterator
            if batch.lines:
                self._last_line = max(self._last_line, max(batch.lines))
        elif batch:
            self._noted.extend([hash(item.id) for item in batch])
            self._last_line = max(self._last_line, max(item.line for item in batch))

    def check_ids(self) -> None:
        """Refuse a repeated id among every id noted so far: one ``SetupError`` naming both lines.

        The table says "maybe" for a repeat (or a rare collision of two ids' hashes); only then are the lines up to
        the last one noted read again, which names the first repeat or finds none."""
        noted, self._noted = self._noted, array("q")
        if noted and self._seen.add(noted):
            refuse_first_repeat(self._reread(), self._path, until=self._last_line)

    def add(self, rows: Rows, *, ends_block: bool = True) -> None:
        """Append consecutive lines' results to the columns and the row shape, and write them as their blocks.
        ``ends_block`` False: the lines are a part of one block (``DatasetReader.parts``), written with the parts
        after it up to the one that ends the block, as the block the whole would have given."""
        shared: dict[int, Any] = {}  # one Score given to several metrics (a bad line's) is encoded once
        encoded = {name: _append(column, name, rows.results[name], shared) for name, column in self.columns.items()}
        count = len(rows.ids)
        if self.shape.samples:
            encoded = {name: _per_line(entries, rows.per_line) for name, entries in encoded.items()}
        clusters = None
        if self.shape.cluster_of is not None:
            cluster_of = self.shape.cluster_of
            clusters = [cluster_key(cluster_of(record)) if record is not None else None for record in rows.records]
        self.shape.add_lines(count, rows.per_line, clusters)
        if not ends_block or self._part is not None:
            if rows.blocks is not None:
                raise ValueError("a part of a block is one block")
            if self._part is None:
                scores = {name: list(entries) for name, entries in encoded.items()}  # not the caller's lists
                self._part = _Part(list(rows.ids), list(rows.lines), scores, clusters)
            else:
                self._part.extend(rows.ids, rows.lines, encoded, clusters)
            if not ends_block:
                return
            part, self._part = self._part, None
            self._writer.write_block(part.ids, part.lines, part.scores, part.clusters)
            return
        blocks = rows.blocks if rows.blocks is not None else (count,)
        if len(blocks) == 1:
            self._writer.write_block(rows.ids, rows.lines, encoded, clusters)
            return
        first = 0
        for size in blocks:  # one block per batch of dataset lines, as if each had been scored alone
            end = first + size
            scores = {name: entries[first:end] for name, entries in encoded.items()}
            block_clusters = clusters[first:end] if clusters is not None else None
            self._writer.write_block(rows.ids[first:end], rows.lines[first:end], scores, block_clusters)
            first = end

    def commit(self, produced: Produced) -> Scored:
        """The blocks made final; the run's scored dataset."""
        scores_sha256 = self._writer.commit()
        kept = self._keeper.commit() if self._keeper is not None else None
        return Scored(
            columns=self.columns,
            shape=self.shape,
            dataset=produced.dataset,
            scores_sha256=scores_sha256,
            usage=produced.usage,
            calls=produced.calls,
            kept=kept,
            untrusted_cache_entries=produced.untrusted_cache_entries,
            reads=produced.reads,
            outputs_sha256=produced.outputs_sha256,
        )

    def abort(self) -> None:
        self._writer.abort()
        if self._keeper is not None:
            self._keeper.abort()


class _Part:
    """The parts of a block of ``scores.jsonl`` added so far: what :meth:`RunSink.add` writes once it ends. (Not a
    dataclass: one costs the start of every run about 4 M instructions to define.)"""

    __slots__ = ("clusters", "ids", "lines", "scores")

    def __init__(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None:
        self.ids, self.lines, self.scores, self.clusters = ids, lines, scores, clusters

    def extend(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None:
        self.ids += ids
        self.lines += lines
        for name, entries in scores.items():
            self.scores[name] += entries
        if self.clusters is not None and clusters is not None:
            self.clusters += clusters


def open_run_sink(
    loaded: LoadedConfig, writer: ScoresSink, expected: int = 0, keeper: OutputsKeeper | None = None
) -> RunSink:
    """The sink of a run of ``loaded``: a column per declared metric, in the config's order."""

    def reread() -> Iterable[Example | BadLine]:
        from evalglass.engine.datasets.datasetfile import open_reader

        return open_reader(loaded)

    config = loaded.config
    return RunSink(list(config.metrics), new_row_shape(config), writer, reread, loaded.dataset_path, expected, keeper)


def cluster_key(value: Any) -> str | None:
    """A cluster id as recorded: strings and integers name a cluster; anything else (absent, null) does not."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    return None


def _per_line(entries: list[Any], per_line: int | Sequence[int]) -> list[list[Any]]:
    """Consecutive rows' entries grouped by line (samples: a line's entry is the list of its rows')."""
    if isinstance(per_line, int):
        return [entries[start : start + per_line] for start in range(0, len(entries), per_line)]
    grouped, start = [], 0
    for rows in per_line:
        grouped.append(entries[start : start + rows])
        start += rows
    return grouped


def _append(column: ScoreColumn, name: str, results: list[Any], shared: dict[int, Any]) -> list[Any]:
    """Append consecutive rows' results and return the JSON the scores file keeps for them: at once when all are
    finite floats, or finite floats and scored+valid Scores (``ScoreColumn.extend_scored``: a replay's notes); else
    each run of floats at once and every other result alone, so a batch with a few unmeasured rows (bad lines) costs
    about what a clean one does."""
    if column.extend_measured(results):
        return results
    scores = column.extend_scored(results)
    if scores is not None:  # floats and scored+valid Scores (a replay's notes), appended at once
        encoded = list(results)
        for index in scores:
            encoded[index] = encode_scored(results[index])
        return encoded
    encoded = []
    start = 0
    for index in [index for index, result in enumerate(results) if type(result) is not float]:
        if start < index:
            encoded += _append_floats(column, name, results[start:index])
        encoded.append(_append_one(column, name, results[index], shared))
        start = index + 1
    if start < len(results):
        encoded += _append_floats(column, name, results[start:])
    return encoded


def _append_floats(column: ScoreColumn, name: str, results: list[Any]) -> list[Any]:
    if column.extend_measured(results):
        return results
    return [_append_one(column, name, result, {}) for result in results]  # a NaN or an infinity among them


def _append_one(column: ScoreColumn, name: str, result: Any, shared: dict[int, Any]) -> Any:
    """Append one result (the column re-checks the score contract; a result it refuses becomes a
    ``metric_bad_result`` error) and return the JSON the scores file keeps."""
    try:
        column.append(result)
    except (ScoreContractError, TypeError) as exc:
        result = Score.error("metric_bad_result", f"metric '{name}' returned {result!r}: {exc}")
        column.append(result)
        return encode_score(result)
    if type(result) is float:
        return result
    if not isinstance(result, Score):
        return encode_score(result)
    found = shared.get(id(result))  # the Score is held by the caller's rows, so its id is its own here
    if found is None:
        found = shared[id(result)] = encode_score(result)
    return found


def check_duplicate(first_line: dict[str, int], item: Example | BadLine, path: Path) -> None:
    """One line at a time: remembers each id's first line, and refuses the first line that repeats one.

    A malformed line's made-up id (``line:3``) takes part, so a real id can never be the same as one: the run is
    refused instead, as for any repeated id, and says which line the made-up id names. (A made-up id's line is
    remembered negated, which is how it is told apart without keeping more per id.)
    """
    mark = -item.line if isinstance(item, BadLine) else item.line
    seen = first_line.setdefault(item.id, mark)
    if seen != mark:
        raise _duplicate(item.id, mark, seen, path)


def refuse_first_repeat(items: Iterable[Example | BadLine], path: Path, until: int | None = None) -> None:
    """Read the dataset's lines (``items``, from the start; only those up to line ``until``) for the first one whose
    id an earlier line has, and raise what :func:`check_duplicate` raises for it; nothing when there is none.

    What the sink does when two ids' hashes are equal (a repeated id, or a rare collision of two): the one place
    the exact ids, and the lines to name, are looked at again. A line after ``until`` is skipped, not taken as the
    end: a reader's lines need not ascend (another tool's results come in sample order, each example at the place
    of its first result), and stopping at the first one past ``until`` let a repeated id through. (``until`` is the
    highest line noted, so a repeat it finds among lines not yet noted is a repeat of the file all the same.)"""
    first_line: dict[str, int] = {}
    for item in items:
        if until is not None and item.line > until:
            continue
        check_duplicate(first_line, item, path)


def _duplicate(example_id: str, line: int, first: int, path: Path) -> SetupError:
    """Lines as :func:`check_duplicate` marks them: negative for a malformed line, whose made-up id a real one
    repeats (a made-up id names its own line, so two can never be the same)."""
    if first < 0 or line < 0:
        made_up, real = (-first, line) if first < 0 else (-line, first)
        return SetupError(
            f"example id '{example_id}' is also the id given to malformed line {made_up}",
            where=f"{path}:{real}",
            fix=f"fix line {made_up}, or give the example at line {real} another id",
        )
    return SetupError(
        f"duplicate example id '{example_id}' (first at line {first})",
        where=f"{path}:{line}",
        fix="give every example a unique id",
    )


__all__ = [
    "OutputsKeeper",
    "Produced",
    "Producer",
    "RowShape",
    "Rows",
    "RunSink",
    "Scored",
    "ScoresSink",
    "open_run_sink",
    "refuse_first_repeat",
]
