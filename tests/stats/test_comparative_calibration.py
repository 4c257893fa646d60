"""Calibration of the comparative gates, measured by a seeded simulation (the figures docs/comparing-runs.md quotes).

Each simulated suite has n examples of varying difficulty: example i passes with probability p_i ~ Beta(4, 1) (mean
0.8). The baseline and the candidate are independent draws on the same examples (two runs of a non-deterministic
system), the candidate's pass probability lowered by the true drop. The gate's number comes from
``paired_difference`` exactly as ``compare_metric`` computes it for a comparative gate (Newcombe's paired interval;
the one-sided 95% bound for ``lower_bound``, the difference itself for ``point``), compared with ``-margin``.

What must hold, and is asserted:

- **calibration at the margin**: when the candidate is truly worse by exactly the margin, ``lower_bound`` passes at
  most at its nominal 5% (the point rule passes about half the time);
- **A/A**: with no true difference, ``lower_bound`` fails at most at its nominal 5% once the suite is as large as
  the power statement says (pairs to tell a drop of the margin from no change at 95% power); on a small suite it
  fails good candidates often, and the power statement predicts how often;
- **power** at a true drop of twice the margin, for both rules.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from evalglass.core.stats import Sides, paired_difference, pairs_to_detect

MARGIN = 0.05
LEVEL = 0.95
REPS = 1000
Z = NormalDist().inv_cdf(LEVEL)


def simulate(n: int, drop: float, seed: int, reps: int = REPS) -> tuple[float, float, float]:
    """(lower_bound fail rate, point fail rate, mean per-pair standard deviation of the differences)."""
    rng = np.random.default_rng(seed)
    lower_fails = point_fails = 0
    spread = 0.0
    for _ in range(reps):
        p = rng.beta(4.0, 1.0, n)
        base = (rng.random(n) < p).astype(np.float64)
        candidate = (rng.random(n) < np.clip(p - drop, 0.0, 1.0)).astype(np.float64)
        bound = paired_difference(base, candidate, level=LEVEL, sides=Sides.LOWER)
        assert bound is not None and bound.interval.low is not None
        lower_fails += bound.interval.low < -MARGIN
        point_fails += bound.point < -MARGIN
        spread += bound.std_error * math.sqrt(n)
    return lower_fails / reps, point_fails / reps, spread / reps


def binomial_slack(rate: float) -> float:
    """Three Monte Carlo standard errors at ``rate`` over REPS runs."""
    return 3.0 * math.sqrt(rate * (1.0 - rate) / REPS)


def test_lower_bound_passes_a_drop_of_the_margin_at_most_at_its_nominal_rate() -> None:
    lower_fail, point_fail, _ = simulate(400, MARGIN, seed=1)
    assert 1.0 - lower_fail <= 0.05 + binomial_slack(0.05)
    assert (round(1.0 - lower_fail, 3), round(1.0 - point_fail, 3)) == (0.052, 0.517)


def test_aa_fail_rate_is_nominal_once_the_suite_is_as_large_as_the_power_statement_says() -> None:
    # The observed spread of paired differences at this difficulty mix is about 0.52 per pair; the power statement
    # (95% level, 95% power, so that a good candidate fails at most 5%) asks for this many pairs:
    needed = pairs_to_detect(drop=MARGIN, std_dev=0.516, level=LEVEL, power=LEVEL)
    assert needed == 1153
    lower_fail, point_fail, spread = simulate(needed, 0.0, seed=2)
    assert spread == pytest.approx(0.516, abs=0.01)
    assert lower_fail <= 0.05 + binomial_slack(0.05)
    assert (round(lower_fail, 3), round(point_fail, 3)) == (0.044, 0.001)


def test_on_a_small_suite_the_power_statement_predicts_how_often_a_good_candidate_fails() -> None:
    lower_fail, point_fail, spread = simulate(200, 0.0, seed=3)
    predicted = NormalDist().cdf(Z - MARGIN * math.sqrt(200) / spread)
    assert lower_fail == pytest.approx(predicted, abs=binomial_slack(predicted) + 0.02)
    assert (round(lower_fail, 3), round(point_fail, 3)) == (0.635, 0.092)


def test_power_at_twice_the_margin() -> None:
    lower_fail, point_fail, _ = simulate(400, 2 * MARGIN, seed=4)
    assert (round(lower_fail, 3), round(point_fail, 3)) == (1.0, 0.965)
