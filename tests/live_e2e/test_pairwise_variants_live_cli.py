"""A pairwise judge of a run's variants (`compare_variants`, issue 33) through the CLI against the fake OpenAI server:
each variant's lane answers, then one more pass asks the judge both orders over every variant's output for the same
example. Its column is the metric's own (no `@variant`), with the win rate and its interval and the position bias
beside it; a gate decides on it; `verify` re-derives it; an edited `compared/` file is refused; a killed run resumes
from the cache without asking anything twice."""

from __future__ import annotations

import json
import re
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.core.stats.proportion import wilson
from evalglass.testing.fake_openai import FakeOpenAI, strip_directives

from .conftest import JUDGE_MODEL, LiveProject, calibration_pin, evalglass, kill, start, wait_until


def reply(body: dict[str, Any]) -> str:
    """Lanes: `strong-model` answers `q=S`, `weak-model` `q=W`, from `s=S w=W` in the question, then the question
    and the model.
    The judge prefers the higher `q=`; with `biased` in either output it always prefers the first shown."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if body.get("model") != JUDGE_MODEL:
        grades = dict(re.findall(r"\b([sw])=(\d+)", text))
        grade = grades["s" if body["model"] == "strong-model" else "w"]
        return f"q={grade} {strip_directives(text)} by {body['model']}"
    first = text.split("# Output A\n", 1)[1].split("# Output B\n", 1)[0]
    second = text.split("# Output B\n", 1)[1].split("Which output", 1)[0]
    if "biased" in first + second:
        return json.dumps({"winner": "A", "rationale": "the first one"})
    q1, q2 = (int(re.search(r"q=(\d+)", part).group(1)) for part in (first, second))  # type: ignore[union-attr]
    return json.dumps({"winner": "A" if q1 > q2 else "B" if q2 > q1 else "tie", "rationale": f"{q1} vs {q2}"})


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=reply) as fake:
        yield fake


#: strong beats weak 8 times, loses twice, one tie, one verdict that flips with the order.
GRADES = [(5, 1)] * 8 + [(1, 4)] * 2 + [(3, 3)]


def rows(extra: int = 0) -> list[dict[str, Any]]:
    found = [{"id": f"e{i:03d}", "question": f"ask{i} s={s} w={w}"} for i, (s, w) in enumerate(GRADES)]
    found.append({"id": "flip", "question": "askflip s=3 w=2 biased"})
    found += [{"id": f"x{i:03d}", "question": f"more{i} s=4 w=2"} for i in range(extra)]
    return found


def judged(project: LiveProject, *, extra: int = 0, gates: dict[str, Any] | None = None, **top: Any) -> None:
    judge = project.judge(mode="pairwise", compare_variants=["strong", "weak"], inconsistent="tie")
    judge.pop("scale")
    project.write(
        rows(extra),
        metrics={"echoed": {"type": "contains", "reference": "question"}, "preferred": judge},
        variants={"strong": {"model": "strong-model"}, "weak": {"model": "weak-model"}},
        gates=gates,
        **top,
    )


JSON = ("--format", "json")


def metric(card: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in card["metrics"] if m["name"] == name)


def approve_calibrated(project: LiveProject, gate: str, threshold: float) -> dict[str, Any]:
    """The host's ledger approving ``gate`` (on the judge ``preferred``) at ``threshold``, the judge calibrated
    against human pairwise labels and its record approved; the gate's approval is returned."""
    labels = [
        {"id": "h1", "output": {"strong": "q=5", "weak": "q=1"}, "label": "strong"},
        {"id": "h2", "output": {"strong": "q=1", "weak": "q=4"}, "label": "weak"},
        {"id": "h3", "output": {"strong": "q=2", "weak": "q=2"}, "label": "tie"},
    ]
    (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels))
    calibrated = evalglass("calibrate", "preferred", "--labels", "labels.jsonl", cwd=project.root)
    assert calibrated.code == 0, calibrated.err
    approval = {
        "active": True,
        "threshold": threshold,
        "fingerprint": project.gate_fingerprint(gate),
        "judge_endpoint": project.judge_endpoint("preferred"),
    }
    ledger = {
        "gates": {gate: approval},
        "judges": {"preferred": {"min_agreement": 0.1, "calibration": calibration_pin(calibrated.out)}},
    }
    project.write_ledger(ledger)
    return approval


def judge_requests(server: FakeOpenAI) -> list[str]:
    """Each judge request's user message (what was asked, in which order)."""
    return [
        next(m["content"] for m in reversed(request.body["messages"]) if m["role"] == "user")
        for request in server.requests
        if request.body["model"] == JUDGE_MODEL
    ]


def test_the_judge_of_variants_has_its_column_win_rate_and_position_bias_and_a_gate_decides(
    project: LiveProject, server: FakeOpenAI
) -> None:
    gates = {"strong-preferred": {"metric": "preferred", "proposed_threshold": 0.5}}
    judged(project, gates=gates)
    n = len(GRADES) + 1
    first = project.run()
    assert first.code == 0, first.err
    card = json.loads(first.out)
    (gate,) = card["decision"]["gates"]
    assert gate["outcome"] == "informational" and gate["value"] == pytest.approx(9 / n)  # not approved yet
    assert server.request_count == 2 * n + 2 * n  # each variant's lane; the judge in both orders per example
    names = [m["name"] for m in card["metrics"]]
    assert names == ["echoed@strong", "echoed@weak", "preferred"]  # no `preferred@strong`
    summary = metric(card, "preferred")["pairwise"]
    (pair,) = summary["pairs"]
    assert (pair["a"], pair["b"]) == ("strong", "weak")
    assert (pair["a_wins"], pair["b_wins"], pair["ties"], pair["flipped"]) == (8, 2, 2, 1)
    interval = wilson(8, 10)
    assert interval is not None
    assert pair["win_rate"] == pytest.approx(0.8) and pair["win_rate_low"] == pytest.approx(interval.low)
    assert summary["position_bias"] == pytest.approx(1 / n) and summary["inconsistent"] == "tie"
    # the metric's value: strong's result per example, a flipped verdict a tie (0.5), never a win
    assert metric(card, "preferred")["estimate"]["point"] == pytest.approx((8 + 0.5 + 0.5) / n)
    assert [m["metric"] for m in card["variants"]["metrics"]] == ["echoed"]  # side by side: per-variant metrics

    folder = project.last_run()
    graded = [json.loads(line) for line in (folder / "compared" / "graded.jsonl").read_text().splitlines()]
    expected = {"strong": "q=5 ask0 s=5 w=1 by strong-model", "weak": "q=1 ask0 s=5 w=1 by weak-model"}
    assert graded[0] == {"id": "e000", "output": expected}
    notes = [json.loads(line) for line in (folder / "compared" / "outputs.jsonl").read_text().splitlines()]
    flip = next(row for row in notes if row["id"] == "flip")["judges"]["preferred"][0]
    assert flip["pairs"][0]["flipped"] is True
    digests = json.loads((folder / "digests.json").read_text())["files"]
    assert {"compared/graded.jsonl", "compared/outputs.jsonl", "compared/scores.jsonl"} <= set(digests)
    assert json.loads((folder / "runrecord.json").read_text())["compared_scores"] == digests["compared/scores.jsonl"]
    assert evalglass("verify", str(folder), cwd=project.root).code == 0
    report = (folder / "report.md").read_text()
    assert "preferred: position bias 0.08333 (inconsistent: tie); strong vs weak: 8-2, 2 ties" in report
    assert "win rate 0.8 [0.4902, 0.9433]" in report
    shown = evalglass(
        "view", "--examples", "--metric", "preferred", "--state", "all", "--limit", "20", *JSON, cwd=project.root
    )
    assert shown.code == 0, shown.err
    flip_row = next(row for row in json.loads(shown.out)["examples"] if row["id"] == "flip")
    assert flip_row["value"] == 0.5 and set(flip_row["outputs"]) == {"strong", "weak"}
    page = project.root / "page.html"
    assert evalglass("report", str(folder), "--out", str(page), cwd=project.root).code == 0
    assert "q=5 ask0 s=5 w=1 by strong-model" in page.read_text()

    # calibrated against human pairwise labels and approved: the gate decides on the column, without a variant
    approve_calibrated(project, "strong-preferred", 0.5)
    before = server.request_count
    approved = project.run()
    assert server.request_count == before  # every lane and judge answer from the cache
    assert approved.code == 0, approved.out + approved.err
    (gate,) = json.loads(approved.out)["decision"]["gates"]
    assert gate["outcome"] == "pass" and gate["subject"] == "preferred"
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0
    compared = evalglass("compare", str(folder), str(project.last_run()), *JSON, cwd=project.root)
    assert compared.code == 0, compared.err
    assert "preferred" in [item["metric"] for item in json.loads(compared.out)["metrics"]], compared.out

    # weak first: another judge (the fingerprint covers which variants, in what order), read from weak's side
    judge = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    judge["metrics"]["preferred"]["compare_variants"] = ["weak", "strong"]
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(judge, sort_keys=False))
    stale = project.run()
    assert stale.code == 1  # the approval names the other order's fingerprint: stale, not reused
    (gate,) = json.loads(stale.out)["decision"]["gates"]
    assert gate["outcome"] == "blocked"
    assert metric(json.loads(stale.out), "preferred")["estimate"]["point"] == pytest.approx((2 + 0.5 + 0.5) / n)


def test_an_edited_compared_file_is_refused_by_verify_and_the_readers(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    from tests.e2e.test_forgery import _reseal as reseal

    judged(project)
    assert project.run().code == 0
    folder = project.last_run()
    clean = tmp_path / "clean"
    shutil.copytree(folder, clean)
    for name, edit in [
        ("graded.jsonl", lambda text: text.replace("q=1 ask0", "q=9 ask0")),
        ("outputs.jsonl", lambda text: text.replace('"outcome":"b"', '"outcome":"a"', 1)),
        ("scores.jsonl", lambda text: text.replace("0.0", "1.0", 1)),
    ]:
        shutil.rmtree(folder)
        shutil.copytree(clean, folder)
        path = folder / "compared" / name
        edited = edit(path.read_text())
        assert edited != path.read_text(), name
        path.write_text(edited)
        refused = evalglass("verify", str(folder), cwd=project.root)
        assert refused.code == 1 and f"compared/{name}" in refused.out + refused.err, (name, refused.out)
        for reader in (("view",), ("view", "--examples", "--metric", "preferred"), ("report", "--out", "r.html")):
            shown = evalglass(*reader, str(folder), cwd=project.root)
            assert shown.code == 2 and f"compared/{name} is not the file" in shown.err, (name, reader, shown.out)
        reseal(folder)  # digests rewritten to match: verify still derives the file from what else the run kept
        resealed = evalglass("verify", str(folder), cwd=project.root)
        assert resealed.code == 1, (name, resealed.out)


def test_a_killed_run_resumes_reusing_every_judge_answer_and_duplicating_nothing(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    from evalglass.engine.produce.cachewriter import LIMIT

    from .test_cache_resume_cli import _reference_run

    extra = 300  # more judge calls than the cache writer can hold uncommitted, so reuse is visible
    judged(project, extra=extra, concurrency={"max_in_flight": 4})
    n = len(GRADES) + 1 + extra
    reference, requests = _reference_run(project, server, tmp_path)
    assert requests == 4 * n  # each variant's lane, then the judge in both orders
    asked = judge_requests(server)
    assert len(set(asked)) == len(asked) == 2 * n
    server.reset()
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    # The variants' 2n calls come first (asserted below), so counting requests counts the judge's: a poll that
    # costs nothing, where reading every request back would take the fake server's (the test process's) CPU.
    wait_until(lambda: server.request_count >= 2 * n, what="the variants answered")
    server.latency = 0.01  # the judge's answers slow enough for the kill to land mid-pass
    wait_until(lambda: server.request_count >= 2 * n + 2 * LIMIT + 50, what="the judge pass well under way")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    (folder,) = (project.root / ".evalglass" / "runs").iterdir()
    assert not (folder / "scorecard.json").exists()
    before = judge_requests(server)
    assert server.request_count - len(before) == 2 * n  # every variant answered before the judge pass began
    server.reset()
    server.latency = 0.0
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    again = judge_requests(server)
    assert server.request_count == len(again)  # no lane call is made again
    # Asked twice at most: the calls in flight at the kill (4) and the answers not yet committed to the cache
    # (engine/produce/cachewriter.py); every other judge answer comes from the cache.
    assert len(set(before) & set(again)) <= 4 + LIMIT and len(before) + len(again) <= 2 * n + 4 + LIMIT
    assert sorted(set(before) | set(again)) == sorted(asked)
    for name in ("graded.jsonl", "outputs.jsonl", "scores.jsonl"):
        assert (folder / "compared" / name).read_bytes() == (reference / "compared" / name).read_bytes(), name
    assert len((folder / "compared" / "outputs.jsonl").read_text().splitlines()) == n  # nothing duplicated
    card, expected = json.loads(resumed.out), json.loads((reference / "scorecard.json").read_text())
    assert metric(card, "preferred")["pairwise"] == metric(expected, "preferred")["pairwise"]
    assert evalglass("verify", str(folder), cwd=project.root).code == 0


def test_with_epochs_each_sample_is_judged_against_the_same_sample_of_the_other_variant(
    project: LiveProject, server: FakeOpenAI
) -> None:
    judged(project)
    config = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    config["task"]["epochs"] = 2
    config["metrics"]["preferred"]["reducer"] = "mean"
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = project.run()
    assert result.code == 0, result.err
    n = len(GRADES) + 1
    assert len(judge_requests(server)) == 2 * 2 * n  # both orders of each sample
    graded = json.loads((project.last_run() / "compared" / "graded.jsonl").read_text().splitlines()[0])
    assert [sorted(sample) for sample in graded["output"]] == [["strong", "weak"]] * 2
    card = json.loads(result.out)
    (pair,) = metric(card, "preferred")["pairwise"]["pairs"]
    assert (pair["a_wins"], pair["b_wins"]) == (16, 4)
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def test_a_failed_lane_call_is_never_judged_and_a_flip_can_be_excluded(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """A variant without an output for an example leaves the judge nothing to compare (`pairwise_output_missing`,
    no call), never a null judged as an answer; under `inconsistent: excluded` a flipped verdict is excluded."""
    judged(project)
    config = yaml.safe_load((project.root / "evalglass.yaml").read_text())
    config["variants"]["weak"]["prompt"] = "{{ question }}{{ fault }}"
    config["task"]["retry"] = {"max_attempts": 1}
    config["metrics"]["preferred"]["inconsistent"] = "excluded"
    (project.root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    data = [{**row, "fault": " [[behaviour:500]]" if row["id"] == "e000" else ""} for row in rows()]
    (project.root / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in data))
    result = project.run()
    assert result.code == 0, result.err
    n = len(data)
    assert len(judge_requests(server)) == 2 * (n - 1)  # e000 is not judged
    assert not any("ask0 " in text for text in judge_requests(server))
    graded = json.loads((project.last_run() / "compared" / "graded.jsonl").read_text().splitlines()[0])
    assert graded["output"] == {"strong": "q=5 ask0 s=5 w=1 by strong-model"}
    scores = {row["id"]: row["scores"]["preferred"] for row in project.scores(project.last_run() / "compared")}
    assert scores["e000"]["status"] == "non_evaluable"
    assert scores["e000"]["diagnostics"][0]["code"] == "pairwise_output_missing"
    assert scores["flip"]["diagnostics"][0]["code"] == "pairwise_inconsistent"
    (pair,) = metric(json.loads(result.out), "preferred")["pairwise"]["pairs"]
    assert (pair["a_wins"], pair["b_wins"], pair["ties"], pair["excluded"]) == (7, 2, 1, 1)
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0


def json_reply(body: dict[str, Any]) -> str:
    """Lanes answer JSON, but `weak-model` answers prose for `prose` questions; the judge prefers the first shown."""
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if body.get("model") == JUDGE_MODEL:
        return json.dumps({"winner": "A", "rationale": "the first one"})
    if body["model"] == "weak-model" and "prose" in text:
        return "Sure! The answer is yes."
    return json.dumps({"answer": "yes", "by": body["model"]})


def test_a_variants_answer_that_is_not_json_is_the_wrong_answer_the_lane_recorded(tmp_path: Path) -> None:
    """The weak variant's lane (`output: json`) answered prose for one question: its own metrics score it worst
    (`output_not_json`), and the judge of variants used to grade its text as if it were an answer. The comparison
    is now that wrong answer too: the judge's worst value with `output_not_json`, and the judge is not asked."""
    with FakeOpenAI(reply=json_reply) as fake:
        project = LiveProject(tmp_path / "evals", fake.base_url)
        judge = project.judge(mode="pairwise", compare_variants=["strong", "weak"], inconsistent="tie")
        judge.pop("scale")
        lane = {**project.lane(), "output": "json"}
        project.write(
            [{"id": "fine", "question": "ask"}, {"id": "prose", "question": "prose ask"}],
            task=lane,
            metrics={"preferred": judge},
            variants={"strong": {"model": "strong-model"}, "weak": {"model": "weak-model"}},
        )
        result = project.run("--no-cache")
        assert result.code == 0, result.err
        asked = [r for r in fake.requests if r.body.get("model") == JUDGE_MODEL]
    graded = (project.last_run() / "compared" / "graded.jsonl").read_text().splitlines()
    assert json.loads(graded[1])["output"] == "variant weak: Sure! The answer is yes."
    compared = {row["id"]: row["scores"]["preferred"] for row in project.scores(project.last_run() / "compared")}
    assert compared["prose"]["diagnostics"][0]["code"] == "output_not_json", compared["prose"]
    assert "status" not in compared["fine"] or compared["fine"]["status"] == "scored"
    assert len(asked) == 2  # both orders for `fine` only: the wrong answer is not shown to the judge
    assert evalglass("verify", str(project.last_run()), cwd=project.root).code == 0
