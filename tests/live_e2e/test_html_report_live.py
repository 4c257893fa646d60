"""The HTML report of a live run: the lane's outputs and the judge's rationales from outputs.jsonl, and the
judge's calibration from the run record, as `evalglass calibrate` wrote it."""

from __future__ import annotations

from .conftest import LiveProject, calibration_pin, evalglass
from .test_calibration_cli import _judge_project


def test_a_live_run_shows_outputs_rationales_and_calibration(project: LiveProject) -> None:
    _judge_project(project)
    fingerprint = project.gate_fingerprint("judged")
    served = project.judge_endpoint("quality")
    approval = {
        "gates": {"judged": {"active": True, "threshold": 2.0, "fingerprint": fingerprint, "judge_endpoint": served}}
    }
    project.write_ledger(approval)
    assert project.run("--html", "before.html").code == 1  # no calibration yet: blocked
    before = (project.root / "before.html").read_text()
    assert "no calibration record" in before and "judge_uncalibrated" in before
    assert "evalglass calibrate" in before  # the repair hint

    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    pin = calibration_pin(calibrated.out)
    project.write_ledger({**approval, "judges": {"quality": {"min_agreement": 0.3, "calibration": pin}}})
    assert project.run("--html", "after.html").code == 0
    page = (project.root / "after.html").read_text()
    assert "Verdict: pass" in page
    assert "calibration recorded" in page and "0.625 (5/8;" in page
    assert "lower bound of agreement ≥ 0.3" in page
    assert "this calibration record is the one it approves" in page
    assert "graded 3" in page and "graded 2" in page  # each example's rationale
    assert "grade=3 a" in page  # the chat lane's output (the fake server echoes the question)
