"""A project whose run exercises every part of the HTML report: a gate with reasons, excluded scores of several
states, diagnostics, and an output that tries to run a script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.project import Project, make_project
from tests.e2e.test_verdicts import approve

#: Attacker-controlled output: if any of it ran, window.__pwned would be set.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"></pre></details></li>'


def report_rows(n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(1, n + 1):
        row: dict[str, Any] = {"id": f"ex-{i:04d}", "question": f"question number {i}", "expected": "yes"}
        row["output"] = "yes" if i % 3 else "no"
        rows.append(row)
    rows[1]["output"] = HOSTILE
    del rows[4]["expected"]  # reference_missing: non_evaluable, which the gate does not tolerate
    rows[6]["output"] = "needle-in-a-haystack"
    return rows


def report_project(tmp_path: Path, n: int = 12, *, approved: bool = True) -> Project:
    """A project with a run in ``out/``: gate `accuracy` is blocked (incomplete measurement) when approved."""
    project = make_project(
        tmp_path,
        metrics={
            "exact": {"type": "exact_match", "reference": "expected", "description": "Answer equals the reference."},
            "affirmative": {"type": "regex", "pattern": "^yes$"},
        },
    )
    project.write_rows(report_rows(n))
    if approved:
        project.write_ledger(approve(project, threshold=0.5))
    project.run("--out", "out")
    return project
