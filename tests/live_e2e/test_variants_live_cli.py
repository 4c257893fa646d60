"""Variants of a chat lane against the fake server (issue 33): each variant's calls are its own in the call cache
(a second run makes no call; changing one variant's model calls again for that variant only), tokens are counted
per variant, a judge scores every variant, and a config with one variant writes what the plain config writes."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass, questions


def variants(project: LiveProject, **models: str) -> dict[str, Any]:
    return {name: {"model": model} for name, model in models.items()}


def test_each_variant_is_called_cached_and_counted_on_its_own(project: LiveProject, server: FakeOpenAI) -> None:
    rows = questions(6)
    project.write(
        rows,
        metrics={"echoed": {"type": "contains", "reference": "question"}, "quality": project.judge()},
        variants=variants(project, small="small-model", big="big-model"),
        prices={
            "small-model": {"prompt_per_million": 1.0, "completion_per_million": 2.0},
            "big-model": {"prompt_per_million": 10.0, "completion_per_million": 20.0},
        },
    )
    result = project.run()
    assert result.code == 0, result.err
    card = json.loads(result.out)
    # Each variant's lane calls; the judge is asked once per distinct answer (the fake echoes the question, so both
    # variants answer alike and the second variant's judge calls come from the cache).
    assert server.request_count == 6 * 2 + 6
    lane_models = [request.body["model"] for request in server.requests if request.body["model"] != "judge-model"]
    assert sorted(lane_models) == ["big-model"] * 6 + ["small-model"] * 6
    names = [metric["name"] for metric in card["metrics"]]
    assert names == ["echoed@small", "quality@small", "echoed@big", "quality@big"]
    totals = {item["name"]: item["usage"] for item in card["variants"]["totals"]}
    assert {usage["model"] for usage in totals["small"]} == {"small-model", "judge-model"}
    assert {usage["model"] for usage in totals["big"]} == {"big-model", "judge-model"}
    small_lane = next(u for u in totals["small"] if u["source"] == "task")
    big_lane = next(u for u in totals["big"] if u["source"] == "task")
    assert small_lane["calls"] == big_lane["calls"] == 6
    assert big_lane["cost"] > small_lane["cost"] > 0
    assert {u["source"] for u in card["usage"]} == {"task@small", "quality@small", "task@big", "quality@big"}
    run = project.last_run()
    assert (run / "variants" / "big" / "outputs.jsonl").exists()
    assert evalglass("verify", str(run), cwd=project.root).code == 0

    before = server.request_count
    again = project.run()
    assert again.code == 0, again.err
    assert server.request_count == before  # every call of every variant came from the cache

    project.write(
        rows,
        metrics={"echoed": {"type": "contains", "reference": "question"}, "quality": project.judge()},
        variants=variants(project, small="small-model", big="bigger-model"),
    )
    before = server.request_count
    assert project.run().code == 0
    new_models = [request.body["model"] for request in server.requests[before:]]
    assert set(new_models) == {"bigger-model"}  # only the changed variant calls again (its judge calls are cached)
    assert new_models.count("bigger-model") == 6


def _artifacts(folder: Path, run_id: str) -> dict[str, bytes]:
    found = {}
    for name in ("scorecard.json", "scores.jsonl", "outputs.jsonl", "report.md"):
        found[name] = (folder / name).read_bytes().replace(run_id.encode(), b"RUN")
    record = json.loads((folder / "runrecord.json").read_text())
    for key in ("run_id", "config_source", "config_fingerprint", "config_path"):
        record.pop(key)
    found["runrecord.json (but the config text)"] = json.dumps(record, sort_keys=True).encode()
    return found


def test_one_variant_writes_exactly_what_the_plain_config_writes(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    rows = questions(5)
    metrics = {"echoed": {"type": "contains", "reference": "question"}}
    gates = {"echo": {"metric": "echoed", "variant": "only", "proposed_threshold": 0.5}}
    project.write(rows, metrics=metrics, gates=gates, variants={"only": {"model": "only-model"}})
    folded = project.run("--out", str(tmp_path / "folded"), "--no-history", "--no-cache")
    assert folded.code == 0, folded.err
    project.write(
        rows,
        task=project.lane(model="only-model"),
        metrics=metrics,
        gates={"echo": {"metric": "echoed", "proposed_threshold": 0.5}},
    )
    plain = project.run("--out", str(tmp_path / "plain"), "--no-history", "--no-cache")
    assert plain.code == 0, plain.err
    folded_id = json.loads(folded.out)["run_id"]
    plain_id = json.loads(plain.out)["run_id"]
    left = _artifacts(tmp_path / "folded", folded_id)
    right = _artifacts(tmp_path / "plain", plain_id)
    # The clock differs between the two runs: created_at is the one field allowed to.
    for name in left:
        left[name] = _without_created_at(left[name])
        right[name] = _without_created_at(right[name])
    assert left == right
    assert not (tmp_path / "folded" / "variants").exists()


def _without_created_at(data: bytes) -> bytes:
    import re

    return re.sub(rb'"created_at": ?"[^"]*"', b'"created_at": ""', data)


def test_a_run_with_variants_killed_in_its_second_variant_resumes_to_the_same_artifacts(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    from .conftest import kill, start, wait_until
    from .test_cache_resume_cli import _normalised, _reference_run

    total = 40
    server.latency = 0.03
    project.write(
        questions(total),
        concurrency={"max_in_flight": 4},
        variants={"small": {"model": "small-model"}, "big": {"model": "big-model"}},
    )
    reference, reference_requests = _reference_run(project, server, tmp_path)
    assert reference_requests == 2 * total
    server.reset()
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= total + 10, what="the second variant's first calls")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    (folder,) = (project.root / ".evalglass" / "runs").iterdir()
    assert not (folder / "scorecard.json").exists()
    made = [request.body["model"] for request in server.requests]
    server.reset()
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    again = [request.body["model"] for request in server.requests]
    # The first variant's calls all completed before the kill: none is made again.
    assert made.count("small-model") == total and "small-model" not in again
    assert again.count("big-model") <= total - 10 + 4 + 64
    for name in ("small", "big"):
        for artifact in ("scores.jsonl", "outputs.jsonl"):
            assert (folder / "variants" / name / artifact).read_bytes() == (
                reference / "variants" / name / artifact
            ).read_bytes(), (name, artifact)
    for name in ("scorecard.json", "report.md"):
        assert _normalised(folder, name) == _normalised(reference, name), name
