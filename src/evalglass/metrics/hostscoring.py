"""Python metrics are scored in worker processes, never in the process that measures and decides.

Why. The process that measures and decides holds what an approval binds (the gates' thresholds, the metrics'
definitions). A python metric's function is host code: a gated metric's file and the project modules it imports
statically are bound by its gate's approval, but an ungated metric's function is bound by nothing, and a dynamic
import (``importlib.import_module(name)``) in a gated metric's module loads code nothing binds. Run in the deciding
process, such code could replace ``evalglass.core.gates.meets`` or the gated metric's function and make ``evalglass
run`` pass on a failing value. So the deciding process never imports a python metric's module, and a gated
metric's worker may load no file of the project its gate does not bind (``lanes.hostguard``): unbound code can
change neither what decides nor the gated metric's own values.

How. Each metric source (a ``.py`` file, as it is on disk when the metric is built, or a module by name) gets one
worker process of its own (:class:`MetricWorker`), forked from the lanes' clean fork server
(``lanes.hostworker.spawn_worker``): it imports that source only (and what it imports). Ungated metrics naming the
same source share its worker, hence its module-level state, as they shared the module in one process before;
metrics naming different sources never share a process. A gated metric (``guard``) gets a worker of its own, shared
with no other metric, even one naming the same file or the same function: that worker loads one entry point, the
reference the metric's definition names (which its gate's approval binds), and refuses to load any other
(:meth:`MetricWorker.load`). Why: a worker's module-level state is read by every function it calls, and what the
other metrics of a config are (the functions they name, a gate the ledger never approved, the arguments they pass)
is the pull request's to change without touching the ledger; in a shared worker, a call that mutates what the gated
function reads (a threshold, a table, a cache) would change the gated scores. The worker is killed when the last
metric using it is dropped, and at exit.

What crosses. To the worker: a pickle (the deciding process trusts what it sends) of the arguments the calling rule
gives the function, a whole batch of examples per message. From the worker: JSON only, never a pickle (what it sends
is written by code no approval need bind): per call an answer (``lanes/metricworker.py``, the worker's side, which
imports neither this package nor pydantic). The deciding process turns every answer into a score and checks its
shape (``metrics.hostrules.decoded``: the same states, codes and messages as in process); an answer of another shape,
or a worker that ends mid-call (``os._exit``, a signal, a crash in C), is that call's ``error`` score with code
``host_worker_lost`` saying how, never 0.0 and never a pass. Every answer is also logged as its call returns
(``hostworker.AnswerLog``: memory shared with the worker, no message per call), so a worker that ends mid-batch
leaves the answers it made: they are kept, the call in flight is its ``host_worker_lost`` (not made again), and the
rest of the batch goes to a fresh worker; no call is made twice. A call over the metric's ``timeout`` is
``metric_timeout``: the worker's watchdog sends the answers before it and ends the worker, and the rest of the batch
goes to a fresh worker (a call that holds the interpreter so its watchdog cannot say so is ended by this process's
backstop, the calls' timeouts together and a second, and is ``metric_timeout`` the same way).

Limits. Module-level state is not shared between metrics naming different sources that import one helper module,
nor with a python lane or agent tool, nor between a gated metric and any other metric (each gated metric loads its
module once more, in its own worker: one fork and one import per gated python metric).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import redaction
from evalglass.core.score import Score, Status
from evalglass.lanes.metricworker import INTERRUPTED, TIMED_OUT, serve_metrics, timed_out
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.hostrules import decoded

if TYPE_CHECKING:
    from evalglass.lanes.hostguard import BoundCode
    from evalglass.lanes.hostworker import _Worker
    from evalglass.metrics.base import MetricResult

#: The code of a call whose worker ended before it answered, or answered what is not an answer.
WORKER_LOST = "host_worker_lost"
#: A python metric's calls each have this long by default (``timeout`` in its definition; ``null``: no limit): long
#: enough for a function that calls a model or a service, short enough that a function that hangs does not hold a
#: CI job until the job's own limit (often hours) kills it with no scores at all.
DEFAULT_TIMEOUT_S = 60.0
#: How long past a batch's own limit (its calls' timeouts together) a worker may take to answer before it is killed:
#: its watchdog says which call timed out; this is only for a worker that cannot say even that (a call that holds
#: the interpreter's lock in C code).
WORKER_GRACE_S = 1.0
#: How long a worker may take to import a metric's module (as long as a lane's worker may).
LOAD_TIMEOUT_S = 300.0
#: How long an idle worker may take to end once its pipe closes (its threads, its ``atexit`` hooks) before it is
#: killed: bounded, unlike an interpreter's exit, so host code cannot hold the run's end forever.
STOP_GRACE_S = 30.0


class _Process:
    """The current worker process of a :class:`MetricWorker` (None between a death and the next call). Separate
    from it so that its finalizer holds no reference to it; a copy of this process made by ``fork`` does not kill
    the workers of the process it was copied from."""

    def __init__(self) -> None:
        self.worker: _Worker | None = None
        self.owner = os.getpid()
        #: True from a request's send until its answer is read: a worker mid-call is killed, never waited for.
        self.busy = False
        from evalglass.lanes.hostworker import AnswerLog

        #: Where each worker logs every answer as its call returns (read when a worker ends mid-batch).
        self.log = AnswerLog()

    def close(self) -> None:
        """End the worker: an idle one as a process ends (its pipe closes, it joins its threads and runs its
        ``atexit`` hooks, as host code in this process did at its exit), one mid-call or past
        :data:`STOP_GRACE_S` killed."""
        worker, self.worker = self.worker, None
        if worker is None or os.getpid() != self.owner:
            return
        if not self.busy:
            with contextlib.suppress(Exception):
                worker.conn.close()
                worker.process.join(STOP_GRACE_S)
        self.busy = False
        worker.kill()

    def release(self) -> None:
        """The finalizer's: end the worker, then free its answer log."""
        self.close()
        if os.getpid() == self.owner:
            self.log.close()


class MetricWorker:
    """One worker process importing one metric source, answering the metrics that name it (see the module doc)."""

    def __init__(self, base_dir: Path, guard: BoundCode | None = None, entry: str | None = None) -> None:
        self.base_dir = str(base_dir)
        #: A gated source's rule (``lanes.hostguard``): the project's folder and the files its gate binds.
        self.guard = guard
        #: A gated metric's worker: the one reference it may load (the metric's, which its gate's approval binds).
        self.entry = entry
        self._process = _Process()
        #: What was loaded, in order (a worker started after a death loads them again, to the same indexes).
        self._loaded: list[tuple[str, bool]] = []
        self._sys_path: list[str] | None = None  # the deciding process's ``sys.path`` as last told the worker
        self._lock = threading.Lock()
        weakref.finalize(self, self._process.release)

    def load(self, reference: str, has_reference: bool) -> tuple[int, tuple[str, ...]]:
        """Load ``reference`` in the worker and check its parameters against the calling rule: (its index, the
        argument names to pass). Raises :class:`MetricLoadError` with the one line the loader gave, and, in a gated
        metric's worker, for any reference but its ``entry``: nothing its approval does not name runs there."""
        if self.entry is not None and reference != self.entry:
            raise MetricLoadError(
                f"python metric: {reference}: cannot be loaded in the worker of the gated metric naming {self.entry}, "
                "which runs only the function its approval binds; give it a metric of its own"
            )
        with self._lock:
            try:
                if self._process.worker is None:
                    self._start()
                index, wanted = self._load(reference, has_reference, len(self._loaded))
            except _Lost as exc:
                self._process.close()
                raise MetricLoadError(f"python metric: {reference}: {exc} while loading it") from None
            self._loaded.append((reference, has_reference))
            return index, wanted

    def score(
        self, index: int, columns: dict[str, list[Any]], count: int, timeout: float | None = DEFAULT_TIMEOUT_S
    ) -> list[MetricResult]:
        """The function at ``index`` called ``count`` times, call ``i`` with ``{name: column[i]}``: each call's
        result, checked, each call made once. A call over ``timeout`` seconds is ``metric_timeout`` (its worker is
        ended); a call whose worker ended mid-call is ``host_worker_lost``; either way the calls answered before it
        are kept (the worker logs every answer as its call returns: ``hostworker.AnswerLog``) and the calls after
        it go to a fresh worker."""
        with self._lock:
            results: list[MetricResult] = []
            while len(results) < count:
                start = len(results)
                part = columns if start == 0 else {name: values[start:] for name, values in columns.items()}
                self._process.log.clear()  # before a worker starts: the log then holds this batch's answers only
                fresh = self._process.worker is None
                try:
                    made = self._score(index, part, count - start, timeout)
                except _Lost as exc:
                    self._process.close()  # killed before its log is read: nothing more is written to it
                    logged = self._logged(count - start)
                    if logged is None and not fresh:
                        continue  # a worker that had ended idle, before the batch: no call was made, a fresh one
                    made = logged or []
                    if len(made) < count - start:  # the call it was making: its own state, never made again
                        made.append(checked(timed_out(timeout)) if exc.timed_out and timeout else lost(str(exc)))
                results += made
                if _is_timeout(made[-1]):  # the watchdog's answer (made short of the batch, or its last): ended
                    self._process.close()
            return results

    def _logged(self, count: int) -> list[MetricResult] | None:
        """The answers the ended worker logged for its batch of ``count`` calls, checked, up to the first that is
        not an answer; None when it never started the batch. A gated worker that refused unbound code logged the
        refusal: every answer of the batch is then the refusal, as the batch's own answer would have said."""
        logged = self._process.log.read()
        if logged is None:
            return None
        results: list[MetricResult] = []
        for value in logged[:count]:
            try:
                results.append(checked(value))
            except _Lost:
                break
        if self.guard is not None:
            refusal = next((result for result in results if _is_unbound(result)), None)
            if refusal is not None:
                return [refusal] * count
        return results

    # ------------------------------------------------------------------------------------------------ internals
    def _start(self) -> None:
        from evalglass.lanes.hostworker import spawn_worker, worker_setting

        secrets = redaction.current().secrets
        self._sys_path = list(sys.path)
        arguments = (self.base_dir, secrets, worker_setting(), self._sys_path, self.guard, self._process.log.given())
        self._process.worker = spawn_worker(serve_metrics, arguments)
        for index, (reference, has_reference) in enumerate(self._loaded):  # after a death: the same functions
            try:
                self._load(reference, has_reference, index)
            except MetricLoadError as exc:
                raise _Lost(f"its new worker process could not load it again: {exc}") from None

    def _roundtrip(self, request: tuple[Any, ...], timeout: float | None = None) -> Any:
        worker = self._process.worker
        if worker is None:
            self._start()
            worker = self._process.worker
            assert worker is not None
        if request[0] == "score" and self._sys_path != sys.path:
            # What the deciding process added to its import path since (a python lane puts the config folder first
            # once it is built), so an import the function makes when called resolves as it would have in process;
            # what the worker's own code put on its path stays.
            known = set(self._sys_path or ())
            request = (*request[:-1], [entry for entry in sys.path if entry not in known])
            self._sys_path = list(sys.path)
        self._process.busy = True
        try:
            worker.conn.send_bytes(pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
            if timeout is not None and not worker.conn.poll(timeout):
                raise _Lost(f"its worker process did not answer within {timeout:g}s", timed_out=True)
            reply = worker.conn.recv_bytes()
        except (EOFError, OSError):
            raise _Lost(worker.ending()) from None
        self._process.busy = False
        try:
            return orjson.loads(reply)
        except orjson.JSONDecodeError:
            raise _Lost("its worker process sent what is not an answer") from None

    def _load(self, reference: str, has_reference: bool, expected: int) -> tuple[int, tuple[str, ...]]:
        answer = self._roundtrip(("load", reference, has_reference), LOAD_TIMEOUT_S)
        if type(answer) is dict and type(answer.get("error")) is str and len(answer) == 1:
            raise MetricLoadError(answer["error"])
        wanted = answer.get("wanted") if type(answer) is dict else None
        index = answer.get("index") if type(answer) is dict else None
        if (
            type(index) is not int
            or type(wanted) is not list
            or not all(type(name) is str for name in wanted)
            or index != expected
        ):
            raise _Lost("its worker process sent what is not an answer")
        return index, tuple(wanted)

    def _score(
        self, index: int, columns: dict[str, list[Any]], count: int, timeout: float | None
    ) -> list[MetricResult]:
        """The calls' results; fewer than ``count`` when the last one ran past ``timeout`` (its worker's watchdog
        answered and ended the worker). A worker that says nothing within the calls' timeouts together is ended
        (:class:`_Lost`, ``timed_out``): the call it was making has run past its own timeout by then, holding the
        interpreter so its watchdog could not say so."""
        deadline = None if timeout is None else timeout * count + WORKER_GRACE_S  # the watchdog's backstop
        answer = self._roundtrip(("score", index, columns, count, timeout, None), deadline)
        if type(answer) is not list or not answer or len(answer) > count:
            raise _Lost("its worker process sent what is not an answer")
        if len(answer) == count and all(type(value) is float for value in answer):  # JSON holds no NaN nor infinity
            return answer
        results = [checked(value) for value in answer]
        if len(answer) < count and not _is_timeout(results[-1]):
            raise _Lost("its worker process sent what is not an answer")
        return results


class _Lost(Exception):
    """The worker ended, sent what is not an answer, or (``timed_out``) did not answer within its deadline."""

    def __init__(self, how: str, *, timed_out: bool = False) -> None:
        super().__init__(how)
        self.timed_out = timed_out


def _is_timeout(result: MetricResult) -> bool:
    """Whether ``result`` is a call's ``metric_timeout`` (whose worker has ended)."""
    return isinstance(result, Score) and result.status is Status.ERROR and result.diagnostics[0].code == TIMED_OUT


def _is_unbound(result: MetricResult) -> bool:
    """Whether ``result`` is a gated worker's refusal of unbound code (``lanes.hostguard``)."""
    from evalglass.lanes.hostguard import UNBOUND_CODE

    return isinstance(result, Score) and result.status is Status.ERROR and result.diagnostics[0].code == UNBOUND_CODE


def checked(value: Any) -> MetricResult:
    """One call's answer from a worker, checked (``metrics.hostrules.decoded``)."""
    if type(value) is float:
        return value
    if value == INTERRUPTED:
        raise KeyboardInterrupt
    result = decoded(value)
    if result is None:
        raise _Lost("its worker process sent what is not an answer")
    return result


def lost(how: str) -> Score:
    return Score.error(WORKER_LOST, f"the metric function did not answer: {how}")


#: One worker per metric source, while some metric uses it (``metric_worker``).
_SHARED: weakref.WeakValueDictionary[tuple[Any, ...], MetricWorker] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def metric_worker(
    reference: str, base_dir: Path, guard: BoundCode | None = None, metric: str | None = None
) -> MetricWorker:
    """The worker for the source ``reference`` names: a file as it is on disk now (an edited file gets a new
    worker, as it got a fresh module in process), or a module by name, shared by the ungated metrics naming it. A
    gated metric's (``guard``: see ``lanes.hostguard``; ``metric``: its name) is its own, shared with no other metric
    whatever it names, and loads ``reference`` only (see the module doc)."""
    from evalglass.lanes.hostload import is_file_reference, split_reference

    source, _ = split_reference(reference)
    key: tuple[Any, ...]
    if is_file_reference(source):
        path = (base_dir / source).resolve()
        try:
            stat = path.stat()
            key = ("file", path, stat.st_mtime_ns, stat.st_size)
        except OSError:
            key = ("file", path, None, None)
    else:
        key = ("module", source)
    if guard is not None:
        key = (*key, guard, "gated", metric, reference)
    with _SHARED_LOCK:
        worker = _SHARED.get(key)
        if worker is None:
            worker = _SHARED[key] = MetricWorker(base_dir, guard, reference if guard is not None else None)
        return worker


def _forget_shared() -> None:
    """In a forked child: the parent's workers are the parent's (their pipes too); this process starts its own."""
    _SHARED.clear()


os.register_at_fork(after_in_child=_forget_shared)


__all__ = ["DEFAULT_TIMEOUT_S", "WORKER_LOST", "MetricWorker", "checked", "lost", "metric_worker"]
