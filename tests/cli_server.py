"""`python -m evalglass` for the tests: each command a real process of its own, forked from a server that has
already imported the command line, instead of a new interpreter.

Why. A new interpreter pays ~1 s of CPU to start and import numpy, pydantic, SQLAlchemy and the engine before a
test's command does its ~0.1-0.2 s of work, and the end-to-end tests run about a thousand commands: that start was
the largest share of the suite's time on the 2-core machine (docs/testing.md). The server (one per pytest process,
started by its first command) imports those modules once; each command is a fork of it.

What a command sees is what ``python -m evalglass`` gives it: a process of its own, whose exit status the test
gets from ``waitpid`` (a negative code when a signal ended it, as ``subprocess`` reports it); the test's working
directory and environment; stdin inherited and stdout and stderr on pipes read to their end; ``sys.argv``,
``sys.path[0]`` and ``__main__`` set by ``runpy`` as ``-m`` sets them; default signal handlers and mask; and the
interpreter's usual exit (threads joined, ``atexit``, streams flushed) but not its teardown (``_exit_before_teardown``
says why and what that leaves out), with ``evalglass.entry``'s supervising fork inside it as in production.

What differs, and the limits that follow. The modules in ``PRELOADED`` are already imported: their import-time code
ran in the server, under the environment it started with, and numpy's OpenBLAS loaded on one thread as the command
line loads it; and the pydantic models of the imported ``evalglass`` modules whose validators pydantic builds on
first use are built (``_complete_models``: that build was about two thirds of a forked ``evalglass run``'s CPU, and
pydantic builds the same validator whenever it runs). So a command whose environment changes how Python or numpy start (``STARTUP_VARIABLES``) runs in a
new interpreter, as does any call that needs process options (``run(..., new_interpreter=True)``); and a test of
what a process imports, or of the interpreter's own start, starts its own process (tests/test_lazy_imports.py).
``EVALGLASS_TEST_NEW_INTERPRETER=1`` sends every command through a new interpreter, to compare the two.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

#: What the server imports before it forks: everything a recorded ``evalglass run`` loads, with what its command
#: line imports on the way (the report, the call cache, the run history's store) and what ``explain`` adds.
PRELOADED = (
    "evalglass.entry",
    "evalglass.cli",
    "evalglass.api",
    "evalglass.engine.jobs.pipeline",
    "evalglass.history.record",
    "evalglass.ci",
    "evalglass.engine.decide.baselines",
    "evalglass.engine.decide.baselinesearch",
    "evalglass.engine.produce.cache",
    "evalglass.engine.produce.cachewriter",
    "evalglass.engine.runs.compare",
    "evalglass.engine.explore.failing",
    "evalglass.engine.datasets.gold",
    "evalglass.engine.produce.progress",
    "evalglass.engine.datasets.readback",
    "evalglass.engine.produce.recordedrun",
    "evalglass.history.locator",
    "evalglass.history.migrate",
    "evalglass.history.session",
    "evalglass.history.store",
    "evalglass.lanes.callcache",
    "evalglass.report.explain",
    "evalglass.report.markdown",
    "evalglass.report.terminal",
    "sqlalchemy.dialects.sqlite",
    # What most commands import on their way (counted over the e2e and live_e2e commands, docs/testing.md): a run's
    # variants, kept outputs, datasets and history names; the live lanes with openai, aiohttp and Jinja2 (about
    # 1.5 s of imports in each live command); the HTML report; scipy.special for judges' calibration; and the table
    # of character widths rich loads when it first measures text (``_serve``: imported, not loaded, so that rich
    # still reads ``UNICODE_VERSION`` when a command measures).
    "evalglass.engine.spec.variantspec",
    "evalglass.engine.runs.keptoutputs",
    "evalglass.engine.produce.interrupts",
    "evalglass.history.named",
    "evalglass.engine.datasets.source",
    "evalglass.engine.datasets.outputs",
    "evalglass.engine.datasets.datasetfile",
    "evalglass.engine.datasets.recordparts",
    "evalglass.engine.explore.judgedsummaries",
    "evalglass.engine.explore.explorer",
    "evalglass.engine.jobs.verify",
    "evalglass.engine.jobs.checking",
    "evalglass.lanes.procgroup",
    "evalglass.lanes.checkrun",
    "evalglass.lanes.templating",
    "evalglass.lanes.chat",
    "evalglass.lanes.judge",
    "evalglass.lanes.jury",
    "evalglass.lanes.agent",
    "evalglass.lanes.executor",
    "evalglass.lanes.providers",
    "evalglass.report.html",
    "evalglass.report.comparison_html",
    "scipy.special",
    "sqlite3",
)

#: Variables read when the interpreter (or numpy's BLAS) starts: a command whose values differ from the server's
#: gets a new interpreter.
STARTUP_VARIABLES = (
    "HOME",
    "TZ",
    "LANG",
    "LANGUAGE",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OMP_NUM_THREADS",
    # read when openai, aiohttp and their parts, and scipy are imported (``PRELOADED``)
    "OPENAI_LOG",
    "OPENAI_API_TYPE",
    "OPENAI_API_VERSION",
    "AZURE_OPENAI_ENDPOINT",
    "AIOHTTP_NO_EXTENSIONS",
    "AIOHTTP_NOSENDFILE",
    "YARL_NO_EXTENSIONS",
    "MULTIDICT_NO_EXTENSIONS",
    "PROPCACHE_NO_EXTENSIONS",
    "SCIPY_ARRAY_API",
    "SCIPY_DEVICE",
)
STARTUP_PREFIXES = ("PYTHON", "LC_")

ALWAYS_NEW = "EVALGLASS_TEST_NEW_INTERPRETER"

_HEADER = struct.Struct("!I")

#: The environment the test process started with: the server starts with it, whichever test's command (and its
#: monkeypatched variables) happens to start it.
_BASE_ENVIRONMENT = dict(os.environ)


@dataclass(frozen=True)
class Done:
    """A finished command: its exit code (negative: the signal that ended it) and its output as text."""

    returncode: int
    stdout: str
    stderr: str


def startup_environment(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in STARTUP_VARIABLES or k.startswith(STARTUP_PREFIXES)}


def run(
    args: list[str], *, cwd: str | os.PathLike[str], env: dict[str, str], timeout: float, code: str | None = None
) -> Done:
    """``subprocess.run([sys.executable, "-m", "evalglass", *args], capture_output=True, text=True, ...)``; with
    ``code``, ``[sys.executable, "-c", code, *args]`` (a test's own start of the command line, such as one that
    changes a module's table before it calls ``evalglass.cli.main``: the server's modules are imported, but ``code``
    runs before any command does, so what it rebinds is what the command reads)."""
    server = _server()
    if server is None or env.get(ALWAYS_NEW) or startup_environment(env) != server.startup:
        start = ["-m", "evalglass"] if code is None else ["-c", code]
        done = subprocess.run(
            [sys.executable, *start, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
        return Done(done.returncode, done.stdout, done.stderr)
    return server.run(args, cwd=os.fspath(cwd), env=env, timeout=timeout, code=code)


class _Server:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="eg-cli-server-")
        self.path = os.path.join(self.folder, "socket")
        self.startup = startup_environment(_BASE_ENVIRONMENT)
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.path, str(os.getpid())],
            env=_BASE_ENVIRONMENT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.folder, "server.log"), "wb"),  # noqa: SIM115  (the child holds it)
            cwd=self.folder,
        )
        deadline = time.monotonic() + 120
        while not os.path.exists(self.path):
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(os.path.join(self.folder, "server.log")) as log:
                    raise RuntimeError(f"the CLI server did not start:\n{log.read()[-3000:]}")
            time.sleep(0.01)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def run(self, args: list[str], *, cwd: str, env: dict[str, str], timeout: float, code: str | None) -> Done:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        stdin = 0
        try:
            os.fstat(0)
        except OSError:
            stdin = os.open(os.devnull, os.O_RDONLY)
        payload = json.dumps({"args": args, "cwd": cwd, "env": env, "code": code}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [_HEADER.pack(len(payload))], [stdin, out_write, err_write])
            conn.sendall(payload)
        finally:
            os.close(out_write)
            os.close(err_write)
            if stdin != 0:
                os.close(stdin)
        return _collect(conn, out_read, err_read, args, timeout)


def _collect(conn: socket.socket, out_read: int, err_read: int, args: list[str], timeout: float) -> Done:
    """Read stdout, stderr and the server's two lines (the command's pid, then its exit code) until all three end."""
    conn_fd = conn.fileno()
    chunks: dict[int, list[bytes]] = {out_read: [], err_read: [], conn_fd: []}
    pid: int | None = None
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as selector:
            for fd in chunks:
                selector.register(fd, selectors.EVENT_READ)
            open_fds = set(chunks)
            while open_fds:
                left = deadline - time.monotonic()
                if left <= 0:
                    if pid is not None:
                        _kill(pid)
                    raise subprocess.TimeoutExpired([sys.executable, "-m", "evalglass", *args], timeout)
                for key, _ in selector.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
                        open_fds.discard(key.fd)
                    if pid is None and key.fd == conn_fd and b"\n" in b"".join(chunks[conn_fd]):
                        pid = int(b"".join(chunks[key.fd]).split(b"\n")[0])
    except BaseException:
        if pid is not None:
            _kill(pid)
        raise
    finally:
        conn.close()
        os.close(out_read)
        os.close(err_read)
    lines = b"".join(chunks.pop(conn_fd)).split(b"\n")
    if len(lines) < 2 or not lines[1]:
        raise RuntimeError(f"the CLI server ended without the exit code of `evalglass {' '.join(args)}`")
    return Done(int(lines[1]), _text(b"".join(chunks[out_read])), _text(b"".join(chunks[err_read])))


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _text(data: bytes) -> str:
    """As ``subprocess`` decodes with ``text=True``: the locale's encoding, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_SERVERS: dict[int, _Server | None] = {}
_SERVER_MODULES: set = set()


def _server() -> _Server | None:
    """This process's server, started by its first command (a forked test process starts its own)."""
    pid = os.getpid()
    if pid not in _SERVERS:
        if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
            _SERVERS[pid] = None
        else:
            import atexit

            server = _SERVERS[pid] = _Server()
            atexit.register(server.stop)
    return _SERVERS[pid]


# --- the server (this file run as a script) ---------------------------------------------------------------------


def _serve(path: str, client: int) -> dict[str, object]:
    """Import, then fork a handler per connection; returns only in a command's process, with its request."""
    del sys.path[0]  # this file's folder: the command's sys.path[0] is its working directory, as `-m` sets it
    preload()
    import threading

    if threading.active_count() != 1:  # a fork keeps only the forking thread: no command may depend on another
        raise RuntimeError(f"a preloaded module started a thread: {threading.enumerate()}")
    global _SERVER_MODULES
    _SERVER_MODULES = set(sys.modules)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # the client waits for this name: it appears once the server accepts
    listener.settimeout(1.0)
    signal.signal(signal.SIGTERM, _stop)
    try:
        while os.getppid() == client:  # else the test process is gone
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                _reap(block=False)
                continue
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                return _handle(conn)
            conn.close()
            _reap(block=False)
    except _Stopped:
        pass
    # Waiting for every handler (each waits for its command) counts their CPU time in the test process's, as a
    # subprocess's is counted: `time pytest` measures the same work either way.
    _reap(block=True)
    os._exit(0)


def preload() -> None:
    """Import ``PRELOADED`` (numpy as the command line loads it) and build the validators pydantic defers: what the
    server does before it forks, and what a test process whose tests fork runs of their own does once
    (``evalglass.run()``'s isolation forks the caller: tests/conftest.py's ``preloaded``)."""
    import importlib

    from evalglass.cli import _load_numpy

    _load_numpy()
    for name in PRELOADED:
        importlib.import_module(name)
    from rich._unicode_data import VERSIONS

    importlib.import_module(".unicode" + VERSIONS[-1].replace(".", "-"), "rich._unicode_data")
    _complete_models()


def _complete_models() -> None:
    """Build the validator of every pydantic model of the loaded ``evalglass`` modules that pydantic left to build on
    first use (a forward reference, ``defer_build``). One it cannot build yet (a name from a module not imported)
    stays as it was: the command builds it when it first uses it, as a new interpreter would."""
    import pydantic

    for name, module in list(sys.modules.items()):
        if not name.startswith("evalglass"):
            continue
        for value in list(vars(module).values()):
            if (
                isinstance(value, type)
                and issubclass(value, pydantic.BaseModel)
                and value.__module__ == name
                and not value.__pydantic_complete__
            ):
                with contextlib.suppress(Exception):
                    value.model_rebuild()


class _Stopped(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _Stopped


def _reap(*, block: bool) -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _handle(conn: socket.socket) -> dict[str, object]:
    """Fork the command, tell the client its pid, wait, tell it the exit code; returns only in the command."""
    conn.settimeout(None)
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    while len(header) < _HEADER.size:
        header += conn.recv(_HEADER.size - len(header))
    (size,) = _HEADER.unpack(header)
    payload = b""
    while len(payload) < size:
        payload += conn.recv(size - len(payload))
    request: dict[str, object] = json.loads(payload)
    pid = os.fork()
    if pid == 0:
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        return request
    try:
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    finally:
        os._exit(0)


def _exit_before_teardown(code: int) -> None:
    """End a command as the interpreter ends ``sys.exit(code)``, up to its teardown: non-daemon threads joined,
    ``atexit`` run (``weakref.finalize``, logging's flush among them), stdout and stderr flushed, then the process
    ends with ``code`` without freeing what it imported module by module.

    Why. That teardown frees (and so writes to) nearly every page of the heap the command shares with the server,
    and each written page is a copy: about 40 ms of a forked command's ~110 ms of CPU (docs/testing.md). The exit
    code is the same: ``evalglass.entry``'s supervised child reports its code before it raises ``SystemExit``, and
    a process that ends without a report is a test failure either way.

    Limits. What only the teardown does is not done: ``__del__`` of objects still referenced at exit (an unclosed
    file's buffer flushed then, an "Exception ignored" line printed then). A command that needed its teardown to
    write a file would fail a test here, not pass one; a line printed only at teardown is seen only by the tests
    that run new interpreters (``EVALGLASS_TEST_NEW_INTERPRETER=1``, tests/package). When the streams cannot be
    flushed (a closed pipe) this returns, and the interpreter ends as it would have (status 120).
    """
    import atexit
    import threading

    if os.environ.get("EG_LOGMODS"):
        with open(os.environ["EG_LOGMODS"], "a") as log:
            log.write(" ".join(sorted(set(sys.modules) - _SERVER_MODULES)) + "\n")
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter calls first at exit
    atexit._run_exitfuncs()  # clears what it ran: the interpreter's own exit does not run them again
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        return
    os._exit(code & 0xFF)


def _become_command(request: dict[str, object]) -> None:
    """The rest of what a new ``python -m evalglass ARGS`` (or ``python -c CODE ARGS``) would have: cwd, environment,
    argv, sys.path[0]."""
    import types

    os.chdir(str(request["cwd"]))
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    args = request["args"]
    assert isinstance(args, list)
    if request.get("code") is None:
        sys.argv = ["-m", *args]  # runpy replaces "-m" with the module's path, as the interpreter does
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = ["-c", *args]
        sys.path.insert(0, "")
    sys.modules["__main__"] = types.ModuleType("__main__")


if __name__ == "__main__":
    _request = _serve(sys.argv[1], int(sys.argv[2]))
    _become_command(_request)
    if isinstance(_request.get("code"), str):
        try:
            exec(compile(str(_request["code"]), "<string>", "exec"), sys.modules["__main__"].__dict__)  # as `-c`
        except Exception as error:  # the traceback `-c` prints: from the code's first frame, not this file's
            assert error.__traceback__ is not None
            error.with_traceback(error.__traceback__.tb_next)
            sys.excepthook(type(error), error, error.__traceback__)
            sys.exit(1)
    else:
        import runpy

        try:
            runpy._run_module_as_main("evalglass")  # type: ignore[attr-defined]  # what `python -m evalglass` calls
        except SystemExit as ending:
            if isinstance(ending.code, int):
                _exit_before_teardown(ending.code)
            raise
