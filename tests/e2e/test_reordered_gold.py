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


def _without_output(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{key: value for key, value in row.items() if key != "output"} for row in rows]


def test_verify_of_an_honest_run_says_a_reordered_dataset_is_not_re_scored_never_a_finding(tmp_path):
    """Its gold being order-free, a reordered dataset is "the run's gold" to `verify` too, which re-scores line by
    line against what the run kept in the order it read: it used to report every such honest run NOT verified (exit
    1, "the kept outputs are not of this dataset"). Now it says the examples are in another order and re-scores
    nothing from them, as for any file that is not the run's (a finding only under --strict); the file the run read,
    given back, re-scores exactly. Recorded outputs in their own file, in the dataset file, and a python lane's."""
    shuffled = list(ROWS)
    random.Random(3).shuffle(shuffled)
    setups = {
        "own_file": ({"type": "recorded", "field": "output", "path": "outputs.jsonl"}, _without_output),
        "in_dataset": ({"type": "recorded", "field": "output"}, list),
        "lane": ({"type": "python", "function": "app.py:answer"}, _without_output),
    }
    for name, (task, rows_of) in setups.items():
        (tmp_path / name).mkdir()
        project = make_project(tmp_path / name, task=task)
        answers = {row["id"]: row["output"] for row in ROWS}
        (project.evals / "outputs.jsonl").write_text(
            "".join(json.dumps({"id": key, "output": value}) + "\n" for key, value in answers.items())
        )
        (project.evals / "app.py").write_text(
            f"ANSWERS = {answers!r}\ndef answer(example):\n    return ANSWERS[example['id']]\n"
        )
        project.write_rows(rows_of(ROWS))
        approve_as_is(project, 0.7, ["accuracy"])
        assert project.run("--out", "out").code == 0
        assert project.cli("verify", "out").code == 0

        project.write_rows(rows_of(shuffled))  # the same gold (the approved gate still decides), in another order
        assert decided(project)[1]["outcome"] == "pass"
        checked = project.cli("verify", "out")
        assert checked.code == 0, (name, checked.out)  # on main: 1, "the kept outputs are not of this dataset"
        assert "re-scored: none" in checked.out and "another order" in checked.out, (name, checked.out)
        assert project.cli("verify", "out", "--strict").code == 1  # the dataset beside the config is not the run's

        project.write_rows(rows_of(ROWS))  # the file the run read: re-scored score by score
        checked = project.cli("verify", "out")
        assert checked.code == 0 and "every score as recorded" in checked.out, (name, checked.out)


def test_a_baseline_recorded_under_the_old_scheme_is_not_comparable_and_the_message_says_why(tmp_path):
    """A run recorded before scheme 2 holds a gold fingerprint of the records in file order, which no run since
    matches: once the dataset file's bytes differ (new recorded outputs), comparing with it is refused as other
    gold (never compared as the same), and the message says why and what to do, not only that the gold differs."""
    from tests.e2e.test_forgery import _reseal

    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "proposed_threshold": 0.5}})
    project.write_rows(ROWS)
    assert project.run("--out", "runs/base").code == 0
    scheme_1 = b",".join(
        json.dumps({k: v for k, v in row.items() if k != "output"}, separators=(",", ":")).encode() for row in ROWS
    )
    for name in ("runrecord.json", "scorecard.json"):  # as an older EvalGlass wrote them
        path = tmp_path / "runs" / "base" / name
        written = json.loads(path.read_text())
        written["dataset"]["gold_fingerprint"] = "sha256:" + hashlib.sha256(scheme_1).hexdigest()
        path.write_text(json.dumps(written, indent=2) + "\n")
    _reseal(tmp_path / "runs" / "base")

    project.write_rows([{**row, "output": "yes"} for row in ROWS])  # new outputs: the file's bytes differ
    assert project.run("--out", "runs/cand").code == 0
    compared = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert compared.code == 0, compared.err
    (message,) = [item["message"] for item in compared.json()["incomparable"] if item["code"] == "gold"]
    assert message.startswith("the dataset's gold differs")
    assert "before 2026-12-05" in message and "in file order" in message, message  # on main: no why
