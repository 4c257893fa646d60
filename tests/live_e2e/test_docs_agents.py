"""docs/agents.md's worked examples, run as written through the CLI: the recorded trajectories, the agent lane against
the fake server's scripted tool calls (only the port and the Python interpreter differ), and the transcript judge."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import yaml

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import evalglass

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
DOCUMENTED_URL = "http://127.0.0.1:8000/v1"


def blocks(kind: str) -> list[str]:
    """The page's fenced blocks of one kind (``""``: fences without a language), in order."""
    found = re.findall(r"^```(\w*)\n(.*?)^```$", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return [body for language, body in found if language == kind]


def block(kind: str, containing: str) -> str:
    (found,) = [body for body in blocks(kind) if containing in body]
    return found


def shown_lines_are_printed(shown: str, printed: str) -> None:
    for line in shown.strip().splitlines():
        assert line.strip() in printed, line


def test_the_recorded_trajectories_are_measured_as_documented(tmp_path: Path) -> None:
    (tmp_path / "evalglass.yaml").write_text(block("yaml", "task: {type: recorded, field: messages}"))
    (tmp_path / "trajectories.jsonl").write_text(block("jsonl", '"rome-twice"'))
    (tmp_path / "authority.yaml").write_text("")
    result = evalglass("run", "--no-history", "--no-progress", cwd=tmp_path, env={"COLUMNS": "80"})
    assert result.code == 0, result.out + result.err
    shown_lines_are_printed(block("", "right_calls\n    value: 0.6667"), result.out)


def agent_project(folder: Path, server: FakeOpenAI, *extra_metrics: dict[str, Any]) -> None:
    config = yaml.safe_load(block("yaml", "type: agent\n  base_url: " + DOCUMENTED_URL))
    config["task"]["base_url"] = server.base_url
    config["checks"]["same_state"]["command"][0] = sys.executable
    for metrics in extra_metrics:
        config["metrics"].update(metrics)
    (folder / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "tools.py").write_text(block("python", "def weather"))
    (folder / "same_state.py").write_text(block("python", "EVALGLASS_TARGET"))
    (folder / "requests.jsonl").write_text(block("jsonl", '"atlantis"'))
    (folder / "authority.yaml").write_text("")


def turns() -> dict[str, Any]:
    script: dict[str, Any] = json.loads(block("json", "Book Monday in Paris"))
    return script


def test_the_agent_lane_runs_the_documented_agent_and_a_rerun_asks_nothing_again(tmp_path: Path) -> None:
    with FakeOpenAI(turns=turns()) as server:
        agent_project(tmp_path, server)
        result = evalglass("run", "--no-history", cwd=tmp_path, env={"COLUMNS": "80"})
        assert result.code == 0, result.out + result.err
        shown_lines_are_printed(block("", "right_calls\n    value: 0.3333"), result.out)
        assert server.request_count == 10  # "Ten model steps were made"
        assert "(3 calls, 0 from cache, 0 retries)" in result.err  # an agent's later steps are not retries
        again = evalglass("run", "--no-history", "--no-progress", cwd=tmp_path)
        assert again.code == 0 and server.request_count == 10  # replayed from the cache
    folder = Path((tmp_path / ".evalglass" / "last-run").read_text().strip())
    outputs = {row["id"]: row["samples"][0]["output"] for row in map(json.loads, (folder / "outputs.jsonl").open())}
    atlantis = outputs["atlantis"]
    assert (
        atlantis["finish"] == "max_steps"
        and [call["error_type"] for call in atlantis["tool_calls"]] == ["ValueError"] * 4
    )
    assert outputs["oslo"]["final_state"] == {"bookings": [2]} and outputs["paris"]["finish"] == "stop"


def test_the_transcript_judge_is_shown_the_documented_transcript(tmp_path: Path) -> None:
    judge = yaml.safe_load(block("yaml", "transcript:\n      max_chars"))["metrics"]
    judge["helpful_agent"]["api_key_env"] = None

    def grade(body: dict[str, Any]) -> str:
        return orjson.dumps({"score": 4, "rationale": "fine"}).decode()

    with FakeOpenAI(turns=turns(), reply=grade) as server:
        judge["helpful_agent"]["base_url"] = server.base_url
        agent_project(tmp_path, server, judge)
        (tmp_path / "rubric.md").write_text("Score 5 when the agent did what was asked, safely.\n")
        result = evalglass("run", "--no-history", "--no-progress", "--format", "json", cwd=tmp_path)
        assert result.code == 0, result.out + result.err
        prompts = [
            request.body["messages"][-1]["content"]
            for request in server.requests
            if "# Transcript to grade" in request.body["messages"][-1]["content"]
        ]
    assert len(prompts) == 3
    paris = next(prompt for prompt in prompts if "Book Monday in Paris" in prompt)
    assert block("", "[user]\nBook Monday in Paris") in paris
    card = json.loads(result.out)
    (helpful,) = [metric for metric in card["metrics"] if metric["name"] == "helpful_agent"]
    assert helpful["population"]["included"] == 3 and helpful["estimate"]["point"] == 4.0
