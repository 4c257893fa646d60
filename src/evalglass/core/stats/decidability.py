"""Decidability and power: how many examples (or samples per example) would decide a gate, how small a change a
suite can tell apart, and how often an unchanged candidate would come out undecided. Everything is computed from
what a run observed (its variance, or for a paired binary comparison its discordant-pair rate), never assumed.

The three-way interval rule (``core.gatespec.rule_decision``) passes when the unfavourable one-sided bound at the
gate's level L clears the threshold T, fails when the favourable one clears it on the wrong side, and is undecided
in between. With the estimate d ~ N(delta, sigma / sqrt(n)) and z = z_L, a true difference delta passes with
probability ``Phi((delta - T) sqrt(n) / sigma - z)`` (higher is better) and fails with ``Phi((T - delta)
sqrt(n) / sigma - z)``; the rest is undecided. The functions below are those normal approximations; the
interval methods themselves (Wilson, Newcombe, t, bootstrap) differ a little for small n, which is why their
answers say "about".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalglass.core.stats._common import check_level, normal_cdf, normal_quantile
from evalglass.core.stats.epochs import WithinSpread
from evalglass.core.stats.model import Direction


def required_n(
    *,
    point: float,
    threshold: float,
    direction: Direction | str,
    level: float = 0.95,
    variance: float | None = None,
    binary: bool = False,
    value_range: tuple[float, float] | None = None,
) -> int | None:
    """The smallest n at which the one-sided bound at ``level`` would clear ``threshold``, if the point stayed put.

    None when the point is not strictly on the good side of the threshold (no number of examples helps then), or
    when the margin is so thin that the count overflows a float.

    Binary (``binary=True``; ``variance`` ignored): the Wilson bound clears T exactly when
    ``n > z**2 * T * (1 - T) / (p - T)**2``, the score test's variance taken at the threshold. This is exact for the
    Wilson interval at a fixed observed proportion p, and stays finite at p = 1.

    Continuous: ``variance`` is the per-example variance (the sample variance for a Student-t interval; for a
    clustered interval pass ``n * std_error**2``, which carries the design effect, assuming new examples arrive in
    clusters like the present ones). Then ``n > (z * sigma / (point - T))**2``. This uses the normal quantile z
    where the interval uses t(n - 1), so for small answers the real need is somewhat larger (about 10% at n = 20);
    the answer is never below 2, the fewest values with a t interval.

    ``value_range``: the range a continuous metric's values lie in. At zero variance its interval is the range
    floor (``_common.range_floor``), and the answer is the n at which that floor clears ``threshold``
    (``z**2 * (1 - r) / r``, r the share of the way from the point to the range's far end the threshold lies),
    where the variance alone would say 2.
    """
    higher = Direction(direction) is Direction.HIGHER_IS_BETTER
    margin = point - threshold if higher else threshold - point
    if not math.isfinite(margin) or margin <= 0.0:
        return None
    z = normal_quantile(check_level(level))
    if binary:
        if not (0.0 <= point <= 1.0 and 0.0 <= threshold <= 1.0):
            raise ValueError("a binary metric's point and threshold are proportions in [0, 1]")
        return _count(z, margin, threshold * (1.0 - threshold), 1)
    if variance is None or not math.isfinite(variance) or variance < 0.0:
        raise ValueError("a continuous metric needs its per-example variance (finite, non-negative)")
    found = _count(z, margin, variance, 2)
    if value_range is None or found is None or variance > 0.0:
        return found
    reach = point - value_range[0] if higher else value_range[1] - point
    if not reach > margin:  # the threshold lies beyond the range's far end: the floor never reaches it
        return found
    share = margin / reach
    floor = z * z * (1.0 - share) / share
    return max(found, math.floor(floor) + 1) if math.isfinite(floor) else None


def _count(z: float, margin: float, variance: float, fewest: int) -> int | None:
    """The smallest integer n above ``z**2 * variance / margin**2``, at least ``fewest``; None past float range."""
    try:
        ratio = z / margin
    except OverflowError:
        return None
    needed = ratio * ratio * variance  # float multiplication saturates to inf instead of raising
    if not math.isfinite(needed):
        return None
    return max(fewest, math.floor(needed) + 1)


#: The power the comparative gates' statements are made at: the conventional 80%.
POWER = 0.8


def pairs_to_detect(*, drop: float, std_dev: float, level: float = 0.95, power: float = POWER) -> int | None:
    """About how many paired examples it takes to tell a true drop of ``drop`` from no change at all.

    The one-sided test at ``level`` on the mean paired difference, with ``std_dev`` the per-example standard
    deviation of the differences (for clustered data pass ``sqrt(n) * std_error``, which carries the design
    effect), rejects "no change" with probability ``power`` when ``n >= ((z_level + z_power) * std_dev / drop)**2``
    (the normal approximation; small answers need somewhat more). None when ``drop`` is not positive, when the
    differences show no spread (then nothing can be said from this data) or past float range.
    """
    if not (math.isfinite(drop) and drop > 0.0) or not (math.isfinite(std_dev) and std_dev > 0.0):
        return None
    z = normal_quantile(check_level(level)) + normal_quantile(check_level(power))
    return _count(z, drop, std_dev * std_dev, 2)


def detectable_drop(*, pairs: int, std_dev: float, level: float = 0.95, power: float = POWER) -> float | None:
    """The smallest true drop that ``pairs`` paired examples detect with probability ``power`` (one-sided at
    ``level``): ``(z_level + z_power) * std_dev / sqrt(pairs)``. None without pairs or without spread."""
    if pairs < 1 or not (math.isfinite(std_dev) and std_dev > 0.0):
        return None
    z = normal_quantile(check_level(level)) + normal_quantile(check_level(power))
    return z * std_dev / math.sqrt(pairs)


#: An unchanged candidate should come out undecided at most this often; sizes and margins are advised for it.
UNDECIDED_TARGET = 0.05


def examples_to_decide(
    *,
    point: float,
    threshold: float,
    level: float = 0.95,
    variance: float | None = None,
    binary: bool = False,
    value_range: tuple[float, float] | None = None,
) -> int | None:
    """The smallest n at which the interval at ``level`` (its two one-sided bounds) would lie wholly on one side of
    ``threshold`` if the point stayed put: the bound on the threshold's side clears it. Direction does not matter:
    on the good side it is the unfavourable bound that must clear (a pass), on the wrong side the favourable one (a
    fail), and both need the same n (:func:`required_n`'s formulas are symmetric). None when the point sits on the
    threshold (no number of examples decides then) or past float range."""
    if point == threshold:
        return None
    side = Direction.HIGHER_IS_BETTER if point > threshold else Direction.LOWER_IS_BETTER
    return required_n(
        point=point,
        threshold=threshold,
        direction=side,
        level=level,
        variance=variance,
        binary=binary,
        value_range=value_range,
    )


@dataclass(frozen=True, slots=True)
class UnchangedOdds:
    """What the three-way rule makes of a candidate that did not change at all (true difference 0) against a margin.

    ``undecided``: the probability it comes out undecided (blocked); ``fail``: that it fails (at most ``1 - L``, far
    less whenever the margin is positive). ``pairs_for_target``/``margin_for_target``: the pairs (at this margin),
    or the margin (at these pairs), that bring ``undecided`` under :data:`UNDECIDED_TARGET`.
    """

    undecided: float
    fail: float
    pairs_for_target: int | None
    margin_for_target: float | None


def unchanged_odds(*, std_dev: float, pairs: int, margin: float, level: float = 0.95) -> UnchangedOdds | None:
    """How an unchanged candidate fares over ``pairs`` paired examples whose differences spread ``std_dev`` per
    pair, against ``margin`` (the largest drop accepted, >= 0). Without spread nothing varies: an unchanged
    candidate always passes (no pairs or margin to advise). None without pairs, or with a spread or margin that is
    not a finite non-negative number."""
    if pairs < 1 or not (math.isfinite(std_dev) and std_dev >= 0.0) or not (math.isfinite(margin) and margin >= 0.0):
        return None
    if std_dev == 0.0:
        return UnchangedOdds(undecided=0.0, fail=0.0, pairs_for_target=None, margin_for_target=None)
    z = normal_quantile(check_level(level))
    scaled = margin * math.sqrt(pairs) / std_dev
    passes = normal_cdf(scaled - z)
    fails = normal_cdf(-scaled - z)
    power = 1.0 - UNDECIDED_TARGET
    return UnchangedOdds(
        undecided=max(0.0, 1.0 - passes - fails),
        fail=fails,
        pairs_for_target=pairs_to_detect(drop=margin, std_dev=std_dev, level=level, power=power),
        margin_for_target=detectable_drop(pairs=pairs, std_dev=std_dev, level=level, power=power),
    )


def epochs_for_variance(*, variance: float, within: float, samples: int, target: float) -> int | None:
    """Samples per example at which the variance of per-example means would come down to ``target``.

    ``variance`` is the observed variance of the per-example means (or of their paired differences) at ``samples``
    samples each; ``within`` the part of one sample's variance that re-sampling changes (for a paired difference,
    the two runs' within-example variances added). Averaging k samples leaves ``variance - within / samples +
    within / k``: the spread between examples stays whatever k is. None when no number of samples gets there (that
    spread alone exceeds ``target``: only more examples help) or when nothing varies within examples. The answer is
    at least ``samples + 1`` (fewer never lowers the variance)."""
    if not (math.isfinite(variance) and math.isfinite(within) and math.isfinite(target)) or samples < 1:
        return None
    if within <= 0.0 or target <= 0.0:
        return None
    between = max(variance - within / samples, 0.0)
    room = target - between
    if room <= 0.0:
        return None
    needed = within / room
    if not math.isfinite(needed) or needed > 1e9:
        return None
    return max(samples + 1, math.ceil(needed - 1e-9))


def epochs_to_halve(*, variance: float, within: WithinSpread) -> int | None:
    """Samples per example that would halve the interval's width (a quarter of the variance), n unchanged."""
    return epochs_for_variance(variance=variance, within=within.variance, samples=within.samples, target=variance / 4.0)


def epochs_to_decide(
    *, point: float, threshold: float, n: int, variance: float, within: WithinSpread, level: float = 0.95
) -> int | None:
    """Samples per example at which the interval over the same ``n`` examples would decide at the observed point:
    its bound on the threshold's side clears it when ``z * sqrt(V(k) / n) < |point - threshold|``."""
    gap = abs(point - threshold)
    if n < 1 or gap == 0.0 or not math.isfinite(gap):
        return None
    z = normal_quantile(check_level(level))
    return epochs_for_variance(
        variance=variance, within=within.variance, samples=within.samples, target=n * (gap / z) ** 2
    )
