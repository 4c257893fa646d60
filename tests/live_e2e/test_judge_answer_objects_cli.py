"""A judge's answer is the JSON object that holds its score, wherever it stands; an answer that says two scores is
unreadable, never its first (json-score@2), through the CLI against a real server on 127.0.0.1.

The fake server echoes, so each recorded output below is, word for word, what the judge answers."""

from __future__ import annotations

from evalglass.testing.fake_openai import FakeOpenAI
from tests.live_e2e.conftest import LiveProject

ANSWERS = {
    # the judge quotes the graded JSON before its verdict: version 1 read the quote and found no score
    "quotes-output": 'The answer {"answer": "yes"} misses the point. {"score": 2, "rationale": "partial"}',
    # a quoted {"score": 5} (from the graded output) beside the judge's own 1: version 1 scored 5
    "two-scores": 'The output says {"score": 5}. It is wrong, so: {"score": 1, "rationale": "wrong"}',
    # a repeated key: version 1 kept the last value silently
    "repeated-key": '{"score": 5, "score": 1}',
    # fenced blocks: the quoted output, then the verdict
    "fenced": '```json\n{"answer": "no"}\n```\nVerdict:\n```json\n{"score": 4, "rationale": "ok"}\n```',
    "plain": '{"score": 3, "rationale": "fine"}',
}


def test_the_judges_answer_is_the_object_with_its_score_and_two_scores_are_unreadable(tmp_path):
    with FakeOpenAI() as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.write(
            [{"id": key, "output": text} for key, text in ANSWERS.items()],
            task={"type": "recorded", "field": "output"},
            metrics={"quality": project.judge(prompt="{{ output }}")},
        )
        result = project.run("--no-cache")
        assert result.code == 0, result.err
        scores = {row["id"]: row["scores"]["quality"] for row in project.scores()}
    assert {key: (scores[key]["status"], scores[key]["value"]) for key in ("quotes-output", "fenced", "plain")} == {
        "quotes-output": ("scored", 2.0),
        "fenced": ("scored", 4.0),
        "plain": ("scored", 3.0),
    }
    for key, why in (("two-scores", 'different "score" values (5, 1)'), ("repeated-key", '"score" twice')):
        row = scores[key]
        assert (row["status"], row.get("value")) == ("error", None), row
        (diagnostic,) = row["diagnostics"]
        assert diagnostic["code"] == "judge_unparseable" and why in diagnostic["message"], diagnostic
