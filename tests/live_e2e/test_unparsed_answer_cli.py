"""A live lane declared ``output: json`` whose answer is not JSON answered wrong: a measurement, not a lane error.

The answer scores each metric's worst value with ``output_not_json`` (``json_valid`` measures it 0.0), exactly as a
recorded output under ``task.parse: json`` does, so a gate on it decides (pass or fail by the data) instead of
blocking. ``outputs.jsonl`` keeps the text, marked ``not_json``; a rerun from the call cache and ``--resume`` after a
SIGKILL score it the same. Chat lanes against the fake OpenAI server on 127.0.0.1; a command lane printing prose.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass, kill, start, wait_until

METRICS: dict[str, Any] = {
    "right": {"type": "exact_match", "field": "intent", "reference": "intent"},
    "is_json": {"type": "json_valid"},
}
PROSE = "Sure! The intent is refund."


def _rows(count: int, prose_every: int) -> list[dict[str, Any]]:
    """Rows whose question the fake server echoes: JSON naming the right intent, or every ``prose_every``-th prose."""
    rows = []
    for i in range(count):
        answer = PROSE + f" ({i})" if i % prose_every == prose_every - 1 else json.dumps({"intent": "refund"})
        rows.append({"id": f"q{i:03d}", "question": answer, "intent": "refund"})
    return rows


def _gated(project: LiveProject, rows: list[dict[str, Any]], threshold: float, **task: Any) -> None:
    gates = {"accuracy": {"metric": "right", "proposed_threshold": threshold}}
    project.write(rows, task=task or project.lane(output="json"), metrics=METRICS, gates=gates)
    fingerprint = project.gate_fingerprint("accuracy")
    project.write_ledger({"gates": {"accuracy": {"active": True, "threshold": threshold, "fingerprint": fingerprint}}})


def _scores(project: LiveProject, folder: Path | None = None) -> dict[str, dict[str, Any]]:
    return {row["id"]: row["scores"] for row in project.scores(folder)}


@pytest.mark.parametrize(("threshold", "verdict", "code"), [(0.7, "pass", 0), (0.8, "fail", 1)])
def test_a_chat_answer_that_is_not_json_is_scored_worst_and_the_gate_decides(
    project: LiveProject, threshold: float, verdict: str, code: int
) -> None:
    _gated(project, _rows(4, 4), threshold)  # three JSON answers, one in prose: 0.75
    result = project.run()
    card = json.loads(result.out)
    assert (result.code, card["decision"]["verdict"]) == (code, verdict), card["decision"]
    right = next(metric for metric in card["metrics"] if metric["name"] == "right")
    assert right["population"]["included"] == 4 and right["estimate"]["point"] == pytest.approx(0.75)
    (counted,) = right["population"]["top_diagnostics"]
    assert (counted["code"], counted["count"], counted["included"]) == ("output_not_json", 1, 1)
    prose = _scores(project)["q003"]
    assert prose["right"]["status"] == "scored" and prose["right"]["validity"] == "valid"
    assert prose["right"]["value"] == 0.0 and prose["right"]["diagnostics"][0]["code"] == "output_not_json"
    assert "the lane's output is json" in prose["right"]["diagnostics"][0]["message"]
    assert PROSE in prose["right"]["diagnostics"][0]["detail"]
    assert prose["is_json"]["value"] == 0.0 and prose["is_json"]["diagnostics"][0]["code"] == "invalid_json"
    kept = {row["id"]: row for row in map(json.loads, (project.last_run() / "outputs.jsonl").read_text().splitlines())}
    (sample,) = kept["q003"]["samples"]
    assert sample["output"] == PROSE + " (3)" and sample["not_json"] and "error" not in sample
    assert kept["q000"]["samples"][0] == {"sample": 0, "output": {"intent": "refund"}, "attempts": 1}
    verified = evalglass("verify", str(project.last_run()), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
    shown = evalglass("view", str(project.last_run()), cwd=project.root)
    assert "output_not_json ×1 (in value)" in shown.out, shown.out
    explained = evalglass("explain", "accuracy", cwd=project.root)
    assert "q003 (line 4) · right · fail 0.0 — output_not_json" in explained.out, explained.out

    # The same answers from the call cache score the same.
    first = (project.last_run() / "scores.jsonl").read_bytes()
    again = project.run()
    assert again.code == code and json.loads(again.out)["usage"][0]["cached_calls"] == 4
    assert (project.last_run() / "scores.jsonl").read_bytes() == first


def test_exclude_leaves_the_answer_out_and_the_gate_blocks(project: LiveProject) -> None:
    _gated(project, _rows(4, 4), 0.7)
    config = (project.root / "evalglass.yaml").read_text()
    (project.root / "evalglass.yaml").write_text(
        config.replace("reference: intent", "reference: intent\n    on_invalid_output: exclude")
    )
    project.write_ledger(
        {"gates": {"accuracy": {"active": True, "threshold": 0.7, "fingerprint": project.gate_fingerprint("accuracy")}}}
    )
    result = project.run()
    card = json.loads(result.out)
    prose = _scores(project)["q003"]["right"]
    assert prose["status"] == "error" and prose["diagnostics"][0]["code"] == "output_not_json"
    right = next(metric for metric in card["metrics"] if metric["name"] == "right")
    assert right["population"]["excluded_by_status"] == {"error": 1}
    assert result.code == 1, card["decision"]  # an excluded answer is missing evidence: never a silent pass


def test_a_cut_off_answer_that_is_not_json_keeps_both_notes(tmp_path: Path) -> None:
    turns = {"cut": [{"content": '{"intent": "ref', "finish_reason": "length"}]}
    with FakeOpenAI(turns=turns) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        rows = [{"id": "a", "question": json.dumps({"intent": "refund"}), "intent": "refund"}]
        _gated(project, [*rows, {"id": "cut", "question": "cut", "intent": "refund"}], 0.4)
        result = project.run()
    assert result.code == 0, result.out + result.err  # 0.5 >= 0.4: the gate decides
    cut = _scores(project)["cut"]["right"]
    assert cut["value"] == 0.0 and cut["status"] == "scored"
    assert [d["code"] for d in cut["diagnostics"]] == ["output_not_json", "output_truncated"]


COMMAND = """
import json, sys
example = json.load(sys.stdin)
print(example["say"])
"""


@pytest.mark.parametrize(("threshold", "code"), [(0.5, 0), (0.6, 1)])
def test_a_command_printing_prose_answered_wrong_and_the_gate_decides(
    tmp_path: Path, threshold: float, code: int
) -> None:
    project = LiveProject(tmp_path / "evals", "http://127.0.0.1:9")  # no server: the lane is a command
    project.root.mkdir(parents=True)
    calls = tmp_path / "calls.txt"  # outside the project: a file written into it would change its state
    (project.root / "answer.py").write_text(f"open({str(calls)!r}, 'a').write('x')\n{COMMAND}")
    task = {"type": "command", "argv": [sys.executable, "answer.py"], "output": "json", "cache": True}
    rows = [
        {"id": "a", "say": json.dumps({"intent": "refund"}), "intent": "refund"},
        {"id": "b", "say": "I think it is a refund.", "intent": "refund"},
    ]
    _gated(project, rows, threshold, **task)
    result = project.run()
    card = json.loads(result.out)
    assert result.code == code, card["decision"]
    assert card["decision"]["verdict"] == ("pass" if code == 0 else "fail")
    prose = _scores(project)["b"]
    assert prose["right"]["value"] == 0.0 and prose["right"]["diagnostics"][0]["code"] == "output_not_json"
    assert prose["is_json"]["value"] == 0.0
    # The cached answer replayed (the program is not run again) is the same unparsed answer, scored the same.
    first = (project.last_run() / "scores.jsonl").read_bytes()
    assert calls.read_text() == "xx"
    again = project.run()
    assert again.code == code, again.out + again.err
    assert calls.read_text() == "xx"
    assert (project.last_run() / "scores.jsonl").read_bytes() == first


def test_resume_after_sigkill_scores_unparsed_answers_the_same(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    total = 60
    server.latency = 0.03
    _gated(project, _rows(total, 3), 0.5)
    reference_root = tmp_path / "reference" / "evals"
    shutil.copytree(project.root, reference_root)
    reference = LiveProject(reference_root, project.base_url)
    assert reference.run().code == 0
    server.reset()

    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= 20, what="20 requests")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    folder, other = project.last_run(), reference.last_run()
    assert (folder / "scores.jsonl").read_bytes() == (other / "scores.jsonl").read_bytes()
    assert (folder / "outputs.jsonl").read_bytes() == (other / "outputs.jsonl").read_bytes()
    assert sum(row["right"] == 0.0 or isinstance(row["right"], dict) for row in _scores(project).values()) == 20
