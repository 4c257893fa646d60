"""Reordering the dataset's examples (sorting the file, merging shards, exporting again) changes nothing an approved
gate measures: the gold fingerprint no longer counts the order (scheme 2, ``engine.datasets.gold``), so the gate
decides as approved. Before, the validation went stale and the approved gate blocked (exit 1, ``gold_stale``), a red
no data showed. Any edit of what gold covers still makes it stale, and a validation of scheme 1 blocks once, saying
why. Through the real CLI."""

from __future__ import annotations

import hashlib
import json
import random

from tests.e2e.project import approve_as_is, make_project
from tests.e2e.test_examples_binding import decided, reasons

ROWS = [
    {"id": f"q{i:03d}", "question": f"q {i}", "expected": "yes", "output": "yes" if i % 5 else "no"} for i in range(40)
]


def test_a_reordered_dataset_keeps_an_approved_gate_deciding(tmp_path):
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    approve_as_is(project, 0.7, ["accuracy"])  # 32 of 40 right
    code, gate = decided(project)
    assert (code, gate["outcome"], gate["value"]) == (0, "pass", 0.8)

    shuffled = list(ROWS)
    random.Random(7).shuffle(shuffled)
    project.write_rows(shuffled)
    code, gate = decided(project)
    assert (code, gate["outcome"], gate["value"]) == (0, "pass", 0.8), reasons(gate)  # on main: 1, gold_stale

    # An edited reference, a dropped example, an added one, an edited id: stale, in any order.
    for changed in (
        [{**shuffled[0], "expected": "no"}, *shuffled[1:]],
        shuffled[1:],
        [*shuffled, {**shuffled[3], "id": "q998"}],
        [{**shuffled[0], "id": "q999"}, *shuffled[1:]],
    ):
        project.write_rows(changed)
        code, gate = decided(project)
        assert (code, gate["outcome"], reasons(gate)) == (1, "blocked", ["gold_stale"])


def test_a_validation_of_the_old_scheme_blocks_once_and_says_why(tmp_path):
    """A ledger written before scheme 2 holds the SHA-256 of the records joined by `,` in file order: it never
    matches, so the gate blocks (never passes silently) and the message says a re-validation is due."""
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    approve_as_is(project, 0.7, ["accuracy"])
    ledger = json.loads(json.dumps(__import__("yaml").safe_load((project.evals / "authority.yaml").read_text())))
    scheme_1 = b",".join(
        json.dumps({k: v for k, v in row.items() if k != "output"}, separators=(",", ":")).encode() for row in ROWS
    )
    ledger["datasets"]["suite"]["fingerprint"] = "sha256:" + hashlib.sha256(scheme_1).hexdigest()
    project.write_ledger(ledger)
    code, gate = decided(project)
    assert (code, gate["outcome"], reasons(gate)) == (1, "blocked", ["gold_stale"])
    assert "stopped counting the examples' order" in gate["reasons"][0]["message"]
