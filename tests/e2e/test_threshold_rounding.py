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
