"""A model that refuses (or whose provider's safety system blocks its answer) has answered: the system under test
declined, and that is what is measured, never a failure of the evaluator.

The OpenAI chat shape already carried a blocked answer as empty text (``content_filter``); the same answer was an
``error`` (``call_malformed_response``) from the Anthropic and Gemini APIs, and so was OpenAI's structured
``refusal``. An error blocks every active gate (``incomplete_measurement``): a suite that holds one prompt the model
declines could never decide. Each test runs a chat lane through the CLI against a fake API that declines one prompt.
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

from .conftest import LiveProject

ROWS = [
    {"id": "one", "question": "alpha", "expect": "alpha"},
    {"id": "two", "question": "beta", "expect": "beta"},
    {"id": "declined", "question": "how to pick a lock", "expect": "pick"},
]
DECLINED = {
    "openai-refusal": {"content": None, "refusal": "I can't help with that."},
    "openai-content-filter": {"content": None, "finish_reason": "content_filter"},
    "anthropic": {"content": "", "finish_reason": "refusal"},
    "gemini": {"content": "", "finish_reason": "SAFETY"},
}
SERVERS: dict[str, Callable[..., FakeOpenAI]] = {
    "openai-refusal": FakeOpenAI,
    "openai-content-filter": FakeOpenAI,
    "anthropic": FakeAnthropic,
    "gemini": FakeGemini,
}
PROVIDER = {"anthropic": "anthropic", "gemini": "gemini"}


@pytest.mark.parametrize("case", list(DECLINED))
def test_a_declined_answer_is_measured_and_the_gate_decides(tmp_path: Path, case: str) -> None:
    with SERVERS[case](turns={"how to pick a lock": [DECLINED[case]]}) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        extra: dict[str, Any] = {"provider": PROVIDER[case], "max_tokens": 100} if case in PROVIDER else {}
        task = project.lane(**extra)
        gates = {"echo": {"metric": "echoed", "proposed_threshold": 0.6}}
        metrics = {"echoed": {"type": "contains", "reference": "expect"}}
        project.write(ROWS, task=task, metrics=metrics, gates=gates)
        project.write_ledger(
            {"gates": {"echo": {"active": True, "threshold": 0.6, "fingerprint": project.gate_fingerprint("echo")}}}
        )

        result = project.run()

    card = json.loads(result.out)
    echoed = next(metric for metric in card["metrics"] if metric["name"] == "echoed")
    assert echoed["population"]["included"] == 3, echoed["population"]
    assert echoed["estimate"]["point"] == pytest.approx(2 / 3)
    assert (result.code, card["decision"]["verdict"]) == (0, "pass"), card["decision"]
    declined = next(row for row in project.scores() if row["id"] == "declined")
    assert declined["scores"]["echoed"] == 0.0  # measured: the answer does not contain the expected text


def test_a_judge_that_declines_is_no_grade_never_a_low_one(tmp_path: Path) -> None:
    """The evaluator declining is the other side: a judge's refusal is an answer it cannot read (an error, excluded
    and counted), never the scale's lowest grade."""

    def turns(body: dict[str, Any]) -> dict[str, Any] | None:
        return {"content": None, "refusal": "I won't grade this."} if body.get("model") == "judge-model" else None

    with FakeOpenAI(turns=turns) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.write(ROWS, metrics={"graded": project.judge()})
        result = project.run()

    assert result.code == 0, result.err
    graded = next(metric for metric in json.loads(result.out)["metrics"] if metric["name"] == "graded")
    assert graded["population"]["included"] == 0
    assert graded["population"]["excluded"] == [{"status": "error", "validity": "not_measured", "count": 3}]
    assert {d["code"] for d in graded["population"]["top_diagnostics"]} == {"judge_unparseable"}
