"""Where a judge is served is part of what the host approves: a pull request that points an approved, calibrated
judge (an ``llm_judge``, a jury member) at a server it controls, one that answers "pass" to everything, must not turn
the run green without a ledger change.

Two real servers on 127.0.0.1: the honest judge (grades from the ``grade=N`` marker of the graded output) and an
"always pass" judge. The ledger is written the way a host writes it: from what ``evalglass explain`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import JUDGE_MODEL, LiveProject, calibration_pin, evalglass

RECORDED = {"type": "recorded", "field": "output"}
#: The honest judge grades 3 and 4 (mean 3.5): the approved threshold 3.0 is met.
ROWS = [
    {"id": "a", "question": "q a", "output": "answer a grade=3"},
    {"id": "b", "question": "q b", "output": "answer b grade=4"},
]
LABELS = [{"id": f"l{i}", "question": "q", "output": f"answer grade={g}", "label": g} for i, g in enumerate([1, 2] * 6)]


def always_pass(body: dict[str, Any]) -> str:
    return json.dumps({"score": 5, "rationale": "looks great"})


@pytest.fixture
def rogue() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=always_pass) as fake:
        yield fake


def _gate(out: str, name: str = "judged") -> dict[str, Any]:
    card = json.loads(out)
    return next(gate for gate in card["decision"]["gates"] if gate["name"] == name)


def _approve(
    project: LiveProject, gate: str, judge: str, labels: list[dict[str, Any]] = LABELS, threshold: float = 3.0
) -> dict[str, Any]:
    """The host's ledger: the entry `explain` prints for the gate (with ``threshold``), and the judge's calibration
    requirement. Calibrated first, against the server the config names."""
    assert project.run().code == 0  # informational: nothing is approved yet
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels))
    calibrated = evalglass("calibrate", judge, "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    explained = evalglass("explain", gate, "--format", "json", cwd=project.root)
    assert explained.code == 0, explained.err
    entry = yaml.safe_load(json.loads(explained.out)[0]["ledger_entry"])["gates"][gate]
    entry["threshold"] = threshold
    ledger = {
        "gates": {gate: entry},
        "judges": {judge: {"min_agreement": 0.5, "calibration": calibration_pin(calibrated.out)}},
    }
    project.write_ledger(ledger)
    return ledger


def _approved_judge(project: LiveProject) -> dict[str, Any]:
    """An llm_judge `quality` served by the honest server, gated by `judged`, calibrated and approved."""
    project.write(
        ROWS,
        task=RECORDED,
        metrics={"quality": project.judge(api_key_env=None)},
        gates={"judged": {"metric": "quality"}},
    )
    return _approve(project, "judged", "quality")


def _config(project: LiveProject) -> dict[str, Any]:
    loaded = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def _save(project: LiveProject, config: dict[str, Any]) -> None:
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_an_approved_judge_pointed_at_another_server_is_not_green(
    project: LiveProject, server: FakeOpenAI, rogue: FakeOpenAI
) -> None:
    ledger = _approved_judge(project)

    honest = project.run()
    assert honest.code == 0, honest.out + honest.err
    assert _gate(honest.out)["outcome"] == "pass"  # the approved judge, where it was approved: green

    # The pull request: the same judge, served by a server that always says 5. No ledger change.
    config = _config(project)
    config["metrics"]["quality"]["base_url"] = rogue.base_url
    _save(project, config)
    redirected = project.run()
    assert redirected.code == 1, redirected.out
    gate = _gate(redirected.out)
    assert gate["outcome"] == "blocked"
    reasons = {reason["code"]: reason["message"] for reason in gate["reasons"]}
    moved = reasons["judge_endpoint_changed"]
    assert f"openai {rogue.base_url}" in moved and f"openai {server.base_url}" in moved  # served vs approved
    assert rogue.request_count > 0  # it was asked: the gate is blocked by the ledger, not by a failed call
    # The run's own files say so: the record keeps where the judge was served, and verify and the readers re-derive
    # the same blocked gate from them.
    folder = project.last_run()
    record = json.loads((folder / "runrecord.json").read_text())
    assert record["judge_endpoints"] == {"quality": f"openai {rogue.base_url}"}
    assert evalglass("verify", str(folder), cwd=project.root).code == 0
    shown = evalglass("view", str(folder), "--format", "json", cwd=project.root)
    assert shown.code == 0, shown.err
    assert _gate(shown.out)["outcome"] == "blocked"

    # Back on the approved server, nothing the rogue server said is replayed from the call cache.
    config["metrics"]["quality"]["base_url"] = server.base_url + "/"  # an equivalent spelling: not a change
    _save(project, config)
    back = project.run()
    assert back.code == 0, back.out + back.err
    values = sorted(row["scores"]["quality"]["value"] for row in project.scores())
    assert values == [3.0, 4.0]

    # The host approves the new server: the calibration, measured against the honest one, does not certify it.
    ledger["gates"]["judged"]["judge_endpoint"] = f"openai {rogue.base_url}"
    project.write_ledger(ledger)
    config["metrics"]["quality"]["base_url"] = rogue.base_url
    _save(project, config)
    moved_approved = project.run()
    assert moved_approved.code == 1
    reasons = {reason["code"]: reason["message"] for reason in _gate(moved_approved.out)["reasons"]}
    assert "judge_endpoint_changed" not in reasons
    assert "measured another server" in reasons["judge_uncalibrated"]


def test_a_jury_member_pointed_at_another_server_is_not_green(
    project: LiveProject, server: FakeOpenAI, rogue: FakeOpenAI
) -> None:
    member = {"base_url": server.base_url, "model": JUDGE_MODEL, "api_key_env": None, "timeout": 5}
    jury = {
        "type": "jury",
        "rubric": "rubric.md",
        "scale": {"min": 1, "max": 5},
        "rule": "mean",
        "judges": {"first": member, "second": {**member, "temperature": 0.0}},
    }
    project.write(ROWS, task=RECORDED, metrics={"panel": jury}, gates={"judged": {"metric": "panel"}})
    _approve(project, "judged", "panel")
    honest = project.run()
    assert honest.code == 0, honest.out + honest.err
    assert _gate(honest.out)["outcome"] == "pass"

    config = _config(project)
    config["metrics"]["panel"]["judges"]["second"]["base_url"] = rogue.base_url
    _save(project, config)
    redirected = project.run()
    assert redirected.code == 1, redirected.out
    gate = _gate(redirected.out)
    assert gate["outcome"] == "blocked"
    (moved,) = [reason["message"] for reason in gate["reasons"] if reason["code"] == "judge_endpoint_changed"]
    assert "member 'second'" in moved and rogue.base_url in moved and "member 'first'" not in moved


def test_an_approval_that_names_no_endpoint_blocks_and_a_timeout_never_passes(
    project: LiveProject, server: FakeOpenAI
) -> None:
    ledger = _approved_judge(project)
    approved_endpoint = ledger["gates"]["judged"].pop("judge_endpoint")
    assert approved_endpoint == f"openai {server.base_url}"
    project.write_ledger(ledger)
    unbound = project.run()
    assert unbound.code == 1
    (message,) = [r["message"] for r in _gate(unbound.out)["reasons"] if r["code"] == "judge_endpoint_unbound"]
    assert f'judge_endpoint: "openai {server.base_url}"' in message  # the fix, ready to paste

    # An operational knob is not bound, and cannot make a judge pass: every call timing out measures nothing.
    ledger["gates"]["judged"]["judge_endpoint"] = approved_endpoint
    project.write_ledger(ledger)
    config = _config(project)
    config["metrics"]["quality"].update({"timeout": 0.05, "retry": {"max_attempts": 1}})
    _save(project, config)
    server.latency = 0.5
    timed_out = project.run("--no-cache")
    assert timed_out.code == 1, timed_out.out
    gate = _gate(timed_out.out)
    assert gate["outcome"] == "blocked"
    assert {reason["code"] for reason in gate["reasons"]} >= {"no_measured_value"}


def test_answers_of_another_server_are_never_replayed_from_the_cache(
    project: LiveProject, server: FakeOpenAI, rogue: FakeOpenAI
) -> None:
    """A pull request's run with the judge on its own server fills the call cache (which CI may keep between runs,
    docs/ci.md); pointing the judge back must not replay those answers as the approved server's."""
    project.write(ROWS, task=RECORDED, metrics={"quality": project.judge(api_key_env=None, base_url=rogue.base_url)})
    assert project.run().code == 0
    assert sorted(row["scores"]["quality"]["value"] for row in project.scores()) == [5.0, 5.0]
    config = _config(project)
    config["metrics"]["quality"]["base_url"] = server.base_url
    _save(project, config)
    assert project.run().code == 0
    assert sorted(row["scores"]["quality"]["value"] for row in project.scores()) == [3.0, 4.0]
    assert server.request_count == 2


def _pairwise_winner(candidate_wins: bool) -> Any:
    """A pairwise judge that prefers the output with the higher `q=N` (honest), or always the candidate (`C:`)."""

    def reply(body: dict[str, Any]) -> str:
        text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        first = text.split("# Output A\n", 1)[1].split("# Output B\n", 1)[0]
        second = text.split("# Output B\n", 1)[1].split("Which output", 1)[0]
        if candidate_wins:
            return json.dumps({"winner": "A" if "C:" in first else "B"})
        q1, q2 = (int(part.split("q=", 1)[1].split()[0]) for part in (first, second))
        return json.dumps({"winner": "A" if q1 > q2 else "B" if q2 > q1 else "tie"})

    return reply


def test_a_pairwise_judge_pointed_at_another_server_is_not_green(project: LiveProject) -> None:
    rows = [{"id": f"r{i}", "output": {"cand": f"C: q={i % 3 + 2} x", "base": "q=3 y"}} for i in range(6)]
    labels = [
        {"id": f"l{i}", "output": {"cand": f"C: q={q} x", "base": "q=3 y"}, "label": label}
        for i, (q, label) in enumerate([(5, "cand"), (1, "base"), (3, "tie")] * 4)
    ]
    with FakeOpenAI(reply=_pairwise_winner(False)) as honest, FakeOpenAI(reply=_pairwise_winner(True)) as rogue:
        judge = project.judge(
            mode="pairwise", compare={"cand": "cand", "base": "base"}, inconsistent="tie", api_key_env=None
        )
        judge.pop("scale")
        judge["base_url"] = honest.base_url
        project.write(rows, task=RECORDED, metrics={"preferred": judge}, gates={"judged": {"metric": "preferred"}})
        _approve(project, "judged", "preferred", labels, threshold=0.5)
        approved = project.run()
        assert approved.code == 0, approved.out + approved.err  # wins 2, ties 2, losses 2: 0.5 meets 0.5
        config = _config(project)
        config["metrics"]["preferred"]["base_url"] = rogue.base_url
        _save(project, config)
        redirected = project.run()
        assert redirected.code == 1, redirected.out
        gate = _gate(redirected.out)
        assert gate["outcome"] == "blocked" and gate["value"] == 1.0  # what the rogue server said: all wins
        assert "judge_endpoint_changed" in {reason["code"] for reason in gate["reasons"]}
