"""A gate blocked because examples were not measured says what measuring them would decide.

Excluded examples block an active gate (``incomplete_measurement``): never guessed. But "cannot tell yet" owes the
host the evidence that would decide it: whatever the unmeasured examples score, where the value would land, and
whether that is a pass either way, a fail either way, or truly open. Without it every incomplete run reads alike,
whether one unreadable line could move the verdict or not.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.project import make_project
from tests.e2e.test_verdicts import approve


def _reason(card: dict) -> str:
    (gate,) = card["decision"]["gates"]
    assert gate["outcome"] == "blocked"
    (reason,) = [r for r in gate["reasons"] if r["code"] == "incomplete_measurement"]
    return str(reason["message"])


@pytest.mark.parametrize(
    ("right", "wrong", "threshold", "says"),
    [
        (36, 4, 0.7, "0.878 to 0.902, which meets the threshold 0.7 either way: measuring them decides a pass"),
        (20, 20, 0.7, "0.488 to 0.512, which misses the threshold 0.7 either way: measuring them decides a fail"),
        (28, 12, 0.7, "0.683 to 0.707, either side of the threshold 0.7: only measuring them decides"),
    ],
)
def test_an_incomplete_gate_says_what_measuring_the_rest_would_decide(
    tmp_path, right: int, wrong: int, threshold: float, says: str
) -> None:
    project = make_project(tmp_path)
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes" if i < right else "no"} for i in range(right + wrong)]
    project.write_rows(rows, extra_lines=["{not json"])
    project.write_ledger(approve(project, threshold=threshold))

    result = project.run("--format", "json")

    assert result.code == 1
    message = _reason(result.json())
    assert message.startswith(f"1 of {right + wrong + 1} examples were not measured validly (1 error)"), message
    assert says in message, message
    assert json.dumps(result.json()["decision"]["verdict"]) == '"blocked"'
