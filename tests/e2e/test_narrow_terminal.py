"""Readable at 80 columns: no metric, gate or reason name is ever cut, in a terminal or a CI log (issue 13).

Snapshots: ``EVALGLASS_UPDATE_SNAPSHOTS=1`` rewrites them; review the diff before committing.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.e2e.project import DEFAULT_ROWS, make_project, run_cli

SNAPSHOTS = Path(__file__).parent / "snapshots"
METRICS = {
    "intent_exact_match": {"type": "exact_match", "reference": "expected"},
    "ticket_field_present": {"type": "field_present", "fields": ["ticket"]},
}
GATES = {
    "intent_accuracy_gate": {"metric": "intent_exact_match", "proposed_threshold": 0.7},
    "ticket_field_gate": {"metric": "ticket_field_present", "proposed_threshold": 0.9},
}
NAMES = [*METRICS, *GATES, "approval_stale", "gold_not_validated", "incomplete_measurement", "non_evaluable"]


def narrow_project(tmp_path):
    project = make_project(tmp_path, metrics=METRICS, gates=GATES)
    project.write_rows([*DEFAULT_ROWS, {"id": "ex-9", "output": "yes"}])  # no reference: non_evaluable
    project.write_ledger(
        {
            "version": 1,
            "gates": {
                "intent_accuracy_gate": {"active": True, "threshold": 0.7, "fingerprint": "sha256:" + "0" * 64},
                "ticket_field_gate": {"active": False},
            },
        }
    )
    return project


@pytest.mark.parametrize("columns", [80, 160])
def test_the_run_summary_fits_and_names_everything_whole(tmp_path, columns):
    project = narrow_project(tmp_path)
    result = run_cli("run", "--out", "out", cwd=project.root, env={"COLUMNS": str(columns)})
    assert result.code == 1
    lines = result.out.splitlines()
    assert all(len(line.rstrip()) <= columns for line in lines), max(lines, key=len)
    for name in NAMES:
        assert name in result.out, name
    assert "…" not in result.out.replace("min…max", "").replace(" … ", "")  # no ellipsis cut anywhere
    snapshot = SNAPSHOTS / f"run_{columns}.txt"
    # Fingerprints change with the definition's format, not with the layout: same length, fixed text.
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "f" * 64, "\n".join(line.rstrip() for line in lines) + "\n")
    if os.environ.get("EVALGLASS_UPDATE_SNAPSHOTS"):
        snapshot.write_text(text)
    assert text == snapshot.read_text()


def test_a_wide_terminal_keeps_the_tables(tmp_path):
    project = narrow_project(tmp_path)
    result = run_cli("run", "--out", "out", cwd=project.root, env={"COLUMNS": "160"})
    assert "┃ metric" in result.out and "┃ gate" in result.out
    narrow = run_cli("view", "out", cwd=project.root, env={"COLUMNS": "80"})
    assert "┃" not in narrow.out and "  intent_exact_match\n    value:" in narrow.out
