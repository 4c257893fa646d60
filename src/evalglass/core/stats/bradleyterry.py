"""Pairwise judging's Bradley–Terry fit with Wald intervals (win rates take Wilson intervals: ``stats.proportion``).

Bradley–Terry: P(i beats j) = 1 / (1 + exp(s_j - s_i)). A tie counts as half a win each way (the usual
convention); excluded pairs count nothing. Strengths are fitted by Hunter's MM algorithm (2004) and centred to mean
zero; their covariance is the pseudo-inverse of the Fisher information under that constraint. The maximum-likelihood
strengths exist only when every output can be reached from every other through wins (the win graph is strongly
connected): otherwise no fit is reported rather than an infinite strength. Two outputs are ordered only where the
interval of their strength difference excludes zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from evalglass.core.stats._common import normal_quantile

Floats = npt.NDArray[np.float64]

_ITERATIONS = 10_000
_TOLERANCE = 1e-10


def _strongly_connected(wins: Floats) -> bool:
    size = wins.shape[0]
    edges = wins > 0
    for forward in (edges, edges.T):
        seen = {0}
        frontier = [0]
        while frontier:
            node = frontier.pop()
            for other in np.flatnonzero(forward[node]):
                if int(other) not in seen:
                    seen.add(int(other))
                    frontier.append(int(other))
        if len(seen) < size:
            return False
    return True


def bradley_terry(wins: Floats) -> Floats | None:
    """Log-strengths (mean zero) from ``wins[i, j]`` (i's wins over j, ties as halves); None when they do not
    exist (the win graph is not strongly connected)."""
    size = wins.shape[0]
    if size < 2 or not _strongly_connected(wins):
        return None
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    p = np.ones(size)
    for _ in range(_ITERATIONS):
        denominator = (games / (p[:, None] + p[None, :])).sum(axis=1)
        updated = total_wins / denominator
        updated /= np.exp(np.log(updated).mean())
        if np.max(np.abs(updated - p)) < _TOLERANCE:
            p = updated
            break
        p = updated
    strengths: Floats = np.log(p)
    centred: Floats = strengths - strengths.mean()
    return centred


def strength_covariance(strengths: Floats, games: Floats) -> Floats:
    """The Wald covariance of mean-zero log-strengths: the pseudo-inverse of the Fisher information."""
    gap = strengths[:, None] - strengths[None, :]
    chance = 1.0 / (1.0 + np.exp(-gap))
    weight = games * chance * (1.0 - chance)
    information = np.diag(weight.sum(axis=1)) - weight
    covariance: Floats = np.asarray(np.linalg.pinv(information), dtype=np.float64)
    return covariance


def fitted_strengths(
    outputs: Sequence[str], wins: Floats, confidence: float
) -> tuple[list[tuple[str, float, float, float]], list[tuple[str, str]]]:
    """Each output's (name, strength, low, high), and the (better, worse) pairs whose difference's interval
    excludes zero; both empty when the fit does not exist."""
    size = len(outputs)
    fitted = bradley_terry(wins)
    if fitted is None:
        return [], []
    covariance = strength_covariance(fitted, wins + wins.T)
    z = normal_quantile(1.0 - (1.0 - confidence) / 2)
    spread = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    strengths = [
        (name, float(s), float(s - z * e), float(s + z * e)) for name, s, e in zip(outputs, fitted, spread, strict=True)
    ]
    separated: list[tuple[str, str]] = []
    for i in range(size):
        for j in range(size):
            if i == j:
                continue
            difference = fitted[i] - fitted[j]
            variance = covariance[i, i] + covariance[j, j] - 2 * covariance[i, j]
            if difference > 0 and difference - z * np.sqrt(max(variance, 0.0)) > 0:
                separated.append((outputs[i], outputs[j]))
    return strengths, separated


__all__ = ["bradley_terry", "fitted_strengths", "strength_covariance"]
