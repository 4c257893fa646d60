"""Calling the run's in-process metrics, the same way from both producers: what a dataset line's sample rows are
(:func:`expand`), the one guard around a metric call (an exception is that example's ``error`` score, never a
number), one metric over a batch (:func:`call_metric`: its batch path, else example by example, on the run's metric
threads when it waits on something outside the process) and the choice of those threads (:func:`metric_pool`).

What becomes of the results (columns, clusters, blocks) is the run sink's job (:mod:`evalglass.engine.produce.sink`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalglass import hostwatch, redaction
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.score import Score, Status
from evalglass.engine.datasets.dataset import BadLine
from evalglass.hostwatch import Watch
from evalglass.metrics.base import MetricFn, Scorer

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from evalglass.engine.spec.config import Config


@dataclass(frozen=True)
class BuiltMetric:
    """One in-process metric of the run, built (``engine.produce.metricbuild``)."""

    name: str
    scorer: Scorer
    #: True when its calls wait on something outside the process (a command, a cluster): run on the metric threads.
    parallel: bool
    #: What the supervisor names when the process dies while this metric runs (default: the metric's name).
    label: str = ""
    watch: Watch = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "watch", hostwatch.watch(self.label or f"metric '{self.name}'"))


def metric_raised(name: str, exc: BaseException) -> Score:
    """The error score of a metric that raised: its message and traceback tail, redacted before being cut."""
    import traceback  # only when a metric raised: not on every run's path

    redactor = redaction.current()
    tail = "".join(traceback.format_exception(exc, limit=-3)).strip()
    message = redactor.text(f"metric '{name}' raised {type(exc).__name__}: {exc}")
    return Score.error("metric_raised", message, redactor.tail(tail, 2000, ""))


def call_metric(metric: BuiltMetric, batch: ExampleBatch, pool: Executor | None) -> list[Any]:
    """One metric over a batch; a raising call becomes an error score, never a number.

    A metric with a batch path scores the batch in one call. Should that call raise (or miscount, or decline with
    None), the batch is scored example by example instead, so every example gets exactly the outcome it would get
    alone. A metric on the metric threads (``pool``) is called example by example there.
    """
    with metric.watch:
        return _call_metric(metric, batch, pool)


def _call_metric(metric: BuiltMetric, batch: ExampleBatch, pool: Executor | None) -> list[Any]:
    scorer = metric.scorer
    pooled = metric.parallel and pool is not None
    if scorer.batch is not None and not pooled:
        try:
            results = scorer.batch(batch)
        except Exception:
            results = None
        if results is not None and len(results) == len(batch):
            return results
    guarded = guard(metric.name, scorer.one)
    examples = batch.examples()
    if pooled and len(examples) > 1:
        assert pool is not None  # pooled implies a pool
        return list(pool.map(guarded, examples))
    return [guarded(example) for example in examples]


def guard(name: str, function: MetricFn) -> Callable[[Example], Any]:
    """``function`` for one example, where an exception becomes that example's ``error`` score, never a number.
    The one guard both producers score through."""

    def guarded(example: Example) -> Any:
        try:
            return function(example)
        except Exception as exc:
            return metric_raised(name, exc)

    return guarded


def expand(item: Example | BadLine, samples: bool, count: int | None = None) -> list[Example] | Score:
    """The sample rows one dataset line produces, or the single score every metric gets when it produces none.
    ``count``: the samples each example must hold (a recorded task's declared ``epochs``); a list of another length
    is an error, never reduced (the count is part of what a gate on ``max`` or ``at_least_k`` approved:
    ``engine.spec.samplecount``)."""
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
    if count is not None and len(item.output) != count:
        return Score.error(
            "sample_count",
            f"example {item.id} (line {item.line}) holds {len(item.output)} samples; task.epochs declares {count}",
        )
    return [
        Example(id=item.id, line=item.line, fields=item.fields, output=value, sample=index)
        for index, value in enumerate(item.output)
    ]


def metric_pool(config: Config, metrics: list[BuiltMetric]) -> Executor | None:
    """The threads the run's ``parallel`` metrics are called on, or None when it has none: the one place they are
    chosen, for both producers (each shuts them down where its run ends).

    ``check_workers`` threads, else one per CPU here; with a cluster executor as many as calls may be in flight
    (each thread only waits for its task), as daemon threads, so a thread stuck in the cluster client after the
    cluster was lost (Ray blocks up to a minute on a head that is gone) never holds up the exit of a run that
    already stopped like Ctrl-C."""
    if not any(metric.parallel for metric in metrics):
        return None
    if config.shipped_metrics:
        from evalglass.lanes.daemonpool import DaemonThreadPool

        return DaemonThreadPool(_metric_workers(config), name="evalglass-shipped", max_abandoned=0)
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=_metric_workers(config))


def _metric_workers(config: Config) -> int:
    if config.check_workers:
        return config.check_workers
    if config.shipped_metrics:
        return config.concurrency.max_in_flight
    return os.cpu_count() or 1


__all__ = ["BuiltMetric", "call_metric", "expand", "guard", "metric_pool", "metric_raised"]
