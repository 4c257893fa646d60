"""A value equal to its approved threshold but for float rounding meets it (no false red), through the CLI.

Scores written in decimal average in binary: 0, 0 and 0.3 average to 0.09999999999999999, and a gate at 0.1 used to
fail with "the value 0.1 is below the approved threshold (needs >= 0.1)". A real shortfall, however small in
decimal terms, still fails; verify re-derives the same outcome.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.project import Project, make_project
from tests.e2e.test_verdicts import approve

GRADER = "def value(output):\n    return float(output)\n"


def graded_project(tmp_path: Any, values: list[str], *, threshold: float, direction: str) -> Project:
    project = make_project(
        tmp_path,
        metrics={"quality": {"type": "python", "function": "grader.py:value", "scale": {"min": 0, "max": 1}}},
        gates={"accuracy": {"metric": "quality", "direction": direction, "proposed_threshold": threshold}},
    )
    (project.evals / "grader.py").write_text(GRADER)
    project.write_rows([{"id": f"ex-{i}", "output": value} for i, value in enumerate(values)])
    project.write_ledger(approve(project, threshold=threshold))
    return project


@pytest.mark.parametrize(
    ("values", "threshold", "direction"),
    [
        (["0", "0", "0.3"], 0.1, "higher_is_better"),  # mean 0.09999999999999999
        (["0.1", "0.2"], 0.15, "lower_is_better"),  # mean 0.15000000000000002
        (["0.6", "0.8", "0.7"], 0.7, "higher_is_better"),  # mean 0.6999999999999998
    ],
)
def test_a_value_on_the_threshold_but_for_rounding_passes(tmp_path, values, threshold, direction):
    project = graded_project(tmp_path, values, threshold=threshold, direction=direction)
    result = project.run("--format", "json")
    card = result.json()
    gate = card["decision"]["gates"][0]
    assert (result.code, gate["outcome"], gate["reasons"]) == (0, "pass", []), (gate, result.err)
    assert gate["value"] != threshold  # the float value really is off by rounding: the case this test is about
    verified = project.cli("verify", str(project.last_run()))
    assert verified.code == 0, verified.out + verified.err


@pytest.mark.parametrize(
    ("values", "threshold", "direction"),
    [
        (["0", "0", "0.2999999"], 0.1, "higher_is_better"),  # 0.09999997: short in the eighth digit
        (["0.1", "0.2000001"], 0.15, "lower_is_better"),
    ],
)
def test_a_real_shortfall_however_small_still_fails(tmp_path, values, threshold, direction):
    project = graded_project(tmp_path, values, threshold=threshold, direction=direction)
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert (result.code, gate["outcome"]) == (1, "fail"), gate
    assert gate["reasons"][0]["code"] == "below_threshold"


# Margin 0: a comparative gate compares the paired difference with exactly 0. Each example's value is the mean of its
# three samples' recall (1/10, 2/10, 3/10 of ten gold items). The baseline recorded the samples in one order, the
# candidate in the other: the same answers, but 0.3 + 0.2 + 0.1 is 0.6 and 0.1 + 0.2 + 0.3 is 0.6000000000000001,
# so the difference comes out ≈ -5.6e-17 and an exact comparison with 0 failed an unchanged candidate.
GOLD = [f"g{index}" for index in range(10)]
SAMPLES = [GOLD[:1], GOLD[:2], GOLD[:3]]


def margin_zero_project(tmp_path: Any, candidate: list[list[list[str]]]) -> Project:
    project = make_project(tmp_path, gates={})
    project.write_rows(
        [
            {"id": f"q{index}", "expected": GOLD, "old": SAMPLES[::-1], "new": samples}
            for index, samples in enumerate(candidate)
        ]
    )

    def config(field: str, gates: dict[str, Any]) -> dict[str, Any]:
        from tests.e2e.project import base_config

        return base_config(
            task={"type": "recorded", "field": field, "samples": True, "epochs": 3},
            metrics={"recall": {"type": "set_overlap", "reference": "expected", "measure": "recall"}},
            gates=gates,
        )

    project.write_config(config("old", {}))
    assert project.run("--out", "runs/base").code == 0
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    project.write_config(config("new", {"no-regression": {"metric": "recall", "compare_to": "main"}}))
    probe = project.run("--out", "runs/probe", "--format", "json").json()
    (gate,) = probe["decision"]["gates"]
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": probe["dataset"]["gold_fingerprint"]}},
            "baselines": {"main": {"run": "../runs/base", "fingerprint": fingerprint}},
            "gates": {"no-regression": {"active": True, "fingerprint": gate["fingerprint"], "margin": 0}},
        }
    )
    return project


def test_an_unchanged_candidate_summed_in_another_order_passes_at_margin_zero(tmp_path):
    project = margin_zero_project(tmp_path, [SAMPLES] * 4)
    result = project.run("--out", "runs/cand", "--format", "json")
    (gate,) = result.json()["decision"]["gates"]
    assert (result.code, gate["outcome"], gate["reasons"]) == (0, "pass", []), (gate, result.err)
    assert gate["threshold"] == 0 and gate["value"] != 0  # the difference really is float noise, not 0
    assert -1e-15 < gate["value"] < 0
    verified = project.cli("verify", "runs/cand")
    assert verified.code == 0, verified.out + verified.err


def test_a_real_drop_still_fails_at_margin_zero(tmp_path):
    """One sample of one example recalls one gold item fewer: a real drop of 1/120, however small, fails."""
    worse = [SAMPLES] * 3 + [[GOLD[:1], GOLD[:2], GOLD[:2]]]
    project = margin_zero_project(tmp_path, worse)
    result = project.run("--out", "runs/cand", "--format", "json")
    (gate,) = result.json()["decision"]["gates"]
    assert (result.code, gate["outcome"]) == (1, "fail"), gate
    assert gate["reasons"][0]["code"] == "below_threshold"
