"""Ending a command together with everything it started.

Commands (check commands, command lanes) run in a session of their own (``start_new_session=True``), so the
command's pid is its process group's id and one ``killpg`` ends the command and every child it left behind (a
``sleep 5 &`` holding the pipes). A group already gone, or one that is no longer ours to signal, is not an error:
the aim, nothing of it left running, holds either way.
"""

from __future__ import annotations

import contextlib
import os
import signal


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid``; quietly nothing when it is gone or not ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


__all__ = ["kill_group"]
