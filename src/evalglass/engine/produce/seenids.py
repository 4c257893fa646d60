"""Which example ids a streamed dataset has shown so far, in about 16 bytes per id: what lets the run sink refuse a
repeated id (for a live run, before that line's calls are made) without keeping every id (and its line) in a dict.

:class:`SeenIds` keeps one 8-byte hash per id in a numpy table of buckets, eight hashes to a bucket (one cache line),
at most half full on average, so checking a batch against it, and adding it, is a handful of numpy operations with
no loop per id: the live run adds a batch of 256 ids, or (cheap calls) a run of up to eight batches at once, so
numpy's cost per call is paid per batch or run, not per id; a recorded run adds every id once, after the stream, and
the first hashes added are placed in the table only when a later add needs to look them up, so that one add costs a
sort. The few hashes a full bucket cannot take go to a small set beside it. A hash says "maybe seen": equal hashes
are what a repeated id guarantees and what a rare collision (two ids, one 64-bit hash) also gives, so the caller
confirms a "maybe" by reading the dataset again (``sink.refuse_first_repeat``), which names both lines or finds
none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

#: Hashes per bucket: eight 8-byte hashes are one 64-byte cache line.
WIDTH = 8
#: Buckets at least (a power of two; grown by doubling, so that they are at most half full on average).
FIRST_BUCKETS = 1 << 10


class SeenIds:
    """A set of 64-bit hashes, checked and extended a batch at a time (:meth:`add`). A hash's bucket is its top
    bits, so sorting a batch's hashes (which finds repeats among them) also groups them by bucket."""

    def __init__(self, expected: int = 0) -> None:
        buckets = FIRST_BUCKETS
        while expected * 2 > buckets * WIDTH:
            buckets *= 2
        self._new_table(buckets)

    def _new_table(self, buckets: int) -> None:
        self._table: npt.NDArray[np.uint64] = np.zeros((buckets, WIDTH), np.uint64)  # 0: an empty place
        self._fill: npt.NDArray[np.int64] = np.zeros(buckets, np.int64)
        self._shift = np.uint64(64 - (buckets.bit_length() - 1))
        self._spilled: set[int] = set()  # hashes whose bucket was full
        self._count = 0  # hashes in the table (and spilled)
        #: The first add's hashes (sorted), until a second add needs them looked up (see the module docstring).
        self._unplaced: npt.NDArray[np.uint64] | None = None

    def add(self, hashes: Sequence[int]) -> bool:
        """Remember ``hashes``; True when one of them was seen before or occurs twice among them (maybe a
        repeated id: see the module docstring; 0 and 1 may count as one hash: a maybe, never a miss).

        They go into the table whatever the answer. The caller goes on after a "maybe" only when re-reading found
        no repeated id (a collision, or 0 and 1 taken for one), so the few hashes stored twice are harmless: a
        lookup finds either copy, and the table counts both when it decides to grow."""
        found = np.array(hashes, np.int64).view(np.uint64)
        found[found == 0] = 1  # 0 marks an empty place
        found.sort()  # as _insert wants them; equal neighbours are a repeat among them
        repeated = bool((found[1:] == found[:-1]).any())
        if self._unplaced is None and not self._count:
            self._unplaced = found  # nothing to look up among yet: the sort alone decided
            return repeated
        if self._unplaced is not None:
            self._place(self._unplaced)
            self._unplaced = None
        if self._count:
            # The rows looked up here are the rows _insert writes next, still in the cache.
            repeated = bool(self._contains(found).any()) or repeated
        self._place(found)
        return repeated

    def _place(self, found: npt.NDArray[np.uint64]) -> None:
        if (self._count + len(found)) * 2 > self._table.size:
            self._grow(self._count + len(found))
        self._insert(found)

    def _contains(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        buckets = hashes >> self._shift
        # A row of eight booleans is eight bytes: read as one integer, it is non-zero when any is true.
        matches = np.ascontiguousarray(self._table[buckets] == hashes[:, None])
        seen: npt.NDArray[np.bool_] = matches.view(np.uint64).ravel() != 0
        if self._spilled:
            full = (self._fill[buckets] == WIDTH) & ~seen
            for index in np.flatnonzero(full).tolist():
                seen[index] = int(hashes[index]) in self._spilled
        return seen

    def _insert(self, hashes: npt.NDArray[np.uint64]) -> None:
        """Add sorted hashes (one already here, or repeated among them, takes one more place: see add)."""
        if not len(hashes):
            return
        buckets = (hashes >> self._shift).astype(np.int64)  # sorted, as the hashes are
        # Each hash's rank among the batch's hashes bound for the same bucket: its place after the bucket's fill.
        starts = np.flatnonzero(np.concatenate(([True], buckets[1:] != buckets[:-1])))
        first = np.zeros(len(hashes), np.int64)
        first[starts] = starts
        np.maximum.accumulate(first, out=first)
        place = self._fill[buckets] + (np.arange(len(hashes)) - first)
        fits = place < WIDTH
        self._table[buckets[fits], place[fits]] = hashes[fits]
        grouped = buckets[starts]
        self._fill[grouped] = np.minimum(self._fill[grouped] + np.diff(np.append(starts, len(hashes))), WIDTH)
        if not fits.all():
            self._spilled.update(hashes[~fits].tolist())
        self._count += len(hashes)

    def _grow(self, needed: int) -> None:
        buckets = len(self._table)
        while needed * 2 > buckets * WIDTH:
            buckets *= 2
        kept = np.concatenate((self._table[self._table != 0], np.fromiter(self._spilled, np.uint64)))
        self._new_table(buckets)
        kept.sort()
        self._insert(kept)


__all__ = ["SeenIds"]
