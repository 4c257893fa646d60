"""Juries through the CLI against the fake OpenAI server: the rule, ties, a failed judge, agreement (checked against
the `krippendorff` package), the fingerprint over every judge, calibration, verify, faults and the cache."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import SECRET, LiveProject, calibration_pin, evalglass

JUDGES = ("ja", "jb", "jc")


def jury_reply(body: dict[str, Any]) -> str:
    """Judge `jX` answers the number after `X=` in the graded output (`junk`: prose, no JSON); lanes echo."""
    last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    model = body.get("model", "")
    if model not in JUDGES:
        return re.sub(r"\[\[behaviour:[^\]]*\]\]", "", last)
    found = re.search(rf"\b{model[1]}=(\w+)", last)
    grade = found.group(1) if found else "3"
    if grade == "junk":
        return "I would rather not say."
    return json.dumps({"score": int(grade), "rationale": f"{model} gave {grade}"})


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=jury_reply) as fake:
        yield fake


def _member(project: LiveProject, model: str, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": project.base_url,
        "model": model,
        "api_key_env": "EVALGLASS_E2E_KEY",
        "timeout": 5,
        "retry": {"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.02},
        **extra,
    }


def _jury(project: LiveProject, rule: str = "majority", **extra: Any) -> dict[str, Any]:
    return {
        "type": "jury",
        "rule": rule,
        "rubric": "rubric.md",
        "scale": {"min": 1, "max": 5},
        "judges": {name: _member(project, name) for name in JUDGES},
        **extra,
    }


# (example id, what the lane outputs): each judge reads its grade from the output.
ROWS = [
    ("agree", "a=4 b=4 c=4"),
    ("two-one", "a=3 b=3 c=5"),
    ("split", "a=1 b=3 c=5"),
    ("broken", "a=4 b=4 c=junk"),
    ("wide", "a=1 b=5 c=1"),
]


def _write(project: LiveProject, jury: dict[str, Any], **top: Any) -> None:
    project.write(
        [{"id": ident, "question": text} for ident, text in ROWS],
        metrics={"helpful": jury},
        gates={"helped": {"metric": "helpful"}},
        **top,
    )


def _scores(project: LiveProject) -> dict[str, Any]:
    """Each example's jury score: its value when scored and valid, else the whole score."""

    def value(score: Any) -> Any:
        if isinstance(score, dict) and score.get("status") == "scored" and score.get("validity") == "valid":
            return score["value"]
        return score

    return {row["id"]: value(row["scores"]["helpful"]) for row in project.scores()}


def test_majority_jury_votes_ties_failures_and_agreement(project: LiveProject) -> None:
    _write(project, _jury(project))
    result = project.run()
    assert result.code in (0, 1, 3), result.err
    scores = _scores(project)
    assert scores["agree"] == 4.0 and scores["two-one"] == 3.0 and scores["wide"] == 1.0
    split = scores["split"]
    assert split["status"] == "non_evaluable" and split["diagnostics"][0]["code"] == "jury_tie"
    broken = scores["broken"]  # one judge's answer is unreadable: no quorum (all three), an error, never 0.0
    assert broken["status"] == "error" and broken.get("value") is None
    codes = [d["code"] for d in broken["diagnostics"]]
    assert codes[0] == "jury_quorum" and "judge_unparseable" in codes
    assert "judge 'jc'" in broken["diagnostics"][1]["message"]

    outputs = {
        json.loads(line)["id"]: json.loads(line)
        for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()
    }
    assert outputs["two-one"]["judges"]["helpful"][0]["votes"] == {"ja": 3, "jb": 3, "jc": 5}
    assert outputs["broken"]["judges"]["helpful"][0]["votes"]["jc"] is None

    card = json.loads((project.last_run() / "scorecard.json").read_text())
    (metric,) = [m for m in card["metrics"] if m["name"] == "helpful"]
    agreement = metric["agreement"]
    assert agreement["judges"] == list(JUDGES)
    # alpha on the numeric scale (ordinal), as the krippendorff package computes it from the same votes
    import krippendorff

    votes = [[4, 3, 1, 4, 1], [4, 3, 3, 4, 5], [4, 5, 5, np.nan, 1]]
    expected = krippendorff.alpha(reliability_data=votes, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert agreement["alpha"]["alpha"] == pytest.approx(expected, abs=1e-12)
    assert agreement["alpha"]["units"] == 5
    low, high = agreement["alpha"]["low"], agreement["alpha"]["high"]
    assert low is not None and high is not None and low <= agreement["alpha"]["alpha"] <= high
    # pairs agreeing: two-one 1/3, split 0, wide 1/3 (below 0.5); agree 1, broken 1 (the two that voted)
    assert agreement["low_agreement_examples"] == 3
    assert agreement["low_agreement_ids"] == ["two-one", "split", "wide"]
    raw = {row["id"]: row["scores"]["helpful"] for row in project.scores()}
    assert [d["code"] for d in raw["two-one"]["diagnostics"]] == ["jury_low_agreement"]

    report = (project.last_run() / "report.md").read_text()
    assert "### Judges" in report and "3 low-agreement examples: two-one, split, wide" in report

    # the run verifies: its agreement is re-derived from outputs.jsonl
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0
    assert SECRET not in (project.last_run() / "outputs.jsonl").read_text()


def test_rules_mean_and_unanimous_and_quorum(project: LiveProject) -> None:
    _write(project, _jury(project, rule="mean", quorum=2))
    assert project.run().code in (0, 1, 3)
    scores = _scores(project)
    assert scores["two-one"] == pytest.approx(11 / 3) and scores["split"] == 3.0
    assert scores["broken"] == 4.0  # two of three voted: quorum 2 met, the failed judge is not a vote

    _write(project, _jury(project, rule="unanimous", quorum=2))
    assert project.run().code in (0, 1, 3)
    scores = _scores(project)
    assert scores["agree"] == 4.0 and scores["broken"] == 4.0
    assert scores["two-one"]["status"] == "non_evaluable"
    assert scores["two-one"]["diagnostics"][0]["code"] == "jury_disagree"


def test_fingerprint_covers_every_judge(project: LiveProject) -> None:
    jury = _jury(project)
    _write(project, jury)
    first = project.gate_fingerprint("helped")
    for change in ({"temperature": 0.3}, {"model": "jc2"}, {"prompt": "Grade {{ output }} with {{ rubric }}"}):
        changed = json.loads(json.dumps(jury))
        changed["judges"]["jc"].update(change)
        _write(project, changed)
        assert project.gate_fingerprint("helped") != first, change
    moved = json.loads(json.dumps(jury))
    served = project.judge_endpoint("helpful")
    moved["judges"]["jc"].update(timeout=9, base_url="http://127.0.0.1:1/v1")  # where and how long: not what
    _write(project, moved)
    assert project.gate_fingerprint("helped") == first
    # Where it is served is bound apart, by the approval's judge_endpoint (per member of the jury)
    assert project.judge_endpoint("helpful") == {**served, "jc": "openai http://127.0.0.1:1/v1"}
    _write(project, jury)
    (project.root / "rubric.md").write_text("another rubric\n")
    assert project.gate_fingerprint("helped") != first


def test_approval_goes_stale_when_one_judge_changes(project: LiveProject) -> None:
    jury = _jury(project, rule="mean", quorum=2)
    _write(project, jury)
    fingerprint = project.gate_fingerprint("helped")
    ledger = {
        "gates": {
            "helped": {
                "active": True,
                "threshold": 1.0,
                "fingerprint": fingerprint,
                "judge_endpoint": project.judge_endpoint("helpful"),
            }
        },
        "judges": {"helpful": {"min_agreement": 0.1}},
    }
    project.write_ledger(ledger)
    labels = [
        {"id": f"l{i}", "question": "q", "output": f"a={g} b={g} c={g}", "label": g} for i, g in enumerate([1, 2, 3, 4])
    ]
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels))
    calibrated = evalglass("calibrate", "helpful", "--labels", "labels.jsonl", "--format", "json", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    record = json.loads(calibrated.out)
    assert record["n"] == 4 and record["agreed"] == 4 and record["model"].startswith("jury (mean: ja=ja")
    # The host approves the record by the line the text output prints (calibrating again costs no calls: cached).
    again = evalglass("calibrate", "helpful", "--labels", "labels.jsonl", cwd=project.root)
    assert again.code == 0, again.err
    ledger["judges"]["helpful"]["calibration"] = calibration_pin(again.out)
    project.write_ledger(ledger)
    result = project.run()
    gate = next(g for g in json.loads(result.out)["decision"]["gates"] if g["name"] == "helped")
    assert gate["outcome"] == "pass", gate
    changed = json.loads(json.dumps(jury))
    changed["judges"]["jb"]["temperature"] = 0.7
    (project.root / "evalglass.yaml").write_text(
        (project.root / "evalglass.yaml").read_text().replace("model: jb\n", "model: jb\n        temperature: 0.7\n")
    )
    result = project.run()
    gate = next(g for g in json.loads(result.out)["decision"]["gates"] if g["name"] == "helped")
    codes = {reason["code"] for reason in gate["reasons"]}
    assert gate["outcome"] == "blocked" and "approval_stale" in codes and "judge_uncalibrated" in codes


def test_faults_retry_and_cache(project: LiveProject, server: FakeOpenAI) -> None:
    rows = [{"id": "r", "question": "a=2 b=2 c=2 [[behaviour:429,500,ok]]"}, {"id": "s", "question": "a=5 b=5 c=5"}]
    project.write(rows, metrics={"helpful": _jury(project)})
    result = project.run()
    assert result.code in (0, 3), result.err
    scores = _scores(project)
    assert scores == {"r": 2.0, "s": 5.0}
    card = json.loads((project.last_run() / "scorecard.json").read_text())
    assert card["calls"]["attempts"] > card["calls"]["calls"]  # the faults were retried, each judge counted
    requests = server.request_count
    assert project.run().code in (0, 3)
    assert server.request_count == requests  # every lane and judge call comes from the cache


def test_a_timed_out_judge_is_no_vote_and_never_zero(project: LiveProject) -> None:
    with FakeOpenAI(reply=jury_reply, default="hang") as hanging:
        jury = _jury(project, rule="majority", quorum=2)
        jury["judges"]["jc"] = _member(project, "jc", base_url=hanging.base_url, timeout=0.3)
        jury["judges"]["jc"]["retry"] = {"max_attempts": 1}
        _write(project, jury)
        assert project.run().code in (0, 1, 3)
    scores = _scores(project)
    # jc never answers: the other two decide where they agree, and tie (no verdict) where they do not
    assert scores["agree"] == 4.0 and scores["two-one"] == 3.0 and scores["broken"] == 4.0
    assert scores["split"]["diagnostics"][0]["code"] == "jury_tie"
    outputs = [json.loads(line) for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()]
    assert all(row["judges"]["helpful"][0]["votes"]["jc"] is None for row in outputs)

    jury["quorum"] = 3  # every judge needed: the timeout makes each example an error, never a 0.0
    with FakeOpenAI(reply=jury_reply, default="hang") as hanging:
        jury["judges"]["jc"]["base_url"] = hanging.base_url
        _write(project, jury)
        assert project.run().code in (0, 1, 3)
    for score in _scores(project).values():
        assert score["status"] == "error" and score.get("value") is None
        assert [d["code"] for d in score["diagnostics"]][:2] == ["jury_quorum", "call_timeout"]


def test_in_a_run_with_variants_each_variants_jury_reports_its_agreement(project: LiveProject) -> None:
    """`helpful@a` and `helpful@b` each carry the agreement of their own variant's jury notes, re-derived by verify."""
    project.write(
        [{"id": ident, "question": text} for ident, text in ROWS],
        metrics={"helpful": _jury(project)},
        variants={"a": {"model": "lane-a"}, "b": {"model": "lane-b"}},
    )
    result = project.run()
    assert result.code in (0, 1, 3), result.err
    card = json.loads(result.out)
    by_name = {metric["name"]: metric for metric in card["metrics"]}
    assert by_name["helpful@a"]["agreement"] == by_name["helpful@b"]["agreement"]  # both lanes echo alike
    assert by_name["helpful@a"]["agreement"]["alpha"] is not None
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def test_a_killed_jury_run_resumes_asking_no_judge_twice_beyond_the_uncommitted_answers(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    """Every member's answer is a call of its own in the cache: a SIGKILL in the middle of the jury's calls, then
    `--resume`, asks again at most the calls in flight and the answers the cache writer had not committed, and
    writes what an uninterrupted run writes."""
    from evalglass.engine.produce.cachewriter import LIMIT

    from .conftest import kill, start, wait_until
    from .test_cache_resume_cli import _normalised, _reference_run

    total = 150  # 450 judge calls: more than the cache writer holds uncommitted, so reuse is visible
    project.write(
        [{"id": f"r{i:03d}", "question": f"q{i} a={1 + i % 5} b={1 + i % 3} c=4"} for i in range(total)],
        metrics={"helpful": _jury(project, "mean")},
        concurrency={"max_in_flight": 4},
    )
    reference, requests = _reference_run(project, server, tmp_path)
    assert requests == 4 * total  # the lane, then three judges per example

    def asked() -> list[tuple[str, str]]:
        return [
            (request.body["model"], request.last_user_message)
            for request in server.requests
            if request.body["model"] in JUDGES
        ]

    every = asked()
    assert len(set(every)) == len(every) == 3 * total
    server.reset()
    server.latency = 0.01  # answers slow enough for the kill to land mid-pass (only the run that is killed waits)
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: len(asked()) >= 2 * LIMIT + 50, what="the jury's calls well under way")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    (folder,) = (project.root / ".evalglass" / "runs").iterdir()
    assert not (folder / "scorecard.json").exists()
    before = asked()
    server.reset()
    server.latency = 0.0
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    again = asked()
    # Asked twice at most: the calls in flight at the kill (4) and the answers not yet committed to the cache.
    assert len(set(before) & set(again)) <= 4 + LIMIT
    assert len(again) == len(set(again)) and set(before) | set(again) == set(every)
    for name in ("scores.jsonl", "outputs.jsonl"):
        assert (folder / name).read_bytes() == (reference / name).read_bytes(), name
    assert _normalised(folder, "scorecard.json") == _normalised(reference, "scorecard.json")
    assert evalglass("verify", str(folder), cwd=project.root).code == 0
