"""The recorded producer: outputs already in the dataset (or in their own file), scored batch by batch, metric by
metric, with no event loop and no calls.

The loop keeps no per-example objects: the dataset comes in batches of parallel lists (``ExampleBatch``), each
metric scores a batch in one call where it has a batch path, and the batch goes to the run sink as one block
(``engine.produce.sink``), which appends it to the columns, reads its clusters, writes it and checks the ids once the
stream has ended.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from evalglass.collector import collector_paused
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.finish import truncated  # at the top: an import statement in a function costs ~1 µs a call
from evalglass.core.score import Score
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.produce.scoring import BuiltMetric, call_metric, expand, metric_pool
from evalglass.engine.produce.sink import Produced, Rows, RunSink
from evalglass.engine.spec.config import LoadedConfig

if TYPE_CHECKING:
    from concurrent.futures import Executor


@dataclass(frozen=True)
class RecordedProducer:
    """Scores the dataset's recorded outputs with the run's metrics (a ``Producer``, see ``engine.produce.sink``)."""

    loaded: LoadedConfig
    metrics: list[BuiltMetric]

    def produce(self, sink: RunSink) -> Produced:
        from evalglass.engine.datasets.source import DatasetSource

        source = DatasetSource(self.loaded, keep=sink.keep)
        pool = metric_pool(self.loaded.config, self.metrics)
        try:
            # A batch of long lines (trajectories) comes in parts, each freed while its objects are still cached;
            # the sink and the keeper join a batch's parts into the block the batch is in the artifacts.
            for batch, ends_block in source.parts():
                sink.note_ids(batch)
                # Scoring a batch builds trees (calls read, keys, pairings, scores): thousands of containers that live
                # until the batch is done. With the collector on, its passes walked them again and again and promoted
                # them (0.27 s of a 10,000-trajectory replay's 2.2 s CPU). Paused, and what the batch left frozen
                # before it resumes (as the reader freezes each batch it parses: what is frozen is still freed by
                # reference counting, and the stream unfreezes it all when it ends), nothing is walked twice.
                with collector_paused():
                    score_batch(batch, self.metrics, sink, pool, ends_block=ends_block)
                    gc.freeze()
            # After the stream: nothing is called per example, and one check of every id costs a sort.
            sink.check_ids()
            dataset = source.summary()
            notes = source.notes
            reads = source.reads()
        finally:
            source.close()
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        return Produced(dataset=dataset, notes=notes, reads=reads)


def score_batch(
    batch: ExampleBatch | list[Example | BadLine],
    metrics: list[BuiltMetric],
    sink: RunSink,
    pool: Executor | None,
    *,
    ends_block: bool = True,
) -> None:
    """Score a batch metric by metric (tight loops) and hand it to the sink as one block.

    When every example is one row to measure (no samples, no bad line, every output present), each metric scores
    the batch as it came. Otherwise the measured rows still go through each metric as one batch, and the lines
    that are not measured (a malformed line, a missing output: one score for every metric) are laid in among
    their results, so a dataset with many bad lines costs about what a clean one does (10 % malformed lines once
    made a run 4-20 times slower). ``ends_block`` False: the batch is a part of a block (``RunSink.add``).
    """
    plain = _plain(batch, sink.samples)
    if plain is not None:
        results = {metric.name: call_metric(metric, plain, pool) for metric in metrics}
        _note_cut_off(results, plain.outputs)
        sink.add(Rows(plain.ids, plain.lines, plain.records, results), ends_block=ends_block)
        return
    items = batch.examples() if isinstance(batch, ExampleBatch) else batch
    expanded = [expand(item, sink.samples, sink.shape.sample_count) for item in items]
    measured = ExampleBatch.of([row for rows in expanded if isinstance(rows, list) for row in rows])
    layout = _layout(expanded)
    scored = {metric.name: call_metric(metric, measured, pool) for metric in metrics}
    _note_cut_off(scored, measured.outputs)
    results = {name: _laid_out(found, layout) for name, found in scored.items()}
    sink.add(
        Rows(
            [item.id for item in items],
            [item.line for item in items],
            [item.fields if isinstance(item, Example) else None for item in items],
            results,
            per_line=[len(rows) if isinstance(rows, list) else 1 for rows in expanded] if sink.samples else 1,
        ),
        ends_block=ends_block,
    )


def _note_cut_off(results: dict[str, Any], outputs: Sequence[Any]) -> None:
    """A recorded answer its own record says was cut off at the token limit (a trajectory whose ``finish``, or a
    trace whose ``finish_reasons``, is one of ``core.finish.TRUNCATED``) carries the note ``output_truncated`` on
    every score, as a live lane's does (``livescorer._note_truncated``): scored as it is, and told apart from a wrong
    answer. Only a mapping output is looked at, so a batch of texts costs one type test an output."""
    produced: list[dict[str, Any]] | None = None
    for row, output in enumerate(outputs):
        # What cut_off_reason reads, tested here first: a record that says neither costs no call.
        if (
            type(output) is not dict
            or "messages" not in output
            or (not truncated(output.get("finish")) and "finish_reasons" not in output)
        ):
            continue
        reason = cut_off_reason(output)
        if reason is None:
            continue
        if produced is None:
            produced = [{} for _ in outputs]
        produced[row] = {"finish_reason": reason}
    if produced is None:
        return
    from evalglass.engine.produce.livescorer import note_truncated

    for name, found in results.items():
        if not isinstance(found, list):
            results[name] = found = list(found)
    note_truncated(results, produced)


def cut_off_reason(output: dict[str, Any]) -> str | None:
    """The finish reason a recorded trajectory or trace gives for an answer cut off at its token limit, or None.
    Only an output shaped as one (with ``messages``: an agent lane's trajectory, a trace's record) is read, so a
    JSON answer of the system's own that happens to hold a ``finish`` key is not taken for one."""
    if "messages" not in output:
        return None
    finish = output.get("finish")
    if truncated(finish):
        return str(finish)
    reasons = output.get("finish_reasons")
    if type(reasons) is list:
        for reason in reasons:
            if truncated(reason):
                return str(reason)
    return None


def _layout(expanded: Sequence[list[Example] | Score]) -> list[int | Score]:
    """The batch's rows as runs: an int is that many consecutive measured rows; a Score is one unmeasured line."""
    runs: list[int | Score] = []
    for rows in expanded:
        if isinstance(rows, Score):
            runs.append(rows)
        elif runs and isinstance(runs[-1], int):
            runs[-1] += len(rows)
        else:
            runs.append(len(rows))
    return runs


def _laid_out(measured: list[Any], layout: list[int | Score]) -> list[Any]:
    """One metric's results on the measured rows, with each unmeasured line's score in its place."""
    if len(layout) == 1 and isinstance(layout[0], int):
        return measured
    results: list[Any] = []
    start = 0
    for run in layout:
        if isinstance(run, int):
            results += measured[start : start + run]
            start += run
        else:
            results.append(run)
    return results


def _plain(batch: ExampleBatch | list[Example | BadLine], samples: bool) -> ExampleBatch | None:
    """The batch when every example in it is one row to measure (see :func:`score_batch`), else None."""
    if samples:
        return None
    if isinstance(batch, list):
        if any(issubclass(kind, BadLine) for kind in set(map(type, batch))):
            return None
        batch = ExampleBatch.of(cast(list[Example], batch))
    if ABSENT in batch.outputs:  # outputs are parsed JSON values here, whose == with ABSENT is plain False
        return None
    return batch


__all__ = ["RecordedProducer", "score_batch"]
