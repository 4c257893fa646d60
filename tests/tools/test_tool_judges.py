"""A judge on another tool's results never judges what the tool failed to produce (docs/other-tools.md).

Each format's failed or answerless sample, through the real CLI with a real (fake) OpenAI-compatible judge server:
the judge is never sent it, and its score is the same one a deterministic metric gets for it (``error`` with
``tool_sample_failed`` for a sample the tool failed; ``non_evaluable`` with ``content_not_captured`` for an answer
the tool's file does not hold), never the judge's verdict on an empty or error answer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI
from tests.e2e.project import run_cli
from tests.tools.test_tool_results import FIXTURES, INSPECT, LM_EVAL_MC, OPENAI_EVALS, PROMPTFOO

KEY_ENV = "EVALGLASS_TOOL_JUDGE_KEY"


def judge_run(tmp_path: Path, files: list[Path], fmt: str, *, field: str | None = "text") -> tuple[Any, list[str]]:
    """Run a judge and a deterministic metric on ``files``; the run's scores by metric and id, and the prompts the
    judge server was sent."""
    prompts: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        prompts.append(body["messages"][-1]["content"])
        return json.dumps({"score": 1})  # the worst verdict: what judging an empty or error answer would give

    evals = tmp_path / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    for file in files:
        if file.parent != evals:
            shutil.copyfile(file, evals / file.name)
    (evals / "rubric.md").write_text("5 when the answer names the capital.\n")
    with FakeOpenAI(reply=reply) as server:
        judge: dict[str, Any] = {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": server.base_url,
            "model": "judge",
            "api_key_env": KEY_ENV,
            "prompt": "Expected: {{ example.target }}\nAnswer: {{ output }}\n{{ rubric }}",
            "retry": {"max_attempts": 1},
        }
        if field is not None:
            judge["field"] = field
        document = {
            "version": 1,
            "dataset": {"name": "imported", "path": files[0].name, "format": fmt},
            "metrics": {"judged": judge, "names": {"type": "contains", "field": "text", "reference": "target"}},
        }
        (evals / "evalglass.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
        (evals / "authority.yaml").write_text("version: 1\n")
        result = run_cli("run", "--no-history", "--no-progress", "--format", "json", cwd=tmp_path, env={KEY_ENV: "k"})
    assert result.code == 0, result.err
    return scores_by_id(tmp_path), prompts


def scores_by_id(root: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """metric → example id → its scores (one per sample)."""
    folder = Path((root / ".evalglass" / "last-run").read_text().strip())
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for line in (folder / "scores.jsonl").read_text().splitlines():
        block = json.loads(line)
        for metric, scores in block["scores"].items():
            for example_id, samples in zip(block["ids"], scores, strict=True):
                found.setdefault(metric, {})[example_id] = samples if type(samples) is list else [samples]
    return found


def status_and_code(score: dict[str, Any] | float) -> tuple[str, str | None]:
    if not isinstance(score, dict):
        return "scored", None  # a plain value: scored, nothing to say
    return score["status"], (score["diagnostics"][0]["code"] if score.get("diagnostics") else None)


@pytest.mark.parametrize("field", ["text", None], ids=["answer", "whole-output"])
def test_a_judge_on_an_inspect_log_does_not_judge_the_sample_inspect_failed(tmp_path: Path, field: str | None) -> None:
    scores, prompts = judge_run(tmp_path, [INSPECT], "inspect", field=field)
    judged, names = scores["judged"], scores["names"]
    failed = {
        example_id
        for example_id, found in names.items()
        if ("error", "tool_sample_failed") in map(status_and_code, found)
    }
    assert failed == {"cap-07"}
    assert [status_and_code(score) for score in judged["cap-07"]] == [
        status_and_code(score) for score in names["cap-07"]
    ]
    assert {status_and_code(score) for score in judged["cap-07"]} == {("error", "tool_sample_failed")}
    assert "retrieval service was unreachable" in judged["cap-07"][0]["diagnostics"][0]["message"]
    others = [score for example_id, found in judged.items() if example_id != "cap-07" for score in found]
    assert len(prompts) == len(others) and {score["status"] for score in others} == {"scored"}
    assert not any("unreachable" in prompt for prompt in prompts)


def test_a_judge_on_promptfoo_results_does_not_judge_a_provider_failure(tmp_path: Path) -> None:
    """promptfoo marks a test whose provider failed with ``failureReason`` 2, its error, and no output."""
    document = json.loads(PROMPTFOO.read_text())
    row = document["results"]["results"][0]
    row.update(failureReason=2, error="API error: 503 Service Unavailable", success=False, score=0)
    row["response"] = {"error": "API error: 503 Service Unavailable"}
    (tmp_path / "evals").mkdir()
    failing = tmp_path / "evals" / PROMPTFOO.name
    failing.write_text(json.dumps(document))
    failed_id = str(row["testIdx"] // 2)
    scores, prompts = judge_run(tmp_path, [failing], "promptfoo")
    for metric in ("judged", "names"):
        assert ("error", "tool_sample_failed") in [status_and_code(score) for score in scores[metric][failed_id]]
    total = sum(len(found) for found in scores["judged"].values())
    assert len(prompts) == total - 1
    assert not any("503" in prompt for prompt in prompts)


def test_a_judge_on_lm_eval_loglikelihood_samples_has_no_answer_to_judge(tmp_path: Path) -> None:
    scores, prompts = judge_run(tmp_path, [LM_EVAL_MC, *(FIXTURES / "lm-eval").glob("results_*.json")], "lm-eval")
    assert prompts == []
    for metric in ("judged", "names"):
        found = [status_and_code(score) for s in scores[metric].values() for score in s]
        assert found and set(found) == {("non_evaluable", "content_not_captured")}


def test_a_judge_on_an_openai_evals_sample_without_its_answer_does_not_judge_it(tmp_path: Path) -> None:
    lines = OPENAI_EVALS.read_text().splitlines()
    event = json.loads(lines[2])
    del event["data"]["sampled"]  # the log recorded the match, not what was sampled
    (tmp_path / "evals").mkdir()
    log = tmp_path / "evals" / OPENAI_EVALS.name
    log.write_text("\n".join([*lines[:2], json.dumps(event), *lines[3:]]) + "\n")
    scores, prompts = judge_run(tmp_path, [log], "openai-evals")
    for metric in ("judged", "names"):
        assert [status_and_code(score) for score in scores[metric][event["sample_id"]]] == [
            ("non_evaluable", "content_not_captured")
        ]
    assert len(prompts) == len(scores["judged"]) - 1
