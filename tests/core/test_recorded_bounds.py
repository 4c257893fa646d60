"""What a reader of a finished run can tell of a ``lower_bound`` gate's interval without the scores (issue 26,
item 2): a Wilson or Clopper–Pearson interval computed again from the recorded value and ``n`` is the run's own,
bit for bit; every interval of a method said to hold the point holds it (so no honest run is refused); and a
compared bound moved past the value is named."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import Authority
from evalglass.core.estimate import Estimate
from evalglass.core.gates import (
    POINT_INSIDE_METHODS,
    GateResult,
    Outcome,
    bound_problem,
    evaluate_gate,
    interval_ends,
    rederived_gate,
)
from evalglass.core.gatespec import GateRule, GateSpec
from evalglass.core.population import Population
from evalglass.core.stats import Direction, Method, confidence_interval

LEVELS = st.floats(min_value=0.51, max_value=0.995)
DIRECTIONS = st.sampled_from(list(Direction))


def decided(values: np.ndarray, method: Method, level: float, direction: Direction, threshold: float) -> GateResult:
    """The gate a run decides on these values (``core.decide`` computes the bound the same way)."""
    spec = GateSpec(metric="m", rule=GateRule.LOWER_BOUND, level=level, direction=direction)
    estimate = Estimate(point=float(values.mean()), n=int(values.size))
    bound = confidence_interval(values, level=2.0 * level - 1.0, method=method)
    population = Population(expected=int(values.size), included=int(values.size))
    authority = Authority(active=True, threshold=threshold)
    return evaluate_gate("g", spec, "sha256:" + "0" * 64, authority, estimate, population, bound=bound)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=500),
    data=st.data(),
    method=st.sampled_from([Method.WILSON, Method.CLOPPER_PEARSON]),
    level=LEVELS,
    direction=DIRECTIONS,
)
def test_a_count_method_bound_computed_again_from_value_and_n_is_the_runs(n, data, method, level, direction):
    ones = data.draw(st.integers(min_value=0, max_value=n))
    order = data.draw(st.randoms(use_true_random=False))
    values = np.array([1.0] * ones + [0.0] * (n - ones))
    order.shuffle(values)
    threshold = data.draw(st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0]))
    gate = decided(values, method, level, direction, threshold)
    spec = GateSpec(metric="m", rule=GateRule.LOWER_BOUND, level=level, direction=direction)
    estimate = Estimate(point=float(values.mean()), n=n)
    population = Population(expected=n, included=n)
    authority = Authority(active=True, threshold=threshold)
    again = rederived_gate(gate, spec, authority, estimate, population)
    assert (again.compared, again.favourable_bound, again.outcome) == (
        gate.compared,
        gate.favourable_bound,
        gate.outcome,
    )
    # A forger's ends, whatever they are, are not what the reader computes.
    forged = gate.model_copy(update={"compared": gate.value, "favourable_bound": 1.0})
    if gate.compared != gate.value:
        assert rederived_gate(forged, spec, authority, estimate, population).compared == gate.compared


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False), min_size=2, max_size=60
    ),
    level=LEVELS,
    direction=DIRECTIONS,
)
def test_every_point_inside_interval_holds_the_value_so_an_honest_bound_is_never_refused(values, level, direction):
    array = np.array(values)
    binary = np.isin(array, (0.0, 1.0)).all()
    methods = [Method.STUDENT_T, *([Method.WILSON, Method.CLOPPER_PEARSON] if binary else [])]
    assert {method.value for method in methods} <= POINT_INSIDE_METHODS
    for method in methods:
        gate = decided(array, method, level, direction, threshold=float(array.mean()))
        if gate.compared is not None:
            assert bound_problem(gate) is None, (method, gate.value, gate.compared, gate.favourable_bound)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=3, max_size=40),
    level=LEVELS,
    direction=DIRECTIONS,
    past=st.floats(min_value=1e-6, max_value=1.0),
)
def test_a_compared_bound_moved_past_the_value_is_named(values, level, direction, past):
    array = np.array(values)
    gate = decided(array, Method.STUDENT_T, level, direction, threshold=0.5)
    assert gate.value is not None
    beyond = gate.value + past if direction is Direction.HIGHER_IS_BETTER else gate.value - past
    forged = GateResult.model_construct(**{**dict(gate), "compared": beyond, "outcome": Outcome.PASS, "reasons": ()})
    problem = bound_problem(forged)
    assert problem is not None and "favourable side of its value" in problem
    unfavourable, favourable = interval_ends(
        confidence_interval(array, level=2.0 * level - 1.0, method=Method.STUDENT_T), direction
    )
    assert (gate.compared, gate.favourable_bound) == (unfavourable, favourable)
