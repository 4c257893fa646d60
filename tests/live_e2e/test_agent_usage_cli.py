"""Tokens a model step did not report are not counted as none: an agent's trajectory leaves out a total some step
lacks (listing it in `not_recorded`), and a budget on it is `non_evaluable` `not_recorded`, so an active gate
blocks instead of passing on a partial sum. A resumed run replays the same trajectory from the call cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml

from evalglass.testing.fake_anthropic import FakeAnthropic
from evalglass.testing.fake_openai import FakeOpenAI, RecordedRequest

from .conftest import LiveProject, evalglass
from .test_agent_cli import TOOLS

PRICE = {"m": {"prompt_per_million": 1_000_000.0, "completion_per_million": 1_000_000.0}}


def scripted(body: dict[str, Any]) -> Any:
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if turn < 2:
        return {"tool_calls": [{"name": "weather", "arguments": {"city": ["Paris", "Rome"][turn]}}]}
    return "Done."


class SilentStep(FakeOpenAI):
    """Answers the second model step of a conversation whose request says `silent` without usage (`partial`: with
    no prompt count), as a proxy or a server that reports no usage does."""

    def _answer(self, record: RecordedRequest, body: dict[str, Any]) -> bytes:
        data = orjson.loads(super()._answer(record, body))
        first = next(m["content"] for m in body["messages"] if m.get("role") == "user")
        if sum(1 for m in body["messages"] if m.get("role") == "assistant") == 1:
            if "silent" in first:
                del data["usage"]
            elif "partial" in first:
                del data["usage"]["prompt_tokens"]
            elif "cached" in first:  # the only step that speaks of a prompt cache (OpenAI's wire)
                data["usage"]["prompt_tokens_details"] = {"cached_tokens": 2}

        return orjson.dumps(data)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with SilentStep(turns=scripted) as fake:
        yield fake


ROWS = [
    {"id": "whole", "request": "task whole"},
    {"id": "silent", "request": "task silent"},
    {"id": "partial", "request": "task partial"},
    {"id": "cached", "request": "task cached"},
]
METRICS = {
    "cheap": {"type": "numeric_bounds", "field": "cost", "max": 1000},
    "few_input": {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 1000},
    "few_output": {"type": "numeric_bounds", "field": "usage.output_tokens", "max": 1000},
}


def write(project: LiveProject, ledger: dict[str, Any] | None = None) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    task = project.agent({"weather": "tools.py:weather"}, model="m")
    gates = {"budget": {"metric": "cheap"}}
    project.write(ROWS, task=task, metrics=METRICS, gates=gates, prices=PRICE, ledger=ledger)


def outputs(project: LiveProject) -> dict[str, dict[str, Any]]:
    lines = (project.last_run() / "outputs.jsonl").read_text().splitlines()
    return {row["id"]: row["samples"][0]["output"] for row in map(json.loads, lines)}


def by_example(project: LiveProject, metric: str) -> dict[str, tuple[str, str | None]]:
    found: dict[str, tuple[str, str | None]] = {}
    for row in project.scores():
        score = row["scores"][metric]
        code = score["diagnostics"][0]["code"] if isinstance(score, dict) and score.get("diagnostics") else None
        found[row["id"]] = (score["status"], code) if isinstance(score, dict) else ("scored", None)
    return found


def test_a_step_without_usage_leaves_the_totals_unrecorded_and_the_budget_blocked(
    project: LiveProject, server: FakeOpenAI
) -> None:
    write(project)
    first = project.run()
    assert first.code == 0, first.err
    made = outputs(project)
    # Three steps reported everything: every total is the sum, and priced.
    assert made["whole"]["usage"] == {"input_tokens": 9, "output_tokens": 5}
    assert made["whole"]["cost"] == 14.0
    assert "not_recorded" not in made["whole"]
    # One step reported nothing: no total is a sum over the other two, and no cost is made of them.
    assert made["silent"]["usage"] == {}
    assert "cost" not in made["silent"]
    assert made["silent"]["not_recorded"] == ["usage.input_tokens", "usage.output_tokens", "cost"]
    # One step reported no prompt count: the output total stands, the input total and the cost do not.
    assert made["partial"]["usage"] == {"output_tokens": 5}
    assert made["partial"]["not_recorded"] == ["usage.input_tokens", "cost"]
    # One step reported a cache read, the others said nothing of a cache: that total is not recorded, and the cost
    # prices every prompt token uncached (an upper bound, never an undercount).
    assert made["cached"]["usage"] == {"input_tokens": 9, "output_tokens": 5}
    assert made["cached"]["not_recorded"] == ["usage.cache_read_input_tokens"]
    assert made["cached"]["cost"] == 14.0

    assert by_example(project, "cheap") == {
        "whole": ("scored", None),
        "silent": ("non_evaluable", "not_recorded"),
        "partial": ("non_evaluable", "not_recorded"),
        "cached": ("scored", None),
    }
    assert by_example(project, "few_output")["partial"] == ("scored", None)
    assert by_example(project, "few_input")["partial"] == ("non_evaluable", "not_recorded")

    # The host approves the budget: it blocks on what was never measured, it does not pass.
    explained = evalglass("explain", "budget", "--format", "json", cwd=project.root)
    assert explained.code == 0, explained.err
    ledger = yaml.safe_load(json.loads(explained.out)[0]["ledger_entry"])
    ledger["gates"]["budget"]["threshold"] = 1.0
    write(project, ledger)
    calls = server.request_count
    gated = project.run()
    assert gated.code == 1, gated.out + gated.err
    card = json.loads(gated.out)
    (gate,) = [gate for gate in card["decision"]["gates"] if gate["name"] == "budget"]
    assert gate["outcome"] == "blocked", gate
    assert "incomplete_measurement" in json.dumps(gate)
    # Replayed from the call cache: the same trajectories, no model step asked again.
    assert server.request_count == calls
    assert outputs(project) == made


class SilentCache(FakeAnthropic):
    """Anthropic's Messages API whose second step of a conversation says nothing of the prompt cache's reads
    (`reads`) or writes (`writes`)."""

    def _answer(self, record: RecordedRequest, body: dict[str, Any]) -> bytes:
        data = orjson.loads(super()._answer(record, body))
        first = body["messages"][0]["content"]
        first = first if isinstance(first, str) else first[0]["text"]
        if sum(1 for m in body["messages"] if m.get("role") == "assistant") == 1:
            del data["usage"]["cache_read_input_tokens" if "reads" in first else "cache_creation_input_tokens"]
        return orjson.dumps(data)


def test_a_cache_count_some_step_did_not_report_is_not_summed(tmp_path: Any) -> None:
    with SilentCache(turns=scripted, cache_read=2, cache_write=1) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.root.mkdir(parents=True)
        (project.root / "tools.py").write_text(TOOLS)
        task = project.agent({"weather": "tools.py:weather"}, model="m", provider="anthropic", max_tokens=100)
        rows = [{"id": "reads", "request": "task reads"}, {"id": "writes", "request": "task writes"}]
        project.write(rows, task=task, metrics={"cheap": METRICS["cheap"]}, prices=PRICE)
        result = project.run()
        assert result.code == 0, result.err
        made = outputs(project)
    # Reads one step did not report: that total is left out, and the cost prices those prompt tokens uncached (an
    # upper bound: the tokens counted are every input token).
    reads = made["reads"]
    assert "cache_read_input_tokens" not in reads["usage"] and "cache_creation_input_tokens" in reads["usage"]
    assert reads["not_recorded"] == ["usage.cache_read_input_tokens"]
    assert reads["cost"] == reads["usage"]["input_tokens"] + reads["usage"]["output_tokens"]
    # Writes cost more than the prompt: a cost without them would undercount, so there is none.
    writes = made["writes"]
    assert "cache_creation_input_tokens" not in writes["usage"] and writes["usage"]["cache_read_input_tokens"] > 0
    assert writes["not_recorded"] == ["usage.cache_creation_input_tokens", "cost"]
    assert "cost" not in writes


def test_a_cheaper_price_table_in_a_pull_request_cannot_turn_a_budget_gate_green(project: LiveProject) -> None:
    """The cost an agent's trajectory holds is the tokens priced by the config's `prices:` (a file a pull request
    edits): a gate on it binds the price of its lane's model, so a cheaper table is approval_stale, never a pass."""
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    task = project.agent({"weather": "tools.py:weather"}, model="m")
    rows = [{"id": "whole", "request": "task whole"}, {"id": "again", "request": "task again"}]
    metrics = {"cheap": {"type": "numeric_bounds", "field": "cost", "max": 10}}
    gates = {"budget": {"metric": "cheap", "proposed_threshold": 1.0}}
    project.write(rows, task=task, metrics=metrics, gates=gates, prices=PRICE)
    ledger = {
        "gates": {"budget": {"active": True, "threshold": 1.0, "fingerprint": project.gate_fingerprint("budget")}}
    }
    project.write_ledger(ledger)
    done = project.run()
    card = json.loads(done.out)
    assert done.code == 1 and card["decision"]["verdict"] == "fail", done.out + done.err
    assert outputs(project)["whole"]["cost"] == 14.0

    # The pull request: the same model, a hundred times cheaper in the config.
    cheaper = {"m": {"prompt_per_million": 10_000.0, "completion_per_million": 10_000.0}}
    config = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump({**config, "prices": cheaper}, sort_keys=False))
    done = project.run()
    card = json.loads(done.out)
    (budget,) = card["decision"]["gates"]
    assert done.code == 1 and budget["outcome"] == "blocked", budget
    assert [reason["code"] for reason in budget["reasons"]] == ["approval_stale"], budget
