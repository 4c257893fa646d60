"""Decidability advice: the n at which a one-sided bound would clear the threshold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from evalglass.core.stats import Direction, required_n
from evalglass.core.stats._common import normal_quantile
from evalglass.core.stats.proportion import _wilson_end

HIGHER, LOWER = Direction.HIGHER_IS_BETTER, Direction.LOWER_IS_BETTER


def test_point_on_the_wrong_side_gets_no_advice() -> None:
    assert required_n(point=0.7, threshold=0.8, direction=HIGHER, binary=True) is None
    assert required_n(point=0.8, threshold=0.8, direction=HIGHER, binary=True) is None
    assert required_n(point=0.9, threshold=0.8, direction=LOWER, variance=1.0) is None


def test_binary_worked_example() -> None:
    # p = 0.9 against T = 0.8 at 95% one-sided: n > 1.6449**2 * 0.16 / 0.01 = 43.29, so 44.
    assert required_n(point=0.9, threshold=0.8, direction=HIGHER, binary=True) == 44
    assert required_n(point=1.0, threshold=0.95, direction=HIGHER, binary=True) == 52
    assert required_n(point=0.5, threshold=0.0, direction=HIGHER, binary=True) == 1


@given(
    st.floats(0.01, 0.99),
    st.floats(0.01, 0.99),
    st.floats(0.6, 0.999),
    st.sampled_from(list(Direction)),
)
def test_binary_advice_is_exact_for_the_wilson_bound_at_a_fixed_proportion(
    p: float, t: float, level: float, direction: Direction
) -> None:
    n = required_n(point=p, threshold=t, direction=direction, level=level, binary=True)
    good_side = p > t if direction is HIGHER else p < t
    if not good_side:
        assert n is None
        return
    assert n is not None

    def clears(size: int) -> bool:
        if direction is HIGHER:
            return _wilson_end(p, size, 1 - level, -1.0) > t
        return _wilson_end(p, size, 1 - level, +1.0) < t

    needed = normal_quantile(level) ** 2 * t * (1 - t) / (p - t) ** 2
    if needed < 1e9 and abs(needed - round(needed)) > 1e-6:  # away from an exact boundary
        assert clears(n)
        assert n == 1 or not clears(n - 1)


@given(st.floats(-5, 5), st.floats(-5, 5), st.floats(0.01, 4), st.floats(0.6, 0.999))
def test_continuous_advice_matches_the_normal_approximation(
    point: float, threshold: float, variance: float, level: float
) -> None:
    n = required_n(point=point, threshold=threshold, direction=HIGHER, level=level, variance=variance)
    if point <= threshold:
        assert n is None
        return
    z = normal_quantile(level)
    if n is None:  # only when the margin is so thin that the count overflows a float
        assert math.log(z) - math.log(point - threshold) + 0.5 * math.log(variance) > 150
        return
    assert n >= 2

    def bound(size: int) -> float:
        return point - z * math.sqrt(variance / size)

    needed = z * z * variance / (point - threshold) ** 2
    # Check exactness where float arithmetic can: a moderate count, away from an exact integer boundary.
    if needed < 1e9 and abs(needed - round(needed)) > 1e-6:
        assert bound(n) > threshold
        assert n == 2 or bound(n - 1) <= threshold


def test_continuous_needs_a_variance_and_binary_needs_proportions() -> None:
    with pytest.raises(ValueError, match="variance"):
        required_n(point=1.0, threshold=0.5, direction=HIGHER)
    with pytest.raises(ValueError, match="proportions"):
        required_n(point=1.5, threshold=0.5, direction=HIGHER, binary=True)
    assert required_n(point=1.0, threshold=0.5, direction=HIGHER, variance=0.0) == 2


# --- The three-way rule: what decides, epochs, and an unchanged candidate's odds ----------------------------------

from evalglass.core.stats import (  # noqa: E402
    PairedTable,
    WithinSpread,
    epochs_to_decide,
    epochs_to_halve,
    examples_to_decide,
    newcombe_paired,
    paired_difference,
    pairs_to_decide,
    unchanged_odds,
    within_spread,
)


@given(st.floats(0.01, 0.99), st.floats(0.01, 0.99), st.floats(0.6, 0.999))
def test_examples_to_decide_works_on_both_sides_of_the_threshold(p: float, t: float, level: float) -> None:
    n = examples_to_decide(point=p, threshold=t, level=level, binary=True)
    if p == t:
        assert n is None
        return
    # The Wilson bound on the threshold's side at n: below the point when the point is above (a pass), above the
    # point when it is below (a fail); the same count either way.
    side = HIGHER if p > t else LOWER
    assert n == required_n(point=p, threshold=t, direction=side, level=level, binary=True)
    if n is not None and n < 10**7:
        end = _wilson_end(p, n, 1 - level, -1.0 if p > t else +1.0)
        assert (end > t) if p > t else (end < t)


@given(
    st.integers(0, 60), st.integers(0, 40), st.integers(0, 40), st.integers(0, 60), st.sampled_from([0.0, 0.02, 0.05])
)
@example(0, 9, 9, 0, 0.02)
def test_pairs_to_decide_is_the_smallest_count_newcombe_decides_at_the_observed_proportions(
    both: int, base_only: int, candidate_only: int, neither: int, margin: float
) -> None:
    table = PairedTable(both=both, base_only=base_only, candidate_only=candidate_only, neither=neither)
    if table.n < 2:
        return
    base = [1.0] * (both + base_only) + [0.0] * (candidate_only + neither)
    candidate = [1.0] * both + [0.0] * base_only + [1.0] * candidate_only + [0.0] * neither
    difference = paired_difference(base, candidate, level=0.9)
    assert difference is not None
    n = pairs_to_decide(difference, threshold=-margin, direction=HIGHER, level=0.95)
    if difference.point == -margin or difference.std_error == 0.0:
        assert n is None
        return
    if n is None:
        return  # beyond the search's bounds (a difference a hair from the limit)

    def decides(size: int) -> bool:
        factor = size / table.n
        # Rounded counts may overrun the size (9 and 9 of 18 over 6,763 pairs round to 3,382 each): clamped.
        b = min(round(base_only * factor), size)
        c = min(round(candidate_only * factor), size - b)
        a = min(round(both * factor), size - b - c)
        scaled = newcombe_paired(
            PairedTable(both=a, base_only=b, candidate_only=c, neither=size - a - b - c), level=0.9
        )
        assert scaled is not None and scaled.low is not None and scaled.high is not None
        return scaled.low >= -margin or scaled.high < -margin

    assert decides(n)
    assert n == 1 or not decides(n - 1)


def test_within_spread_is_the_mean_per_example_sample_variance() -> None:
    examples = [0, 0, 0, 1, 1, 2]
    values = [1.0, 0.0, 1.0, 0.5, 0.7, 0.9]
    spread = within_spread(examples, values)
    assert spread is not None and spread.samples in (2, 3)
    expected = (np.var([1.0, 0.0, 1.0], ddof=1) + np.var([0.5, 0.7], ddof=1)) / 2  # example 2 has one sample
    assert spread.variance == pytest.approx(expected)
    assert within_spread([0, 1, 2], [1.0, 0.0, 1.0]) is None


def test_epochs_buy_down_only_the_within_example_variance() -> None:
    # Only sampling noise (V = W / k): four times the samples halve the interval.
    assert epochs_to_halve(variance=0.25 / 2, within=WithinSpread(samples=2, variance=0.25)) == 8
    # Between-example spread a quarter of V or more: no number of samples halves it.
    assert epochs_to_halve(variance=0.2, within=WithinSpread(samples=2, variance=0.2)) is None
    assert epochs_to_halve(variance=0.2, within=WithinSpread(samples=2, variance=0.0)) is None
    # Deciding: V(k) = between + W / k must reach n * (gap / z)**2.
    z = normal_quantile(0.95)
    k = epochs_to_decide(point=0.85, threshold=0.8, n=100, variance=0.5, within=WithinSpread(samples=2, variance=0.9))
    assert k is not None and 0.05 + 0.9 / k <= 100 * (0.05 / z) ** 2 < 0.05 + 0.9 / (k - 1)


def test_epochs_to_halve_matches_a_simulation() -> None:
    rng = np.random.default_rng(3)
    n, k = 400, 2
    p = rng.beta(2.0, 2.0, n)

    def half_widths(samples: int) -> tuple[float, WithinSpread]:
        old = (rng.random((n, samples)) < p[:, None]).astype(float)
        new = (rng.random((n, samples)) < p[:, None]).astype(float)
        spread = within_spread(np.repeat(np.arange(n), samples), old.ravel())
        assert spread is not None
        return float(np.std(new.mean(1) - old.mean(1), ddof=1)), spread

    width, spread = half_widths(k)
    both = WithinSpread(samples=k, variance=2 * spread.variance)
    advised = epochs_to_halve(variance=width**2, within=both)
    assert advised is not None and 6 <= advised <= 11
    assert half_widths(advised)[0] / width == pytest.approx(0.5, abs=0.08)


def test_unchanged_odds_at_the_margin_and_what_brings_them_under_five_percent() -> None:
    odds = unchanged_odds(std_dev=0.5, pairs=2000, margin=0.02)
    assert odds is not None
    z = normal_quantile(0.95)
    scaled = 0.02 * math.sqrt(2000) / 0.5
    assert odds.undecided == pytest.approx(1 - _cdf(scaled - z) - _cdf(-scaled - z))
    assert odds.fail == pytest.approx(_cdf(-scaled - z))
    at_target = unchanged_odds(std_dev=0.5, pairs=odds.pairs_for_target or 0, margin=0.02)
    assert at_target is not None and at_target.undecided <= 0.05
    wider = unchanged_odds(std_dev=0.5, pairs=2000, margin=odds.margin_for_target or 0.0)
    assert wider is not None and 0.0499 < wider.undecided <= 0.05  # passes 95%; the rest is mostly undecided
    assert unchanged_odds(std_dev=0.0, pairs=10, margin=0.0) == unchanged_odds(std_dev=0.0, pairs=99, margin=0.1)
    assert unchanged_odds(std_dev=0.5, pairs=0, margin=0.02) is None


def _cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
