"""Reduce repeated samples (epochs) of each example to one value per example, before any interval is computed.

Input is two parallel arrays, one entry per (example, sample): the example's integer id and the sample's value. Only
included samples belong here (scored and valid); whether an example has as many samples as it should is the
caller's question, answered with :attr:`PerExample.samples`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import Floats, Ints, as_ids, as_values
from evalglass.core.stats.model import Reducer, Ties


@dataclass(frozen=True)
class PerExample:
    """One value per example, in increasing example id order, with the number of samples behind each value."""

    examples: Ints
    values: Floats
    samples: Ints


def reduce_samples(
    examples: npt.ArrayLike,
    values: npt.ArrayLike,
    reducer: Reducer | str,
    *,
    k: int | None = None,
    ties: Ties = Ties.LOW,
) -> PerExample:
    """Reduce per-(example, sample) values to per-example values.

    ``mean``, ``max``, ``min``: as named. ``majority``: the most frequent value (exact equality, so meant for
    discrete scores); a tie goes to the lowest tied value with ``ties=low`` (the default) or the highest with
    ``ties=high``; pass the unfavourable side (``low`` when higher is better) so a split vote is not read as a win.
    ``pass_at_k``: the unbiased estimator ``1 - C(n - c, k) / C(n, k)`` of the chance that at least one of k samples
    passes, from the example's n samples of which c pass. ``at_least_k``: 1.0 when at least k samples pass, else 0.0.
    The last two need binary (0/1) sample values and at least k samples per example; anything else is a ValueError.
    """
    reducer = Reducer(reducer)
    array = as_values(values)
    ids = as_ids(examples, array.shape[0], "examples")
    if reducer.needs_k:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"{reducer.value} needs a positive integer k, got {k!r}")
    elif k is not None:
        raise ValueError(f"{reducer.value} takes no k")
    if array.shape[0] == 0:
        return PerExample(np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.int64))
    if reducer is Reducer.MAJORITY:
        return _majority(ids, array, Ties(ties))
    order = np.argsort(ids, kind="stable")
    ids, array = ids[order], array[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    counts = np.diff(np.r_[starts, array.shape[0]]).astype(np.int64)
    found = ids[starts]
    if reducer is Reducer.MEAN:
        reduced = np.add.reduceat(array, starts) / counts
    elif reducer is Reducer.MAX:
        reduced = np.maximum.reduceat(array, starts)
    elif reducer is Reducer.MIN:
        reduced = np.minimum.reduceat(array, starts)
    else:
        assert k is not None
        reduced = _k_reducers(reducer, array, starts, counts, k, found)
    return PerExample(found, reduced.astype(np.float64, copy=False), counts)


@dataclass(frozen=True, slots=True)
class WithinSpread:
    """How much one example's samples (epochs) vary: ``variance`` is the mean, over examples with at least two
    samples, of the sample variance (n - 1 denominator) of an example's values; ``samples`` how many samples each
    example's mean averages (the most common count)."""

    samples: int
    variance: float


def within_spread(examples: npt.ArrayLike, values: npt.ArrayLike) -> WithinSpread | None:
    """The within-example spread of per-(example, sample) values; None when no example has two samples. One
    vectorised pass (bincount), nothing per example in Python."""
    array = as_values(values)
    ids = as_ids(examples, array.shape[0], "examples")
    if array.shape[0] == 0:
        return None
    _, codes = np.unique(ids, return_inverse=True)
    codes = codes.reshape(-1)
    counts = np.bincount(codes)
    means = np.bincount(codes, weights=array) / counts
    squares = np.bincount(codes, weights=(array - means[codes]) ** 2)
    several = counts >= 2
    if not several.any():
        return None
    variance = float(np.mean(squares[several] / (counts[several] - 1)))
    samples = int(np.bincount(counts[several]).argmax())
    return WithinSpread(samples=samples, variance=variance)


def _majority(ids: Ints, array: Floats, ties: Ties) -> PerExample:
    order = np.lexsort((array, ids))  # by example, then value ascending
    ids, array = ids[order], array[order]
    new_example = np.r_[True, ids[1:] != ids[:-1]]
    run_starts = np.flatnonzero(new_example | np.r_[True, array[1:] != array[:-1]])
    run_lengths = np.diff(np.r_[run_starts, array.shape[0]])
    run_example = (np.cumsum(new_example) - 1)[run_starts]  # dense example number of each run
    first_run = np.flatnonzero(np.r_[True, run_example[1:] != run_example[:-1]])
    longest = np.maximum.reduceat(run_lengths, first_run)
    candidates = np.flatnonzero(run_lengths == longest[run_example])
    if ties is Ties.HIGH:
        candidates = candidates[::-1]
    # np.unique keeps the first occurrence of each example: the lowest (or, reversed, highest) tied value.
    _, first = np.unique(run_example[candidates], return_index=True)
    chosen = candidates[first]
    starts = np.flatnonzero(new_example)
    counts = np.diff(np.r_[starts, array.shape[0]]).astype(np.int64)
    return PerExample(ids[starts], array[run_starts[chosen]], counts)


def _k_reducers(reducer: Reducer, array: Floats, starts: Ints, counts: Ints, k: int, found: Ints) -> Floats:
    if not np.all((array == 0.0) | (array == 1.0)):
        raise ValueError(f"{reducer.value} needs binary sample values: every value must be exactly 0.0 or 1.0")
    short = np.flatnonzero(counts < k)
    if short.size:
        listed = ", ".join(str(int(x)) for x in found[short[:5]])
        raise ValueError(
            f"{reducer.value} with k={k} needs at least {k} samples per example; "
            f"{short.size} example(s) have fewer (ids {listed}{' ...' if short.size > 5 else ''})"
        )
    passes = np.add.reduceat(array, starts).astype(np.int64)
    if reducer is Reducer.AT_LEAST_K:
        return (passes >= k).astype(np.float64)
    return pass_at_k(counts, passes, k)


def pass_at_k(samples: npt.ArrayLike, passes: npt.ArrayLike, k: int) -> Floats:
    """The unbiased pass@k estimate per example from its sample count n and pass count c (Chen et al. 2021).

    ``1 - C(n - c, k) / C(n, k)`` is computed as ``1 - prod_{i=n-c+1}^{n} (1 - k / i)`` in logs (``log1p``,
    ``expm1``), which neither overflows nor loses the small probabilities; when ``n - c < k`` every k-subset holds
    a pass and the value is exactly 1. Vectorised over examples: the c factors of all examples are laid out flat.
    """
    n = np.asarray(samples, dtype=np.int64)
    c = np.asarray(passes, dtype=np.int64)
    if n.shape != c.shape or n.ndim != 1:
        raise ValueError("samples and passes must be one-dimensional arrays of equal length")
    if np.any(c < 0) or np.any(c > n) or np.any(n < k) or k < 1:
        raise ValueError("need 0 <= passes <= samples and samples >= k >= 1")
    result = np.ones(n.shape[0], dtype=np.float64)
    uncertain = np.flatnonzero(n - c >= k)
    n_u, c_u = n[uncertain], c[uncertain]
    owner = np.repeat(np.arange(uncertain.size), c_u)
    position = np.arange(owner.size) - np.repeat(np.cumsum(c_u) - c_u, c_u)
    i = (np.repeat(n_u - c_u + 1, c_u) + position).astype(np.float64)
    log_all_fail = np.bincount(owner, weights=np.log1p(-k / i), minlength=uncertain.size)
    result[uncertain] = -np.expm1(log_all_fail) + 0.0  # + 0.0 turns -0.0 (no pass at all) into 0.0
    return result
