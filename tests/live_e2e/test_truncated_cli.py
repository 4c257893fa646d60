"""A chat answer cut off at its token limit is the system's answer, scored as it is, and marked as cut off.

OpenAI says ``finish_reason: length``, Anthropic ``stop_reason: max_tokens``, Gemini ``finishReason: MAX_TOKENS``.
Such an answer used to be scored with no trace of it: a low score read as a wrong answer when the limit was set too
low. Its finish reason is now kept in ``outputs.jsonl`` and each of its scores carries the note ``output_truncated``
(a measurement, not an error: the gate still decides), which ``view`` shows. Each test runs a chat lane through the
CLI against a fake API on 127.0.0.1 that cuts one answer off.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_gemini import FakeGemini
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass

ROWS = [
    {"id": "one", "question": "alpha", "expect": "alpha"},
    {"id": "two", "question": "beta", "expect": "beta"},
    {"id": "cut", "question": "tell me everything", "expect": "everything"},
]
SERVERS: dict[str, tuple[Callable[..., FakeOpenAI], str, dict[str, Any]]] = {
    "openai": (FakeOpenAI, "length", {}),
    "anthropic": (FakeAnthropic, "max_tokens", {"provider": "anthropic", "max_tokens": 100}),
    "gemini": (FakeGemini, "MAX_TOKENS", {"provider": "gemini", "max_tokens": 100}),
}


@pytest.mark.parametrize("case", list(SERVERS))
def test_a_cut_off_answer_is_scored_as_it_is_and_marked(tmp_path: Path, case: str) -> None:
    kind, reason, extra = SERVERS[case]
    with kind(turns={"tell me everything": [{"content": "tell me every", "finish_reason": reason}]}) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        gates = {"echo": {"metric": "echoed", "proposed_threshold": 0.6}}
        metrics = {"echoed": {"type": "contains", "reference": "expect"}}
        project.write(ROWS, task=project.lane(**extra), metrics=metrics, gates=gates)
        project.write_ledger(
            {"gates": {"echo": {"active": True, "threshold": 0.6, "fingerprint": project.gate_fingerprint("echo")}}}
        )
        result = project.run()

    card = json.loads(result.out)
    assert (result.code, card["decision"]["verdict"]) == (0, "pass"), card["decision"]  # a measurement decides
    (echoed,) = card["metrics"]
    assert echoed["population"]["included"] == 3 and echoed["estimate"]["point"] == pytest.approx(2 / 3)
    counted = {item["code"]: item for item in echoed["population"]["top_diagnostics"]}["output_truncated"]
    assert (counted["count"], counted["included"]) == (1, 1)
    rows = {row["id"]: row for row in project.scores()}
    cut = rows["cut"]["scores"]["echoed"]
    assert cut["value"] == 0.0 and cut["status"] == "scored" and cut["validity"] == "valid"
    assert [d["code"] for d in cut["diagnostics"]] == ["output_truncated"]
    assert reason in cut["diagnostics"][0]["message"]
    assert rows["one"]["scores"]["echoed"] == 1.0  # a complete answer carries no note
    outputs = [json.loads(line) for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()]
    kept = {row["id"]: row for row in outputs}
    assert kept["cut"]["samples"][0]["finish_reason"] == reason, kept["cut"]
    assert "finish_reason" not in kept["one"]["samples"][0]
    shown = evalglass("view", str(project.last_run()), cwd=project.root)
    assert "output_truncated ×1 (in value)" in shown.out, shown.out
    explained = evalglass("explain", "echo", cwd=project.root)
    assert "cut (line 3) · echoed · fail 0.0 — output_truncated: the answer was cut off" in explained.out
    verified = evalglass("verify", str(project.last_run()), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err


AGENT_TOOLS = '''
def lookup(term: str) -> str:
    """Look a term up."""
    return term
'''


def test_an_agents_cut_off_final_answer_is_marked_as_a_chat_answer_is(tmp_path: Path) -> None:
    """An agent whose final model turn stopped at its token limit (`finish_reason: length`): its trajectory's
    `finish` said `length`, but no score said the answer was cut off, where a chat lane's did."""
    turns = {"tell me everything": [{"content": "tell me every", "finish_reason": "length"}]}
    with FakeOpenAI(turns=turns) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.root.mkdir(parents=True)
        (project.root / "tools.py").write_text(AGENT_TOOLS)
        task = project.agent({"lookup": "tools.py:lookup"}, prompt="{{ question }}", timeout=5)
        metrics = {"echoed": {"type": "contains", "field": "text", "reference": "expect"}}
        project.write(ROWS, task=task, metrics=metrics)
        result = project.run()
    assert result.code == 0, result.err
    rows = {row["id"]: row for row in project.scores()}
    cut = rows["cut"]["scores"]["echoed"]
    assert (cut["status"], cut["value"]) == ("scored", 0.0)
    assert [d["code"] for d in cut["diagnostics"]] == ["output_truncated"] and "length" in cut["diagnostics"][0][
        "message"
    ]
    assert not isinstance(rows["one"]["scores"]["echoed"], dict) or not rows["one"]["scores"]["echoed"].get(
        "diagnostics"
    )
    outputs = {
        json.loads(line)["id"]: json.loads(line)
        for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()
    }
    assert outputs["cut"]["samples"][0]["finish_reason"] == "length"
    verified = evalglass("verify", str(project.last_run()), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
