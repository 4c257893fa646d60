"""`evalglass compare BASE CAND` through the real CLI: paired numbers, one-sided examples, flips, exit codes."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from tests.e2e.project import base_config, make_project
from tests.e2e.test_forgery import _reseal as reseal


def two_runs(tmp_path, rows, *, metrics=None, extra_rows=None, files=None):
    """One dataset holding both runs' outputs (`old`, `new`): the baseline runs on `old`, the candidate on `new`."""
    overrides = {"gates": {}, **({"metrics": metrics} if metrics else {})}
    project = make_project(tmp_path, **overrides)
    for name, text in (files or {}).items():
        (project.evals / name).write_text(text)
    project.write_rows(rows)
    project.write_config(base_config(task={"type": "recorded", "field": "old"}, **overrides))
    base = project.run("--out", "runs/base", "--format", "json")
    assert base.code == 0, base.err
    if extra_rows is not None:
        project.write_rows(extra_rows)
    project.write_config(base_config(task={"type": "recorded", "field": "new"}, **overrides))
    cand = project.run("--out", "runs/cand", "--format", "json")
    assert cand.code == 0, cand.err
    return project


def rows_with(pattern):
    """``pattern``: (baseline correct?, candidate correct?) per example."""
    return [
        {"id": f"q{i:03d}", "expected": "a", "old": "a" if old else "b", "new": "a" if new else "b"}
        for i, (old, new) in enumerate(pattern)
    ]


PATTERN = [(True, True)] * 30 + [(True, False)] * 7 + [(False, True)] * 2 + [(False, False)] * 11


def test_binary_comparison_reports_newcombe_mcnemar_and_flips(tmp_path):
    project = two_runs(tmp_path, rows_with(PATTERN))
    result = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    payload = result.json()
    assert payload["schema_version"] == "evalglass.comparison/1"
    assert payload["paired"] == 50 and payload["only_in_base"] == [] and payload["only_in_candidate"] == []
    (exact,) = payload["metrics"]
    assert exact["kind"] == "binary"
    difference = exact["difference"]
    assert difference["base"] == pytest.approx(37 / 50) and difference["candidate"] == pytest.approx(32 / 50)
    assert difference["interval"]["point"] == pytest.approx(-5 / 50)
    assert difference["interval"]["method"] == "newcombe_paired"
    assert difference["interval"]["low"] < -0.1 < 0 < difference["interval"]["high"] + 0.1
    assert difference["test"] == "mcnemar_exact"
    assert difference["p_value"] == pytest.approx(mcnemar([[30, 7], [2, 11]], exact=True).pvalue)
    assert difference["table"] == {"both": 30, "base_only": 7, "candidate_only": 2, "neither": 11}
    assert exact["flips"]["regressed"] == [f"q{i:03d}" for i in range(30, 37)]
    assert exact["flips"]["improved"] == ["q037", "q038"]
    assert exact["pairs"]["included"] == 50
    # the terminal shows the same numbers and the top flipped ids
    text = project.cli("compare", "runs/base", "runs/cand", "--top", "3")
    assert text.code == 0, text.err
    assert "newcombe_paired" in text.out and "7 regressed, 2 improved" in text.out
    assert "q030, q031, q032, … (+4 more)" in text.out


def test_examples_on_one_side_only_are_counted_and_named(tmp_path):
    rows = rows_with([(True, True)] * 6)
    project = two_runs(
        tmp_path, rows, extra_rows=[*rows[1:], {"id": "new-one", "expected": "a", "old": "a", "new": "a"}]
    )
    payload = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    assert payload["paired"] == 5
    assert payload["only_in_base"] == ["q000"] and payload["only_in_candidate"] == ["new-one"]
    codes = {item["code"] for item in payload["incomparable"]}
    assert "example_set" in codes and "gold" in codes  # the dataset file itself changed


def test_excluded_pairs_are_counted_not_scored_as_zero(tmp_path):
    rows = rows_with([(True, True)] * 5 + [(True, False)] * 3)
    rows[0]["new"] = None  # json null: the candidate has no output for q000 -> excluded, never 0
    del rows[1]["new"]
    project = two_runs(tmp_path, rows)
    (exact,) = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()["metrics"]
    pairs = exact["pairs"]
    assert pairs["expected"] == 8 and pairs["included"] < 8
    assert exact["difference"]["interval"]["n"] == pairs["included"]


def test_continuous_metric_uses_the_paired_t_and_midpoint_flips(tmp_path):
    from scipy import stats

    old = [0.9, 0.8, 0.6, 0.7, 0.4, 0.55, 0.3, 0.95]
    new = [0.85, 0.82, 0.45, 0.72, 0.52, 0.5, 0.2, 0.9]
    rows = [{"id": f"c{i}", "old": o, "new": n} for i, (o, n) in enumerate(zip(old, new, strict=True))]
    metrics = {"quality": {"type": "python", "function": "scorer.py:score", "scale": {"min": 0, "max": 1}}}
    scorer = {"scorer.py": "def score(output):\n    return float(output)\n"}
    project = two_runs(tmp_path, rows, metrics=metrics, files=scorer)
    (quality,) = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()["metrics"]
    reference = stats.ttest_rel(new, old)
    low, high = reference.confidence_interval(0.95)
    difference = quality["difference"]
    assert quality["kind"] == "continuous"
    assert difference["test"] == "paired_t" and difference["interval"]["method"] == "student_t"
    assert (difference["interval"]["low"], difference["interval"]["high"]) == pytest.approx((low, high), rel=1e-9)
    assert difference["p_value"] == pytest.approx(reference.pvalue, rel=1e-9)
    # passing = at least the scale's midpoint 0.5: c2 (0.6 -> 0.45) regressed, c4 (0.4 -> 0.52) improved;
    # c5 (0.55 -> 0.5) stays passing, c6 stays failing
    assert quality["flips"]["pass_rule"].startswith("value >= 0.5")
    assert quality["flips"]["regressed"] == ["c2"] and quality["flips"]["improved"] == ["c4"]


def test_runs_that_cannot_be_compared_exit_2_with_one_line(tmp_path):
    project = two_runs(tmp_path, rows_with([(True, True)] * 3))
    missing = project.cli("compare", "runs/base", "runs/nope")
    assert missing.code == 2 and missing.err.count("\n") == 1 and "runs/nope" in missing.err
    unknown = project.cli("compare", "runs/base", "runs/cand", "--metric", "nope")
    assert unknown.code == 2 and "metric 'nope'" in unknown.err and "Traceback" not in unknown.err
    project.write_rows([{"id": "other", "expected": "a", "old": "a", "new": "a"}])
    assert project.run("--out", "runs/other").code == 0
    disjoint = project.cli("compare", "runs/base", "runs/other")
    assert disjoint.code == 2 and "no example id in common" in disjoint.err
    (project.root / "runs/cand/scores.jsonl").write_text(json.dumps({"ids": ["q000"]}) + "\n")
    damaged = project.cli("compare", "runs/base", "runs/cand")
    assert damaged.code == 2 and "scores.jsonl is not the file digests.json lists" in damaged.err
    reseal(project.root / "runs/cand")  # the digests (and the record) rewritten to match: read, and refused as read
    record = json.loads((project.root / "runs/cand/runrecord.json").read_text())
    record["scores_sha256"] = json.loads((project.root / "runs/cand/digests.json").read_text())["files"]["scores.jsonl"]
    (project.root / "runs/cand/runrecord.json").write_text(json.dumps(record))
    reseal(project.root / "runs/cand")
    corrupt = project.cli("compare", "runs/base", "runs/cand")
    assert corrupt.code == 2 and "scores.jsonl:1" in corrupt.err


def test_samples_are_reduced_per_example_before_pairing(tmp_path):
    rows = [
        {"id": "s0", "expected": "a", "old": ["a", "a"], "new": ["a", "b"]},
        {"id": "s1", "expected": "a", "old": ["b", "b"], "new": ["a", "a"]},
        {"id": "s2", "expected": "a", "old": ["a", "b"], "new": ["a", "b"]},
    ]
    project = make_project(tmp_path, gates={})
    project.write_rows(rows)
    for field, out in (("old", "runs/base"), ("new", "runs/cand")):
        project.write_config(base_config(gates={}, task={"type": "recorded", "field": field, "samples": True}))
        assert project.run("--out", out).code == 0
    (exact,) = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()["metrics"]
    difference = exact["difference"]
    assert difference["interval"]["n"] == 3  # examples, not the 6 samples
    assert (difference["base"], difference["candidate"]) == pytest.approx((1.5 / 3, 2.0 / 3))
    assert exact["kind"] == "continuous" and difference["test"] == "paired_t"
    assert exact["flips"]["regressed"] == [] and exact["flips"]["improved"] == ["s1"]  # 0.5 passes (midpoint)


def test_clustered_datasets_get_a_cluster_robust_paired_interval(tmp_path):
    rows = rows_with([(True, True), (True, False), (False, False), (True, True)] * 10)
    for index, row in enumerate(rows):
        row["doc"] = f"d{index // 4}"
    project = make_project(tmp_path, gates={})
    project.write_rows(rows)
    dataset = {"name": "suite", "path": "data.jsonl", "cluster_field": "doc"}
    for field, out in (("old", "runs/base"), ("new", "runs/cand")):
        project.write_config(base_config(gates={}, dataset=dataset, task={"type": "recorded", "field": field}))
        assert project.run("--out", out).code == 0
    (exact,) = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()["metrics"]
    interval = exact["difference"]["interval"]
    assert interval["method"] == "cluster_t" and interval["clusters"] == 10
    assert exact["difference"]["test"] == "cluster_paired_t"


def test_an_id_numpy_would_confuse_with_another_is_refused(tmp_path):
    rows = rows_with([(True, True)] * 2)
    rows[1]["id"] = "q000\u0000"  # numpy string arrays drop trailing NULs: it would pair as "q000"
    project = two_runs(tmp_path, rows)
    result = project.cli("compare", "runs/base", "runs/cand")
    assert result.code == 2 and "NUL" in result.err and "scores.jsonl:1" in result.err
