"""A command's process, run the way a command lane needs it: in a session of its own (so its whole group can be
killed), the example on its stdin, and its stdout and stderr read through pipes of the lane's own.

The pipes are read on the loop (:class:`_PipeReader`), not through asyncio's subprocess transports: a process the
command started in a session of its own can hold them long after the command exited, and they are closed when the
call is done instead of leaving a transport open past the event loop. The answer is ready when the command exits,
not when its pipes close; whatever is left of its group is then killed, and a pipe still open after a short grace
(held by a process outside the group) is closed without waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalglass.lanes.procgroup import kill_group


@dataclass(frozen=True, slots=True)
class Exited:
    """A command that finished within its time: its exit code and all it wrote before its pipes were closed."""

    returncode: int
    stdout: bytes
    stderr: bytes


class TimedOut:
    """A command that did not finish within its time: its group was killed and it was reaped."""


class NotStarted(Exception):
    """The command could not be started (``error``: why, as the operating system said it)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


async def run_in_session(
    argv: Sequence[str], stdin: bytes, *, cwd: Path, env: Mapping[str, str], timeout: float
) -> Exited | TimedOut:
    """Run ``argv`` in a session of its own with ``stdin`` as its input, within ``timeout`` seconds; raises
    :class:`NotStarted` when it cannot start. A cancelled call kills the group, reaps the process and closes the
    pipes before the cancellation goes on: nothing of the call outlives it."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=out_write,
            stderr=err_write,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except BaseException as exc:  # not started (or cancelled while starting): nothing will read the pipes
        os.close(out_read)
        os.close(err_read)
        if not isinstance(exc, OSError):
            raise
        raise NotStarted(exc) from None
    finally:
        os.close(out_write)
        os.close(err_write)
    loop = asyncio.get_running_loop()
    readers = (_PipeReader(loop, out_read), _PipeReader(loop, err_read))
    try:
        # The process's transport has only stdin, which _feed closes, so its wait ends at the exit, however long a
        # background child it left behind (`sleep 5 &`) holds the output pipes open.
        async with asyncio.timeout(timeout):
            await _feed(process, stdin)
            await process.wait()
    except TimeoutError:
        await _reap(process, readers, drain=0.0)
        return TimedOut()
    except BaseException:
        kill_group(process.pid)
        for reader in readers:
            reader.close()
        with contextlib.suppress(Exception, asyncio.CancelledError):  # reap it, so no transport outlives the loop
            await asyncio.wait_for(process.wait(), _REAP_S)
        raise
    await _reap(process, readers, drain=_DRAIN_S)
    assert process.returncode is not None
    return Exited(process.returncode, bytes(readers[0].data), bytes(readers[1].data))


#: After a command exits, how long its pipes may stay open (a background child holding them) before its process
#: group is killed and what was read so far is the output.
_DRAIN_S = 0.25
#: After the group is killed, how long a pipe may stay open still: only a process outside the group (one the
#: command started in a session of its own) can hold it now, and the lane does not wait for what it may write.
_ORPHAN_S = 0.05
#: How long a cancelled call waits for its killed process to be reaped.
_REAP_S = 2.0
#: How much one read of an output pipe takes (asyncio's pipe transports read 256 KiB at a time too).
_READ_SIZE = 1 << 18


class _PipeReader:
    """One of a command's output pipes, read on the event loop into :attr:`data` until it ends (:attr:`ended`)
    or the lane closes it: :meth:`close` reads what is already in the pipe first, then closes the descriptor, so
    nothing of it outlives the call."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.data = bytearray()
        self.ended: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        self._fd = fd
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self.data += chunk
        else:
            self.close()

    def close(self) -> None:
        fd = self._fd
        if fd < 0:
            return
        self._fd = -1
        self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, _READ_SIZE):
                self.data += chunk
        os.close(fd)
        if not self.ended.done():
            self.ended.set_result(None)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the example to stdin and close it; a command that exits without reading it is not an error."""
    stdin = process.stdin
    assert stdin is not None
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()


async def _reap(process: asyncio.subprocess.Process, readers: tuple[_PipeReader, ...], drain: float) -> None:
    """Let the pipes end (up to ``drain`` seconds), kill whatever is left of the process group and wait for the
    process; a pipe still open after a short grace is held by a process outside the group, and is closed without
    waiting for it (what was written so far is kept). Nothing of the call outlives it, or the event loop."""
    ends = [reader.ended for reader in readers]
    if drain > 0:
        await asyncio.wait(ends, timeout=drain)
    kill_group(process.pid)
    await process.wait()
    if not all(end.done() for end in ends):
        await asyncio.wait(ends, timeout=_ORPHAN_S)
    for reader in readers:
        reader.close()


__all__ = ["Exited", "NotStarted", "TimedOut", "run_in_session"]
