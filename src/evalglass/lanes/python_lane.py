"""``type: python``: a host function as the task lane, sync or async, called with the example's fields.

The function is the system under test: a pull request edits it freely and no approval binds it, so it never runs
in the process that measures and decides. Its calls go to worker processes (``lanes/hostworker.py``), one call per
worker at a time; with a cluster executor, each call is shipped (an async one only on request) and the cluster
worker loads the function by its reference the same way. Whatever the function raises, returns that is not JSON, or
takes longer than ``timeout`` is that example's :class:`~evalglass.lanes.ports.LaneFailure`, as is a worker that
ends mid-call (``task_worker_lost``); the same call says the same thing on a local worker and on a cluster worker
(:func:`python_call`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalglass import redaction
from evalglass.core.fingerprint import content_address
from evalglass.lanes import hostworker
from evalglass.lanes.base import (
    TASK_RESOURCES,
    LaneConfigError,
    LaneContext,
    TaskLane,
    fields_key,
    through_cache_by_fields,
)
from evalglass.lanes.callcache import CallStore
from evalglass.lanes.executor import EndpointLimit, Executor, WorkLost
from evalglass.lanes.hostcall import shipped_python_call
from evalglass.lanes.hostimports import code_digest
from evalglass.lanes.hostload import is_file_reference, load_function, put_on_path, reported_source
from evalglass.lanes.hostworker import HostWorkers, WorkerDied, WorkerStartError
from evalglass.lanes.ports import Job, LaneColumn, LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.projectstate import project_state
from evalglass.lanes.specs import PythonLaneSpec


class PythonLane(TaskLane):
    spec: PythonLaneSpec

    @classmethod
    def build(cls, spec: PythonLaneSpec, context: LaneContext) -> PythonLane:
        return cls(
            spec,
            base_dir=context.base_dir,
            executor=context.executor,
            cache=context.cache,
            ship_async=context.ship_async,
        )

    def __init__(
        self,
        spec: PythonLaneSpec,
        *,
        base_dir: Path,
        executor: Executor,
        cache: CallStore | None,
        ship_async: bool = False,
    ) -> None:
        self.spec = spec
        self.executor = executor
        self.cache = cache if spec.cache else None
        # The function is never imported here: it is the system under test, which no approval binds, and in this
        # process it could replace what decides. Worker processes import it and make its calls (lanes/hostworker.py).
        self.workers = HostWorkers(
            spec.function,
            str(base_dir.resolve()),
            what="python lane",
            width=spec.concurrency or executor.concurrency,
            secrets=redaction.current().secrets,
        )
        try:
            info = self.workers.describe()
        except WorkerStartError as exc:
            raise LaneConfigError(str(exc)) from None
        if not is_file_reference(spec.function.rpartition(":")[0]):
            put_on_path(base_dir)
        source = reported_source(spec.function, base_dir, info.source)
        self.is_async = info.is_async
        self.takes_sample = info.takes_sample
        code_hash = code_digest(spec.function, base_dir, source)
        keyed: dict[str, str | None] = {"type": "python", "function": spec.function, "source_sha256": code_hash}
        if self.cache is not None:
            # What the function reads that its imports do not name (a data file, a prompt, a dynamically imported
            # module): the whole project's state (lanes/projectstate.py), so a pull request changing any file of it
            # is asked again; None (cannot be read whole): a key no entry has, so every call is made.
            keyed["project"] = project_state(base_dir) or os.urandom(16).hex()
        self.fingerprint = content_address(keyed)
        self.limit = EndpointLimit(key=f"python:{spec.function}", concurrency=spec.concurrency)
        #: An async function is I/O: it stays on this machine unless the executor is told to ship it.
        self.ship_async = ship_async
        #: The shipped call: a cluster worker loads the function by its reference, as a local worker does.
        self._shipped = functools.partial(shipped_reference_call, spec.function, str(Path(base_dir).resolve()))
        #: Wall time one call took, on average, in runs that finished whole (None until one did): sizes the runs.
        self._per_call: float | None = None
        #: Runs of fast calls in flight at once, at most one per CPU (made on the loop, at first use).
        self._fast_gate: asyncio.Semaphore | None = None
        #: Set when the column whose lone first call times the function has it back (None: no column is timing).
        self._timing: asyncio.Event | None = None

    async def produce(self, example_id: str, fields: Mapping[str, Any], sample: int) -> LaneOutcome:
        key = fields_key(self.cache, self.fingerprint, fields, sample)
        kwargs = {"sample": sample} if self.takes_sample else {}
        argument = dict(fields)
        timeout, name = self.spec.timeout, self.spec.function
        offload = self.executor.offload

        async def shipped() -> LaneOutcome:
            assert offload is not None
            try:
                return await offload.run(TASK_RESOURCES, self._shipped, argument, kwargs, sample, timeout=timeout)
            except TimeoutError:
                return LaneFailure("task_timeout", f"{name} did not return within {timeout:g}s", sample)
            except WorkLost as exc:
                return LaneFailure("task_worker_lost", f"{name} could not run on the cluster: {exc}", sample)

        async def local() -> LaneOutcome:
            values, failures, _, _, _ = await self._run([[argument, kwargs, sample]], [sample], None)
            return failures[0] if failures else LaneOutput(values[0], sample)

        ships = offload is not None and (self.ship_async or not self.is_async)

        async def call() -> LaneOutcome:
            outcome = await self.executor.submit(shipped if ships else local, endpoint=self.limit)
            if key is not None and isinstance(outcome, LaneOutput):
                outcome = dataclasses.replace(outcome, call_id=key)
            return outcome

        return await through_cache_by_fields(self.cache, key, sample, "python", call)

    async def _run(
        self, calls: list[list[Any]], samples: list[int], budget: float | None
    ) -> tuple[list[Any], dict[int, LaneOutcome], int, float | None, bool]:
        """A run of calls on one worker: (values, failures by position, how many were answered, how long the worker
        said it took: None when it did not say, whether the run was cut short). A run stops early when it proves
        slower than ``budget``. The worker sends answers as it makes the calls (a group at least every
        ``hostworker.STREAM_S``), and an answer received is kept, whatever happens next; it also logs each answer
        as the call returns (``hostworker.AnswerLog``). A worker that ends mid-run (or a run past its deadline: the
        calls' timeouts are kept by the worker, this is the backstop) has its log read: every call it finished is
        kept, the call it was making fails as what happened to it, and the calls after it were never made (the
        caller sends them again). Only when the worker ended before it started the run (its log says so), or the
        log stops at an answer too deep to be a line of it, is which call ended the worker not known: the one call
        left fails, more are cut short (the fifth item), and the caller makes them again one per run (the call whose
        answer the log could not hold is then made twice)."""
        name, timeout = self.spec.function, self.spec.timeout
        deadline = None if timeout is None else timeout + (budget or 0.0) + WORKER_GRACE_S
        request = hostworker.run_request(calls, timeout, budget)
        why: LaneFailure | None = None
        logged: list[bytes] | None = None
        try:
            replies = await self.workers.run_here(request, deadline)
        except hostworker.RunTimedOut as exc:
            replies, logged = list(exc.replies), exc.logged
            why = LaneFailure("task_timeout", f"{name} did not return within {timeout:g}s", 0)
        except WorkerDied as exc:
            replies, logged = list(exc.replies), exc.logged
            why = LaneFailure("task_worker_lost", f"{name} did not answer: {exc}", 0)
        decoded = hostworker.decode_run(replies, samples)
        if decoded is None:
            lost = f"{name} did not answer: its worker process sent what is not an answer"
            return (
                [None] * len(calls),
                {i: LaneFailure("task_worker_lost", lost, s) for i, s in enumerate(samples)},
                len(calls),
                None,
                False,
            )
        values, failed, finished, worked = decoded
        if why is None:
            return values, failed, finished, worked, False
        if logged is not None:  # the worker started the run: its log holds every call it finished, in order
            more, more_failed, unkept = hostworker.decode_logged(logged, finished, samples)
            values += more
            failed.update(more_failed)
            finished += len(more)
            if not unkept:  # (else an answer too deep to log: from it on, as without a log, below)
                if finished < len(calls):  # the call it was making when it ended: made once, failed as it ended
                    failed[finished] = dataclasses.replace(why, sample=samples[finished])
                    values.append(None)
                    finished += 1
                return values, failed, finished, None, False
        if finished == len(calls) - 1:  # the one call left is the one the worker was making
            failed[finished] = dataclasses.replace(why, sample=samples[finished])
            return [*values, None], failed, len(calls), None, False
        return values, failed, finished, None, True

    # ------------------------------------------------------------------ many calls at once (the live run's chunks)
    @property
    def chunked(self) -> bool:
        """Whether :meth:`produce_many` takes the chunked path: not with a cache (every call is looked up and
        stored on its own) nor a cluster (every call is shipped on its own). An async function's too: a worker
        makes a run's calls one after another, each awaited on its loop, as it makes one call per run (a call at a
        time per worker either way), and a slow function's calls go one per run."""
        return self.cache is None and self.executor.offload is None

    async def produce_many(self, jobs: Sequence[Job]) -> list[LaneOutcome]:
        """Every job's outcome, in order, exactly as :meth:`produce` would give it, for less per call (see
        :meth:`_column`)."""
        if not self.chunked:
            return list(await asyncio.gather(*(self.produce(*job) for job in jobs)))
        samples = [sample for _, _, sample in jobs]
        column = await self._column([fields for _, fields, _ in jobs], samples)
        return column.outcomes(samples)

    async def produce_column(self, ids: Sequence[str], records: Sequence[Mapping[str, Any]], epochs: int) -> LaneColumn:
        if not self.chunked:
            return await super().produce_column(ids, records, epochs)
        if epochs == 1:
            return await self._column(records, None)
        fields = [record for record in records for _ in range(epochs)]
        return await self._column(fields, [sample for _ in records for sample in range(epochs)])

    async def _column(self, fields: Sequence[Mapping[str, Any]], samples: Sequence[int] | None) -> LaneColumn:
        """Call ``i`` of ``fields[i]`` (sample ``samples[i]``, every one 0 for None) for every ``i``, as a column:
        the calls go to workers in runs of as many as take about :data:`CHUNK_BUDGET_S` together (from the time
        runs have taken so far; one call per run until one has finished), one message each way and one executor
        slot per run, each call's timeout kept by the worker. Calls slower than the budget go one per run, so they
        run as concurrently as with :meth:`produce`."""
        values: list[Any] = [None] * len(fields)
        failures: dict[int, LaneFailure] = {}
        pending = list(range(len(fields)))
        #: Calls of a run whose worker ended mid-run: each goes in a run of its own from then on, so the call that
        #: ended it is found (and fails alone), and the others are made again once, not once per death.
        alone: list[int] = []
        submit, limit = self.executor.submit, self.limit
        while pending or alone:
            # Another column is timing the function: its answer sizes this column's runs too (else every column in
            # flight at the start would send a lone call, each to a worker started for it).
            while self._per_call is None and self._timing is not None and len(pending) > 1:
                await self._timing.wait()
            # A run that proves slower than planned stops early: what it left is split again by the time calls take
            # now, so a function that turns slow goes back to one call per worker.
            size = self._run_length(len(pending))
            runs = [[index] for index in alone]
            timing = None
            if self._per_call is None and len(pending) > 1:
                # Nothing says yet how long a call takes: one call goes alone first, and the rest are sized by it
                # (else every call of the column would go in a run of its own).
                runs.append(pending[:1])
                timing = self._timing = asyncio.Event()
            else:
                runs.extend(pending[start : start + size] for start in range(0, len(pending), size))
            made = [functools.partial(self._sync_run, fields, samples, run, values, failures) for run in runs]
            # Calls this fast are work for a CPU, not waits: more runs at once than CPUs would only start more
            # workers (each a process loading the module) to take turns on the same cores. One gate for the lane,
            # whatever the column's length: a live run has several columns in flight, each often a single run.
            gate = None
            if self._calls_per_budget() >= FAST_RUN:
                gate = self._fast_gate = self._fast_gate or asyncio.Semaphore(os.cpu_count() or 1)
            try:
                if len(made) == 1 and gate is None:
                    done = [await submit(made[0], endpoint=limit)]
                else:
                    done = await asyncio.gather(*(_submitted(submit, run, limit, gate) for run in made))
            finally:
                if timing is not None:
                    self._timing = None
                    timing.set()
            left = pending[sum(len(run) for run in runs) - len(alone) :]  # not sent this round (after a lone call)
            pending, alone = [], []
            for run, (finished, cut) in zip(runs, done, strict=True):
                if cut:
                    alone.extend(run[finished:])  # its worker ended mid-run: which unanswered call did it is not known
                else:
                    pending.extend(run[finished:])  # ``finished`` is short of the run when it stopped early
            pending.extend(left)
        return LaneColumn(values, failures)

    def column_size(self) -> int:
        """As many sync calls as take about :data:`CHUNK_BUDGET_S` together (one run on a worker, see
        :meth:`_column`), from the time runs took so far; 0 until one finished, and when not chunked."""
        if not self.chunked:
            return 0
        return self._calls_per_budget()

    def _run_length(self, count: int) -> int:
        return max(1, min(count, self._calls_per_budget()))

    def _calls_per_budget(self) -> int:
        if self._per_call is None:
            return 0
        return int(CHUNK_BUDGET_S / max(self._per_call, 1e-9))

    async def _sync_run(
        self,
        fields: Sequence[Mapping[str, Any]],
        samples: Sequence[int] | None,
        run: list[int],
        values: list[Any],
        failures: dict[int, LaneFailure],
    ) -> tuple[int, bool]:
        """The calls ``run`` names, on a worker, their outcomes put in ``values`` and ``failures``: how many were
        answered (fewer than asked when the run proved slower than planned, or was cut short), and whether it was
        cut short (its worker ended mid-run)."""
        takes_sample = self.takes_sample
        run_samples = [samples[i] if samples is not None else 0 for i in run]
        calls = [
            [fields[i], {"sample": sample} if takes_sample else _NO_KWARGS, sample]
            for i, sample in zip(run, run_samples, strict=True)
        ]
        budget = 10 * CHUNK_BUDGET_S if len(run) > 1 else None
        began = time.perf_counter()
        made, failed, finished, worked, cut = await self._run(calls, run_samples, budget)
        # The worker's own time when it said (a round trip's wait is not the function's: on a busy machine it would
        # keep runs at one call each), else the round trip.
        elapsed = time.perf_counter() - began if worked is None else worked
        if cut:
            self._per_call = None  # the worker ended mid-run: one call per run until calls are answered again
        elif finished == len(run) and not failed:
            per_call = elapsed / finished
            self._per_call = per_call if self._per_call is None else 0.8 * self._per_call + 0.2 * per_call
        for index, value in zip(run, made, strict=False):
            values[index] = value
        for position, failure in failed.items():
            if isinstance(failure, LaneOutput):  # an answer that is not JSON (hostworker.decode_run): a value
                values[run[position]] = failure.value
                continue
            failures[run[position]] = failure
            values[run[position]] = None
        return finished, cut

    async def aclose(self) -> None:
        self.workers.close()


#: How long one run of sync calls sent to a worker at once may take (from the time runs took so far).
CHUNK_BUDGET_S = 0.002
#: Calls per run from which a function counts as fast (under 50 us a call): its runs go at most one per CPU.
FAST_RUN = int(CHUNK_BUDGET_S / 50e-6)


async def _submitted(submit: Any, run: Any, limit: EndpointLimit, gate: asyncio.Semaphore | None) -> tuple[int, bool]:
    """``run`` through the executor, after ``gate`` (when there is one) lets it go."""
    if gate is None:
        finished, cut = await submit(run, endpoint=limit)
        return finished, cut
    async with gate:
        finished, cut = await submit(run, endpoint=limit)
        return finished, cut


#: How long past a run's own limits (the call's timeout, the run's budget) a worker may take to answer before it is
#: killed: its watchdog says which call timed out; this is only for a worker that cannot say even that.
WORKER_GRACE_S = 1.0
#: No keyword arguments: shared by every call of a function that takes no ``sample``.
_NO_KWARGS: dict[str, Any] = {}


def shipped_reference_call(
    reference: str, base_dir: str, argument: dict[str, Any], kwargs: dict[str, Any], sample: int
) -> LaneOutcome:
    """:func:`shipped_python_call` of the function ``reference`` names, loaded on the cluster worker (the driver
    never imports it); a function that cannot be loaded there is this call's failure."""
    from evalglass.lanes.hostload import HostLoadError
    from evalglass.lanes.shipping import base_dir_here

    try:
        function = load_function(
            reference, base_dir_here(base_dir), what="python lane", allow_async=True, search_base=True
        )
    except HostLoadError as exc:
        return LaneFailure("task_worker_lost", f"{reference} could not be loaded on the cluster worker: {exc}", sample)
    return shipped_python_call(function, reference, argument, kwargs, sample)


__all__ = ["CHUNK_BUDGET_S", "PythonLane", "shipped_reference_call"]
