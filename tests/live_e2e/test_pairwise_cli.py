"""Pairwise judging through the CLI against the fake OpenAI server: both orders asked, order-inconsistent verdicts
as declared, position bias and win rates in the scorecard (re-derived by verify), faults, the cache, calibration."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from evalglass.core.stats.proportion import wilson
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import JUDGE_MODEL, LiveProject, evalglass


def pairwise_reply(body: dict[str, Any]) -> str:
    """The judge prefers the output with the higher `q=N`; `biased` in either output: always the first shown;
    `junk`: prose without JSON."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    first = text.split("# Output A\n", 1)[1].split("# Output B\n", 1)[0]
    second = text.split("# Output B\n", 1)[1].split("Which output", 1)[0]
    if "junk" in first + second:
        return "Both are fine, I suppose."
    if "biased" in first + second:
        return json.dumps({"winner": "A", "rationale": "the first one"})
    q1, q2 = (int(re.search(r"q=(\d+)", part).group(1)) for part in (first, second))  # type: ignore[union-attr]
    winner = "A" if q1 > q2 else "B" if q2 > q1 else "tie"
    return json.dumps({"winner": winner, "rationale": f"{q1} vs {q2}"})


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=pairwise_reply) as fake:
        yield fake


ROWS = [
    ("better", {"cand": "q=5 fine", "base": "q=1 poor"}),
    ("worse", {"cand": "q=1 poor", "base": "q=4 good"}),
    ("even", {"cand": "q=3 same", "base": "q=3 same too"}),
    ("flip", {"cand": "q=3 biased", "base": "q=2"}),
    ("broken", {"cand": "q=3 junk", "base": "q=2"}),
]


def _judge(project: LiveProject, **extra: Any) -> dict[str, Any]:
    judge = project.judge(mode="pairwise", compare={"cand": "cand", "base": "base"}, inconsistent="excluded")
    judge.pop("scale")
    judge.update(extra)
    return judge


def _write(project: LiveProject, rows: list[tuple[str, dict[str, Any]]], judge: dict[str, Any]) -> None:
    project.write(
        [{"id": ident, "output": outputs} for ident, outputs in rows],
        task={"type": "recorded"},
        metrics={"preferred": judge},
    )


def _scores(project: LiveProject) -> dict[str, Any]:
    def value(score: Any) -> Any:
        if isinstance(score, dict) and score.get("status") == "scored" and score.get("validity") == "valid":
            return score["value"]
        return score

    return {row["id"]: value(row["scores"]["preferred"]) for row in project.scores()}


def _summary(project: LiveProject) -> dict[str, Any]:
    card = json.loads((project.last_run() / "scorecard.json").read_text())
    (metric,) = [m for m in card["metrics"] if m["name"] == "preferred"]
    return metric["pairwise"]


def test_both_orders_inconsistent_excluded_and_position_bias(project: LiveProject, server: FakeOpenAI) -> None:
    _write(project, ROWS, _judge(project))
    result = project.run()
    assert result.code in (0, 3), result.err
    assert server.request_count == 2 * len(ROWS)  # every pair asked in both orders
    scores = _scores(project)
    assert scores["better"] == 1.0 and scores["worse"] == 0.0 and scores["even"] == 0.5
    flip = scores["flip"]  # the judge preferred the first position both times: no win, a declared outcome
    assert flip["status"] == "non_evaluable" and flip["diagnostics"][0]["code"] == "pairwise_inconsistent"
    broken = scores["broken"]
    assert broken["status"] == "error" and broken["diagnostics"][0]["code"] == "judge_unparseable"

    summary = _summary(project)
    (pair,) = summary["pairs"]
    assert (pair["a"], pair["b"]) == ("cand", "base")
    assert (pair["a_wins"], pair["b_wins"], pair["ties"], pair["excluded"], pair["missing"]) == (1, 1, 1, 1, 1)
    assert pair["flipped"] == 1 and summary["position_bias"] == pytest.approx(1 / 4)
    interval = wilson(1, 2)
    assert interval is not None
    assert pair["win_rate"] == 0.5 and pair["win_rate_low"] == pytest.approx(interval.low)
    assert summary["strengths"] == [] and summary["inconsistent"] == "excluded"

    outputs = [json.loads(line) for line in (project.last_run() / "outputs.jsonl").read_text().splitlines()]
    flip_note = next(row for row in outputs if row["id"] == "flip")["judges"]["preferred"][0]
    assert flip_note["pairs"][0]["answers"] == ["first", "first"] and flip_note["pairs"][0]["flipped"] is True
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0
    report = (project.last_run() / "report.md").read_text()
    assert "preferred: position bias 0.25 (inconsistent: excluded); cand vs base: 1-1, 1 ties, 1 excluded" in report

    requests = server.request_count
    assert project.run().code in (0, 3)
    # every answer from the cache but the broken pair's two unreadable ones, which are never kept: asked again
    assert server.request_count == requests + 2


def test_inconsistent_as_tie_and_fingerprint(project: LiveProject) -> None:
    _write(project, ROWS, _judge(project, inconsistent="tie"))
    assert project.run().code in (0, 3)
    assert _scores(project)["flip"] == 0.5
    summary = _summary(project)
    assert summary["pairs"][0]["ties"] == 2 and summary["pairs"][0]["excluded"] == 0


def test_always_first_judge_has_position_bias_one_and_no_wins(project: LiveProject) -> None:
    rows = [(f"e{i}", {"cand": f"q={i} biased", "base": f"q={5 - i}"}) for i in range(4)]
    _write(project, rows, _judge(project))
    assert project.run().code in (0, 3)
    summary = _summary(project)
    (pair,) = summary["pairs"]
    assert summary["position_bias"] == 1.0 and pair["a_wins"] == pair["b_wins"] == 0
    assert pair["win_rate"] is None


def test_three_outputs_fit_bradley_terry(project: LiveProject) -> None:
    # x mostly beats y, y mostly beats z, with upsets so every output wins sometimes (the fit exists)
    grades = [(5, 3, 1)] * 6 + [(1, 3, 5), (3, 5, 1), (5, 1, 3)]
    rows = [(f"e{i}", {"x": f"q={a}", "y": f"q={b}", "z": f"q={c}"}) for i, (a, b, c) in enumerate(grades)]
    judge = _judge(project, compare={"x": "x", "y": "y", "z": "z"})
    _write(project, rows, judge)
    assert project.run().code in (0, 3)
    summary = _summary(project)
    assert [p["a"] + p["b"] for p in summary["pairs"]] == ["xy", "xz", "yz"]
    strengths = {s["name"]: s for s in summary["strengths"]}
    assert strengths["x"]["strength"] > strengths["y"]["strength"] > strengths["z"]["strength"]
    assert sum(s["strength"] for s in strengths.values()) == pytest.approx(0.0, abs=1e-9)
    # only the ordering the intervals support: x above z; x and y (7-2 over 9) are not told apart
    assert summary["separated"] == [["x", "z"]]
    assert strengths["y"]["low"] < 0 < strengths["y"]["high"]
    # x's value on an example: its mean result against y and z
    assert _scores(project)["e0"] == 1.0 and _scores(project)["e6"] == 0.0


def test_faults_are_errors_never_wins(project: LiveProject) -> None:
    rows = [
        ("slow", {"cand": "q=5 [[behaviour:429,ok]]", "base": "q=1"}),
        ("dead", {"cand": "q=5", "base": "q=1 [[behaviour:500]]"}),
    ]
    judge = _judge(project)
    judge["retry"] = {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.02}
    _write(project, rows, judge)
    assert project.run().code in (0, 3)
    scores = _scores(project)
    assert scores["slow"] == 1.0  # the 429 was retried
    dead = scores["dead"]
    assert dead["status"] == "error" and dead.get("value") is None
    assert _summary(project)["pairs"][0]["missing"] == 1


def test_calibrate_pairwise_against_human_labels(project: LiveProject) -> None:
    _write(project, ROWS[:3], _judge(project))
    labels = [
        {"id": "h1", "output": {"cand": "q=5", "base": "q=1"}, "label": "cand"},
        {"id": "h2", "output": {"cand": "q=1", "base": "q=4"}, "label": "base"},
        {"id": "h3", "output": {"cand": "q=2", "base": "q=2"}, "label": "tie"},
        {"id": "h4", "output": {"cand": "q=2", "base": "q=3"}, "label": "cand"},  # the judge disagrees
        {"id": "h5", "output": {"cand": "q=2 biased", "base": "q=3"}, "label": "cand"},  # flips: excluded
    ]
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels))
    result = evalglass("calibrate", "preferred", "--labels", "labels.jsonl", "--format", "json", cwd=project.root)
    assert result.code == 0, result.err
    record = json.loads(result.out)
    assert record["categories"] == ["cand", "base", "tie"]
    assert record["n"] == 4 and record["excluded"] == 1 and record["agreed"] == 3
    assert record["model"] == JUDGE_MODEL
