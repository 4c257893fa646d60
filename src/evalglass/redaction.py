"""The secrets of this process, collected at the edge for the one redactor (:class:`evalglass.core.redact.Redactor`).

Every path from a value EvalGlass saw to something it writes or prints (scores, outputs, check records, the run
record, the report, error messages, stdout/stderr) asks :func:`current` for the redactor. Which values count as
secrets is stated in ``core.redact``; the names a config declares (``secrets:`` and every ``api_key_env``) are
registered here with :func:`declare` when the config is loaded, and stay declared for the life of the process
(names are only ever added: forgetting one could only let a secret through).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TextIO

from evalglass.core.redact import Redactor, secret_values

_declared: set[str] = set()
_lock = threading.Lock()
_installed: Redactor | None = None


def declare(names: Iterable[str]) -> None:
    """Treat the values of these environment variables as secrets from now on, whatever they are called."""
    global _installed
    with _lock:
        _declared.update(names)
    if _installed is not None:
        _installed = Redactor.of(secret_values(os.environ, declared()))


def declared() -> frozenset[str]:
    with _lock:
        return frozenset(_declared)


def current(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
    """The redactor for this process's environment (or ``env``, the environment a child is given) plus ``extra``
    values (e.g. a key read from a declared variable).

    Without arguments, inside :func:`installed`, it is the redactor built when the run started (reading the
    environment costs ~0.2 ms, too much for every diagnostic of a million-example run)."""
    if env is None and not extra and _installed is not None:
        return _installed
    values = secret_values(os.environ if env is None else env, declared())
    return Redactor.of((*values, *extra))


def install(redactor: Redactor) -> None:
    """Make ``redactor`` the one :func:`current` returns from now on (a host worker process takes the deciding
    process's secrets with it: lanes/hostworker.py)."""
    global _installed
    _installed = redactor


@contextlib.contextmanager
def installed() -> Iterator[Redactor]:
    """For the length of a run (or a check command): :func:`current` returns one redactor, built now from the
    environment and the declared names."""
    global _installed
    previous = _installed
    _installed = Redactor.of(secret_values(os.environ, declared()))
    try:
        yield _installed
    finally:
        _installed = previous


class RedactingStream(io.TextIOBase):
    """A text stream that redacts everything written to it before passing it on (stdout and stderr of the CLI,
    which host code running in the process writes to as well). Limit: a secret split across two ``write`` calls
    is not recognised; every line EvalGlass prints is one call.

    It is also where a reader that went away is met: ``evalglass verify RUN | head -1`` closes the pipe after one
    line. What is left to print has no one to read it, so it is dropped, and the command goes on and ends with its
    own exit code (the verdict's, verify's), quietly, instead of failing with an internal error."""

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                self.inner.write(current().text(text))
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        """Drop what is left, and point the descriptor at the null device, so that the buffer's last flush (by
        the interpreter at exit, or a child that inherits the descriptor) has somewhere to go."""
        self._gone = True
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.inner.fileno())
            finally:
                os.close(null)

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None)


def redact_standard_streams() -> None:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`RedactingStream` (once)."""
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)


__all__ = ["RedactingStream", "current", "declare", "declared", "install", "installed", "redact_standard_streams"]
