"""An approval survives a harmless rewrite of the config: comments, key order, flow or block style, quoting, and the
order (or a repeat) of a list the tool reads as a set (a gate's `tolerate`, an `enum`'s `values`, a `regex`'s
`flags`, a `field_present`'s `fields`), through the CLI. Before, reordering such a list made the approval stale: the
gate blocked (`approval_stale`) on a config that measures exactly what was approved. A change of meaning (a value
added to the set) still stales it."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import Project, approve_as_is, make_project

ROWS = [
    {"id": "a", "expected": "yes", "output": {"label": "yes", "note": "Fine"}},
    {"id": "b", "expected": "no", "output": {"label": "no", "note": "fine"}},
    {"id": "c", "output": {"label": "yes", "note": "FINE"}},  # no reference: exact is non_evaluable (tolerated)
]

APPROVED = """\
version: 1
dataset: {name: suite, path: data.jsonl}
task: {type: recorded, field: output}
metrics:
  exact: {type: exact_match, reference: expected, field: label}
  label: {type: enum, field: label, values: ["yes", "no", "maybe"]}
  noted: {type: regex, field: note, pattern: "^fine$", flags: [ignorecase, multiline]}
  shaped: {type: field_present, fields: [label, note]}
gates:
  accuracy: {metric: exact, proposed_threshold: 0.5, tolerate: [non_evaluable, not_applicable]}
  labelled: {metric: label, proposed_threshold: 1.0}
  noted: {metric: noted, proposed_threshold: 1.0}
  shaped: {metric: shaped, proposed_threshold: 1.0}
"""

#: The same config as a person might rewrite it: block style, comments, other key orders, quoting, and every set
#: listed in another order, one value twice.
REWRITTEN = """\
# Evals for the support bot.
version: 1

gates:
  shaped:
    proposed_threshold: 1.0
    metric: shaped
  noted:
    metric: noted   # the note says fine
    proposed_threshold: 1.0
  labelled:
    proposed_threshold: 1.0
    metric: label
  accuracy:
    tolerate:
      - not_applicable
      - non_evaluable
      - not_applicable
    metric: exact
    proposed_threshold: 0.5

metrics:
  shaped:
    fields: [note, label]
    type: field_present
  noted:
    flags: [multiline, ignorecase]
    pattern: '^fine$'
    field: note
    type: regex
  label:
    values: [maybe, "no", "yes", "no"]
    field: label
    type: enum
  exact:
    reference: expected
    type: "exact_match"
    field: label

task:
  field: output
  type: recorded
dataset:
  path: data.jsonl
  name: suite
"""

GATES = ("accuracy", "labelled", "noted", "shaped")


def _approved(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    (project.evals / "evalglass.yaml").write_text(APPROVED)
    approve_as_is(project, 0.5, GATES)
    return project


def _outcomes(project: Project) -> dict[str, tuple[str, list[str]]]:
    result = project.run("--format", "json")
    gates = result.json()["decision"]["gates"]
    return {gate["name"]: (gate["outcome"], [reason["code"] for reason in gate["reasons"]]) for gate in gates}


def test_a_harmless_rewrite_of_the_config_keeps_every_approval(tmp_path: Path) -> None:
    project = _approved(tmp_path)
    before = _outcomes(project)
    assert before == {gate: ("pass", []) for gate in GATES}, before
    (project.evals / "evalglass.yaml").write_text(REWRITTEN)
    assert _outcomes(project) == before


def test_a_set_that_changes_meaning_stales_the_approval(tmp_path: Path) -> None:
    project = _approved(tmp_path)
    widened = APPROVED.replace('values: ["yes", "no", "maybe"]', 'values: ["yes", "no", "maybe", "unsure"]')
    (project.evals / "evalglass.yaml").write_text(widened.replace("tolerate: [non_evaluable, not_applicable]", ""))
    found = _outcomes(project)
    assert found["labelled"] == ("blocked", ["approval_stale"]), found
    assert found["accuracy"][0] == "blocked" and "approval_stale" in found["accuracy"][1], found
    assert found["noted"] == found["shaped"] == ("pass", [])
