"""The agent lane through the real CLI: trajectories in outputs.jsonl, measured by the trajectory metrics, tokens per
model call, verify; and a run killed with SIGKILL resumes without asking any completed step again."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.produce.cache import stored_request
from evalglass.engine.produce.cachewriter import LIMIT
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass, kill, start, wait_until

CACHE = ".evalglass-cache.sqlite"

TOOLS = '''
def weather(city: str) -> dict:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return {"city": city, "celsius": len(city)}


def add_to_cart(item: str, *, state: dict) -> str:
    """Add an item to the cart."""
    state.setdefault("cart", []).append(item)
    return "added"
'''

COMPARE = """
import json, os, sys
folder = os.environ["EVALGLASS_TARGET"]
state = json.load(open(os.path.join(folder, "state.json")))
expected = json.load(open(os.path.join(folder, "expected.json")))
sys.exit(0 if state == expected else 1)
"""


def scripted(body: dict[str, Any]) -> Any:
    """Per conversation (its first user message, `task N`), by the turns taken so far: look up the weather of
    city N, add an item to the cart, answer. `task 13` asks for Atlantis (the tool raises) and loops."""
    messages = body.get("messages", [])
    first = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    if not isinstance(first, str) or not first.startswith("task "):
        return None
    number = int(first.split()[1])
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    if number == 13:
        return {"tool_calls": [{"name": "weather", "arguments": {"city": "Atlantis"}}]}
    if turn == 0:
        return {"tool_calls": [{"name": "weather", "arguments": {"city": f"city{number}"}}]}
    if turn == 1:
        return {"tool_calls": [{"name": "add_to_cart", "arguments": {"item": f"item{number % 3}"}}]}
    return f"Done with {number}."


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(turns=scripted) as fake:
        yield fake


def rows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"t{number:03d}",
            "request": f"task {number}",
            "expected_calls": [
                {"name": "weather", "arguments": {"city": f"city{number}"}},
                {"name": "add_to_cart", "arguments": {"item": f"item{number % 3}"}},
            ],
            "expected_state": {"cart": [f"item{number % 3}"]},
        }
        for number in range(count)
    ]


def write(project: LiveProject, count: int, **top: Any) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    (project.root / "compare.py").write_text(COMPARE)
    task = project.agent(
        {"weather": "tools.py:weather", "add_to_cart": "tools.py:add_to_cart"},
        timeout=5,
        retry={"max_attempts": 3, "initial_delay": 0.01, "max_delay": 0.02},
    )
    metrics = {
        "right_calls": {"type": "tool_calls", "reference": "expected_calls", "mode": "exact"},
        "call_f1": {"type": "tool_calls", "reference": "expected_calls", "measure": "f1"},
        "few_steps": {"type": "steps", "count": "model_turns", "max": 3},
        "no_loops": {"type": "loop", "repeats": 3},
        "cart": {"type": "final_state", "check": "compare", "reference": "expected_state"},
    }
    checks = {"compare": {"command": [sys.executable, "compare.py"]}}
    project.write(rows(count), task=task, metrics=metrics, checks=checks, **top)


def test_an_agent_run_writes_its_trajectories_measures_them_and_verifies(
    project: LiveProject, server: FakeOpenAI
) -> None:
    write(project, 16, prices={"agent-model": {"prompt_per_million": 1.0, "completion_per_million": 2.0}})
    result = project.run()
    assert result.code == 0, result.err
    folder = project.last_run()
    outputs = [json.loads(line) for line in (folder / "outputs.jsonl").read_text().splitlines()]
    (sample,) = outputs[0]["samples"]
    trajectory = sample["output"]
    assert trajectory["finish"] == "stop" and trajectory["steps"] == 3 and sample["calls"] == 3
    assert trajectory["final_state"] == {"cart": ["item0"]}
    assert trajectory["cost"] > 0 and trajectory["usage"]["input_tokens"] > 0
    looping = next(row for row in outputs if row["id"] == "t013")["samples"][0]["output"]
    assert looping["finish"] == "max_steps" and looping["steps"] == 4
    assert {call["error_type"] for call in looping["tool_calls"]} == {"ValueError"}

    scorecard = json.loads((folder / "scorecard.json").read_text())
    values = {metric["name"]: metric["estimate"]["point"] for metric in scorecard["metrics"]}
    assert values["right_calls"] == pytest.approx(15 / 16)  # t013 looped on Atlantis
    assert values["few_steps"] == pytest.approx(15 / 16) and values["no_loops"] == pytest.approx(15 / 16)
    assert values["cart"] == pytest.approx(15 / 16)
    (usage,) = scorecard["usage"]
    assert usage["calls"] == 15 * 3 + 4  # one per model step, not one per trajectory
    assert scorecard["calls"]["calls"] == usage["calls"] and scorecard["calls"]["retries"] == 0
    verified = evalglass("verify", str(folder), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err


def _steps_of(bodies: list[Any]) -> list[tuple[str, int]]:
    """Each request's step: (its conversation's first user message, the assistant turns before it)."""
    found = []
    for body in bodies:
        messages = body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        found.append(
            (first if isinstance(first, str) else first[0]["content"], sum(m["role"] == "assistant" for m in messages))
        )
    return found


def _cached_steps(cache: Path) -> set[tuple[str, int]]:
    if not cache.exists():
        return set()
    with sqlite3.connect(cache) as db:
        try:
            keys = [row[0] for row in db.execute("SELECT key FROM calls WHERE kind = 'agent'")]
            # Each step's request as keyed, whole: a later step stores a link to the step before (the chain ends
            # in the first step's whole request, stored before it: the writer commits in order).
            requests = [json.loads(stored_request(db, key) or b"null") for key in keys]
        except sqlite3.OperationalError:
            return set()
    return {
        (
            next(m["parts"][0]["content"] for m in request["messages"] if m["role"] == "user"),
            sum(m["role"] == "assistant" for m in request["messages"]),
        )
        for request in requests
    }


def _normalised(folder: Path, name: str) -> Any:
    data = json.loads((folder / name).read_text())
    data.pop("run_id")
    data.pop("created_at")
    return data


def test_a_killed_agent_run_resumes_without_asking_a_completed_step_again(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    count, concurrency = 60, 4
    write(project, count, concurrency={"max_in_flight": concurrency})
    reference = tmp_path / "reference" / "evals"
    shutil.copytree(project.root, reference)
    other = LiveProject(reference, project.base_url)
    assert other.run().code == 0
    reference_folder, reference_requests = other.last_run(), server.request_count
    assert reference_requests == 59 * 3 + 4
    server.reset()

    server.latency = 0.01  # answers slow enough for the kill to land mid-run (only the run that is killed waits)
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= 80, what="80 model steps")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    before = _steps_of([request.body for request in server.requests])
    cached = _cached_steps(project.root / CACHE)
    assert cached and cached <= set(before)

    server.reset()
    server.latency = 0.0
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    again = _steps_of([request.body for request in server.requests])
    assert not set(again) & cached  # a completed (cached) step is never asked again
    assert len(again) == len(set(again)) == reference_requests - len(cached)  # every other step exactly once
    assert len(before) + len(again) <= reference_requests + concurrency + LIMIT
    # Every step is stored once and its request rebuilds whole, the steps made after the kill linked to the ones
    # stored before it.
    assert len(_cached_steps(project.root / CACHE)) == reference_requests
    folder = project.last_run()
    assert (folder / "scores.jsonl").read_bytes() == (reference_folder / "scores.jsonl").read_bytes()
    assert (folder / "outputs.jsonl").read_bytes() == (reference_folder / "outputs.jsonl").read_bytes()
    for name in ("scorecard.json", "runrecord.json"):
        assert _normalised(folder, name) == _normalised(reference_folder, name), name


def test_an_agent_gate_without_a_reference_is_bound_to_the_tasks_it_runs(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """`no_loops` compares with nothing, so its gate used to bind no dataset: a pull request dropping the task the
    agent loops on (t013) turned a failing gate green with the ledger untouched. The tasks are the gold it stands
    on: dropping one is `gold_stale`."""
    from evalglass.engine.datasets.datasetfile import gold_fingerprint_of
    from evalglass.engine.spec.config import load_config

    gates = {"loops": {"metric": "no_loops", "proposed_threshold": 0.95}}
    write(project, 16, gates=gates)
    loaded = load_config(project.root / "evalglass.yaml")
    ledger = {
        "version": 1,
        "gates": {"loops": {"active": True, "threshold": 0.95, "fingerprint": project.gate_fingerprint("loops")}},
        "datasets": {"live": {"validated_gold": True, "fingerprint": gold_fingerprint_of(loaded)}},
    }
    (project.root / "authority.yaml").write_text(json.dumps(ledger))
    failed = project.run()
    (gate,) = json.loads(failed.out)["decision"]["gates"]
    assert (failed.code, gate["outcome"], gate["value"]) == (1, "fail", pytest.approx(15 / 16)), failed.err
    data = project.root / "data.jsonl"
    data.write_text("".join(line + "\n" for line in data.read_text().splitlines() if '"t013"' not in line))
    dropped = project.run()
    (gate,) = json.loads(dropped.out)["decision"]["gates"]
    assert (dropped.code, gate["outcome"]) == (1, "blocked"), dropped.err
    assert [reason["code"] for reason in gate["reasons"]] == ["gold_stale"]


def test_a_nan_left_in_an_agent_s_state_is_state_not_json_never_a_null_final_state(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """orjson writes a NaN as null: the cart's final state would have been stored (and compared) holding a
    plausible ``null`` where the tool left a NaN. The trajectory fails with state_not_json, naming the tool."""
    write(project, 3)
    (project.root / "tools.py").write_text(
        TOOLS + "\n\ndef add_to_cart(item: str, *, state: dict) -> str:\n"
        '    state.setdefault("cart", []).append(item)\n'
        '    state["ratio"] = float("nan") if item == "item2" else 1.0\n'
        '    return "added"\n'
    )
    result = project.run()
    folder = project.last_run()
    outputs = {row["id"]: row for row in map(json.loads, (folder / "outputs.jsonl").read_text().splitlines())}
    assert outputs["t001"]["samples"][0]["output"]["final_state"] == {"cart": ["item1"], "ratio": 1.0}
    (sample,) = outputs["t002"]["samples"]
    assert "output" not in sample and sample["error"]["code"] == "state_not_json", sample
    assert sample["error"]["message"].startswith(
        "add_to_cart left the trajectory's state as what is not JSON (nan is not a JSON number)"
    ), sample
    assert result.code in (0, 1), result.err
    # Not retried (a tool's state is deterministic; only transient model faults are): two steps of one attempt each
    # (3 + 3 + 2 requests), which the entry said as `attempts: 2` alone: one call retried once, in the totals too.
    assert server.request_count == 8
    assert (sample["attempts"], sample["calls"]) == (2, 2), sample
    calls = json.loads((folder / "scorecard.json").read_text())["calls"]
    assert (calls["calls"], calls["attempts"], calls["retries"]) == (8, 8, 0), calls
