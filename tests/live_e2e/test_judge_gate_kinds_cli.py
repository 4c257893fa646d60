"""Every kind of gate whose subject is a judge stands on the judge's calibration, as a plain gate does: a gate on a
variant's judge metric (``variant:``), on the difference between two variants (``compare_to_variant``), on the
difference from a baseline run (``compare_to``) and on a pairwise judge of variants (``compare_variants``).

An approval of any of them, with no calibration (or no ledger ``judges:`` entry), is blocked ``judge_uncalibrated``
with the reason a plain gate on the same judge gets; calibrated, it is blocked ``calibration_unapproved`` until the
host approves the record by its fingerprint, and then goes green. ``verify`` and the readers re-derive the same blocked gate from the run's files.

Through the real CLI against the fake OpenAI server: lanes echo the question, the judge grades from a ``grade=N``
marker in it (conftest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import LiveProject, calibration_pin, evalglass

ROWS = [{"id": f"q{i}", "question": f"question {i} grade={4 if i % 2 else 5}"} for i in range(6)]
LABELS = [{"id": f"l{i}", "question": "q", "output": f"answer grade={g}", "label": g} for i, g in enumerate([1, 2] * 6)]
VARIANTS = {"a": {"model": "app-a"}, "b": {"model": "app-b"}}
GATE = "judged"


def _gate(out: str) -> dict[str, Any]:
    return next(gate for gate in json.loads(out)["decision"]["gates"] if gate["name"] == GATE)


def _uncalibrated(out: str) -> list[str]:
    gate = _gate(out)
    assert gate["outcome"] == "blocked", gate
    return [reason["message"] for reason in gate["reasons"] if reason["code"] == "judge_uncalibrated"]


def _approve(project: LiveProject, entry: dict[str, Any], ledger: dict[str, Any] | None = None) -> dict[str, Any]:
    """The host's ledger: the entry ``explain`` prints for the gate, with ``entry`` (a threshold or a margin), and
    nothing about the judge. ``explain`` reads the last run: an informational one first."""
    informational = project.run()
    assert informational.code == 0, informational.out + informational.err
    explained = evalglass("explain", GATE, "--format", "json", cwd=project.root)
    assert explained.code == 0, explained.err
    approved = yaml.safe_load(json.loads(explained.out)[0]["ledger_entry"])["gates"][GATE]
    approved.pop("threshold", None)
    approved.pop("margin", None)
    ledger = {**(ledger or {}), "gates": {GATE: {**approved, **entry}}}
    project.write_ledger(ledger)
    return ledger


def _calibrate(project: LiveProject, ledger: dict[str, Any], judge: str = "quality") -> None:
    """What makes any judge gate green: a calibration record, and the ledger's requirement on it naming it."""
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in LABELS))
    calibrated = evalglass("calibrate", judge, "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    # The requirement alone does not make the record count: the gate blocks, whatever its kind, until the host
    # approves the record itself by the line `calibrate` printed (and verify and view re-derive that).
    ledger["judges"] = {judge: {"min_agreement": 0.5}}
    project.write_ledger(ledger)
    unapproved = project.run()
    assert unapproved.code == 1, unapproved.out + unapproved.err
    (reason,) = _gate(unapproved.out)["reasons"]
    assert reason["code"] == "calibration_unapproved" and calibration_pin(reason["message"]) == calibration_pin(
        calibrated.out
    )
    _rederived_blocked(project)
    ledger["judges"][judge]["calibration"] = calibration_pin(calibrated.out)
    project.write_ledger(ledger)


def _plain_reasons(project: LiveProject, tmp_path: Path) -> list[str]:
    """What a plain gate on the same judge, approved the same way, is blocked for."""
    plain = LiveProject(tmp_path / "plain", project.base_url)
    plain.write(ROWS, metrics={"quality": plain.judge(api_key_env=None)}, gates={GATE: {"metric": "quality"}})
    _approve(plain, {"threshold": 3.0})
    result = plain.run()
    assert result.code == 1, result.out + result.err
    return _uncalibrated(result.out)


def _rederived_blocked(project: LiveProject) -> None:
    folder = project.last_run()
    # The record says the run decided every gate on a judge on its calibration (an earlier run, without it, is
    # re-derived as it was decided).
    assert json.loads((folder / "runrecord.json").read_text())["judge_gates"] == "every"
    verified = evalglass("verify", str(folder), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
    shown = evalglass("view", str(folder), "--format", "json", cwd=project.root)
    assert shown.code == 0, shown.err
    assert _gate(shown.out)["outcome"] == "blocked"


@pytest.mark.parametrize(
    ("gate", "entry"),
    [
        ({"metric": "quality", "variant": "a"}, {"threshold": 3.0}),
        ({"metric": "quality", "variant": "a", "compare_to_variant": "b"}, {"threshold": -1.0}),
    ],
    ids=["variant", "between-variants"],
)
def test_a_gate_on_a_variants_judge_needs_the_judges_calibration(
    project: LiveProject, tmp_path: Path, gate: dict[str, Any], entry: dict[str, Any]
) -> None:
    project.write(ROWS, metrics={"quality": project.judge(api_key_env=None)}, gates={GATE: gate}, variants=VARIANTS)
    ledger = _approve(project, entry)
    blocked = project.run()
    assert blocked.code == 1, blocked.out + blocked.err
    reasons = _uncalibrated(blocked.out)
    assert reasons and reasons == _plain_reasons(project, tmp_path)  # the judge named is the declared metric
    assert "evalglass calibrate quality" in reasons[0]
    _rederived_blocked(project)

    _calibrate(project, ledger)
    green = project.run()
    assert green.code == 0, green.out + green.err
    assert _gate(green.out)["outcome"] == "pass"


def test_a_comparative_gate_on_a_judge_needs_the_judges_calibration(project: LiveProject, tmp_path: Path) -> None:
    project.write(ROWS, metrics={"quality": project.judge(api_key_env=None)})
    assert project.run("--out", "../runs/base").code == 0
    found = evalglass("compare", "../runs/base", "../runs/base", "--format", "json", cwd=project.root)
    assert found.code == 0, found.err
    baseline = {"main": {"run": "../runs/base", "fingerprint": json.loads(found.out)["base"]["fingerprint"]}}
    config = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    config["gates"] = {GATE: {"metric": "quality", "compare_to": "main"}}
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    ledger = _approve(project, {"margin": 0.5}, {"baselines": baseline})

    blocked = project.run()
    assert blocked.code == 1, blocked.out + blocked.err
    reasons = _uncalibrated(blocked.out)
    assert reasons and reasons == _plain_reasons(project, tmp_path)
    _rederived_blocked(project)

    _calibrate(project, ledger)
    green = project.run()
    assert green.code == 0, green.out + green.err
    assert _gate(green.out)["outcome"] == "pass"
    assert _gate(green.out)["comparison"]["baseline"] == "main"


def test_a_gate_on_a_pairwise_judge_of_variants_needs_its_calibration(project: LiveProject) -> None:
    judge = project.judge(api_key_env=None, mode="pairwise", compare_variants=["a", "b"], inconsistent="tie")
    judge.pop("scale")
    project.write(ROWS, metrics={"preferred": judge}, gates={GATE: {"metric": "preferred"}}, variants=VARIANTS)
    _approve(project, {"threshold": 0.0})
    blocked = project.run()
    assert blocked.code == 1, blocked.out + blocked.err
    reasons = _uncalibrated(blocked.out)
    assert reasons and "evalglass calibrate preferred" in reasons[0]
    _rederived_blocked(project)
