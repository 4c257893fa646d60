"""Zero spread is not certainty (gap: a gate between two variants decided by three examples whose paired
differences were all equal, because the Student-t interval of identical values is a point). Every interval of a
bounded score's mean or difference keeps at least the floor of ``stats._common.range_floor``: the share of examples
that might score otherwise is bounded as a proportion never seen in n (Wilson's bound for 0 of n), and it may lie
anywhere in the score's range."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_variants_cli import approve, card_of, gate, variant_project

#: Three examples both variants answer alike (`good` and `twin` return the reference): every difference is 0.
THREE = [{"id": f"ex-{i}", "expected": "yes"} for i in range(3)]
VARIANTS = {"good": {}, "twin": {"function": "app.py:twin"}}


def twin_gate(threshold: float) -> dict[str, Any]:
    return {
        "twin-vs-good": {
            "metric": "exact",
            "variant": "twin",
            "compare_to_variant": "good",
            "rule": "lower_bound",
            "proposed_threshold": threshold,
        }
    }


@pytest.mark.parametrize("threshold", [-0.05, 0.05], ids=["unearned-green", "unearned-red"])
def test_three_identical_differences_leave_a_gate_between_variants_undecided(tmp_path: Path, threshold: float) -> None:
    """Three pairs that agree exactly decided the gate both ways: pass at a margin of -0.05 (the interval [0, 0]
    cleared it) and fail at +0.05 (the whole interval below it). Neither is earned: undecided, blocked."""
    project = variant_project(tmp_path, variants=VARIANTS, gates=twin_gate(threshold))
    project.write_rows(THREE)
    project.run()
    approve(project, "twin-vs-good")
    code, card = card_of(project)
    decided = gate(card, "twin-vs-good")
    assert code == 1 and decided["outcome"] == "blocked", decided
    assert decided["reasons"][0]["code"] == "undecided", decided
    difference = next(metric for metric in card["metrics"] if metric["name"] == "exact@twin-vs-good")
    interval = difference["estimate"]["interval"]
    assert interval["point"] == 0.0 and interval["low"] < -0.4 and interval["high"] > 0.4, interval
    assert project.cli("verify", str(project.last_run())).code == 0


def test_many_identical_differences_still_decide(tmp_path: Path) -> None:
    """The floor shrinks as 1/n: sixty examples that agree exactly decide a margin of -0.1."""
    project = variant_project(tmp_path, variants=VARIANTS, gates=twin_gate(-0.1))
    project.write_rows([{"id": f"ex-{i}", "expected": "yes"} for i in range(60)])
    project.run()
    approve(project, "twin-vs-good")
    code, card = card_of(project)
    assert code == 0 and gate(card, "twin-vs-good")["outcome"] == "pass", gate(card, "twin-vs-good")
