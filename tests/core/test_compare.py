"""The pure comparison core: pairing by id, compare_metric, and comparative gate decisions in both directions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import Authority, BaselineApproval, Ledger
from evalglass.core.columns import ScoreColumn
from evalglass.core.comparative import BaselineRun, ComparativeInputs, decide_comparative_gate
from evalglass.core.compare import MetricSide, compare_metric, pair_ids
from evalglass.core.estimate import IntervalSpec
from evalglass.core.gates import Outcome
from evalglass.core.gatespec import GateRule, GateSpec
from evalglass.core.score import Score
from evalglass.core.stats import UNIT_SCALE

BASE_FP = "sha256:" + "ba5e" * 16


def side(values: list[float | None], definition: str = "def") -> MetricSide:
    column = ScoreColumn()
    for value in values:
        column.append(Score.error("boom", "no value") if value is None else float(value))
    return MetricSide(values=column.values(), states=column.states(), definition=definition, scale=UNIT_SCALE)


@settings(max_examples=100, deadline=None)
@given(st.permutations(list(range(12))), st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=3))
def test_pairing_is_by_id_not_by_position(order: list[int], drop_base: int, drop_cand: int) -> None:
    ids = np.array([f"e{i}" for i in range(12)])
    base_ids = ids[drop_base:]
    cand_ids = ids[np.array(order)][drop_cand:]
    pairing = pair_ids(base_ids, cand_ids)
    assert (base_ids[pairing.base] == cand_ids[pairing.candidate]).all()
    assert list(pairing.candidate) == sorted(pairing.candidate)  # candidate order
    assert set(base_ids[pairing.only_base]) == set(base_ids) - set(cand_ids)
    assert set(cand_ids[pairing.only_candidate]) == set(cand_ids) - set(base_ids)
    assert pairing.complete == (set(base_ids) == set(cand_ids))


def test_compare_metric_pairs_values_of_the_same_example() -> None:
    base_ids = np.array(["a", "b", "c", "d"])
    cand_ids = np.array(["d", "c", "b", "a"])
    base = side([1.0, 1.0, 0.0, 0.0])  # a, b pass; c, d fail
    cand = side([0.0, 1.0, 1.0, 0.0])  # d fails, c passes, b passes, a fails
    result = compare_metric("m", base, cand, pair_ids(base_ids, cand_ids), cand_ids, interval=IntervalSpec())
    assert result.flips.regressed == ("a",) and result.flips.improved == ("c",)
    assert result.difference is not None and result.difference.point == 0.0
    assert result.difference.table is not None and result.difference.table.both == 1


def test_an_excluded_side_is_counted_with_its_state_never_as_zero() -> None:
    ids = np.array(["a", "b", "c"])
    result = compare_metric(
        "m", side([1.0, None, 1.0]), side([1.0, 1.0, None]), pair_ids(ids, ids), ids, interval=IntervalSpec()
    )
    assert result.pairs.included == 1 and result.pairs.excluded_by_status == {"error": 2}
    assert result.difference is not None and result.difference.n == 1


def gate_result(
    base: list[float], cand: list[float], *, direction: str, margin: float, rule: GateRule = GateRule.POINT
):
    ids = np.array([f"e{i}" for i in range(len(base))])
    column = ScoreColumn()
    for value in cand:
        column.append(float(value))
    spec = GateSpec(metric="m", compare_to="main", direction=direction, rule=rule)
    ledger = Ledger(baselines={"main": BaselineApproval(run="x", fingerprint=BASE_FP)})
    inputs = ComparativeInputs(
        ids=ids,
        gold_fingerprint="gold",
        definitions={"m": "def"},
        baselines={
            "main": BaselineRun(
                name="main",
                location="x",
                fingerprint=BASE_FP,
                run_id="r",
                gold_fingerprint="gold",
                ids=ids,
                metrics={"m": side(base)},
            )
        },
    )
    return decide_comparative_gate(
        "g", spec, "fp", Authority(active=True, margin=margin), ledger, column, IntervalSpec(), UNIT_SCALE, inputs, None
    )


def test_lower_is_better_compares_with_plus_margin() -> None:
    base = [0.2, 0.3, 0.4, 0.5, 0.3, 0.2]
    better = gate_result(base, [v - 0.1 for v in base], direction="lower_is_better", margin=0.05)
    worse = gate_result(base, [v + 0.1 for v in base], direction="lower_is_better", margin=0.05)
    assert better.threshold == 0.05 and better.outcome is Outcome.PASS
    assert worse.outcome is Outcome.FAIL and worse.value == pytest.approx(0.1)
    bound = gate_result(
        base, [v + 0.04 for v in base], direction="lower_is_better", margin=0.05, rule=GateRule.LOWER_BOUND
    )
    assert bound.compared is not None and bound.compared >= 0.04  # the upper bound is the unfavourable one
    assert worse.comparison is not None and worse.comparison.metric is not None
    flips = worse.comparison.metric.flips  # lower is better: at or below the midpoint passes
    assert flips.pass_rule is not None and flips.pass_rule.startswith("value <= 0.5")
    assert flips.regressed == ("e3",) and flips.improved == ()


def test_zero_margin_higher_is_better_threshold_is_plain_zero() -> None:
    result = gate_result([0.5, 0.6, 0.7], [0.5, 0.6, 0.7], direction="higher_is_better", margin=0.0)
    assert result.threshold == 0.0 and str(result.threshold) == "0.0" and result.outcome is Outcome.PASS


def test_gate_result_refuses_a_threshold_other_than_minus_the_margin() -> None:
    result = gate_result([1.0, 0.0, 1.0], [1.0, 0.0, 1.0], direction="higher_is_better", margin=0.05)
    data = result.model_dump()
    data["threshold"] = -0.5
    with pytest.raises(ValueError, match="minus its approved margin"):
        type(result).model_validate(data)
