"""Native providers through the CLI: a chat lane on the Anthropic Messages API and a judge on the Gemini API, against
fake servers that speak those wire formats, with overloads, rate limits and a key the server quotes back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_gemini import FakeGemini

from .conftest import SECRET, LiveProject, evalglass

PRICES = {
    "claude-fake": {
        "prompt_per_million": 3.0,
        "completion_per_million": 15.0,
        "cache_read_per_million": 0.3,
        "cache_write_per_million": 3.75,
    },
    "gemini-fake": {"prompt_per_million": 1.0, "completion_per_million": 4.0},
}


def _grade(body: dict[str, Any]) -> str:
    return json.dumps({"score": 4, "rationale": "fine"})


@pytest.fixture
def servers() -> Iterator[tuple[FakeAnthropic, FakeGemini]]:
    with FakeAnthropic(cache_read=1, cache_write=1) as lane, FakeGemini(reply=_grade, cache_read=2) as judge:
        yield lane, judge


def _write(root: Path, lane: FakeAnthropic, judge: FakeGemini, rows: list[dict[str, Any]]) -> LiveProject:
    project = LiveProject(root, lane.base_url)
    task = project.lane(provider="anthropic", model="claude-fake", max_tokens=100)
    grader = project.judge(provider="gemini", base_url=judge.base_url, model="gemini-fake")
    project.write(
        rows,
        task=task,
        metrics={"echoed": {"type": "contains", "reference": "expect"}, "j": grader},
        prices=PRICES,
    )
    return project


def test_native_lane_and_judge_run_count_their_tokens_and_keep_the_key_secret(
    tmp_path: Path, servers: tuple[FakeAnthropic, FakeGemini]
) -> None:
    lane, judge = servers
    rows = [
        {"id": "plain", "question": "alpha beta", "expect": "alpha beta"},
        {"id": "overloaded", "question": "gamma [[behaviour:529,429:0.01,ok]]", "expect": "gamma"},
        {"id": "quoted", "question": "delta [[behaviour:401]]", "expect": "delta"},
    ]
    project = _write(tmp_path / "evals", lane, judge, rows)
    first = project.run()
    assert first.code == 0, first.err
    card = json.loads(first.out)
    usage = {entry["source"]: entry for entry in card["usage"]}

    scores = {row["id"]: row["scores"] for row in project.scores()}
    assert scores["plain"]["echoed"] == 1.0 and scores["overloaded"]["echoed"] == 1.0
    assert scores["plain"]["j"]["value"] == 4.0 and scores["overloaded"]["j"]["value"] == 4.0
    assert scores["quoted"]["echoed"]["diagnostics"][0]["code"] == "call_client_error"
    # The overloaded example took three attempts (529 overloaded_error, 429 rate_limit_error, then the answer).
    overloaded = [r for r in lane.requests if r.last_user_message.startswith("gamma")]
    assert [r.status for r in overloaded] == [529, 429, 200]

    task, grader = usage["task"], usage["j"]
    # Calls that answered (the failed one has no usage to count).
    assert (task["calls"], task["model"], grader["calls"], grader["model"]) == (2, "claude-fake", 2, "gemini-fake")
    # Anthropic reports cache reads and writes apart from input_tokens; every input token is counted as prompt.
    assert task["prompt_tokens"] == 2 + 2  # words stand for tokens: "alpha beta", "gamma [[behaviour:…]]"
    assert (task["prompt_cache_read_tokens"], task["prompt_cache_write_tokens"]) == (2, 2)
    fresh = task["prompt_tokens"] - 4
    expected = (fresh * 3.0 + 2 * 0.3 + 2 * 3.75 + task["completion_tokens"] * 15.0) / 1e6
    assert task["cost"] == pytest.approx(expected)
    # Gemini's promptTokenCount already includes cachedContentTokenCount; no cache price: the prompt price.
    assert grader["prompt_cache_read_tokens"] == 4 and grader["prompt_cache_write_tokens"] == 0
    assert grader["cost"] == pytest.approx((grader["prompt_tokens"] * 1.0 + grader["completion_tokens"] * 4.0) / 1e6)

    assert all(request.headers.get("x-api-key") == SECRET for request in lane.requests)
    assert all(request.headers.get("x-goog-api-key") == SECRET for request in judge.requests)
    for path in (p for p in project.root.rglob("*") if p.is_file()):
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in first.out + first.err

    folder = project.last_run()
    assert "prompt cache: 2 read, 2 written" in (folder / "report.md").read_text()
    assert evalglass("verify", str(folder), cwd=project.root).code == 0

    # Again: every answer from the call cache, the cache tokens of the original calls with them.
    again = {entry["source"]: entry for entry in json.loads(project.run().out)["usage"]}
    assert again["task"]["calls"] == 0 and again["task"]["cached_calls"] == 2  # the failed call failed again
    assert again["task"]["cached_prompt_cache_read_tokens"] == 2
    assert again["j"]["cached_calls"] == 2 and again["j"]["cached_prompt_cache_read_tokens"] == 4


def test_a_native_lane_without_max_tokens_is_one_config_line_and_exit_2(
    tmp_path: Path, servers: tuple[FakeAnthropic, FakeGemini]
) -> None:
    lane, judge = servers
    project = _write(tmp_path / "evals", lane, judge, [{"id": "a", "question": "q", "expect": "q"}])
    config = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    del config["task"]["max_tokens"]
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = project.run()
    assert result.code == 2 and lane.request_count == 0
    assert "provider anthropic needs max_tokens" in result.err and "evalglass.yaml:" in result.err
    assert "Traceback" not in result.err


def test_the_documented_config_runs_as_printed(tmp_path: Path, servers: tuple[FakeAnthropic, FakeGemini]) -> None:
    """docs/providers.md's complete config, against the fakes (only the ports differ)."""
    lane, judge = servers
    page = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", page, flags=re.DOTALL)]
    (config,) = [block for block in blocks if isinstance(block, dict) and "dataset" in block]
    text = yaml.safe_dump(config, sort_keys=False)
    text = text.replace("http://127.0.0.1:8001/v1", lane.base_url).replace(
        "http://127.0.0.1:8002/v1beta", judge.base_url
    )
    (tmp_path / "evalglass.yaml").write_text(text)
    (tmp_path / "authority.yaml").write_text("")
    (tmp_path / "rubric.md").write_text("Grade the answer from 1 to 5.\n")
    (tmp_path / "data.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "question": f"q {i}"}) + "\n" for i in range(3))
    )
    result = evalglass("run", "--format", "json", "--no-progress", cwd=tmp_path, env={"DEMO_KEY": "demo"})
    assert result.code == 0, result.err
    card = json.loads(result.out)
    assert {metric["name"]: metric["population"]["included"] for metric in card["metrics"]} == {
        "echoed": 3,
        "graded": 3,
    }
    task = next(entry for entry in card["usage"] if entry["source"] == "task")
    assert task["calls"] == 3 and task["cost"] is not None
    assert lane.request_count == 3 and judge.request_count == 3
