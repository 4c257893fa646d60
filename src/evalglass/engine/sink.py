"""The one sink both producers feed: what a scored row becomes, whichever path scored it.

The recorded path (``pipeline.score_recorded``: the dataset's batches, metric by metric) and the live path
(``liverun.score_live``: a lane's outputs, judges, one event loop) both turn a dataset line into sample rows
(:func:`expand`), guard every metric call the same way (:func:`guard`: an exception becomes an ``error`` score),
append results to the same compact columns (:func:`append_result`, which re-checks the score contract), record how
rows map to examples and clusters (:class:`RowShape`) and end in the same :class:`Scored`. Neither producer imports
the other: they meet here, and ``decide_run``, ``verify`` and the artifacts cannot tell them apart.
"""

from __future__ import annotations

import os
import traceback
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from evalglass import hostwatch, redaction
from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import RunShape
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score, ScoreContractError, Status
from evalglass.core.scorecard import CallTotals, DatasetSummary
from evalglass.core.usage import TokenUsage
from evalglass.engine.dataset import BadLine, field_getter
from evalglass.engine.scoresblock import encode_score
from evalglass.errors import SetupError
from evalglass.hostwatch import Watch
from evalglass.metrics.base import BatchedMetric, MetricFn

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from evalglass.engine.artifacts import ScoresWriter
    from evalglass.engine.config import Config

    def _is_a_scores_sink(writer: ScoresWriter) -> ScoresSink:  # mypy checks the writer against the port
        return writer


class ScoresSink(Protocol):
    """Where both producers write their scored blocks, in dataset order (the port): ``artifacts.ScoresWriter``
    (``scores.jsonl``) today; another sink (a database) plugs in here. ``commit`` makes the blocks final and returns
    their ``sha256:`` fingerprint; ``abort`` leaves nothing behind."""

    def write_block(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None: ...

    def commit(self) -> str: ...

    def abort(self) -> None: ...


@dataclass(frozen=True)
class BuiltMetric:
    name: str
    function: MetricFn
    parallel: bool
    #: What the supervisor names when the process dies while this metric runs (default: the metric's name).
    label: str = ""
    watch: Watch = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "watch", hostwatch.watch(self.label or f"metric '{self.name}'"))


def metric_raised(name: str, exc: BaseException) -> Score:
    """The error score of a metric that raised: its message and traceback tail, redacted before being cut."""
    redactor = redaction.current()
    tail = "".join(traceback.format_exception(exc, limit=-3)).strip()
    message = redactor.text(f"metric '{name}' raised {type(exc).__name__}: {exc}")
    return Score.error("metric_raised", message, redactor.tail(tail, 2000, ""))


def _bad_result(name: str, result: object, why: str) -> Score:
    return Score.error("metric_bad_result", f"metric '{name}' returned {result!r}: {why}")


def call_metric(metric: BuiltMetric, batch: ExampleBatch, pool: Executor | None) -> list[Any]:
    """One metric over a batch; a raising call becomes an error score, never a number.

    A metric with a batch path scores the batch in one call. Should that call raise (or miscount), the batch is
    scored example by example instead, so every example gets exactly the outcome it would get alone.
    """
    with metric.watch:
        return _call_metric(metric, batch, pool)


def _call_metric(metric: BuiltMetric, batch: ExampleBatch, pool: Executor | None) -> list[Any]:
    function, name = metric.function, metric.name
    if isinstance(function, BatchedMetric):
        if not (metric.parallel and pool is not None):
            try:
                results = function.batch(batch)
            except Exception:
                results = None
            if results is not None and len(results) == len(batch):
                return results
        function = function.one

    guarded = guard(name, function)
    examples = batch.examples()
    if metric.parallel and pool is not None and len(examples) > 1:
        return list(pool.map(guarded, examples))
    return [guarded(example) for example in examples]


def guard(name: str, function: Callable[[Example], Any]) -> Callable[[Example], Any]:
    """``function`` for one example, where an exception becomes that example's ``error`` score, never a number.
    The one guard both producers score through."""

    def guarded(example: Example) -> Any:
        try:
            return function(example)
        except Exception as exc:
            return metric_raised(name, exc)

    return guarded


@dataclass
class RowShape:
    """How rows relate to examples and clusters, collected while streaming (compact arrays, no objects)."""

    samples: bool
    cluster_of: Callable[[Mapping[str, Any]], Any] | None
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

    def add_single_rows(self, count: int, clusters: list[str | None] | None) -> None:
        """``add_example(1, cluster)`` for ``count`` examples of one row each (``clusters``: one per example)."""
        if self.samples or self.cluster_of is not None:
            for index in range(count):
                self.add_example(1, clusters[index] if clusters is not None else None)
            return
        self.examples += count

    def run_shape(self) -> RunShape:
        return RunShape(
            examples=self.examples,
            example_of_row=np.frombuffer(self.example_of_row, dtype=np.int64) if self.samples else None,
            clusters=np.frombuffer(self.cluster_ids, dtype=np.int64) if self.cluster_of is not None else None,
        )


def cluster_key(value: Any) -> str | None:
    """A cluster id as recorded: strings and integers name a cluster; anything else (absent, null) does not."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    return None


def expand(item: Example | BadLine, samples: bool) -> list[Example] | Score:
    """The sample rows one dataset line produces, or the single score every metric gets when it produces none."""
    if isinstance(item, BadLine):
        return Score.error(item.code, item.message)
    if item.output is ABSENT:
        return Score.unmeasured(
            Status.BLOCKED, "output_missing", f"example {item.id} (line {item.line}) has no recorded output"
        )
    if not samples:
        return [item]
    if not isinstance(item.output, list):
        return Score.error(
            "samples_not_a_list",
            f"example {item.id} (line {item.line}): task.samples is on, so the output must be a list of samples, "
            f"not {type(item.output).__name__}",
        )
    if not item.output:
        return Score.unmeasured(
            Status.BLOCKED, "output_missing", f"example {item.id} (line {item.line}) has an empty list of samples"
        )
    return [
        Example(id=item.id, line=item.line, fields=item.fields, output=value, sample=index)
        for index, value in enumerate(item.output)
    ]


def append_results(column: ScoreColumn, name: str, results: list[Any]) -> list[Any]:
    """Append consecutive rows' results: at once when all are finite floats, else one by one through
    :func:`append_result`. Returns the JSON the scores file keeps for them."""
    if column.extend_measured(results):
        return results
    return [append_result(column, name, result) for result in results]


def append_result(column: ScoreColumn, name: str, result: Any) -> Any:
    """Append to the column (which re-checks the score contract; a result it refuses becomes a
    ``metric_bad_result`` error) and return the JSON the scores file keeps."""
    try:
        column.append(result)
    except (ScoreContractError, TypeError) as exc:
        result = _bad_result(name, result, str(exc))
        column.append(result)
    return result if type(result) is float else encode_score(result)


def same_score_everywhere(score: Score, columns: dict[str, ScoreColumn], samples: bool) -> dict[str, Any]:
    for column in columns.values():
        column.append(score)
    encoded = encode_score(score)
    return dict.fromkeys(columns, [encoded] if samples else encoded)


def check_duplicate(first_line: dict[str, int], item: Example | BadLine, path: Path) -> None:
    """One example at a time (the live path, where calls dominate): remembers each id's first line.

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

    What a producer that keeps only ids' hashes does when two are equal (a repeated id, or a rare collision of two):
    the one place the exact ids, and the lines to name, are looked at again."""
    first_line: dict[str, int] = {}
    for item in items:
        if until is not None and item.line > until:
            return
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


def new_row_shape(config: Config) -> RowShape:
    cluster_field = config.dataset.cluster_field
    return RowShape(
        samples=config.samples, cluster_of=field_getter(cluster_field) if cluster_field is not None else None
    )


@dataclass
class Scored:
    """The dataset, scored: every metric's column, how rows map to examples, and the dataset as it was read."""

    columns: dict[str, ScoreColumn]
    shape: RowShape
    dataset: DatasetSummary
    scores_sha256: str
    usage: tuple[TokenUsage, ...] = ()
    calls: CallTotals | None = None  # live runs: see CallTotals


def metric_workers(config: Config) -> int:
    """Threads for the metrics that run concurrently across examples: ``check_workers``, else one per CPU here, or
    with a cluster executor as many as calls may be in flight (each thread only waits for its task)."""
    if config.check_workers:
        return config.check_workers
    if config.shipped_metrics:
        return config.concurrency.max_in_flight
    return os.cpu_count() or 1


def metric_pool(config: Config) -> Any:
    """The threads that wait for shipped metric calls: daemon threads, so a thread stuck in the cluster client
    after the cluster was lost (Ray blocks up to a minute on a head that is gone) never holds up the exit of a run
    that already stopped like Ctrl-C."""
    from evalglass.lanes.daemonpool import DaemonThreadPool

    return DaemonThreadPool(metric_workers(config), name="evalglass-shipped", max_abandoned=0)
