"""A run record's own fields may explain why it was decided as it was, never make it green (core/recordrules.py).

A record without a later rule's marker (`judge_gates: every`, `judge_calibrations: approved`, an endpoint per judge
in `judge_endpoints`, `gold_gates: every` beside a gate on a metric without a reference) claims it was decided before that rule, and is re-derived so. The attack: a run the host's
ledger blocks under the current rules, its marker deleted from runrecord.json and the rest rewritten to match, the
run folder anchored to the host's own config and ledger. `verify` (anchored, unsigned) must not say verified, and no
reader may show it: each names the marker, the rule and the gate the current rules block. An honest old run as green
under the current rules as recorded keeps verifying.

Through the real CLI against the fake OpenAI server (conftest): the lanes echo the question, the judge grades from a
`grade=N` marker in it. The gate is on a variant's judge metric, so each of the three rules decides it.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.core.recordrules import LaterRule

from .conftest import LiveProject, calibration_pin, evalglass

ROWS = [{"id": f"q{i}", "question": f"question {i} grade={4 if i % 2 else 5}"} for i in range(6)]
LABELS = [{"id": f"l{i}", "question": "q", "output": f"answer grade={g}", "label": g} for i, g in enumerate([1, 2] * 6)]
GATE = "judged"
#: The rules a judge's standing selects (this project's); a check metric's unbound code has its own end-to-end proof
#: in tests/e2e/test_check_metric_binding.py, the samples per example theirs in tests/e2e/test_sample_count_binding.py,
#: where a majority tie goes theirs in tests/e2e/test_majority_ties.py (a baseline's samples per example: unit tests in
#: tests/core/test_recordrules.py, the rule through the CLI in tests/e2e/test_baseline_sample_counts.py).
JUDGE_RULES = tuple(
    rule
    for rule in LaterRule
    if rule
    not in (
        LaterRule.CHECK_CODE_BINDING,
        LaterRule.SAMPLES_BINDING,
        LaterRule.UNFAVOURABLE_TIES,
        LaterRule.COMPARED_COUNTS,
    )
)


def _gate(out: str) -> dict[str, Any]:
    return next(gate for gate in json.loads(out)["decision"]["gates"] if gate["name"] == GATE)


def _green_project(project: LiveProject) -> dict[str, Any]:
    """A gate on variant a's judge metric, approved with everything the current rules need (the judge's endpoint,
    its calibration record approved by fingerprint): the host's full ledger."""
    project.write(
        ROWS,
        metrics={"quality": project.judge(api_key_env=None)},
        gates={GATE: {"metric": "quality", "variant": "a"}},
        variants={"a": {"model": "app-a"}, "b": {"model": "app-b"}},
    )
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in LABELS))
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    return {
        "gates": {
            GATE: {
                "active": True,
                "threshold": 3.0,
                "fingerprint": project.gate_fingerprint(GATE),
                "judge_endpoint": project.judge_endpoint("quality"),
            }
        },
        "judges": {"quality": {"min_agreement": 0.5, "calibration": calibration_pin(calibrated.out)}},
        "datasets": project.validated_gold(),
    }


def _loosened(full: dict[str, Any], rule: LaterRule | None) -> dict[str, Any]:
    """The host's ledger lacking what ``rule`` added (None: the full ledger): under the current rules the gate is
    blocked, under the rules from before ``rule`` it passes."""
    ledger = copy.deepcopy(full)
    if rule is LaterRule.EVERY_JUDGED_GATE:
        del ledger["judges"]  # a gate on a variant's judge did not stand on the judge's calibration
    elif rule is LaterRule.APPROVED_CALIBRATION:
        del ledger["judges"]["quality"]["calibration"]  # any calibration record found counted
    elif rule is LaterRule.ENDPOINT_BINDING:
        del ledger["gates"][GATE]["judge_endpoint"]  # where the judge is served was not bound
    elif rule is LaterRule.EXAMPLES_BINDING:
        del ledger["datasets"]  # a gate on a metric without a reference did not stand on the gold
    return ledger


#: What the current rules block the gate with when the ledger lacks what each rule added.
BLOCKED_BY = {
    LaterRule.EVERY_JUDGED_GATE: "judge_uncalibrated",
    LaterRule.APPROVED_CALIBRATION: "calibration_unapproved",
    LaterRule.ENDPOINT_BINDING: "judge_endpoint_unbound",
    LaterRule.EXAMPLES_BINDING: "gold_not_validated",
}


def _claim_older(folder: Path, project: LiveProject, ledger: dict[str, Any], markers: tuple[LaterRule, ...]) -> None:
    """Rewrite ``folder`` consistently as a run decided under ``ledger`` (the host's, written to authority.yaml) by
    an EvalGlass from before ``markers``' rules: the ledger snapshot, the markers deleted, the digests resealed
    (unsigned). The scorecard and report stay the green ones the older rules re-derive."""
    from evalglass.core.runrecord import RunRecord
    from evalglass.engine.runs.artifacts import model_bytes
    from evalglass.engine.spec.ledger import parse_ledger

    source = yaml.safe_dump(ledger, sort_keys=False)
    (project.root / "authority.yaml").write_text(source)
    path = folder / "runrecord.json"
    record = json.loads(path.read_text())
    record["ledger_source"] = source
    record["ledger_fingerprint"] = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    parsed = parse_ledger(source.encode(), Path(record["ledger_path"])).ledger
    record["ledger"] = parsed.model_dump(mode="json")
    for marker in markers:
        record.pop(marker.value, None)
    path.write_bytes(model_bytes(RunRecord.model_validate(record).model_dump(mode="json")))
    digests = json.loads((folder / "digests.json").read_text())
    digests["files"]["runrecord.json"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "digests.json").write_text(json.dumps(digests))


def _verify(project: LiveProject, folder: Path) -> Any:
    return evalglass(
        "verify", str(folder), "--config", "evalglass.yaml", "--ledger", "authority.yaml", cwd=project.root
    )


@pytest.mark.parametrize("rule", JUDGE_RULES, ids=[rule.value for rule in JUDGE_RULES])
def test_deleting_a_marker_never_turns_a_blocked_run_green(project: LiveProject, rule: LaterRule) -> None:
    full = _green_project(project)
    (project.root / "authority.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    green = project.run()
    assert green.code == 0, green.out + green.err
    assert _gate(green.out)["outcome"] == "pass"
    folder = project.last_run()

    # The host's ledger lacks what the rule added: a run now is blocked for it.
    host = _loosened(full, rule)
    (project.root / "authority.yaml").write_text(yaml.safe_dump(host, sort_keys=False))
    blocked = project.run()
    assert blocked.code == 1, blocked.out + blocked.err
    assert [reason["code"] for reason in _gate(blocked.out)["reasons"]] == [BLOCKED_BY[rule]]

    # The green run rewritten as decided under the host's ledger before the rule: it adds up as recorded (every
    # other finding would be the scorecard's), but the current rules decide, and they block the gate.
    _claim_older(folder, project, host, (rule,))
    verified = _verify(project, folder)
    assert verified.code == 1, verified.out + verified.err
    (finding,) = [line for line in verified.out.splitlines() if line.startswith("  runrecord.")]
    assert finding.startswith(f"  runrecord.{rule.value}: recorded 'the run record says it was decided before")
    assert f"gate '{GATE}' is blocked: {BLOCKED_BY[rule]}" in finding and "re-run `evalglass run`" in finding
    assert "NOT verified: 1 field(s)" in verified.out
    assert "ledger: decided under authority.yaml as it is now" in verified.out  # anchored, and still refused

    # Every reader refuses it too, naming the same, and the history does not take it.
    other_db = f"sqlite:///{project.root / 'other-history.sqlite'}"
    readers = (("view", str(folder)), ("explain", GATE, "--run", str(folder)), ("report", str(folder)))
    for command in (*readers, ("history", "import", str(folder), "--db", other_db)):
        shown = evalglass(*command, cwd=project.root)
        assert shown.code == 2, shown.out + shown.err
        assert f"runrecord.{rule.value}" in shown.err and BLOCKED_BY[rule] in shown.err, shown.err
        assert "Traceback" not in shown.err


@pytest.mark.parametrize("rule", JUDGE_RULES, ids=[rule.value for rule in JUDGE_RULES])
def test_an_old_run_as_green_under_the_current_rules_still_verifies(project: LiveProject, rule: LaterRule) -> None:
    full = _green_project(project)
    (project.root / "authority.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    assert project.run().code == 0
    folder = project.last_run()
    _claim_older(folder, project, full, (rule,))
    verified = _verify(project, folder)
    assert verified.code == 0, verified.out + verified.err
    shown = evalglass("view", str(folder), "--format", "json", cwd=project.root)
    assert shown.code == 0, shown.err
    assert _gate(shown.out)["outcome"] == "pass"


def test_no_set_of_deleted_markers_verifies_a_run_the_current_rules_do_not_pass(
    project: LiveProject, tmp_path: Path
) -> None:
    """The table: every set of markers deleted, under every host ledger (the full one and each lacking one rule's
    requirement). Whenever `verify` says verified or a reader loads the run, a run now under that ledger is green;
    and under the full ledger, where a run now is green, every such record verifies."""
    from evalglass.api import verify
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.errors import SetupError

    full = _green_project(project)
    (project.root / "authority.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    assert project.run().code == 0
    original = project.last_run()
    ledgers = {rule: _loosened(full, rule) for rule in (None, *JUDGE_RULES)}
    green_now = {}
    for rule, ledger in ledgers.items():
        (project.root / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))
        green_now[rule] = project.run().code == 0
    assert green_now == {None: True, **{rule: False for rule in JUDGE_RULES}}

    subsets = [combo for size in range(len(JUDGE_RULES) + 1) for combo in itertools.combinations(JUDGE_RULES, size)]
    for (rule, ledger), markers in itertools.product(ledgers.items(), subsets):
        folder = tmp_path / "copies" / f"{rule}-{'-'.join(markers) or 'none'}"
        shutil.copytree(original, folder)
        _claim_older(folder, project, ledger, markers)
        report = verify(folder, config=project.root / "evalglass.yaml", ledger=project.root / "authority.yaml")
        try:
            load_checked(folder)
            loaded = True
        except SetupError:
            loaded = False
        case = f"ledger lacking {rule}, markers deleted {markers}"
        assert report.ok <= green_now[rule], case + ": " + repr(report.findings)
        assert loaded <= green_now[rule], case
        if rule is None:
            assert report.ok and loaded, case + ": " + repr(report.findings)


def test_a_judge_left_out_of_the_record_is_not_decided_without_its_calibration(project: LiveProject) -> None:
    """The loosest claim of all: no standing for the judge (its `judge_fingerprints` entry, calibration and
    endpoint deleted), so its gate would stand on nothing. Neither verify nor any reader takes it."""
    full = _green_project(project)
    (project.root / "authority.yaml").write_text(yaml.safe_dump(full, sort_keys=False))
    assert project.run().code == 0
    folder = project.last_run()
    host = _loosened(full, LaterRule.APPROVED_CALIBRATION)
    _claim_older(folder, project, host, ())
    record = json.loads((folder / "runrecord.json").read_text())
    for key in ("judge_fingerprints", "calibrations", "judge_endpoints"):
        record[key] = {}
    (folder / "runrecord.json").write_text(json.dumps(record))
    _claim_older(folder, project, host, ())  # resealed
    verified = _verify(project, folder)
    assert verified.code == 1 and "runrecord.judge_fingerprints.quality: recorded None" in verified.out, verified.out
    shown = evalglass("view", str(folder), cwd=project.root)
    assert shown.code == 2, shown.out + shown.err
    assert "keeps no standing for judge 'quality' (judge_fingerprints)" in shown.err, shown.err
