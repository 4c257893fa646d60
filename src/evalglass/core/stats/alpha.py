"""Krippendorff's alpha from per-example value counts, with a seeded bootstrap interval over examples.

Why not the ``krippendorff`` package alone: it computes one alpha, but an interval over a million examples needs
each example's coincidences once and then one weighted sum per resample (``stats.resample``, over the distinct
examples), which it does not expose. One implementation serves the point value and the replicates so the two cannot
disagree; the package is the tests' oracle, with Krippendorff's published worked example.

Input is a ``units x values`` count matrix: row ``u`` counts how many judges gave each of the ``values`` on example
``u`` (values in ascending order: ordinal distances depend on it). A judge that gave no usable answer is not
counted (alpha handles missing ratings; a timed-out judge is not a rating). Examples with fewer than two ratings are
not pairable and are left out, as alpha defines.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evalglass.core.jury import Measurement
from evalglass.core.stats._common import check_seed
from evalglass.core.stats.bootstrapping import make_rng
from evalglass.core.stats.resample import resampled_sums

Counts = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


def coincidences(counts: Counts) -> Floats:
    """Each pairable unit's coincidence matrix, flattened: ``(units, values * values)``.

    ``o_u[c, k] = (n_uc * n_uk - [c == k] * n_uc) / (m_u - 1)``; units with ``m_u < 2`` have been dropped."""
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    counts = counts[m >= 2]
    m = m[m >= 2]
    outer = counts[:, :, None] * counts[:, None, :]
    diagonal = np.einsum("uv,vk->uvk", counts, np.eye(counts.shape[1]))
    per_unit = (outer - diagonal) / (m - 1)[:, None, None]
    flat: Floats = per_unit.reshape(per_unit.shape[0], counts.shape[1] ** 2)
    return flat


def _squared_distances(marginals: Floats, values: Floats, measurement: Measurement) -> Floats:
    """delta^2 for each (row of) marginals: shape ``(rows, V, V)``. Ordinal distance depends on the marginals."""
    rows, width = marginals.shape
    if measurement is Measurement.NOMINAL:
        return np.broadcast_to(1.0 - np.eye(width), (rows, width, width))
    if measurement is Measurement.INTERVAL:
        gap = values[:, None] - values[None, :]
        return np.broadcast_to(gap * gap, (rows, width, width))
    # ordinal: (sum_{g between c and k} n_g - (n_c + n_k) / 2)^2, values in ascending order
    cumulative = np.cumsum(marginals, axis=1)
    upto = cumulative[:, None, :] - cumulative[:, :, None] + marginals[:, :, None]  # sum_{g=c}^{k} for k >= c
    spread = np.abs(upto) - (marginals[:, :, None] + marginals[:, None, :]) / 2
    upper = np.triu(np.ones((width, width), dtype=bool))
    spread = np.where(upper, spread, np.swapaxes(spread, 1, 2))
    return spread * spread


def alphas(summed: Floats, values: Floats, measurement: Measurement) -> Floats:
    """Alpha of each row of summed coincidence matrices (``(rows, V * V)``); NaN where undefined."""
    width = values.shape[0]
    o = summed.reshape(-1, width, width)
    marginals = o.sum(axis=2)
    n = marginals.sum(axis=1)
    delta = _squared_distances(marginals, values, measurement)
    observed = (o * delta).sum(axis=(1, 2))
    expected = (marginals[:, :, None] * marginals[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        result = 1.0 - (n - 1) * observed / expected
    return np.where((expected > 0) & (n > 1), result, np.nan)


def krippendorff_alpha(counts: Counts, values: npt.ArrayLike, measurement: Measurement) -> float | None:
    """Alpha over every unit; None when undefined (no pairable unit, or every answer the same)."""
    per_unit = coincidences(counts)
    if per_unit.shape[0] == 0:
        return None
    found = alphas(per_unit.sum(axis=0)[None, :], np.asarray(values, dtype=np.float64), measurement)[0]
    return None if np.isnan(found) else float(found)


def alpha_interval(
    counts: Counts,
    values: npt.ArrayLike,
    measurement: Measurement,
    *,
    seed: int,
    confidence: float = 0.95,
    resamples: int = 2000,
) -> tuple[float | None, float | None, float | None, int]:
    """Alpha, the low and high ends of its percentile interval and the pairable examples it rests on, from
    ``resamples`` bootstrap resamples of the pairable examples (seeded: the same counts and seed give the same
    interval). A resample where alpha is undefined is left out; with fewer than two pairable examples there is no
    interval (None ends)."""
    seed = check_seed(seed)
    scale = np.asarray(values, dtype=np.float64)
    per_unit = coincidences(counts)
    units = int(per_unit.shape[0])
    alpha = krippendorff_alpha(counts, scale, measurement)
    low = high = None
    if units >= 2 and alpha is not None:
        sums, _ = resampled_sums(per_unit, resamples, make_rng(seed))
        replicates = alphas(sums, scale, measurement)
        replicates = replicates[~np.isnan(replicates)]
        if replicates.size:
            tail = (1.0 - confidence) / 2
            low, high = (float(x) for x in np.quantile(replicates, [tail, 1.0 - tail]))
    return alpha, low, high, units


def pair_agreement(counts: Counts) -> Floats:
    """Per example, the share of pairs of usable judge answers that are the same (NaN with fewer than two)."""
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    pairs = m * (m - 1) / 2
    same = (counts * (counts - 1) / 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pairs > 0, same / pairs, np.nan)


__all__ = ["alpha_interval", "alphas", "coincidences", "krippendorff_alpha", "pair_agreement"]
