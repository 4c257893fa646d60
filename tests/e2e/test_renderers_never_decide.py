"""Renderers render, never decide: a scorecard edited consistently with its run record's ledger snapshot (gate,
verdict, CI flag and exit code together, so both still pass their own validators and agree with each other) is
refused by every renderer while ``digests.json`` tells the edit (issue 26); once the digests are rewritten too, it is
past what the files can tell, and JUnit, GitHub annotations, the step summary and the Python API all show it as
edited, each saying in one line that it did not re-derive it. Only `verify`, which re-derives everything from the
recorded scores, catches it then."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml

import evalglass
from tests.e2e.project import make_project
from tests.e2e.test_ci_outputs import in_actions
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_verdicts import approve
from tests.report.test_github import read

# (honest threshold, forged threshold, forged outcome): the run measures 0.75 either way.
FORGERIES = {
    "a fail forged into a pass": (0.8, 0.7, "pass"),
    "a pass forged into a fail": (0.7, 0.8, "fail"),
}


def forge(scorecard: Path, threshold: float, outcome: str) -> None:
    # The run record's ledger snapshot and the ledger text it keeps (with its fingerprint) are edited to match
    # (issue 10: view and load_run refuse a payload that contradicts the snapshot, and a snapshot that is not what
    # the text says); only verify, which anchors the text to the host's ledger file, sees through the edits.
    runrecord = scorecard.parent / "runrecord.json"
    record: dict[str, Any] = json.loads(runrecord.read_text())
    record["ledger"]["gates"]["accuracy"]["threshold"] = threshold
    text = yaml.safe_load(record["ledger_source"])
    text["gates"]["accuracy"]["threshold"] = threshold
    record["ledger_source"] = yaml.safe_dump(text, sort_keys=False)
    record["ledger_fingerprint"] = "sha256:" + hashlib.sha256(record["ledger_source"].encode()).hexdigest()
    runrecord.write_text(json.dumps(record, indent=2))
    card: dict[str, Any] = json.loads(scorecard.read_text())
    decision = card["decision"]
    decision["gates"][0].update(threshold=threshold, outcome=outcome)
    # A consistent forgery also drops the failing gate's below_threshold reason, or gives a failing one its own.
    decision["gates"][0]["reasons"] = (
        []
        if outcome == "pass"
        else [
            {
                "code": "below_threshold",
                "message": f"the value 0.75 is below the approved threshold (needs ≥ {threshold})",
            }
        ]
    )
    decision.update(verdict=outcome, ci_should_fail=outcome == "fail", exit_code=int(outcome == "fail"))
    scorecard.write_text(json.dumps(card, indent=2))


@pytest.mark.parametrize(("honest", "forged", "outcome"), FORGERIES.values(), ids=list(FORGERIES))
def test_every_renderer_refuses_the_edit_the_digests_tell_and_says_what_it_did_not_check(
    tmp_path, monkeypatch, honest, forged, outcome
):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=honest))
    honest_run = project.run("--out", "run")
    assert honest_run.code == (1 if outcome == "pass" else 0), honest_run.err
    forge(project.root / "run" / "scorecard.json", forged, outcome)
    monkeypatch.chdir(project.root)

    refused = in_actions(project, "view", "run", "--junit", "junit.xml", "--github")
    assert refused.code == 2 and "is not the file digests.json lists" in refused.err, refused.err
    assert not (project.root / "junit.xml").exists() and not (project.root / "summary.md").exists()
    with pytest.raises(evalglass.SetupError, match="does not add up"):
        evalglass.load_run("run")

    reseal(project.root / "run")
    viewed = in_actions(project, "view", "run", "--junit", "junit.xml", "--github")
    assert viewed.code == 0, viewed.err
    suite = ET.parse(project.root / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    properties = {item.get("name"): item.get("value") for item in suite.iter("property")}
    assert properties["evalglass.verdict"] == outcome
    assert suite.get("failures") == ("1" if outcome == "fail" else "0")
    assert "digests (unsigned)" in properties["evalglass.not_checked"]
    annotations = [read(line) for line in viewed.out.splitlines() if line.startswith("::")]
    assert [properties["title"] for _, properties, _ in annotations] == (
        ["EvalGlass gate accuracy failed"] if outcome == "fail" else []
    ) + ["EvalGlass: not re-derived"]
    summary = (project.root / "summary.md").read_text()
    assert summary.startswith(f"## {'❌' if outcome == 'fail' else '✅'} EvalGlass: {outcome}")
    assert "evalglass verify run" in summary.strip().splitlines()[-1]

    result = evalglass.load_run("run")
    assert result.not_checked is not None and "digests (unsigned)" in result.not_checked
    assert (result.verdict, result.exit_code, result.gate("accuracy").threshold) == (
        outcome,
        int(outcome == "fail"),
        forged,
    )

    verified = project.cli("verify", "run", "--format", "json")
    assert verified.code == 1
    fields = {item["field"]: (item["recorded"], item["derived"]) for item in verified.json()["findings"]}
    # The ledger text the run kept was rewritten with its fingerprint, so the run adds up in itself: the host's
    # ledger file (the anchor) is what tells the forgery.
    assert fields["anchor.ledger"][1].startswith("evals/authority.yaml: sha256:"), fields
    report = evalglass.verify("run")
    assert not report.ok and {item.field for item in report.findings} == set(fields)
