"""Tokens and cost of live runs, per lane and judge, fresh and cached (issue 13)."""

from __future__ import annotations

import json

import pytest

from tests.live_e2e.conftest import JUDGE_MODEL, LiveProject, evalglass, questions

PRICES = {
    "app-model": {"prompt_per_million": 2.0, "completion_per_million": 8.0},
    JUDGE_MODEL: {"prompt_per_million": 1.0, "completion_per_million": 4.0},
}


def usage_of(card: dict) -> dict[str, dict]:
    return {entry["source"]: entry for entry in card["usage"]}


def test_tokens_are_counted_per_lane_and_judge_and_cached_calls_apart(project: LiveProject) -> None:
    rows = questions(3)
    project.write(
        rows, metrics={"echoed": {"type": "contains", "reference": "question"}, "j": project.judge()}, prices=PRICES
    )
    first = project.run()
    assert first.code == 0, first.err
    usage = usage_of(json.loads(first.out))
    task, judge = usage["task"], usage["j"]
    # The fake endpoint reports whitespace-separated words as tokens: the lane's prompt is the question itself.
    assert task["calls"] == 3 and task["cached_calls"] == 0 and task["model"] == "app-model"
    assert task["prompt_tokens"] == sum(len(row["question"].split()) for row in rows)
    assert task["completion_tokens"] > 0 and judge["calls"] == 3 and judge["prompt_tokens"] > task["prompt_tokens"]
    assert task["cost"] == pytest.approx((2.0 * task["prompt_tokens"] + 8.0 * task["completion_tokens"]) / 1e6)
    assert judge["cost"] == pytest.approx((1.0 * judge["prompt_tokens"] + 4.0 * judge["completion_tokens"]) / 1e6)

    second = project.run()
    again = usage_of(json.loads(second.out))
    for source, before in usage.items():
        now = again[source]
        assert (now["calls"], now["prompt_tokens"], now["completion_tokens"], now["cost"]) == (0, 0, 0, 0.0)
        assert now["cached_calls"] == before["calls"]
        assert (now["cached_prompt_tokens"], now["cached_completion_tokens"]) == (
            before["prompt_tokens"],
            before["completion_tokens"],
        )
        assert now["cached_original_cost"] == pytest.approx(before["cost"])

    folder = project.last_run()
    record = json.loads((folder / "runrecord.json").read_text())
    assert usage_of(record)["task"]["cached_calls"] == 3
    report = (folder / "report.md").read_text()
    assert "### Tokens" in report and "task (app-model): 0 call(s)" in report and "3 cached call(s)" in report
    view = evalglass("view", str(folder), cwd=project.root)
    assert "tokens · task (app-model)" in view.out and "tokens · run:" in view.out
    assert evalglass("verify", str(folder), cwd=project.root).code == 0


def test_without_a_price_table_there_is_no_cost(project: LiveProject) -> None:
    project.write(questions(2))
    card = json.loads(project.run().out)
    task = usage_of(card)["task"]
    assert task["calls"] == 2 and task["prompt_tokens"] > 0 and task["cost"] is None
