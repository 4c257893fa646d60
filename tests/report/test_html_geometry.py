"""Where the HTML report draws recorded numbers: properties that hold for any population and any estimate."""

from __future__ import annotations

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.estimate import Estimate, Sensitivity
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.population import Population, StateCount
from evalglass.core.score import Status, Validity
from evalglass.core.scorecard import MetricSummary
from evalglass.core.stats import Interval, Method
from evalglass.report.html import PLOT_PAD, PLOT_WIDTH, forest, population_bar

EXCLUDABLE = [
    (Status.SCORED, Validity.INVALID),
    (Status.ERROR, Validity.NOT_MEASURED),
    (Status.BLOCKED, Validity.NOT_MEASURED),
    (Status.NON_EVALUABLE, Validity.NOT_APPLICABLE),
    (Status.SKIPPED, Validity.NOT_MEASURED),
]


@st.composite
def populations(draw: st.DrawFn) -> Population:
    included = draw(st.integers(0, 10**6))
    excluded = tuple(
        StateCount(status=status, validity=validity, count=count)
        for status, validity in EXCLUDABLE
        if (count := draw(st.integers(0, 10**5)))
    )
    missing = draw(st.integers(0, 1000))
    expected = included + sum(item.count for item in excluded) + missing
    return Population(expected=expected, included=included, excluded=excluded, missing=missing)


def summary(population: Population, estimate: Estimate | None = None) -> MetricSummary:
    return MetricSummary(name="m", type="t", uses_reference=False, estimate=estimate, population=population)


@given(populations())
def test_population_bars_account_for_every_example_in_order(population: Population) -> None:
    segments = population_bar(summary(population))
    assert sum(segment.count for segment in segments) == population.expected
    assert all(segment.count > 0 for segment in segments)
    if population.expected:
        assert math.isclose(sum(segment.width for segment in segments), 100, abs_tol=0.01)
    for before, after in itertools.pairwise(segments):
        assert math.isclose(before.x + before.width, after.x, abs_tol=0.01)
    if population.included:
        assert segments[0].label == "included"


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(finite, finite, finite, st.floats(0, 1e3), st.one_of(st.none(), finite))
def test_forest_draws_the_interval_around_the_point_inside_the_plot(
    a: float, b: float, c: float, spread: float, threshold: float | None
) -> None:
    low, point, high = sorted((a, b, c))
    interval = Interval(point=point, low=low, high=high, level=0.95, method=Method.STUDENT_T, n=10)
    sensitivity = Sensitivity(low=point - spread, high=point + spread, excluded=3, scale_min=-1e6, scale_max=1e6)
    estimate = Estimate(point=point, n=10, interval=interval, sensitivity=sensitivity)
    population = Population(
        expected=13, included=10, excluded=(StateCount(status=Status.ERROR, validity=Validity.NOT_MEASURED, count=3),)
    )
    gates = [
        GateResult(
            name="g",
            subject="m",
            active=True,
            outcome=Outcome.PASS if point >= threshold else Outcome.FAIL,
            compared=point,
            threshold=threshold,
            fingerprint="f",
        )
        for threshold in ([] if threshold is None else [threshold])
    ]
    plot = forest(summary(population, estimate), gates)
    xs = [plot.low, plot.point, plot.high, plot.sens_low, plot.sens_high, *(px for px, _, _ in plot.thresholds)]
    assert all(x is not None and PLOT_PAD - 1e-9 <= x <= PLOT_WIDTH - PLOT_PAD + 1e-9 for x in xs)
    assert plot.low is not None and plot.point is not None and plot.high is not None
    assert plot.low <= plot.point <= plot.high
    assert plot.sens_low is not None and plot.sens_high is not None and plot.sens_low <= plot.point <= plot.sens_high
    assert len(plot.thresholds) == (threshold is not None)
