"""Intervals, samples, clusters, sensitivity bounds and the experimental lower-bound rule, through the CLI."""

from __future__ import annotations

import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from tests.e2e.project import base_config, make_project
from tests.e2e.test_verdicts import approve


def card_of(project, *args):
    result = project.run("--format", "json", *args)
    assert result.code in (0, 1), result.err
    return result.json()


def metric(card, name="exact"):
    return next(m for m in card["metrics"] if m["name"] == name)


def test_binary_metric_gets_a_wilson_interval_matching_statsmodels(tmp_path):
    project = make_project(tmp_path)
    estimate = metric(card_of(project))["estimate"]
    low, high = proportion_confint(6, 8, alpha=0.05, method="wilson")
    assert estimate["point"] == 0.75 and estimate["n"] == 8
    assert estimate["interval"]["method"] == "wilson"
    assert estimate["interval"]["low"] == pytest.approx(low, abs=1e-12)
    assert estimate["interval"]["high"] == pytest.approx(high, abs=1e-12)


def write_scorer(project, body: str) -> None:
    (project.evals / "scorer.py").write_text(body)


def test_continuous_metric_gets_a_student_t_interval_matching_scipy(tmp_path):
    project = make_project(
        tmp_path,
        metrics={"len": {"type": "python", "function": "scorer.py:score", "scale": {"min": 0, "max": 10}}},
        gates={},
    )
    write_scorer(project, "def score(record):\n    return float(record['x'])\n")
    xs = [1.5, 2.0, 2.5, 4.0, 3.5, 7.0]
    project.write_rows(
        [{"id": f"r{i}", "x": x, "output": "o"} for i, x in enumerate(xs)] + [{"id": "nox", "output": "o"}]
    )
    estimate = metric(card_of(project), "len")["estimate"]
    low, high = stats.t.interval(0.95, len(xs) - 1, loc=sum(xs) / len(xs), scale=stats.sem(xs))
    assert estimate["interval"]["method"] == "student_t"
    assert estimate["interval"]["low"] == pytest.approx(low, rel=1e-9)
    assert estimate["interval"]["high"] == pytest.approx(high, rel=1e-9)
    # the example without x raised inside the host function: excluded, and the sensitivity bounds show its reach
    sensitivity = estimate["sensitivity"]
    assert sensitivity["excluded"] == 1
    assert sensitivity["low"] == pytest.approx(sum(xs) / 7) and sensitivity["high"] == pytest.approx((sum(xs) + 10) / 7)
    assert estimate["point"] == pytest.approx(sum(xs) / 6)


def test_sensitivity_bounds_count_excluded_as_failing_and_passing(tmp_path):
    project = make_project(tmp_path)
    project.write_rows(
        [
            {"id": "a", "expected": "y", "output": "y"},
            {"id": "b", "expected": "y", "output": "n"},
            {"id": "c", "output": "y"},
            {"id": "d", "expected": "y"},
        ]
    )
    estimate = metric(card_of(project))["estimate"]
    assert estimate["point"] == 0.5
    assert estimate["sensitivity"]["low"] == 0.25 and estimate["sensitivity"]["high"] == 0.75


def lower_bound_project(tmp_path, rows):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "rule": "lower_bound", "level": 0.95}})
    project.write_rows(rows)
    project.write_ledger(approve(project, threshold=0.8))
    return project


def test_lower_bound_rule_leaves_a_lucky_small_sample_undecided_and_says_how_many_examples_would_decide(tmp_path):
    rows = [{"id": f"e{i}", "expected": "y", "output": "y"} for i in range(9)] + [
        {"id": "e9", "expected": "y", "output": "n"}
    ]
    project = lower_bound_project(tmp_path, rows)
    card = card_of(project)
    gate = card["decision"]["gates"][0]
    low, high = proportion_confint(9, 10, alpha=0.10, method="wilson")  # one-sided 95% = two-sided 90%
    assert gate["rule"] == "lower_bound" and gate["value"] == 0.9
    assert gate["compared"] == pytest.approx(low, abs=1e-12)
    assert gate["favourable_bound"] == pytest.approx(high, abs=1e-12)
    # The interval [0.65, 0.98] straddles 0.8: neither a pass (a lucky sample) nor a fail (nothing shown short).
    assert gate["outcome"] == "blocked" and [r["code"] for r in gate["reasons"]] == ["undecided"]
    z = stats.norm.ppf(0.95)
    assert gate["required_n"] == int(z**2 * 0.8 * 0.2 / (0.9 - 0.8) ** 2) + 1
    assert f"about {gate['required_n']} examples (now 10) would decide" in gate["reasons"][0]["message"]
    explained = project.cli("explain", "accuracy").out
    assert "EXPERIMENTAL" in explained and f"about {gate['required_n']} examples" in explained
    assert "undecided" in explained and "gather better evidence" in explained.lower()
    assert "improve the system" not in explained


def test_lower_bound_fails_only_when_the_whole_interval_misses(tmp_path):
    rows = [{"id": f"e{i}", "expected": "y", "output": "y" if i % 10 >= 3 else "n"} for i in range(400)]
    project = lower_bound_project(tmp_path, rows)  # 70% against 0.8: the 90% interval is [0.66, 0.74]
    gate = card_of(project)["decision"]["gates"][0]
    assert gate["outcome"] == "fail" and gate["favourable_bound"] < 0.8
    assert [r["code"] for r in gate["reasons"]] == ["below_threshold"]


def test_the_same_gate_with_the_point_rule_passes(tmp_path):
    rows = [{"id": f"e{i}", "expected": "y", "output": "y"} for i in range(9)] + [
        {"id": "e9", "expected": "y", "output": "n"}
    ]
    project = make_project(tmp_path)
    project.write_rows(rows)
    project.write_ledger(approve(project, threshold=0.8))
    assert card_of(project)["decision"]["gates"][0]["outcome"] == "pass"


def test_lower_bound_passes_with_enough_evidence(tmp_path):
    rows = [{"id": f"e{i}", "expected": "y", "output": "y" if i % 20 else "n"} for i in range(400)]
    project = lower_bound_project(tmp_path, rows)
    gate = card_of(project)["decision"]["gates"][0]
    assert gate["outcome"] == "pass" and gate["compared"] < gate["value"]


def test_min_n_blocks_a_gate_with_too_few_examples(tmp_path):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "min_n": 20}})
    project.write_ledger(approve(project, threshold=0.5))
    gate = card_of(project)["decision"]["gates"][0]
    assert gate["outcome"] == "blocked" and [r["code"] for r in gate["reasons"]] == ["below_min_n"]


def test_interval_settings_stale_only_lower_bound_approvals(tmp_path):
    point = make_project(tmp_path)
    point.run()
    point_fp = point.gate_fingerprint("accuracy")
    config = base_config()
    config["metrics"]["exact"]["interval"] = {"method": "clopper_pearson"}
    point.write_config(config)
    point.run()
    assert point.gate_fingerprint("accuracy") == point_fp  # the point rule does not use the interval
    config["gates"]["accuracy"]["rule"] = "lower_bound"
    point.write_config(config)
    point.run()
    lower_fp = point.gate_fingerprint("accuracy")
    config["metrics"]["exact"]["interval"] = {"method": "wilson"}
    point.write_config(config)
    point.run()
    assert point.gate_fingerprint("accuracy") != lower_fp


def test_samples_are_reduced_per_example_before_the_interval(tmp_path):
    project = make_project(
        tmp_path,
        task={"type": "recorded", "field": "outputs", "samples": True},
        metrics={
            "exact_mean": {"type": "exact_match", "expected": "y"},
            "exact_pass2": {"type": "exact_match", "expected": "y", "reducer": "pass_at_k", "k": 2},
        },
        gates={},
    )
    project.write_rows(
        [
            {"id": "a", "outputs": ["y", "n", "n", "y"]},  # 2 of 4 pass: pass@2 = 1 - C(2,2)/C(4,2) = 5/6
            {"id": "b", "outputs": ["n", "n", "n"]},  # pass@2 = 0
            {"id": "c", "outputs": ["y", "y"]},  # pass@2 = 1
        ]
    )
    card = card_of(project)
    mean = metric(card, "exact_mean")["estimate"]
    assert mean["point"] == pytest.approx((0.5 + 0 + 1) / 3) and mean["n"] == 3 and mean["samples"] == 9
    pass2 = metric(card, "exact_pass2")["estimate"]
    assert pass2["point"] == pytest.approx((5 / 6 + 0 + 1) / 3) and pass2["reducer"] == "pass_at_k"


def test_an_example_with_a_failed_sample_is_excluded_not_averaged(tmp_path):
    project = make_project(
        tmp_path,
        task={"type": "recorded", "field": "outputs", "samples": True},
        # A wrong answer ("oops") is a measurement (numeric_bounds@3 scores it 0.0); left out, it is a failed sample.
        metrics={"num": {"type": "numeric_bounds", "min": 0, "max": 1, "on_invalid_output": "exclude"}},
        gates={},
    )
    project.write_rows(
        [{"id": "a", "outputs": [0.5, "oops"]}, {"id": "b", "outputs": [0.5, 0.7]}, {"id": "c", "outputs": "x"}]
    )
    population = metric(card_of(project, "--out", "out"), "num")["population"]
    assert population["included"] == 1 and population["excluded_by_status"] == {"error": 2}
    assert project.cli("verify", "out").code == 0


def test_clusters_use_a_cluster_robust_interval_and_warn_when_few(tmp_path):
    project = make_project(tmp_path, dataset={"name": "suite", "path": "data.jsonl", "cluster_field": "doc"}, gates={})
    rows = [{"id": f"e{i}", "doc": f"d{i % 3}", "expected": "y", "output": "y" if i % 4 else "n"} for i in range(24)]
    project.write_rows(rows)
    card = card_of(project, "--out", "out")
    interval = metric(card)["estimate"]["interval"]
    assert interval["method"] == "cluster_t" and interval["clusters"] == 3
    assert "few_clusters" in interval["notes"]
    assert "3 clusters" in project.cli("view", "out").out
    assert project.cli("verify", "out").code == 0


def test_a_seeded_bootstrap_reproduces_bit_for_bit(tmp_path):
    project = make_project(tmp_path, gates={})
    config = base_config(gates={})
    config["metrics"]["exact"]["interval"] = {"method": "bootstrap_bca", "resamples": 500, "seed": 7}
    project.write_config(config)
    rows = [{"id": f"e{i}", "expected": "y", "output": "y" if i % 3 else "n"} for i in range(60)]
    project.write_rows(rows)
    first = metric(card_of(project, "--out", "a"))["estimate"]["interval"]
    second = metric(card_of(project, "--out", "b"))["estimate"]["interval"]
    assert first == second and first["params"]["seed"] == 7
    assert project.cli("verify", "a").code == 0
    config["metrics"]["exact"]["interval"]["seed"] = 8
    project.write_config(config)
    assert metric(card_of(project, "--out", "c"))["estimate"]["interval"] != first


def test_no_included_value_has_no_estimate(tmp_path):
    project = make_project(tmp_path, gates={})
    project.write_rows([{"id": "a", "output": "y"}])
    assert metric(card_of(project))["estimate"] is None


def test_a_unit_scale_metric_with_ties_shows_its_interval_clipped_to_the_scale(tmp_path):
    # A pairwise-style score (0, 0.5, 1) near the top: the t interval's high end lies past 1, which no mean of these
    # scores can reach; the scorecard and the gate show it clipped to the declared scale.
    project = make_project(
        tmp_path,
        metrics={"tie": {"type": "python", "function": "scorer.py:score", "scale": {"min": 0, "max": 1}}},
        gates={"accuracy": {"metric": "tie", "rule": "lower_bound", "level": 0.95}},
    )
    write_scorer(project, "def score(record):\n    return float(record['x'])\n")
    xs = [1.0, 1.0, 0.5, 1.0, 1.0]
    project.write_rows([{"id": f"r{i}", "x": x, "output": "o"} for i, x in enumerate(xs)])
    project.write_ledger(approve(project, threshold=0.8))  # no reference: the examples it measures are gold
    card = card_of(project)
    interval = metric(card, "tie")["estimate"]["interval"]
    low, high = stats.t.interval(0.95, len(xs) - 1, loc=0.9, scale=stats.sem(xs))
    assert high > 1.0  # what the interval was before the clip
    assert interval["method"] == "student_t" and interval["high"] == 1.0
    assert interval["low"] == pytest.approx(low, rel=1e-9)  # the end inside the scale is untouched
    assert interval["params"]["clipped_to_unit_range"] is True
    gate = card["decision"]["gates"][0]
    gate_low, _ = stats.t.interval(0.90, len(xs) - 1, loc=0.9, scale=stats.sem(xs))
    assert gate["compared"] == pytest.approx(gate_low, rel=1e-9) and gate["favourable_bound"] == 1.0
    assert gate["outcome"] == "blocked" and [r["code"] for r in gate["reasons"]] == ["undecided"]
    assert project.cli("verify", str(project.last_run())).code == 0
