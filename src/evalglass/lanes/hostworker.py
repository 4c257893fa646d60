"""Host code no approval binds runs in worker processes, never in the process that measures and decides.

A ``python`` lane's function is the system under test: a pull request edits it freely and no approval binds it. Run
inside the deciding process it could replace what decides (``evalglass.core.gates.meets``, a python metric's
function) and make ``evalglass run`` pass on any value. So the lane never imports it: a :class:`HostWorkers` pool
starts worker processes through a fork server (a fresh interpreter that has imported only this module, so no worker
inherits anything a host module did), each worker imports the function itself and runs the calls it is sent over a
pipe, one at a time, and answers with data.

What crosses the pipe is JSON both ways (``orjson``), never a pickle from the worker: what the worker sends is written
by the code under test, and unpickling it here would run it here. A call's answer is ``[0, value]`` (the function's
value, checked to be JSON) or ``[1, code, message, detail]`` (a :class:`~evalglass.lanes.ports.LaneFailure`'s
fields, made in the worker exactly as in a lane thread: :func:`~evalglass.lanes.hostcall.python_value`).

A worker that dies mid-call (``os._exit``, a signal, a crash in C) is that call's failure (:class:`WorkerDied`,
``task_worker_lost``), said with how it ended; a call over its timeout kills its worker (:class:`TimeoutError`),
which is better than a thread left running; a cancelled call (the run stopping) kills its worker too; and
:meth:`HostWorkers.close` kills every worker. A worker whose deciding process is gone exits on its own (it watches a
pipe only that process holds). Each worker is a process of its own: module-level state is per worker, not shared by
the lane's calls, nor with a python metric naming the same file.

A python metric's worker (``lanes/metricworker.py``) and a python lane's worker also write each answer, as its call
returns, into memory they share with the deciding process (:class:`AnswerLog`, :class:`LogWriter`), read only when
the worker ended before its run's last answer: the call it was making is known exactly, and no call it finished is
made again. (A lane's run also streams its answers over the pipe, at least every :data:`STREAM_S`: the log is what
holds the ones made since, when the worker ends before it sends them.)
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import inspect
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import orjson

from evalglass.core.outputparse import DECLARED_JSON, UnparsedOutput
from evalglass.lanes.ports import LaneFailure, LaneOutput

if TYPE_CHECKING:
    from evalglass.lanes.ports import LaneOutcome

#: The fork server each worker is forked from: started once per process with this module as its only preload, so
#: a worker starts from a clean interpreter, however much host code a python metric imported here.
_CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = [
    "evalglass.lanes.forkquiet",
    "evalglass.lanes.hostworker",
    "evalglass.lanes.hostload",
    "evalglass.lanes.hostcall",
]
#: The code of a run's entry that carries an answer that is not JSON (its text and why) instead of a failure: the
#: pipe is JSON, so the answer travels as what :func:`decode_run` makes an ``UnparsedOutput`` of again.
NOT_JSON_ANSWER = "task_output_not_json"


def _forget_fork_server() -> None:
    """In a forked child (``evalglass.run``'s isolated run, the CLI's supervised child): the fork server the parent
    started is the parent's (``multiprocessing`` would ``waitpid`` a process that is not this one's child and fail
    with ECHILD), so this process starts its own when it first needs one. Private attributes of
    ``multiprocessing.forkserver``: the standard library has no way to say it."""
    server: Any = multiprocessing.forkserver._forkserver
    if server._forkserver_pid is None:
        return
    with contextlib.suppress(OSError, TypeError):
        os.close(server._forkserver_alive_fd)
    server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None


os.register_at_fork(after_in_child=_forget_fork_server)
#: Held while a worker process starts (see :func:`_without_main`).
_START_LOCK = threading.Lock()


def _without_main(prepare: Callable[[str], dict[str, Any]]) -> Callable[[str], dict[str, Any]]:
    """``spawn.get_preparation_data`` without the main module: a worker imports only what it is told to."""

    def prepared(name: str) -> dict[str, Any]:
        data = prepare(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    return prepared


#: How long a worker may take to import its host module and describe it.
START_TIMEOUT_S = 300.0


class WorkerDied(Exception):
    """The worker running a call ended before it answered; the message says how (exit code or signal).
    ``replies``: what it had sent of a run's answers by then (:meth:`HostWorkers.run_here`); ``logged``: what its
    answer log held once it had ended (:meth:`AnswerLog.lines`: None when it never started the run, or keeps none)."""

    def __init__(self, how: str, replies: tuple[bytes, ...] = ()) -> None:
        super().__init__(how)
        self.replies = replies
        self.logged: list[bytes] | None = None


class RunTimedOut(TimeoutError):
    """A run was not answered within its deadline (its worker is killed); ``replies``: what the worker had sent
    of its answers by then; ``logged``: as :class:`WorkerDied`'s, read once the worker was killed."""

    def __init__(self, replies: tuple[bytes, ...]) -> None:
        super().__init__()
        self.replies = replies
        self.logged: list[bytes] | None = None


class WorkerStartError(Exception):
    """The host module could not be loaded in the worker: the message is the one line the loader gave."""


@dataclass(frozen=True, slots=True)
class HostFunctionInfo:
    """What the deciding process needs to know of a host function, as the worker read it."""

    is_async: bool
    takes_sample: bool
    #: The file a module reference was imported from (None for a file reference, or a module without one).
    source: str | None = None


class _Worker:
    """One worker process and its end of the pipe."""

    def __init__(self, process: Any, conn: Connection, alive: Connection, log: AnswerLog | None = None) -> None:
        self.process = process
        self.conn = conn
        self.alive = alive  # only this process holds the writing end: the worker exits when it closes
        #: The worker's answer log (a python lane's worker): read when it ends mid-run, closed when it is killed.
        self.log = log
        #: The event loop watching the pipe (:meth:`watch_on`), and the future the message it reads goes to.
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiter: asyncio.Future[bytes] | None = None

    def watch_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """Have ``loop`` watch the pipe, from now until the worker is killed (not once per call: adding and removing
        a reader costs more than a fast tool call's own work in this process)."""
        if self.loop is not loop:
            self.unwatch()
            loop.add_reader(self.conn.fileno(), self._readable)
            self.loop = loop

    def unwatch(self) -> None:
        loop, self.loop = self.loop, None
        if loop is not None:
            with contextlib.suppress(Exception):  # a loop closed since, or a pipe closed: nothing watches it
                loop.remove_reader(self.conn.fileno())

    def _readable(self) -> None:
        """The pipe is readable: the message goes to the call waiting for it, read here at once, so the loop's next
        look at the pipe never sees a message already taken. Readable with no call waiting, the worker ended or its
        host code wrote while idle: the loop stops watching (it would say so at every turn) and the next call reads
        what is there as its answer, or the end of the pipe."""
        waiter = self.waiter
        if waiter is None:
            self.unwatch()
            return
        if waiter.done():
            return  # its call has yet to take the message before (it is resumed first)
        try:
            waiter.set_result(self.conn.recv_bytes())
        except (EOFError, OSError) as exc:
            waiter.set_exception(exc)

    def ending(self) -> str:
        """How the worker ended, in words (it is waited for: the pipe closes a moment before the process ends)."""
        self.process.join(5.0)
        code = self.process.exitcode
        if code is None:
            return "its worker process closed the pipe"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"its worker process was killed by {name}"
        return f"its worker process ended with exit code {code}"

    def kill(self) -> None:
        self.unwatch()
        with contextlib.suppress(Exception):
            self.process.kill()
        for end in (self.conn, self.alive):
            with contextlib.suppress(Exception):
                end.close()
        with contextlib.suppress(Exception):
            self.process.join(5.0)
        if self.log is not None:
            self.log.close()

    def logged(self) -> list[bytes] | None:
        """What the worker's answer log holds of the run it was making (its lines), read once the worker has ended
        (it is killed first: a worker still running could write a line just after the read); None without a log."""
        if self.log is None:
            return None
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.join(5.0)
        return self.log.lines()


class HostWorkers:
    """Worker processes for one host function (``reference``, as ``hostload.load_function`` takes it), started as
    calls need them and reused; at most one call in flight per worker. Each worker is given an answer log of its
    own (:class:`AnswerLog`) when :attr:`logs_answers` says its target takes one."""

    #: Whether each worker gets an answer log, passed to its target after its :class:`_Setting`.
    logs_answers = True

    def __init__(self, reference: str, base_dir: str, *, what: str, width: int, secrets: tuple[str, ...] = ()) -> None:
        from evalglass.lanes.daemonpool import DaemonThreadPool

        self.reference = reference
        self.base_dir = base_dir
        self.what = what
        self.secrets = secrets
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()
        self._info: HostFunctionInfo | None = None
        self._closed = False
        #: The threads that start workers (a fork and a module's import, never on the event loop), ``width`` at
        #: most: the lane's concurrency. The pipes are watched by the event loop.
        self._threads = DaemonThreadPool(width, name="evalglass-host-pipes", max_abandoned=0)
        _LIVE.add(self)

    def describe(self) -> HostFunctionInfo:
        """Start the first worker (blocking) and say what the function is; raises :class:`WorkerStartError` when
        the worker cannot load it."""
        if self._info is None:
            worker = self._start()
            with self._lock:
                self._idle.append(worker)
        assert self._info is not None
        return self._info

    def _target(self) -> tuple[Callable[..., None], tuple[Any, ...]]:
        """What a worker runs, and its arguments after the two pipes and before its :class:`_Setting`."""
        return serve, (self.reference, self.base_dir, self.what, self.secrets)

    def _described(self, hello: dict[str, Any]) -> None:
        """Keep what the first worker said of the function (``hello``, its first message, not an error)."""
        source = hello.get("source")
        self._info = HostFunctionInfo(
            bool(hello.get("is_async")), bool(hello.get("takes_sample")), source if type(source) is str else None
        )

    def _keeps(self, reply: bytes) -> bool:
        """Whether the worker that sent ``reply`` is still serving (a worker whose watchdog saw a call time out
        has ended: its call could not be stopped)."""
        try:
            meta = orjson.loads(reply.partition(b"\n")[0])
        except orjson.JSONDecodeError:
            return False
        return type(meta) is list and len(meta) == 7 and meta[2] is None

    def _start(self) -> _Worker:
        target, arguments = self._target()
        log = AnswerLog() if self.logs_answers else None
        given = () if log is None else (log.given(),)
        worker = spawn_worker(target, (*arguments, _Setting.now(), *given))
        worker.log = log
        ours = worker.conn
        try:
            if not ours.poll(START_TIMEOUT_S):
                raise WorkerStartError(f"{self.what} {self.reference}: did not load within {START_TIMEOUT_S:g}s")
            hello = orjson.loads(ours.recv_bytes())
        except (EOFError, OSError, orjson.JSONDecodeError):
            worker.kill()
            raise WorkerStartError(f"{self.what} {self.reference}: {worker.ending()} while loading it") from None
        except WorkerStartError:
            worker.kill()
            raise
        if not isinstance(hello, dict) or "error" in hello:
            worker.kill()
            error = hello.get("error") if isinstance(hello, dict) else None
            raise WorkerStartError(str(error) if error else f"{self.what} {self.reference}: no description")
        self._described(hello)
        return worker

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise WorkerDied("the lane was closed")
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = self._start()
        with self._lock:
            self._busy.add(worker)
        return worker

    def _give_back(self, worker: _Worker, keep: bool) -> None:
        with self._lock:
            self._busy.discard(worker)
            if keep and not self._closed:
                self._idle.append(worker)
                return
        worker.kill()

    async def call_here(self, request: bytes, deadline: float | None) -> bytes:
        """One call on a worker of its own, a message each way (an agent's tool call), the worker's pipe watched by
        the event loop, not a thread; the worker's answer (unchecked: the caller checks it). A worker is started
        on a thread when none is idle; the deadline counts from the request's sending. A call not answered within
        ``deadline`` seconds, or cancelled, has its worker killed (raises ``TimeoutError`` / re-raises the
        cancellation); a worker that ends before it answers raises :class:`WorkerDied`."""
        return (await self.run_here(request, deadline, streamed=False))[0]

    async def run_here(self, request: bytes, deadline: float | None, *, streamed: bool = True) -> list[bytes]:
        """:meth:`call_here` for a run of calls whose answers come back in several messages, as they are made,
        until one that says it is the last (:func:`more_follows`). A worker that ends first raises
        :class:`WorkerDied`, a run past ``deadline`` :class:`RunTimedOut`, each with the messages received before."""
        loop = asyncio.get_running_loop()
        with self._lock:
            worker = self._idle.pop() if self._idle and not self._closed else None
            if worker is not None:
                self._busy.add(worker)
        if worker is None:
            worker = await loop.run_in_executor(self._threads, self._take)
        if worker.log is not None:
            worker.log.clear()  # before the run is sent: the log then holds this run's answers only
        try:
            replies = await _exchange(loop, worker, request, deadline, more_follows if streamed else None)
        except (WorkerDied, RunTimedOut) as exc:
            exc.logged = worker.logged()
            self._give_back(worker, keep=False)
            raise
        except BaseException:
            self._give_back(worker, keep=False)  # a timeout, a cancellation, a death: the worker goes
            raise
        self._give_back(worker, keep=self._keeps(replies[-1]))
        return replies

    def close(self) -> None:
        """Kill every worker, idle or busy (a busy call then fails as its worker's death)."""
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


def spawn_worker(target: Callable[..., None], args: tuple[Any, ...]) -> _Worker:
    """A worker process forked from the clean fork server, running ``target(conn, alive, *args)``: ``conn`` its end
    of the pipe, ``alive`` the pipe it watches for the deciding process's end (:func:`enter_worker`). Shared by the
    lane's workers (:func:`serve`) and the python metrics' (``metrics/hostscoring.py``)."""
    ours, theirs = _CONTEXT.Pipe(duplex=True)
    alive_read, alive_write = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(
        target=_ended_quietly, args=(target, theirs, alive_read, *args), name="evalglass-host", daemon=True
    )
    _starting(process.start)
    theirs.close()
    alive_read.close()
    return _Worker(process, ours, alive_write)


def start_fork_server() -> None:
    """Start the fork server now, not at the first worker, and go on: it imports its preloads on a CPU of its own
    while this process reads its inputs (``run``, once its config names host code), and the first worker forks from
    a server that is ready. Does nothing when it runs already."""
    _starting(multiprocessing.forkserver.ensure_running)


def _starting(start: Callable[[], None]) -> None:
    """``start()`` (a worker's, or the fork server's) with the fork server's preloads set and without the main
    module."""
    _CONTEXT.set_forkserver_preload(_PRELOAD)
    with _START_LOCK:
        # A worker must not run the deciding process's main script again (``multiprocessing`` re-imports it in every
        # child it starts through a fork server, as ``__mp_main__``): a script that calls ``evalglass.run()`` without
        # a ``__main__`` guard would start a run inside each worker. The preparation data is read while the process
        # starts; ``spawn`` has no option to leave the main out.
        prepare = multiprocessing.spawn.get_preparation_data
        multiprocessing.spawn.get_preparation_data = _without_main(prepare)  # type: ignore[assignment]
        try:
            start()
        finally:
            multiprocessing.spawn.get_preparation_data = prepare


def worker_setting() -> _Setting:
    """The deciding process's folder and environment now, for a worker to :func:`enter_worker` with."""
    return _Setting.now()


async def _exchange(
    loop: asyncio.AbstractEventLoop,
    worker: _Worker,
    request: bytes,
    deadline: float | None,
    more: Callable[[bytes], bool] | None,
) -> list[bytes]:
    """Send ``request`` and await the answers (one, or while ``more`` says another follows), the pipe watched by
    ``loop``; raises :class:`RunTimedOut` past ``deadline`` seconds and :class:`WorkerDied` when the worker ends
    first, each with what came before (the caller kills the worker)."""
    worker.watch_on(loop)
    replies: list[bytes] = []
    try:
        worker.conn.send_bytes(request)  # the worker is waiting to read it: a long request blocks only as long
    except OSError:
        raise WorkerDied(await loop.run_in_executor(None, worker.ending)) from None
    try:
        # No timeout scope without a deadline: it costs more than a fast call's own work in this process.
        async with asyncio.timeout(deadline) if deadline is not None else contextlib.nullcontext():
            while True:
                worker.waiter = waiter = loop.create_future()
                try:
                    reply = await waiter
                except (EOFError, OSError):
                    raise WorkerDied(await loop.run_in_executor(None, worker.ending), tuple(replies)) from None
                finally:
                    worker.waiter = None
                replies.append(reply)
                if more is None or not more(reply):
                    return replies
    except TimeoutError:
        raise RunTimedOut(tuple(replies)) from None


@dataclass(frozen=True, slots=True)
class _Setting:
    """What host code sees of the deciding process at the moment a worker starts: its folder and environment
    (the fork server was started earlier, and a long-lived caller may have changed either since)."""

    cwd: str
    env: dict[str, str]

    @classmethod
    def now(cls) -> _Setting:
        return cls(os.getcwd(), dict(os.environ))

    def enter(self) -> None:
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.env)


#: Every pool not yet closed: killed at exit, before ``multiprocessing``'s own exit hook would terminate its
#: workers politely and wait for them (a worker mid-call in host code may never end on SIGTERM).
_LIVE: weakref.WeakSet[HostWorkers] = weakref.WeakSet()


@atexit.register
def _kill_live_workers() -> None:
    for workers in list(_LIVE):
        workers.close()


# ---------------------------------------------------------------------------------------------- the worker's side
def _watch_parent(alive: Connection) -> None:
    """End this worker when the deciding process is gone (the writing end of ``alive`` closes with it)."""
    with contextlib.suppress(BaseException):
        alive.recv_bytes()
    os._exit(1)


def _ended_quietly(target: Callable[..., None], *args: Any) -> None:
    """Run the worker's ``target``; an exception escaping it ends the worker without ``multiprocessing``'s
    "Process evalglass-host:" traceback on the run's stderr. The deciding process reads the end as the call's
    ``*_worker_lost`` state ("exited 1"), and the usual cause is only that it closed the pipe first (a run that
    stopped on bad input while a worker was starting): a pipe that closed says nothing; anything else one line."""
    try:
        target(*args)
    except SystemExit:
        raise
    except (EOFError, BrokenPipeError, ConnectionResetError):
        os._exit(1)
    except BaseException as exc:  # an error of ours in the worker: one line, never a traceback
        with contextlib.suppress(BaseException):  # sys.stderr: redacted once the worker has entered
            sys.stderr.write(f"evalglass: a host worker ended: {type(exc).__name__}: {exc}\n")
            sys.stderr.flush()
        os._exit(1)


def enter_worker(alive: Connection, secrets: tuple[str, ...], setting: _Setting) -> None:
    """What every worker does first, before any host code: watch for the deciding process's end, leave stopping to
    it, take its folder, environment and secrets, and send what host code prints to stderr, redacted."""
    from evalglass import redaction
    from evalglass.core.redact import Redactor

    threading.Thread(target=_watch_parent, args=(alive,), daemon=True, name="evalglass-host-parent").start()
    # Stopping is the deciding process's to do (it kills its workers): a Ctrl-C the terminal sends to the whole
    # process group must not end a worker mid-call with a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())  # whatever mask the fork server was started under
    setting.enter()
    redaction.install(Redactor(secrets))  # the deciding process's secrets: messages are redacted alike
    # What host code prints goes to stderr, redacted, as it does in the deciding process during a run (whose
    # stdout may be a JSON document).
    sys.stdout.flush()
    os.dup2(2, 1)
    redaction.redact_standard_streams()


def serve(
    conn: Connection,
    alive: Connection,
    reference: str,
    base_dir: str,
    what: str,
    secrets: tuple[str, ...],
    setting: _Setting,
    log: int | None = None,
) -> None:
    """A worker's life: load the function, describe it, then answer runs of calls until the pipe closes. ``log``:
    the file of the deciding process's answer log (:class:`AnswerLog`), mapped before any host code loads."""
    from pathlib import Path

    from evalglass.lanes.hostload import HostLoadError, load_function

    enter_worker(alive, secrets, setting)
    writer = LogWriter(log) if log is not None else None
    try:
        function = load_function(reference, Path(base_dir), what=what, allow_async=True, search_base=True)
    except HostLoadError as exc:
        conn.send_bytes(orjson.dumps({"error": str(exc)}))
        return
    try:
        takes_sample = "sample" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        takes_sample = False
    # The file a module reference was imported from (the deciding process imports nothing to find it), for the
    # call cache's key: the worker's word, which changes nothing but the key of what the function itself answers.
    source = getattr(sys.modules.get(reference.rpartition(":")[0]), "__file__", None)
    described = {"is_async": inspect.iscoroutinefunction(function), "takes_sample": takes_sample, "source": source}
    conn.send_bytes(orjson.dumps(described))
    runner = _Runner(conn, function, reference, writer)
    try:
        _answer_runs(conn, runner)
    except (EOFError, OSError):  # the deciding process closed the pipe (or is gone): nothing is left to answer
        return


def _answer_runs(conn: Connection, runner: _Runner) -> None:
    while True:
        request = conn.recv_bytes()
        head, _, body = request.partition(b"\n")
        timeout, budget, rest, listed = orjson.loads(head)
        arguments = orjson.loads(body) if listed else [orjson.loads(line) for line in body.split(b"\n")]
        runner.run(arguments, rest, timeout, budget)


def _kept(
    called: Any, index: int, values: list[Any], failures: list[list[Any]], budget: float | None, began: float
) -> bool:
    """Keep what call ``index`` came to (a value, or a failure's fields); whether the run has passed its budget."""
    if type(called) is LaneFailure:
        failures.append([index, called.code, called.message, called.detail])
        values.append(None)
    else:
        values.append(called)
    return budget is not None and time.monotonic() - began > budget


class Watchdog:
    """Sees a call of a worker's run pass its timeout. A thread, started at the first run with a timeout: it sends
    what the run came to up to that call, that call as timed out (``expired(index, timeout)`` makes the message),
    and ends the worker (the call cannot be stopped; the deciding process starts another worker for the calls
    left). The worker's loop says which call it is making (``index``, ``started``: plain attributes, set per call
    without the lock, for a fast function's sake); either the run's end or the watchdog sends the answer, never
    both (:meth:`finish`). Shared by a python lane's workers and a python metric's (``lanes/metricworker.py``)."""

    def __init__(self, conn: Connection, expired: Callable[[int, float], bytes]) -> None:
        self.conn, self.expired = conn, expired
        self.index = 0
        self.started = 0.0
        self.timeout: float | None = None
        self.serial = 0  # which run the watchdog is looking at (odd: one is in flight)
        self.sent = False
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.watching = False

    def begin(self, timeout: float | None) -> None:
        """A run starts, each call allowed ``timeout`` seconds (None: no limit)."""
        with self.lock:
            self.index, self.sent = 0, False
            self.serial += 1
            self.timeout = timeout
            self.started = time.monotonic()
            if timeout is not None:
                if not self.watching:
                    self.watching = True
                    threading.Thread(target=self._watch, daemon=True, name="evalglass-host-watchdog").start()
                self.wake.notify()

    def finish(self) -> bool:
        """The run ended: whether its answer is the caller's to send (False: the watchdog sent it)."""
        with self.lock:
            self.serial += 1  # the watchdog stands down
            if self.sent:
                return False
            self.sent = True
            return True

    def _watch(self) -> None:
        with self.lock:
            while True:
                serial, index, started, timeout = self.serial, self.index, self.started, self.timeout
                if timeout is None or serial % 2 == 0:  # no run in flight
                    self.wake.wait()
                    continue
                left = started + timeout - time.monotonic()
                if left > 0:
                    self.wake.wait(left)
                    continue
                if (self.serial, self.index, self.started) != (serial, index, started) or self.sent:
                    continue
                self.sent = True
                try:
                    self.conn.send_bytes(self.expired(index, timeout))
                finally:
                    os._exit(0)


#: The answer log's first bytes: 0 until the worker starts the batch the deciding process cleared it for.
_LOG_HEAD = 8
#: The size an answer log's map starts at in a worker (it grows by doubling when a batch's answers need more).
_LOG_START = 1 << 20


class AnswerLog:
    """The deciding process's side of a worker's answer log: memory shared with the worker (a ``memfd``, else an
    unlinked temporary file), into which the worker copies each call's answer (one JSON line) as soon as the call
    returns. Nothing is sent and nothing wakes this process per call: the log is read only when the worker ended (or
    answered nonsense) before its batch's answer, and then holds every call it finished, so the call it was making
    is known exactly and no finished call is made again. What it holds is written by a process running code under
    test: each line is checked like any answer (:meth:`read` parses, the caller checks the shape). One log per
    deciding-side owner, given to each worker it starts (:meth:`given`).

    Layout: the head (8 bytes: 0 until the worker starts the batch), then the batch's lines, then zeros (the worker
    zeroes what it wrote before it starts a batch, a new worker the whole file): the lines end at the first zero
    byte, which JSON text never holds, and a line cut short by the worker's end lacks its newline, or holds a zero
    byte where it was not written yet. So a line costs one copy, and no store of where the lines end."""

    def __init__(self) -> None:
        self.fd: int | None = None

    def given(self) -> _InheritedFd:
        """The log's file for a worker starting now (``spawn_worker``'s arguments: it arrives as a descriptor)."""
        if self.fd is None:
            memfd = getattr(os, "memfd_create", None)
            if memfd is not None:
                self.fd = memfd("evalglass-answers", os.MFD_CLOEXEC)
            else:  # pragma: no cover - not Linux
                import tempfile

                with tempfile.TemporaryFile() as handle:
                    self.fd = os.dup(handle.fileno())
            # No one opens it again: any process of the user may open ``/proc/PID/fd/N`` of this one (no ptrace
            # needed), and host code no gate binds (a lane, an ungated metric's module) could write a gated metric's
            # log, kill its worker, and have the lines read as that function's answers. The descriptors held (this
            # one, the worker's, passed as a descriptor) and the worker's map keep working. Root is not held by a
            # mode (nor by anything else inside the machine: docs/config.md, what the guard cannot close).
            os.fchmod(self.fd, 0)
        return _InheritedFd(self.fd)

    def clear(self) -> None:
        """Say no batch has started, before a batch is sent (the worker is idle, waiting for it, or not started
        yet): a worker that ends before it starts the batch leaves nothing, never an earlier batch's answers."""
        if self.fd is not None:
            os.pwrite(self.fd, bytes(_LOG_HEAD), 0)

    def read(self) -> list[Any] | None:
        """The answers logged since :meth:`clear`, in order, as parsed JSON, up to the first line that is not JSON
        (a worker's own code can write anywhere in its memory; what follows such a line is not trusted); None when
        the worker never started the batch (it ended before: no call of it was made)."""
        lines = self.lines()
        if lines is None:
            return None
        answers: list[Any] = []
        for line in lines:
            try:
                answers.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                break
        return answers

    def lines(self) -> list[bytes] | None:
        """The whole lines logged since :meth:`clear`, in order, unparsed; None when the worker never started the
        batch."""
        if self.fd is None:
            return None
        head = os.pread(self.fd, _LOG_HEAD, 0)
        if len(head) < _LOG_HEAD or not any(head):  # not started (a file no worker has sized yet included)
            return None
        data = os.pread(self.fd, max(0, os.fstat(self.fd).st_size - _LOG_HEAD), _LOG_HEAD)
        zero = data.find(0)
        return (data if zero < 0 else data[:zero]).split(b"\n")[:-1]  # the last piece lacks its newline

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class _InheritedFd:
    """A descriptor of the deciding process handed to a worker process as it starts (the fork server passes it
    along, as it does a pipe's ends): unpickled in the worker as the descriptor's number there."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __reduce__(self) -> tuple[Callable[[Any], int], tuple[Any]]:
        from multiprocessing import reduction

        return _detached, (reduction.DupFd(self.fd),)


def _detached(duplicate: Any) -> int:
    return int(duplicate.detach())


class LogWriter:
    """The worker's side of an :class:`AnswerLog` (see its layout): a map of its file, zeroed when the worker starts.
    A line is one copy into the map (:attr:`write`, the map's own: a caller on a fast path calls it and, when it
    raises ``ValueError`` because the map is full, :meth:`add`); the map grows by doubling."""

    def __init__(self, fd: int) -> None:
        import mmap

        size = max(os.fstat(fd).st_size, _LOG_START)
        os.ftruncate(fd, 0)  # what an earlier worker wrote is gone: the file reads as zeros
        os.ftruncate(fd, size)
        self.map = mmap.mmap(fd, size)
        os.close(fd)  # the map holds the file
        self.write = self.map.write

    @property
    def end(self) -> int:
        """Where the lines logged since :meth:`begin` end."""
        return self.map.tell()

    def begin(self) -> None:
        """A batch starts: what the previous one wrote is zeroed, then the head says the batch started (the
        deciding process zeroed it), and its lines are written from the start."""
        written = self.map.tell()  # 0 in a new worker, whose file is all zeros
        if written > _LOG_HEAD:
            self.map[_LOG_HEAD:written] = bytes(written - _LOG_HEAD)
        self.map.seek(_LOG_HEAD)
        self.map[:_LOG_HEAD] = b"started\n"

    def add(self, line: bytes) -> None:
        """Log one answer (JSON ending in a newline: ``orjson.OPT_APPEND_NEWLINE``), growing the map if need be."""
        try:
            self.write(line)
        except ValueError:  # past the map's end: it grows (in place, the position and ``write`` kept)
            self.map.resize(2 * (len(self.map) + len(line)))
            self.write(line)


#: A run's answers go back as they are made, at least once per this much of the worker's time (a call that takes
#: longer is sent on its own as soon as it returns): a call whose answer has been sent is never made again, whatever
#: happens to the worker later. Faster calls go in groups, for one message each way per group, not per call.
STREAM_S = 0.001


class _Runner:
    """Makes a run of calls in order and sends their answers as they are made, a group at a time (at least every
    :data:`STREAM_S`; the last message says so); a call over its timeout is its :class:`Watchdog`'s to answer. Each
    call's answer is also logged as soon as the call returns (``writer``, when the deciding process gave a log), a
    line a call in order: its value as JSON, or ``!`` and a list: ``[1, code, message, detail]`` for a failure (an
    answer that is not JSON: :data:`NOT_JSON_ANSWER`), ``[2]`` for an answer the log cannot hold
    (:func:`decode_logged` reads them)."""

    def __init__(self, conn: Connection, function: Any, name: str, writer: LogWriter | None = None) -> None:
        self.conn, self.function, self.name, self.writer = conn, function, name, writer
        self.is_async = inspect.iscoroutinefunction(function)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.values: list[Any] = []
        self.failures: list[list[Any]] = []
        self.samples: list[int] = []
        self.watch = Watchdog(conn, self._expired)
        self.began = 0.0
        self.flushed = 0  # the calls of the run whose answers have been sent

    def run(self, arguments: list[Any], rest: list[list[Any]], timeout: float | None, budget: float | None) -> None:
        """Make the calls (call ``i``: ``arguments[i]``, with the keyword arguments and sample ``rest[i]``) and send
        their answers."""
        from evalglass.lanes.hostcall import _Returned, python_value

        function, name = self.function, self.name
        values: list[Any] = []
        failures: list[list[Any]] = []
        samples = [sample for _, sample in rest]
        self.values, self.failures, self.samples, self.flushed = values, failures, samples, 0
        watch = self.watch
        writer = self.writer
        if writer is not None:
            writer.begin()
        watch.begin(timeout)
        self.began = began = now = sent = time.monotonic()
        last = len(arguments) - 1
        if self.is_async:
            # One turn of the loop for the whole run, each call awaited in order (a loop started per call costs more
            # than a fast call).
            self._loop().run_until_complete(self._run_async(arguments, rest, timeout, budget, values, failures))
        else:
            # :func:`_kept` written out, and one clock reading a call (the end of one call is the start of the next):
            # for a fast function this loop is most of the worker's time.
            monotonic, append = time.monotonic, values.append
            write, dumps, newline = (
                writer.write if writer is not None else None,
                orjson.dumps,
                orjson.OPT_APPEND_NEWLINE,
            )
            for index, argument in enumerate(arguments):
                kwargs, sample = rest[index]
                watch.index, watch.started = index, now
                called = python_value(function, name, kwargs, sample, argument)
                if type(called) is _Returned:
                    called = self._returned(called.value, sample, timeout)
                if write is not None:
                    # :meth:`_log` written out for a value orjson writes whole (no ``null``: a NaN would be one).
                    line = None
                    if type(called) is not LaneFailure:
                        try:  # noqa: SIM105 - a context manager per call costs more than the call
                            line = dumps(called, option=newline)
                        except TypeError:
                            pass
                    if line is None or b"null" in line:
                        self._log(called, sample)
                    else:
                        try:
                            write(line)
                        except ValueError:  # the map is full: it grows
                            self.writer.add(line)  # type: ignore[union-attr]
                if type(called) is LaneFailure:
                    failures.append([index, called.code, called.message, called.detail])
                    called = None
                append(called)
                now = monotonic()
                if budget is not None and now - began > budget:
                    break  # the run turned slow: what is left goes back, to be split again
                if now - sent >= STREAM_S and index < last:
                    self._send(index + 1)
                    sent = now
        if watch.finish():
            self.conn.send_bytes(self._encode(len(values), None))

    async def _run_async(
        self,
        arguments: list[Any],
        rest: list[list[Any]],
        timeout: float | None,
        budget: float | None,
        values: list[Any],
        failures: list[list[Any]],
    ) -> None:
        """:meth:`run`'s loop for an async function, on the worker's loop: what each call comes to is what
        :meth:`_returned` makes of it."""
        from evalglass.lanes.hostcall import _Returned, python_value

        function, name, began, watch = self.function, self.name, self.began, self.watch
        sent, last = began, len(arguments) - 1
        for index, argument in enumerate(arguments):
            kwargs, sample = rest[index]
            watch.index, watch.started = index, time.monotonic()
            called = python_value(function, name, kwargs, sample, argument)
            if type(called) is _Returned:
                called = await self._finished(called.value, sample, timeout)
            if self.writer is not None:
                self._log(called, sample)
            if _kept(called, index, values, failures, budget, began):
                break
            if index < last and (now := time.monotonic()) - sent >= STREAM_S:
                self._send(index + 1)
                sent = now

    def _log(self, called: Any, sample: int) -> None:
        """Log what the next call came to (see the class doc): its value as the run's message will carry it, a
        value that is not JSON as its text and why, a NaN never as ``null``; a value too deep to be written as a
        line (nested as deep as JSON allows) as ``![2]``."""
        assert self.writer is not None
        line = b""
        if type(called) is LaneFailure:
            line = b"!" + orjson.dumps([1, called.code, called.message, called.detail])
        else:
            try:
                line = orjson.dumps(called)
            except TypeError:
                pass
            else:
                from evalglass.readers.jsonvalues import non_finite

                if b"null" in line and non_finite(called) is not None:  # orjson writes a NaN as null
                    line = b""
            if not line:
                from evalglass.lanes.hostcall import lane_value

                answer = lane_value(called, self.name, sample).value
                if type(answer) is UnparsedOutput:
                    line = b"!" + orjson.dumps([1, NOT_JSON_ANSWER, answer.message, answer.text])
                else:
                    try:
                        line = orjson.dumps(answer)
                    except TypeError:
                        line = b"![2]"
        self.writer.add(line + b"\n")

    def _send(self, finished: int) -> None:
        """Send the answers of the calls up to ``finished`` not sent yet, more to follow (unless the watchdog has
        answered the run: the worker is then ending)."""
        with self.watch.lock:
            if not self.watch.sent:
                self.conn.send_bytes(self._encode(finished, None, more=True))
                self.flushed = finished

    async def _finished(self, value: Any, sample: int, timeout: float | None) -> Any:
        """What a call's returned value comes to: an awaitable awaited within the call's timeout (its failure
        when it raised or ran out of time), anything else as it is (checked when the run is encoded)."""
        from evalglass.lanes.hostcall import _raised

        if not inspect.isawaitable(value):
            return value
        try:
            if timeout is None:  # no clock to keep (a timeout scope costs more than a fast call)
                return await value
            async with asyncio.timeout(timeout):
                return await value
        except TimeoutError as exc:
            if timeout is not None and time.monotonic() - self.watch.started >= timeout:
                from evalglass.lanes.ports import LaneFailure

                return LaneFailure("task_timeout", f"{self.name} did not return within {timeout:g}s", sample)
            return _raised(self.name, exc, sample, self.function)
        except BaseException as exc:
            return _raised(self.name, exc, sample, self.function)

    def _loop(self) -> asyncio.AbstractEventLoop:
        """The worker's event loop, made when a call first needs one."""
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop

    def _returned(self, value: Any, sample: int, timeout: float | None) -> Any:
        """A value of another type than the built-in JSON ones, from a sync function: an awaitable is run on the
        worker's loop (within the call's timeout), anything else is checked when the run is encoded."""
        if not inspect.isawaitable(value):
            return value
        return self._loop().run_until_complete(self._finished(value, sample, timeout))

    def _encode(self, finished: int, timed_out: int | None, *, more: bool = False) -> bytes:
        """The answers of the calls from the first not sent yet to ``finished``, in lines: ``[failures, finished,
        timed_out, apart, seconds, start, more]``, then the values as one JSON list, or (``apart``: a value nested
        as deep as JSON allows does not fit in a list) one line per value. A value that is not JSON becomes its
        call's failure. ``seconds``: how long the worker has taken over the run's calls so far (the lane sizes runs
        by it, never by the round trip, which a busy machine makes as long as it likes); ``start``: the first call
        answered here; ``more``: another message of the run follows."""
        start = self.flushed
        values = self.values[start:finished]
        failures = [entry for entry in self.failures if start <= entry[0] < finished]
        seconds = time.monotonic() - self.began
        try:
            body = orjson.dumps(values)
        except TypeError:
            pass
        else:
            from evalglass.readers.jsonvalues import non_finite

            if b"null" not in body or non_finite(values) is None:  # orjson writes a NaN as null: look for one
                return orjson.dumps([failures, finished, timed_out, False, seconds, start, more]) + b"\n" + body
        from evalglass.lanes.hostcall import lane_value

        failed = {entry[0] for entry in failures}
        lines = []
        for index, value in enumerate(values, start):
            if index not in failed:
                answer = lane_value(value, self.name, self.samples[index]).value
                if type(answer) is UnparsedOutput:  # an answer that is not JSON: sent as its text (decode_run)
                    failures.append([index, NOT_JSON_ANSWER, answer.message, answer.text])
                    value = None
            lines.append(orjson.dumps(None if index in failed else value))
        return b"\n".join([orjson.dumps([sorted(failures), finished, timed_out, True, seconds, start, more]), *lines])

    def _expired(self, index: int, timeout: float) -> bytes:
        """The answer when call ``index`` is over ``timeout``: the calls before it, and it as timed out."""
        self.failures[:] = [entry for entry in self.failures if entry[0] < index]
        self.failures.append([index, "task_timeout", f"{self.name} did not return within {timeout:g}s", None])
        self.values[index:] = [None]
        return self._encode(index + 1, index)


def decode_run(
    replies: list[bytes], samples: list[int]
) -> tuple[list[Any], dict[int, LaneOutcome], int, float | None] | None:
    """A worker's answers to a run of calls (:meth:`_Runner._encode`, one message per group of calls, in order):
    (values, failures by position, how many calls were answered, how long the worker said it took: None when it
    did not say, or said nonsense, a figure for sizing runs, never a measurement anything is decided on), or None
    when an answer is not of that shape (the worker runs code under test, which may write to its pipe: what it
    sends is checked, never trusted, and never unpickled)."""
    from evalglass.lanes.ports import LaneFailure

    values: list[Any] = []
    failed: dict[int, LaneOutcome] = {}
    seconds: Any = None
    for reply in replies:
        head, _, rest = reply.partition(b"\n")
        try:
            meta = orjson.loads(head)
            if type(meta) is not list or len(meta) != 7:
                return None
            failures, finished, _, apart, seconds, start, _ = meta
            part = [orjson.loads(line) for line in rest.split(b"\n")] if apart else orjson.loads(rest)
        except (orjson.JSONDecodeError, ValueError):
            return None
        if type(part) is not list or type(failures) is not list or type(finished) is not int:
            return None
        if start != len(values) or not start <= finished <= len(samples) or len(part) != finished - start:
            return None
        values += part
        for entry in failures:
            if (
                type(entry) is not list
                or len(entry) != 4
                or type(entry[0]) is not int
                or not start <= entry[0] < finished
                or type(entry[1]) is not str
                or type(entry[2]) is not str
                or not (entry[3] is None or type(entry[3]) is str)
            ):
                return None
            if entry[1] == NOT_JSON_ANSWER:  # the function's answer, not JSON: its text and why (lane_value)
                text = entry[3] if entry[3] is not None else ""
                answer = UnparsedOutput(text, entry[2], declared=DECLARED_JSON)
                failed[entry[0]] = LaneOutput(answer, samples[entry[0]])
                continue
            failed[entry[0]] = LaneFailure(entry[1], entry[2], samples[entry[0]], detail=entry[3])
    worked = seconds if type(seconds) is float and 0.0 <= seconds < 1e6 else None
    return values, failed, len(values), worked


def decode_logged(
    logged: list[bytes], start: int, samples: list[int]
) -> tuple[list[Any], dict[int, LaneOutcome], bool]:
    """The answers of a run's calls from ``start`` on that its worker logged (:meth:`_Runner._log`; the lines
    :meth:`AnswerLog.lines` read from the run's first), up to the first line that is not one: (values, failures and
    answers that are not JSON by position, as :func:`decode_run` gives them; whether the log stopped at a call that
    was answered but whose answer it does not hold, ``![2]``). What the log holds was written by a process running
    code under test: checked, never trusted."""
    values: list[Any] = []
    failed: dict[int, LaneOutcome] = {}
    for line in logged[start : len(samples)]:
        index = start + len(values)
        try:
            if not line.startswith(b"!"):
                values.append(orjson.loads(line))
                continue
            entry = orjson.loads(line[1:])
        except orjson.JSONDecodeError:
            break
        if entry == [2]:
            return values, failed, True
        if (
            type(entry) is not list
            or len(entry) != 4
            or entry[0] != 1
            or type(entry[1]) is not str
            or type(entry[2]) is not str
            or not (entry[3] is None or type(entry[3]) is str)
        ):
            break
        values.append(None)
        if entry[1] == NOT_JSON_ANSWER:
            text = entry[3] if entry[3] is not None else ""
            failed[index] = LaneOutput(UnparsedOutput(text, entry[2], declared=DECLARED_JSON), samples[index])
        else:
            failed[index] = LaneFailure(entry[1], entry[2], samples[index], detail=entry[3])
    return values, failed, False


def more_follows(reply: bytes) -> bool:
    """Whether another message of the run follows ``reply`` (its first line ends ``more``: see
    :meth:`_Runner._encode`); what it says is checked by :func:`decode_run`."""
    return reply.partition(b"\n")[0].endswith(b",true]")


def run_request(calls: list[list[Any]], timeout: float | None, budget: float | None) -> bytes:
    """A run of calls (each ``[argument, kwargs, sample]``) as the worker reads it: a first line with the limits,
    each call's keyword arguments and sample and whether the arguments follow as one list, then that list (one
    writer's call for the run), or, when it is deeper than the writer allows (an argument nested as deep as JSON
    allows), one line per argument."""
    rest = [[kwargs, sample] for _, kwargs, sample in calls]
    arguments = [argument for argument, _, _ in calls]
    try:
        body = orjson.dumps(arguments)
    except orjson.JSONEncodeError:
        head = orjson.dumps([timeout, budget, rest, False])
        return b"\n".join([head, *map(orjson.dumps, arguments)])
    return orjson.dumps([timeout, budget, rest, True]) + b"\n" + body


__all__ = [
    "AnswerLog",
    "HostFunctionInfo",
    "HostWorkers",
    "LogWriter",
    "RunTimedOut",
    "Watchdog",
    "WorkerDied",
    "WorkerStartError",
    "decode_logged",
    "decode_run",
    "enter_worker",
    "more_follows",
    "run_request",
    "serve",
    "spawn_worker",
    "start_fork_server",
    "worker_setting",
]
