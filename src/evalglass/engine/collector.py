"""The garbage collector during a live run's calls: collected less often, and never walking what set-up made.

Why: a live run allocates a few hundred objects per call (the request, aiohttp's response and its futures, the
example's task, the outcome), and many of them live until the call ends, tens of milliseconds later. At CPython's
default threshold (a young-generation collection every 700 allocations) the collector ran about ten times per
call and walked every call in flight each time: measured on a chat lane at concurrency 64, ≈ 75 µs of CPU per call,
as much as the rest of the run's overhead on the event loop (benchmarks/bench_chat_cpu.py, BENCHMARKS.md). At
10,000 allocations it is ≈ 15 µs; memory grows by at most the young garbage of those allocations (a few MB).

``gc.freeze`` moves everything alive when the calls start (the modules, the config, the clients) out of the
collector's reach, so the rare full collection does not walk it again. Both are undone when the calls end, so a
host process that runs EvalGlass through the Python API keeps its own settings.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations between two young-generation collections while the calls run (CPython's default: 700).
YOUNG_THRESHOLD = 10_000


@contextmanager
def fewer_collections(threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Within the block: what exists now is frozen out of collection, and the youngest generation is collected
    every ``threshold`` allocations; the previous thresholds and the frozen objects are restored after. A process
    whose collector was already tuned is left as it is: automatic collection off (threshold 0) or a higher
    threshold is kept, and objects someone else froze are not unfrozen by us."""
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


__all__ = ["YOUNG_THRESHOLD", "fewer_collections"]
