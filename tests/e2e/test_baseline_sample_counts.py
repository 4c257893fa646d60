"""A comparative gate under a reducer whose value moves with the samples per example (max, min, majority,
at_least_k) is ``not_comparable`` with a baseline reduced from another number of samples: ``max`` over three samples
is not ``max`` over two, so the paired difference would measure the epochs, not the change. The message gives both
counts. Under ``mean`` more samples are only precision, and the runs stay comparable. Through the real CLI: a
recorded baseline (field `old`) and candidate (field `new`) in one dataset, samples per example declared.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project

GATE = "no-regression"


def rows(base_samples: int, candidate_samples: int) -> list[dict[str, Any]]:
    """Thirty examples; the baseline's and the candidate's samples answer alike (one right answer each)."""
    return [
        {
            "id": f"q{i:02d}",
            "expected": "a",
            "old": ["a", *["b"] * (base_samples - 1)],
            "new": ["a", *["b"] * (candidate_samples - 1)],
        }
        for i in range(30)
    ]


def config(field: str, samples: int, reducer: str, gates: dict[str, Any]) -> dict[str, Any]:
    return base_config(
        task={"type": "recorded", "field": field, "samples": True, "epochs": samples},
        metrics={"exact": {"type": "exact_match", "reference": "expected", "reducer": reducer}},
        gates=gates,
    )


def setup(tmp_path, base_samples: int, candidate_samples: int, reducer: str = "max") -> Project:
    project = make_project(tmp_path, gates={})
    project.write_rows(rows(base_samples, candidate_samples))
    project.write_config(config("old", base_samples, reducer, {}))
    assert project.run("--out", "runs/base").code == 0
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    gates = {GATE: {"metric": "exact", "compare_to": "main"}}
    project.write_config(config("new", candidate_samples, reducer, gates))
    probe = project.run("--out", "runs/probe", "--format", "json")
    assert probe.code in (0, 1), probe.err
    (gate,) = probe.json()["decision"]["gates"]
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": probe.json()["dataset"]["gold_fingerprint"]}},
            "baselines": {"main": {"run": "../runs/base", "fingerprint": fingerprint}},
            "gates": {GATE: {"active": True, "fingerprint": gate["fingerprint"], "margin": 0.05}},
        }
    )
    return project


@pytest.mark.parametrize("reducer", ["max", "majority"])
def test_a_baseline_of_other_sample_counts_is_not_comparable_under_a_count_reducer(tmp_path, reducer) -> None:
    project = setup(tmp_path, base_samples=3, candidate_samples=2, reducer=reducer)
    # `preflight` says so before anything is scored, from the count the config declares.
    preflight = project.cli("preflight", "--format", "json")
    assert preflight.code == 1, preflight.err
    (previewed,) = preflight.json()["gates"]
    (said,) = [reason["message"] for reason in previewed["reasons"] if reason["code"] == "not_comparable"]
    assert "from 3 sample(s) per example in the baseline and 2 in this run" in said
    result = project.run("--out", "runs/cand", "--format", "json")
    assert result.code == 1, result.err
    (gate,) = result.json()["decision"]["gates"]
    assert gate["outcome"] == "blocked"
    assert [reason["code"] for reason in gate["reasons"]] == ["not_comparable"]
    message = gate["reasons"][0]["message"]
    assert message.startswith(f"sample_count: metric 'exact' is reduced by {reducer}, whose value moves with")
    assert "from 3 sample(s) per example in the baseline and 2 in the candidate (30 of 30 paired" in message
    assert project.cli("verify", "runs/cand").code == 0  # re-derived alike
    shown = project.cli("view", "runs/cand")  # every reader shows the reason, and the run adds up
    assert shown.code == 0 and "sample_count" in shown.out and "blocked" in shown.out, shown.out + shown.err
    assert "baseline_counts" in (tmp_path / "runs/cand/runrecord.json").read_text()
    # `evalglass compare` says the same of the two runs.
    compared = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    (metric,) = compared["metrics"]
    assert [found["code"] for found in metric["incomparable"]] == ["sample_count"]
    shown = project.cli("compare", "runs/base", "runs/cand")
    assert "3 sample(s) per example in the baseline and 2 in the candidate" in " ".join(shown.out.split()), shown.out


def test_the_same_sample_counts_compare(tmp_path) -> None:
    project = setup(tmp_path, base_samples=3, candidate_samples=3)
    result = project.run("--out", "runs/cand", "--format", "json")
    (gate,) = result.json()["decision"]["gates"]
    assert (result.code, gate["outcome"], gate["reasons"]) == (0, "pass", [])


def test_under_mean_other_sample_counts_are_precision_and_compare(tmp_path) -> None:
    project = setup(tmp_path, base_samples=3, candidate_samples=2, reducer="mean")
    result = project.run("--out", "runs/cand", "--format", "json")
    (gate,) = result.json()["decision"]["gates"]
    assert "not_comparable" not in [reason["code"] for reason in gate["reasons"]]
    assert "baseline_counts" not in (tmp_path / "runs/cand/runrecord.json").read_text()
