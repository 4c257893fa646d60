"""`evalglass calibrate` against hand-computed numbers, and judge gates that block until calibrated."""

from __future__ import annotations

import json
import os
import stat

import yaml

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, calibration_pin, evalglass

# (human label, what the judge will answer) on a 1..3 scale; "junk" is an unusable answer.
PAIRS = [(1, "1"), (1, "1"), (1, "2"), (2, "2"), (2, "3"), (3, "3"), (3, "3"), (3, "2"), (2, "junk")]


def _labels(project: LiveProject) -> None:
    lines = [
        json.dumps({"id": f"l{i}", "question": f"item {i}", "output": f"answer {i} grade={answer}", "label": human})
        for i, (human, answer) in enumerate(PAIRS)
    ]
    (project.root / "labels.jsonl").write_text("\n".join(lines) + "\n")


def _judge_project(project: LiveProject, ledger: dict | None = None) -> None:
    project.write(
        [{"id": "a", "question": "grade=3 a"}, {"id": "b", "question": "grade=2 b"}],
        metrics={"quality": project.judge(scale={"min": 1, "max": 3})},
        gates={"judged": {"metric": "quality"}},
        ledger=ledger,
    )
    _labels(project)


def test_calibrate_matches_hand_computed_numbers(project: LiveProject, server: FakeOpenAI) -> None:
    _judge_project(project)
    result = evalglass("calibrate", "quality", "--labels", "labels.jsonl", "--format", "json", cwd=project.root)
    assert result.code == 0, result.err
    record = json.loads(result.out)
    # 8 usable pairs (the junk answer is excluded, not a disagreement); confusion rows human, columns judge:
    #   human 1: judge 1,1,2   -> [2, 1, 0]
    #   human 2: judge 2,3     -> [0, 1, 1]
    #   human 3: judge 3,3,2   -> [0, 1, 2]
    assert record["n"] == 8 and record["excluded"] == 1
    assert record["confusion"] == [[2, 1, 0], [0, 1, 1], [0, 1, 2]]
    assert record["agreed"] == 5 and record["agreement"] == 5 / 8
    # kappa: p_o = 5/8; row sums 3,2,3 and column sums 2,3,3 over 8 -> p_e = (3*2 + 2*3 + 3*3) / 64 = 21/64
    p_o, p_e = 5 / 8, 21 / 64
    assert abs(record["kappa"] - (p_o - p_e) / (1 - p_e)) < 1e-12
    # linear weights w = 1 - |i-j|/2: observed = (5*1 + 3*0.5 + 0*0) / 8 = 6.5/8 (three one-step misses, no two-step)
    # expected = sum_ij w_ij r_i c_j / 64 with r = (3,2,3), c = (2,3,3)
    r, c = (3, 2, 3), (2, 3, 3)
    expected = sum((1 - abs(i - j) / 2) * r[i] * c[j] for i in range(3) for j in range(3)) / 64
    assert abs(record["weighted_kappa_linear"] - (6.5 / 8 - expected) / (1 - expected)) < 1e-12
    # Wilson 95 % for 5/8: centre and half-width by the textbook formula with z = 1.959963984540054
    z = 1.959963984540054
    p, n = 5 / 8, 8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    assert abs(record["agreement_interval"]["low"] - (centre - half)) < 1e-9
    assert abs(record["agreement_interval"]["high"] - (centre + half)) < 1e-9

    path = project.root / "calibrations" / "quality.json"
    assert json.loads(path.read_text())["judge_fingerprint"] == record["judge_fingerprint"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    requests = server.request_count
    assert requests == len(PAIRS)
    assert evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root).code == 0
    # judge answers come from the cache, but for the junk one: an unreadable answer is never kept, so it is asked again
    assert server.request_count == requests + 1


def test_calibrate_text_output_and_errors(project: LiveProject) -> None:
    _judge_project(project)
    result = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert result.code == 0, result.err
    assert "agreement: 0.625 (5/8)" in result.out and "1 excluded" in result.out
    assert "min_agreement" in result.out
    # ... and the line that approves this very record, to paste after review
    assert calibration_pin(result.out).startswith("sha256:")
    missing = evalglass("calibrate", "nope", "--labels", "labels.jsonl", cwd=project.root)
    assert missing.code == 2 and "no llm_judge metric named 'nope'" in missing.err
    (project.root / "bad.jsonl").write_text('{"output": "x", "label": 7}\n')
    bad = evalglass("calibrate", "quality", "--labels", "bad.jsonl", cwd=project.root)
    assert bad.code == 2 and "bad.jsonl:1" in bad.err and "Traceback" not in bad.err


def test_calibrate_json_carries_the_ledger_line_that_approves_the_record(project: LiveProject) -> None:
    """`--format json` gives the line the text format ends with (a host scripting the approval pastes it from
    there): the same line, and pasted under the judge's `judges:` entry it lifts `calibration_unapproved`."""
    _judge_project(project)
    text = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert text.code == 0, text.err
    shown = evalglass("calibrate", "quality", "--labels", "labels.jsonl", "--format", "json", cwd=project.root)
    assert shown.code == 0, shown.err
    record = json.loads(shown.out)
    # The text format's line, in the same words (the pattern the text's is read by); a new calibration is a new
    # record (created_at), so its line differs from the one the earlier text run printed.
    pin = calibration_pin(record["ledger_line"])
    assert record["ledger_line"] == f'calibration: "{pin}"' and pin != calibration_pin(text.out)
    assert record["ledger_judge"] == "quality"
    written = json.loads((project.root / "calibrations" / "quality.json").read_text())
    assert "ledger_line" not in written and "ledger_judge" not in written  # the record itself is unchanged
    gate = _approved_gate(project, 1.0)
    entry = yaml.safe_load(f"min_agreement: 0.3\n{record['ledger_line']}\n")
    ledger = {"gates": {"judged": gate}, "judges": {record["ledger_judge"]: entry}}
    project.write_ledger(ledger)
    result = project.run()
    assert result.code == 0, result.out
    assert _gate(result.out)["outcome"] == "pass", _gate(result.out)


def _approved_gate(project: LiveProject, threshold: float) -> dict:
    """The ledger entry activating the gate `judged` at ``threshold``, bound to its definition and judge server."""
    return {
        "active": True,
        "threshold": threshold,
        "fingerprint": project.gate_fingerprint("judged"),
        "judge_endpoint": project.judge_endpoint("quality"),
    }


def _gate(result_out: str) -> dict:
    card = json.loads(result_out)
    return next(gate for gate in card["decision"]["gates"] if gate["name"] == "judged")


def _reasons(gate: dict) -> dict[str, str]:
    return {reason["code"]: reason["message"] for reason in gate["reasons"]}


def test_judge_gate_blocks_until_calibrated_and_again_when_stale(project: LiveProject) -> None:
    _judge_project(project)
    fingerprint = project.gate_fingerprint("judged")
    served = project.judge_endpoint("quality")
    approval = {
        "gates": {"judged": {"active": True, "threshold": 2.0, "fingerprint": fingerprint, "judge_endpoint": served}}
    }

    # active, no judges entry and no calibration: blocked, and the reason says both what to write and what to run
    project.write_ledger(approval)
    result = project.run()
    assert result.code == 1
    gate = _gate(result.out)
    assert gate["outcome"] == "blocked"
    reasons = {reason["code"]: reason["message"] for reason in gate["reasons"]}
    assert "judges:" in reasons["judge_uncalibrated"] and "evalglass calibrate quality" in reasons["judge_uncalibrated"]
    explained = evalglass("explain", "judged", cwd=project.root)
    assert "evalglass calibrate quality --labels" in explained.out and "min_agreement" in explained.out

    # calibrated (lower bound of 5/8 is about 0.31) and a ledger minimum the lower bound meets, but no record
    # approved: blocked, and every place the host looks says which record and the line that approves it
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    line = f'calibration: "{calibration_pin(calibrated.out)}"'
    unpinned = {**approval, "judges": {"quality": {"min_agreement": 0.3}}}
    project.write_ledger(unpinned)
    result = project.run()
    assert result.code == 1, result.out
    (reason,) = _gate(result.out)["reasons"]
    assert reason["code"] == "calibration_unapproved"
    assert "calibrations/quality.json" in reason["message"] and line in reason["message"]
    explained = evalglass("explain", "judged", cwd=project.root)
    assert "calibration_unapproved" in explained.out and line in explained.out
    # ... and the entry to write is the judge's, naming the record (the gate's own approval holds)
    (entry,) = json.loads(evalglass("explain", "judged", "--format", "json", cwd=project.root).out)
    assert yaml.safe_load(entry["ledger_entry"]) == {
        "judges": {
            "quality": {"min_agreement": 0.3, "calibration": calibration_pin(line), "approved_by": "<your name>"}
        }
    }
    preflight = evalglass("preflight", cwd=project.root)
    assert "calibration_unapproved" in preflight.out and line in preflight.out, preflight.out
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0

    # the host pastes the line: the gate decides
    ledger = {**approval, "judges": {"quality": {"min_agreement": 0.3, "calibration": calibration_pin(line)}}}
    project.write_ledger(ledger)
    result = project.run()
    assert result.code == 0, result.out
    assert _gate(result.out)["outcome"] == "pass"  # judge grades 3 and 2: mean 2.5 >= 2.0
    folder = project.last_run()
    record = json.loads((folder / "runrecord.json").read_text())
    assert record["calibrations"]["quality"]["agreed"] == 5
    assert record["judge_calibrations"] == "approved"
    assert evalglass("verify", str(folder), cwd=project.root).code == 0

    # a minimum the interval's lower bound does not meet: blocked, saying why
    project.write_ledger({**ledger, "judges": {"quality": {**ledger["judges"]["quality"], "min_agreement": 0.6}}})
    result = project.run()
    assert result.code == 1
    assert [r["code"] for r in _gate(result.out)["reasons"]] == ["judge_uncalibrated"]
    assert "lower bound" in _gate(result.out)["reasons"][0]["message"] and "0.6" in result.out

    # edit the rubric: the calibration describes another judge now (and the approval is stale too)
    project.write_ledger(ledger)
    (project.root / "rubric.md").write_text("A different rubric.\n")
    result = project.run()
    assert result.code == 1
    codes = {reason["code"]: reason["message"] for reason in _gate(result.out)["reasons"]}
    assert "stale" in codes["judge_uncalibrated"]
    assert "approval_stale" in codes  # the rubric's bytes are part of the gate fingerprint too

    # the earlier run still verifies: it decided on its own snapshot of the calibration
    assert evalglass("verify", str(folder), cwd=project.root).code == 0


def test_changing_the_model_makes_the_calibration_stale(project: LiveProject) -> None:
    _judge_project(project)
    assert evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root).code == 0
    config = project.root / "evalglass.yaml"
    config.write_text(config.read_text().replace("model: judge-model", "model: judge-model-2"))
    fingerprint = project.gate_fingerprint("judged")
    project.write_ledger(
        {
            "gates": {
                "judged": {
                    "active": True,
                    "threshold": 1.0,
                    "fingerprint": fingerprint,
                    "judge_endpoint": project.judge_endpoint("quality"),
                }
            },
            "judges": {"quality": {"min_agreement": 0.1}},
        }
    )
    result = project.run()
    assert result.code == 1
    (reason,) = [r for r in _gate(result.out)["reasons"] if r["code"] == "judge_uncalibrated"]
    assert "stale" in reason["message"]
    # a stale record is not offered for approval: calibrating again is the repair
    assert "calibration_unapproved" not in result.out


def test_a_calibration_expires_by_the_ledger_date_or_its_age(project: LiveProject) -> None:
    import datetime

    today = datetime.datetime.now(datetime.UTC).date()
    _judge_project(project)
    fingerprint = project.gate_fingerprint("judged")
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    pin = calibration_pin(calibrated.out)
    gate = {
        "active": True,
        "threshold": 2.0,
        "fingerprint": fingerprint,
        "judge_endpoint": project.judge_endpoint("quality"),
        "approved_on": today.isoformat(),
    }

    def run_with(judge: dict, policy: dict | None = None) -> dict:
        ledger = {"gates": {"judged": gate}, "judges": {"quality": {"min_agreement": 0.3, "calibration": pin, **judge}}}
        if policy:
            ledger["policy"] = policy
        project.write_ledger(ledger)
        return _gate(project.run().out)

    assert run_with({"expires_on": (today + datetime.timedelta(days=1)).isoformat()})["outcome"] == "pass"
    expired = run_with({"expires_on": (today - datetime.timedelta(days=1)).isoformat()})
    assert [reason["code"] for reason in expired["reasons"]] == ["calibration_expired"]
    assert "judge 'quality'" in expired["reasons"][0]["message"]
    # max_age_days counts from the calibration record's own date (made today: fresh)...
    assert run_with({}, {"max_age_days": 1})["outcome"] == "pass"
    # ...and a record dated long ago is too old, even though nothing about the judge changed.
    path = project.root / "calibrations" / "quality.json"
    record = json.loads(path.read_text())
    record["created_at"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(record))
    # (an edited record needs approving again: approve the back-dated one, so that what is tested is its age)
    old = run_with(
        {"calibration": calibration_pin(_reasons(run_with({}))["calibration_unapproved"])}, {"max_age_days": 30}
    )
    assert [reason["code"] for reason in old["reasons"]] == ["calibration_expired"]
    assert "2020-01-31" in old["reasons"][0]["message"]
    explained = evalglass("explain", "judged", cwd=project.root)
    assert "calibration_expired" in explained.out and "Calibrate again" in explained.out


def test_a_gate_on_a_variants_judge_blocks_until_that_judge_is_calibrated(project: LiveProject) -> None:
    """Variants change the task, never the judge: a gate on `quality@small` stands on judge `quality`'s
    calibration as a gate on `quality` does (it used to find no standing under the variant's name, and decided as
    if the metric called no judge), in the run, in `verify` and in `preflight` alike."""
    project.write(
        [{"id": "a", "question": "grade=3 a"}, {"id": "b", "question": "grade=2 b"}],
        metrics={"quality": project.judge(scale={"min": 1, "max": 3})},
        gates={"judged": {"metric": "quality", "variant": "small"}},
        variants={"small": {"model": "small-model"}, "big": {"model": "big-model"}},
    )
    _labels(project)
    gate = _approved_gate(project, 2.0)
    approval = {"gates": {"judged": gate}}
    project.write_ledger(approval)
    result = project.run("--html", "report.html")
    assert result.code == 1, result.out
    # The HTML report's judge section lists the gate its want of calibration blocked.
    assert "Gate <strong>judged</strong> blocked" in (project.root / "report.html").read_text()
    result = project.run()
    blocked = _gate(result.out)
    assert blocked["subject"] == "quality@small" and blocked["outcome"] == "blocked"
    assert [reason["code"] for reason in blocked["reasons"]] == ["judge_uncalibrated"]
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0  # the same decision re-derived
    preflight = evalglass("preflight", cwd=project.root)
    assert "metric 'quality@small'" in preflight.out and "judge_uncalibrated" in preflight.out, preflight.out

    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    pin = calibration_pin(calibrated.out)
    project.write_ledger({**approval, "judges": {"quality": {"min_agreement": 0.3, "calibration": pin}}})
    result = project.run()
    assert result.code == 0, result.out
    assert _gate(result.out)["outcome"] == "pass"  # judge grades 3 and 2: mean 2.5 >= 2.0
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def test_a_forged_calibration_record_cannot_turn_a_judge_gate_green(project: LiveProject) -> None:
    """The record is a file in the repository, so a pull request can commit one saying anything, bound to the
    current judge and server. Only the ledger (which no pull request changes) says which record the host reviewed:
    an edited record, or another calibration's, blocks (calibration_unapproved); the approved one decides, however
    it is formatted; and verify and view re-derive what the run decided."""
    _judge_project(project)
    approval = {
        "gates": {
            "judged": {
                "active": True,
                "threshold": 2.0,
                "fingerprint": project.gate_fingerprint("judged"),
                "judge_endpoint": project.judge_endpoint("quality"),
            }
        }
    }
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    pin = calibration_pin(calibrated.out)
    project.write_ledger({**approval, "judges": {"quality": {"min_agreement": 0.3, "calibration": pin}}})
    path = project.root / "calibrations" / "quality.json"
    approved = path.read_text()
    assert _gate(project.run().out)["outcome"] == "pass"

    def blocked_by_pin() -> None:
        result = project.run()
        assert result.code == 1, result.out
        gate = _gate(result.out)
        assert [reason["code"] for reason in gate["reasons"]] == ["calibration_unapproved"], gate
        (message,) = _reasons(gate).values()
        assert pin in message and calibration_pin(message) != pin  # the approved digest and the found one
        folder = project.last_run()
        assert evalglass("verify", str(folder), cwd=project.root).code == 0
        shown = evalglass("view", str(folder), "--format", "json", cwd=project.root)
        assert shown.code == 0, shown.err
        assert _gate(shown.out)["outcome"] == "blocked"
        assert [reason["code"] for reason in _gate(shown.out)["reasons"]] == ["calibration_unapproved"]

    # 1. the approved record edited to claim perfect agreement (consistently: it loads)
    forged = json.loads(approved)
    forged.update(
        confusion=[[3, 0, 0], [0, 2, 0], [0, 0, 3]],
        agreed=8,
        agreement=1.0,
        agreement_interval={"low": 0.676, "high": 1.0, "confidence": 0.95, "method": "wilson"},
    )
    path.write_text(json.dumps(forged))
    blocked_by_pin()

    # 2. a real calibration, for the current judge and server, made on another labels file (the easy pairs only)
    easy = [json.dumps({"question": "q", "output": f"grade={g}", "label": g}) for g in (1, 1, 2, 3, 3)]
    (project.root / "easy.jsonl").write_text("\n".join(easy) + "\n")
    assert evalglass("calibrate", "quality", "--labels", "easy.jsonl", cwd=project.root).code == 0
    blocked_by_pin()

    # 3. the approved record back, re-formatted (indented, keys reordered): the same content decides
    path.write_text(json.dumps(dict(reversed(list(json.loads(approved).items()))), indent=4))
    result = project.run()
    assert result.code == 0, result.out
    assert _gate(result.out)["outcome"] == "pass"
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def test_a_run_recorded_before_records_were_approved_is_not_green_under_the_current_rules(project: LiveProject) -> None:
    """A run record without `judge_calibrations` was made before the ledger approved calibration records: it was
    decided on the record found, with a ledger that named none. It adds up as it was decided, but the current rules
    decide whether it is green, and they block its gate: verify names the marker, the rule and the gate (a deleted
    marker would otherwise turn a blocked run green). The same record claiming the newer rule does not add up: the
    gate it says passed would have blocked."""
    import hashlib

    from evalglass.core.runrecord import RunRecord
    from evalglass.engine.runs.artifacts import model_bytes

    _judge_project(project)
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    gate = {
        "active": True,
        "threshold": 2.0,
        "fingerprint": project.gate_fingerprint("judged"),
        "judge_endpoint": project.judge_endpoint("quality"),
    }
    judge = {"min_agreement": 0.3, "calibration": calibration_pin(calibrated.out)}
    project.write_ledger({"gates": {"judged": gate}, "judges": {"quality": judge}})
    assert project.run().code == 0
    folder = project.last_run()
    path = folder / "runrecord.json"
    record = json.loads(path.read_text())
    # The record as an earlier EvalGlass wrote it: its ledger named no record, and it says nothing of the rule.
    datasets = project.validated_gold()
    source = yaml.safe_dump(
        {"gates": {"judged": gate}, "judges": {"quality": {"min_agreement": 0.3}}, "datasets": datasets}
    )
    record["ledger_source"] = source
    record["ledger_fingerprint"] = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    del record["ledger"]["judges"]["quality"]["calibration"]
    del record["judge_calibrations"]
    (project.root / "authority.yaml").write_text(source)

    def rewrite() -> None:
        # As that EvalGlass wrote it: the digests list hashes the record (the run is unsigned).
        path.write_bytes(model_bytes(RunRecord.model_validate(record).model_dump(mode="json")))
        digests = json.loads((folder / "digests.json").read_text())
        digests["files"]["runrecord.json"] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
        (folder / "digests.json").write_text(json.dumps(digests))

    rewrite()
    verified = evalglass("verify", str(folder), cwd=project.root)
    assert verified.code == 1, verified.out + verified.err
    assert "runrecord.judge_calibrations: recorded 'the run record says it was decided before the ledger approved" in (
        verified.out
    )
    assert "under the current rules gate 'judged' is blocked: calibration_unapproved" in verified.out
    # Claiming the newer rule with the same ledger: the recorded pass no longer follows.
    record["judge_calibrations"] = "approved"
    rewrite()
    claimed = evalglass("verify", str(folder), cwd=project.root)
    assert claimed.code == 1 and "calibration_unapproved" in claimed.out, claimed.out + claimed.err


def test_host_code_rewriting_the_calibration_record_mid_run_does_not_change_the_decision(project: LiveProject) -> None:
    """The judges' standings (rubric fingerprint, calibration record) are read before any host code runs, as the
    baselines and the dataset are: an ungated python metric (the same user) overwriting the approved record while
    the run scores used to make the end of the run read its bytes instead (a damaged record: exit 2)."""
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "scribble.py").write_text(
        "from pathlib import Path\n\n"
        "def score(example, output):\n"
        "    Path(__file__).with_name('calibrations').joinpath('quality.json').write_text('{not json')\n"
        "    return 1.0\n"
    )
    project.write(
        [{"id": "a", "question": "grade=3 a"}, {"id": "b", "question": "grade=2 b"}],
        metrics={
            "quality": project.judge(scale={"min": 1, "max": 3}),
            "scribble": {"type": "python", "function": "scribble.py:score"},
        },
        gates={"judged": {"metric": "quality"}},
    )
    _labels(project)
    calibrated = evalglass("calibrate", "quality", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    approved = (project.root / "calibrations" / "quality.json").read_text()
    project.write_ledger(
        {
            "gates": {"judged": _approved_gate(project, 2.0)},
            "judges": {"quality": {"min_agreement": 0.3, "calibration": calibration_pin(calibrated.out)}},
        }
    )
    result = project.run()
    assert (project.root / "calibrations" / "quality.json").read_text() == "{not json"  # the metric did run
    assert result.code == 0, result.err
    assert _gate(result.out)["outcome"] == "pass"
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert record["judge_calibrations"] == "approved"
    # the next run reads the damaged record before any host code runs: one line, exit 2
    (project.root / "calibrations" / "quality.json").write_text("{not json")
    damaged = project.run()
    assert damaged.code == 2 and "calibration record is not valid JSON" in damaged.err, damaged.err
    assert approved != "{not json"
