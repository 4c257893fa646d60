"""Seeded resampling engines for the bootstrap.

Every engine draws from one ``numpy.random.Generator`` built from the caller's seed and consumes it in a fixed
order, so the same data, seed and resample count give bit-identical replicates. The two sum engines work in rounds
of 4096 resamples, so memory stays bounded however many resamples are asked for. Three engines, chosen by the data:

``distinct_values``
    When there are at most :data:`DISTINCT_LIMIT` distinct rows (binary scores, Likert scales), a resample is fully
    described by how many times each distinct row was drawn: one multinomial draw of n over the distinct rows.
``blocked_indices``
    Otherwise, sums of resampled rows are built without ever holding a resamples-by-n index matrix. The rows are
    cut into blocks of 4096; how many of a resample's n draws land in each block is one multinomial draw; the
    draws inside a full block are uniform 12-bit numbers cut from the generator's raw 64-bit output; each block's
    draws are gathered while the block sits in cache. This is exactly the ordinary bootstrap (n draws with
    replacement, uniform over rows), just generated block by block.
``indices``
    For a statistic that is not a sum (the median, a caller's function): resamples-by-n index matrices in chunks of
    at most :data:`CHUNK_CELLS` cells, passed to a vectorised statistic.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evalglass.core.stats._common import Floats

#: At or below this many distinct rows the ``distinct_values`` engine is used.
DISTINCT_LIMIT = 256
#: Largest index/value matrix held at once by the ``indices`` engine (cells, i.e. resamples x n).
CHUNK_CELLS = 1 << 22

_BLOCK_BITS = 12
_BLOCK = 1 << _BLOCK_BITS
_MASK = np.uint16(_BLOCK - 1)
#: Resamples handled together per block by the ``blocked_indices`` engine (bounds its buffers to a few MB).
_GROUP = 64
#: Resamples generated per round by the sum engines (bounds the per-resample count tables).
_ROUND = 4096

# Quoted: evaluating np.random here would import numpy.random (~5 ms) in every process, bootstrap or not.
SumEngine = Callable[[Floats, int, "np.random.Generator"], Floats]


def resampled_sums(rows: Floats, resamples: int, rng: np.random.Generator) -> tuple[Floats, str]:
    """Column sums of ``resamples`` bootstrap resamples of ``rows`` (shape n x m): an array (resamples x m).

    Returns the sums and the name of the engine used (recorded with the interval).
    """
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ValueError("resampled_sums needs a non-empty two-dimensional array of rows")
    if rows.shape[1] == 1:
        flat, counts = np.unique(rows[:, 0], return_counts=True)
        distinct = flat[:, np.newaxis]
    else:
        distinct, counts = np.unique(rows, axis=0, return_counts=True)
    use_distinct = distinct.shape[0] <= DISTINCT_LIMIT
    sums = np.empty((resamples, rows.shape[1]), dtype=np.float64)
    # Resamples are generated in rounds so memory stays bounded however many are asked for.
    for start in range(0, resamples, _ROUND):
        count = min(_ROUND, resamples - start)
        if use_distinct:
            sums[start : start + count] = _distinct_sums(distinct, counts, count, rng)
        else:
            sums[start : start + count] = _blocked_sums(rows, count, rng)
    if use_distinct:
        return sums, "distinct_values"
    return sums, f"blocked_indices(block={_BLOCK},group={_GROUP},round={_ROUND})"


def _distinct_sums(distinct: Floats, counts: np.ndarray, resamples: int, rng: np.random.Generator) -> Floats:
    n = int(counts.sum())
    draws = rng.multinomial(n, counts / n, size=resamples).astype(np.float64)
    # Elementwise product and a plain sum rather than a matrix product: BLAS may reorder additions by machine.
    sums = np.empty((resamples, distinct.shape[1]), dtype=np.float64)
    for column in range(distinct.shape[1]):
        sums[:, column] = (draws * distinct[:, column]).sum(axis=1)
    return sums


def _blocked_sums(rows: Floats, resamples: int, rng: np.random.Generator) -> Floats:
    n, width = rows.shape
    full, rest = divmod(n, _BLOCK)
    sizes = np.full(full + (1 if rest else 0), _BLOCK, dtype=np.int64)
    if rest:
        sizes[-1] = rest
    per_block = rng.multinomial(n, sizes / n, size=resamples)  # resamples x blocks
    group_starts = np.arange(0, resamples, _GROUP)
    group_totals = np.add.reduceat(per_block, group_starts, axis=0)
    capacity = int(group_totals.max())
    index = np.empty(capacity, dtype=np.intp)
    gathered = np.empty((capacity, width), dtype=np.float64)
    sums = np.zeros((resamples, width), dtype=np.float64)
    for block_number, size in enumerate(sizes.tolist()):
        block = rows[block_number * _BLOCK : block_number * _BLOCK + size]
        for group_number, start in enumerate(group_starts.tolist()):
            total = int(group_totals[group_number, block_number])
            if total == 0:
                continue
            draws = index[:total]
            if size == _BLOCK:
                raw = rng.bit_generator.random_raw((total + 3) // 4).astype("<u8", copy=False)
                np.bitwise_and(raw.view("<u2")[:total], _MASK, out=draws)
            else:
                draws[:] = rng.integers(0, size, size=total)
            values = gathered[:total]
            np.take(block, draws, axis=0, out=values, mode="wrap")  # draws are in range; wrap skips the check
            taken = per_block[start : start + _GROUP, block_number]
            hit = np.flatnonzero(taken)
            offsets = (np.cumsum(taken) - taken)[hit]
            sums[start + hit] += np.add.reduceat(values, offsets, axis=0)
    return sums


def resampled_statistic(
    values: Floats,
    resamples: int,
    rng: np.random.Generator,
    statistic: Callable[[Floats], Floats],
) -> Floats:
    """``statistic`` of each of ``resamples`` bootstrap resamples of ``values`` (the ``indices`` engine).

    ``statistic`` receives a (k x n) array and must return the k row statistics.
    """
    n = values.shape[0]
    chunk = max(1, CHUNK_CELLS // n)
    replicates = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        count = min(chunk, resamples - start)
        draws = rng.integers(0, n, size=(count, n))
        replicates[start : start + count] = statistic(values[draws])
    return replicates
