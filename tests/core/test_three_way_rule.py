"""The three-way interval rule (``lower_bound@2``): one core function decides, GateResult refuses any outcome its own
numbers contradict, and what explain and the reports say never claims a suite is large enough beside an interval
that straddles the limit."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.authority import Authority, BaselineApproval, BlockReason, Ledger, Reason
from evalglass.core.columns import ScoreColumn
from evalglass.core.comparative import BaselineRun, ComparativeInputs, decide_comparative_gate
from evalglass.core.compare import MetricSide
from evalglass.core.estimate import IntervalSpec
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import GateRule, GateSpec, RuleDecision, rule_decision
from evalglass.core.stats import UNIT_SCALE, Direction
from evalglass.report.explain import comparison_story
from evalglass.report.fmt import gate_sentence
from evalglass.report.markdown import render_markdown
from evalglass.report.repairs import BLOCK_REASON_FIXES
from tests.report.cards import card

FP = "sha256:" + "0" * 64
HIGHER, LOWER = Direction.HIGHER_IS_BETTER, Direction.LOWER_IS_BETTER
ENOUGH = re.compile(r"\benough\b|\bsufficient\b|\badequate\b|\bsuffices?\b", re.IGNORECASE)


def test_the_rule_passes_on_the_unfavourable_end_fails_on_the_favourable_one_and_is_undecided_between() -> None:
    assert rule_decision(GateRule.LOWER_BOUND, HIGHER, 0.8, 0.81, 0.9) is RuleDecision.PASS
    assert rule_decision(GateRule.LOWER_BOUND, HIGHER, 0.8, 0.7, 0.79) is RuleDecision.FAIL
    assert rule_decision(GateRule.LOWER_BOUND, HIGHER, 0.8, 0.7, 0.9) is RuleDecision.UNDECIDED
    assert rule_decision(GateRule.LOWER_BOUND, HIGHER, 0.8, 0.7, 0.8) is RuleDecision.UNDECIDED  # touches: not shown
    assert rule_decision(GateRule.LOWER_BOUND, LOWER, 0.2, 0.19, 0.1) is RuleDecision.PASS
    assert rule_decision(GateRule.LOWER_BOUND, LOWER, 0.2, 0.3, 0.21) is RuleDecision.FAIL
    assert rule_decision(GateRule.LOWER_BOUND, LOWER, 0.2, 0.3, 0.1) is RuleDecision.UNDECIDED
    # The point rule is unchanged: two ways only.
    assert rule_decision(GateRule.POINT, HIGHER, 0.8, 0.79) is RuleDecision.FAIL
    assert rule_decision(GateRule.POINT, HIGHER, 0.8, 0.79, 0.9) is RuleDecision.FAIL
    # A result recorded before the three-way rule has no favourable bound: decided as it was then.
    assert rule_decision(GateRule.LOWER_BOUND, HIGHER, 0.8, 0.7) is RuleDecision.FAIL


def result(outcome: Outcome, *, compared: float, favourable: float | None, reasons=(), threshold: float = 0.8):
    return GateResult(
        name="g",
        subject="m",
        active=True,
        outcome=outcome,
        reasons=tuple(Reason(code=code, message="m") for code in reasons),
        value=(compared + (favourable if favourable is not None else compared)) / 2,
        compared=compared,
        favourable_bound=favourable,
        threshold=threshold,
        rule=GateRule.LOWER_BOUND,
        level=0.95,
        fingerprint=FP,
    )


def test_gate_result_refuses_an_outcome_its_interval_contradicts() -> None:
    assert result(Outcome.BLOCKED, compared=0.7, favourable=0.9, reasons=[BlockReason.UNDECIDED]).outcome
    with pytest.raises(ValueError, match="is undecided, not fail"):
        result(Outcome.FAIL, compared=0.7, favourable=0.9, reasons=[BlockReason.BELOW_THRESHOLD])
    with pytest.raises(ValueError, match="is fail, not undecided"):
        result(Outcome.BLOCKED, compared=0.7, favourable=0.75, reasons=[BlockReason.UNDECIDED])
    with pytest.raises(ValueError, match="is pass, not undecided"):
        result(Outcome.BLOCKED, compared=0.85, favourable=0.9, reasons=[BlockReason.UNDECIDED])
    with pytest.raises(ValueError, match="undecided needs both ends"):
        result(Outcome.BLOCKED, compared=0.7, favourable=None, reasons=[BlockReason.UNDECIDED])
    with pytest.raises(ValueError, match="an undecided gate is blocked, with that one reason"):
        result(Outcome.BLOCKED, compared=0.7, favourable=0.9, reasons=[BlockReason.UNDECIDED, BlockReason.BELOW_MIN_N])
    with pytest.raises(ValueError, match="unfavourable side"):
        result(Outcome.PASS, compared=0.85, favourable=0.81)


def test_the_point_rule_never_says_undecided() -> None:
    with pytest.raises(ValueError, match="only an interval rule"):
        GateResult(
            name="g",
            subject="m",
            active=True,
            outcome=Outcome.BLOCKED,
            reasons=(Reason(code=BlockReason.UNDECIDED, message="m"),),
            compared=0.7,
            threshold=0.8,
            fingerprint=FP,
        )


def test_a_recorded_fail_without_a_favourable_bound_still_loads() -> None:
    """A scorecard written under lower_bound@1 (no favourable bound) reads as it was decided."""
    old = result(Outcome.FAIL, compared=0.7, favourable=None, reasons=[BlockReason.BELOW_THRESHOLD])
    assert GateResult.model_validate(old.model_dump()).outcome is Outcome.FAIL


def side(values: np.ndarray) -> MetricSide:
    column = ScoreColumn()
    for value in values:
        column.append(float(value))
    return MetricSide(values=column.values(), states=column.states(), definition="def", scale=UNIT_SCALE)


def comparative(base: np.ndarray, candidate: np.ndarray, margin: float, direction: Direction) -> GateResult:
    ids = np.array([f"e{i}" for i in range(base.size)])
    column = ScoreColumn()
    for value in candidate:
        column.append(float(value))
    spec = GateSpec(metric="m", compare_to="main", direction=direction, rule=GateRule.LOWER_BOUND)
    ledger = Ledger(baselines={"main": BaselineApproval(run="x", fingerprint=FP)})
    baseline = BaselineRun(
        name="main", location="x", fingerprint=FP, run_id="r", gold_fingerprint="g", ids=ids, metrics={"m": side(base)}
    )
    inputs = ComparativeInputs(ids=ids, gold_fingerprint="g", definitions={"m": "def"}, baselines={"main": baseline})
    authority = Authority(active=True, margin=margin)
    return decide_comparative_gate("g", spec, FP, authority, ledger, column, IntervalSpec(), UNIT_SCALE, inputs, None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(min_value=20, max_value=600),
    accuracy=st.floats(min_value=0.3, max_value=0.95),
    discordance=st.floats(min_value=0.0, max_value=0.4),
    drift=st.floats(min_value=-0.08, max_value=0.08),
    margin=st.sampled_from([0.0, 0.01, 0.02, 0.05, 0.1]),
    binary=st.booleans(),
    direction=st.sampled_from([HIGHER, LOWER]),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_no_statement_claims_enough_beside_an_interval_that_straddles_the_limit(
    n: int,
    accuracy: float,
    discordance: float,
    drift: float,
    margin: float,
    binary: bool,
    direction: Direction,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < accuracy).astype(np.float64)
    flip = rng.random(n) < discordance
    nudge = rng.random(n) < abs(drift)
    candidate = np.where(flip, 1.0 - base, base)
    candidate = np.where(nudge, 1.0 if drift > 0 else 0.0, candidate)
    if not binary:
        base = np.clip(base * 0.6 + rng.random(n) * 0.4, 0.0, 1.0)
        candidate = np.clip(candidate * 0.6 + rng.random(n) * 0.4, 0.0, 1.0)
    gate = comparative(base, candidate, margin, direction)
    reasons = {reason.code for reason in gate.reasons}
    assert reasons <= {BlockReason.UNDECIDED, BlockReason.BELOW_THRESHOLD, BlockReason.INTERVAL_UNDEFINED}
    if gate.compared is None or gate.favourable_bound is None or gate.threshold is None:
        return
    low, high = sorted((gate.compared, gate.favourable_bound))
    straddles = low < gate.threshold < high or (low <= gate.threshold <= high and gate.outcome is Outcome.BLOCKED)
    assert (gate.outcome is Outcome.BLOCKED) == (BlockReason.UNDECIDED in reasons)
    if gate.outcome is Outcome.BLOCKED:
        assert low < gate.threshold + 1e-12 and high >= gate.threshold - 1e-12
    said = "\n".join(
        [
            *comparison_story(gate),
            gate_sentence(gate),
            render_markdown(card([gate])),
            *(BLOCK_REASON_FIXES[code] for code in reasons),
        ]
    )
    if straddles or gate.outcome is Outcome.BLOCKED:
        assert not ENOUGH.search(said), said
