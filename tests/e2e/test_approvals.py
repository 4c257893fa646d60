"""Approvals without copy-paste of hashes: explain prints the entry with its definition, and a stale approval says
what changed, field by field (issue 13). The tool still never writes the ledger."""

from __future__ import annotations

import yaml

from tests.e2e.project import base_config, make_project


def pasted_entry(project) -> dict:
    """What a host does: paste explain's entry (with its definition block) into the ledger, filling in the name."""
    entry = project.cli("explain", "accuracy", "--format", "json").json()[0]["ledger_entry"]
    ledger = yaml.safe_load(entry.replace("<your name>", "host"))
    return {"version": 1, **ledger}


def test_the_pasted_entry_with_its_definition_activates_the_gate(tmp_path):
    project = make_project(tmp_path)
    project.run()
    ledger = pasted_entry(project)
    definition = ledger["gates"]["accuracy"]["definition"]
    assert definition["metric"]["reference"] == "expected" and definition["gate"]["metric"] == "exact"
    before = (project.evals / "authority.yaml").exists() and (project.evals / "authority.yaml").read_text()
    project.write_ledger(ledger)
    card = project.run("--format", "json").json()
    assert card["decision"]["verdict"] == "pass"
    assert before == "version: 1\n"  # explain printed; it wrote nothing


def test_a_stale_approval_says_what_changed_field_by_field(tmp_path):
    project = make_project(tmp_path)
    project.run()
    project.write_ledger(pasted_entry(project))
    project.write_config(
        base_config(metrics={"exact": {"type": "exact_match", "reference": "expected", "normalize": {"case": True}}})
    )
    assert project.run().code == 1
    out = project.cli("explain", "accuracy").out
    assert "approval_stale" in out
    assert "Changed since approval: metric.normalize.case: false → true." in out


def test_a_stale_approval_without_a_definition_says_it_cannot_show_the_change(tmp_path):
    project = make_project(tmp_path)
    project.run()
    ledger = pasted_entry(project)
    del ledger["gates"]["accuracy"]["definition"]
    project.write_ledger(ledger)
    project.write_config(base_config(gates={"accuracy": {"metric": "exact", "direction": "lower_is_better"}}))
    project.run()
    assert "carries no `definition:`" in project.cli("explain", "accuracy").out


def test_a_definition_that_does_not_hash_to_the_fingerprint_is_refused(tmp_path):
    project = make_project(tmp_path)
    project.run()
    ledger = pasted_entry(project)
    ledger["gates"]["accuracy"]["definition"]["metric"]["reference"] = "something_else"
    project.write_ledger(ledger)
    result = project.run()
    assert result.code == 2 and "does not hash to the approved `fingerprint`" in result.err
