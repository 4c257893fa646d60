"""Which rules a run record selects, and the one rule about them: never green by a marker (core/recordrules.py).

The end-to-end proof (every set of deleted markers, every host ledger, through `verify` and the readers) is
tests/live_e2e/test_older_rules_cli.py; these pin the pieces it stands on.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason
from evalglass.core.gates import Outcome
from evalglass.core.recordrules import (
    CHECK_TYPES,
    COUNT_REDUCERS,
    CURRENT_RULES,
    JUDGE_TYPES,
    UNDECIDED_COUNTS_NOTE,
    UNDECIDED_TIES_NOTE,
    UNRECORDED_CODE,
    CurrentOutcome,
    DecisionRules,
    LaterRule,
    compared_count_gates,
    count_gates,
    count_unbound_gates,
    green,
    older_rules_problem,
    recorded_rules,
    scoreless_gates,
    tie_gates,
)
from evalglass.core.runrecord import RunRecord

#: Every marker as a run decided under the current rules writes it, for a run with one judge, `quality`, and one
#: metric that runs a check, `passes`.
MARKERS: dict[LaterRule, dict[str, Any]] = {
    LaterRule.EVERY_JUDGED_GATE: {"judge_gates": "every"},
    LaterRule.APPROVED_CALIBRATION: {"judge_calibrations": "approved"},
    LaterRule.ENDPOINT_BINDING: {"judge_endpoints": {"quality": "openai http://127.0.0.1:9/v1"}},
    LaterRule.CHECK_CODE_BINDING: {"unbound_check_code": {"passes": {"solution": []}}},
    LaterRule.EXAMPLES_BINDING: {"gold_gates": "every"},
    LaterRule.SAMPLES_BINDING: {"sample_counts": "bound"},
    LaterRule.UNFAVOURABLE_TIES: {"majority_ties": "unfavourable"},
    LaterRule.COMPARED_COUNTS: {"baseline_counts": "compared"},
}


def _record(judges: bool, kept: tuple[LaterRule, ...]) -> RunRecord:
    """``judges``: the run has a judge, a metric that runs a check and a gate on it (whose rules the markers
    select)."""
    fields: dict[str, Any] = {
        "run_id": "r1",
        "created_at": "2026-01-01T00:00:00Z",
        "tool_version": "0.1.0",
        "config_path": "evalglass.yaml",
        "config_fingerprint": "sha256:" + "0" * 64,
        "config": {},
        "ledger_path": "authority.yaml",
        "ledger_fingerprint": "sha256:" + "1" * 64,
        "ledger": {},
        "dataset": {"name": "d", "path": "d.jsonl", "fingerprint": "sha256:" + "2" * 64, "examples": 1},
        "gate_fingerprints": {},
        "scores_sha256": "sha256:" + "3" * 64,
    }
    if judges:
        fields["judge_fingerprints"] = {"quality": "sha256:" + "4" * 64}
        fields["config"] = {
            "task": {"type": "python", "function": "lane.py:answer", "epochs": 3},
            "metrics": {
                "passes": {"type": "check", "check": "solution"},
                "best": {"type": "contains", "reducer": "max"},
                "voted": {"type": "contains", "reducer": "majority"},
            },
            "gates": {
                "solutions": {"metric": "passes"},
                "best-of-3": {"metric": "best"},
                "rarely": {"metric": "voted", "direction": "lower_is_better"},
                "no-worse": {"metric": "best", "compare_to": "main"},
            },
        }
    for rule in kept:
        fields.update(MARKERS[rule])
    return RunRecord.model_validate(fields)


def test_a_record_selects_exactly_the_rules_whose_markers_it_lacks() -> None:
    for size in range(len(LaterRule) + 1):
        for kept in itertools.combinations(LaterRule, size):
            rules = recorded_rules(_record(True, kept))
            assert rules.before == frozenset(LaterRule) - set(kept), kept
            assert rules.current == (len(kept) == len(LaterRule))
            # A run without judges is decided alike under every rule: it claims none older, whatever it lacks.
            assert recorded_rules(_record(False, kept)) == CURRENT_RULES


def test_a_judge_without_an_endpoint_claims_the_older_binding_rule() -> None:
    record = _record(True, tuple(LaterRule)).model_copy(
        update={"judge_fingerprints": {"quality": "sha256:" + "4" * 64, "other": "sha256:" + "5" * 64}}
    )
    assert recorded_rules(record).before == {LaterRule.ENDPOINT_BINDING}


def test_the_judge_types_are_the_registrys_calibrated_metric_types() -> None:
    from evalglass.metrics.registry import METRIC_TYPES

    assert {name for name, spec in METRIC_TYPES.items() if spec.calibrated} == JUDGE_TYPES


def test_the_count_reducers_are_those_whose_value_depends_on_the_count() -> None:
    from evalglass.core.stats import Reducer

    assert {reducer.value for reducer in Reducer if reducer.depends_on_count} == COUNT_REDUCERS


def test_a_gate_binds_the_count_only_under_such_a_reducer_with_several_samples() -> None:
    metrics = {"best": {"type": "contains", "reducer": "max"}, "avg": {"type": "contains"}}
    gates = {"b": {"metric": "best"}, "a": {"metric": "avg"}, "c": {"check": "suite"}}
    lane = {"type": "python", "function": "lane.py:answer"}
    assert count_gates({"task": {**lane, "epochs": 3}, "metrics": metrics, "gates": gates}) == ("b",)
    assert count_gates({"task": lane, "metrics": metrics, "gates": gates}) == ()  # one sample: every reducer is 1:1
    assert count_gates({"task": {"samples": True}, "metrics": metrics, "gates": gates}) == ("b",)
    assert count_gates({"dataset": {"format": "inspect"}, "metrics": metrics, "gates": gates}) == ("b",)
    variants = {"a": {"epochs": 4}, "b": {"epochs": 4, "model": "m"}}
    assert count_gates({"task": lane, "variants": variants, "metrics": metrics, "gates": gates}) == ("b",)
    kept = _record(True, tuple(LaterRule))
    assert count_unbound_gates(recorded_rules(kept), kept) == ()
    old = _record(True, tuple(rule for rule in LaterRule if rule is not LaterRule.SAMPLES_BINDING))
    assert count_unbound_gates(recorded_rules(old), old) == ("best-of-3", "rarely", "no-worse")


def test_the_check_types_are_the_registrys_metric_types_that_run_a_check() -> None:
    from evalglass.metrics.check import CheckMetricSpec
    from evalglass.metrics.registry import METRIC_TYPES

    assert {name for name, spec in METRIC_TYPES.items() if issubclass(spec, CheckMetricSpec)} == CHECK_TYPES
    # ... and only those name a check (the readers find it under `check`).
    for name, spec in METRIC_TYPES.items():
        assert ("check" in spec.model_fields) == (name in CHECK_TYPES), name


def test_a_check_metric_without_its_entry_is_unknown_code_under_the_current_rules() -> None:
    """A record from before the rule (or one whose entry was deleted) keeps nothing for its check metric: the older
    rule reads nothing unbound; the current rules read the code as unknown, which is not bound."""
    record = _record(True, tuple(rule for rule in LaterRule if rule is not LaterRule.CHECK_CODE_BINDING))
    rules = recorded_rules(record)
    assert rules.before == {LaterRule.CHECK_CODE_BINDING}
    assert rules.unbound_code(record) == {}
    assert CURRENT_RULES.unbound_code(record) == {"passes": {"solution": (UNRECORDED_CODE,)}}
    kept = _record(True, tuple(LaterRule))
    assert CURRENT_RULES.unbound_code(kept) == {"passes": {"solution": ()}}


def test_each_rule_loosens_exactly_its_part_of_a_standing() -> None:
    endpoint = "openai http://127.0.0.1:9/v1"
    for size in range(len(LaterRule) + 1):
        for before in itertools.combinations(LaterRule, size):
            standing = DecisionRules(frozenset(before)).standing("quality", "sha256:f", None, endpoint)
            assert (standing.endpoint is None) == (LaterRule.ENDPOINT_BINDING in before)
            assert standing.approved_record == (LaterRule.APPROVED_CALIBRATION not in before)
            assert DecisionRules(frozenset(before)).every_judged_gate == (LaterRule.EVERY_JUDGED_GATE not in before)
            assert DecisionRules(frozenset(before)).examples_bound == (LaterRule.EXAMPLES_BINDING not in before)


_OUTCOMES = st.sampled_from(list(Outcome))
_GATES = st.sampled_from(["g1", "g2", "g3"])


@given(
    before=st.frozensets(st.sampled_from(list(LaterRule))),
    recorded=st.dictionaries(_GATES, _OUTCOMES),
    current=st.dictionaries(_GATES, _OUTCOMES),
)
def test_no_older_rules_make_green_what_the_current_rules_do_not(
    before: frozenset[LaterRule], recorded: dict[str, Outcome], current: dict[str, Outcome]
) -> None:
    """Whatever a record claims: a gate green as recorded and not green now is a problem naming every claimed
    marker and that gate; with no such gate (or no older claim) there is none."""
    rules = DecisionRules(before)
    now = [CurrentOutcome(name, outcome, (BlockReason.CALIBRATION_UNAPPROVED,)) for name, outcome in current.items()]
    problem = older_rules_problem(rules, recorded, now)
    worse = sorted(
        name for name, outcome in current.items() if green(recorded.get(name, outcome)) and not green(outcome)
    )
    if not before or not worse:
        assert problem is None
        return
    assert problem is not None
    assert problem.field == "runrecord." + "/".join(rule.value for rule in LaterRule if rule in before)
    for rule in before:
        assert rule.before in problem.claimed
    for name in worse:
        assert f"gate '{name}' is {current[name].value}: calibration_unapproved" in problem.current
    assert problem.line.startswith(problem.field + ": ")


def test_only_a_gate_on_a_metric_without_a_reference_claims_the_examples_rule() -> None:
    """The examples rule changes only a non-comparative gate on a metric with no reference: a record whose gates
    are all of other kinds decides alike under both rules, writes no marker and claims nothing older."""
    from evalglass.core.recordrules import examples_gates

    metrics = {"exact": {"type": "exact_match", "reference": "expected"}, "valid": {"type": "json_valid"}}
    gates = {
        "reference": {"metric": "exact"},
        "compared": {"metric": "valid", "compare_to": "main"},
        "checked": {"check": "suite"},
        "plain": {"metric": "valid"},
    }
    assert examples_gates({"metrics": metrics, "gates": gates}) == ("plain",)
    assert examples_gates({"metrics": metrics, "gates": {k: v for k, v in gates.items() if k != "plain"}}) == ()
    assert examples_gates({}) == ()


def test_only_a_lower_is_better_gate_on_a_majority_metric_with_samples_claims_the_tie_rule() -> None:
    """Under a higher-is-better gate both tie rules break a tie low: only a lower-is-better gate on a majority
    metric, with several samples per example, is decided otherwise (a run without one keeps its bytes)."""
    metrics = {"voted": {"type": "contains", "reducer": "majority"}, "avg": {"type": "contains"}}
    gates = {
        "low": {"metric": "voted", "direction": "lower_is_better"},
        "high": {"metric": "voted"},
        "avg-low": {"metric": "avg", "direction": "lower_is_better"},
        "vs": {"metric": "voted", "direction": "lower_is_better", "compare_to": "main"},
    }
    lane = {"type": "python", "function": "lane.py:answer"}
    assert tie_gates({"task": {**lane, "epochs": 2}, "metrics": metrics, "gates": gates}) == ("low", "vs")
    assert tie_gates({"task": lane, "metrics": metrics, "gates": gates}) == ()  # one sample: no tie
    assert tie_gates({"task": {"samples": True}, "metrics": metrics, "gates": gates}) == ("low", "vs")
    kept = _record(True, tuple(LaterRule))
    assert scoreless_gates(recorded_rules(kept), kept) == {}
    older = _record(True, tuple(rule for rule in LaterRule if rule is not LaterRule.UNFAVOURABLE_TIES))
    assert recorded_rules(older).before == {LaterRule.UNFAVOURABLE_TIES}
    assert not recorded_rules(older).unfavourable_ties
    assert scoreless_gates(recorded_rules(older), older) == {"rarely": UNDECIDED_TIES_NOTE}


def test_only_a_comparative_gate_on_a_count_reducer_claims_the_compared_counts_rule() -> None:
    """Whatever this run's samples: the baseline's count may differ from it (one sample here, three there)."""
    metrics = {"best": {"type": "contains", "reducer": "max"}, "avg": {"type": "contains"}}
    gates = {
        "vs": {"metric": "best", "compare_to": "main"},
        "vs-avg": {"metric": "avg", "compare_to": "main"},
        "plain": {"metric": "best"},
    }
    assert compared_count_gates({"task": {"type": "recorded"}, "metrics": metrics, "gates": gates}) == ("vs",)
    older = _record(True, tuple(rule for rule in LaterRule if rule is not LaterRule.COMPARED_COUNTS))
    assert recorded_rules(older).before == {LaterRule.COMPARED_COUNTS}
    assert not recorded_rules(older).counts_compared and recorded_rules(older).unfavourable_ties
    assert scoreless_gates(recorded_rules(older), older) == {"no-worse": UNDECIDED_COUNTS_NOTE}


def test_a_gate_the_reader_cannot_decide_is_named_with_why() -> None:
    rules = DecisionRules(frozenset({LaterRule.UNFAVOURABLE_TIES}))
    problem = older_rules_problem(
        rules, {"rarely": Outcome.PASS}, [CurrentOutcome("rarely", Outcome.BLOCKED, (), note="cannot be told")]
    )
    assert problem is not None
    assert "gate 'rarely' cannot be told" in problem.line
    assert "majority_ties" in problem.field
