"""Pausing Python's cyclic garbage collector around work that builds many objects and no reference cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Hold off the cyclic collector inside the block; it is back on (if it was on) when the block ends.

    The collector runs a pass every ~700 new container objects, and its full passes scan every object alive. Work
    that builds tens of thousands of objects at once (a 2,000-gate config's nodes and values, a preflight's reasons
    per gate) otherwise spends more time in those passes than in the work. Reference counting still frees what the
    block drops; only cyclic garbage made inside waits for the next pass after it, so callers keep blocks bounded.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
