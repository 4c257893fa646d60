"""Python's cyclic garbage collector around work that allocates fast: paused (work that builds many objects and no
reference cycles), or collecting less often (a live run's calls)."""

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


#: Allocations between two young-generation collections while the calls run (CPython's default: 700).
YOUNG_THRESHOLD = 10_000


@contextmanager
def fewer_collections(threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Within the block: what exists now is frozen out of collection, and the youngest generation is collected
    every ``threshold`` allocations; the previous thresholds and the frozen objects are restored after. A process
    whose collector was already tuned is left as it is: automatic collection off (threshold 0) or a higher
    threshold is kept, and objects someone else froze (the command line freezes its imports) are not unfrozen by us.

    Why (a live run's calls): each call allocates a few hundred objects (the request, aiohttp's response and its
    futures, the example's task, the outcome), many of which live until the call ends, tens of milliseconds later.
    At CPython's default (a young-generation pass every 700 allocations) the collector ran about ten times per call
    and walked every call in flight each time: on a chat lane at concurrency 64, ≈ 75 µs of CPU per call, as much
    as the rest of the run's own overhead (benchmarks/bench_chat_cpu.py, BENCHMARKS.md). At 10,000 allocations it
    is ≈ 15 µs; memory grows by at most the young garbage of those allocations (a few MB). Unlike
    :func:`collector_paused`, cyclic garbage is still collected all along: a run's calls may last hours."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    if 0 < before[0] < threshold:
        gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if freeze:
            gc.unfreeze()


__all__ = ["YOUNG_THRESHOLD", "collector_paused", "fewer_collections"]
