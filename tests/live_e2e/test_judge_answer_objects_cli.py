"""A judge's answer is the JSON object that holds its score, wherever it stands; an answer that says two scores is
unreadable, never its first (json-score@2), through the CLI against a real server on 127.0.0.1.

The fake server echoes, so each recorded output below is, word for word, what the judge answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def _judged(tmp_path: Path, answers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each answer, as a recorded output, graded by a judge that echoes it back: its score row by id."""
    with FakeOpenAI() as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.write(
            [{"id": key, "output": text} for key, text in answers.items()],
            task={"type": "recorded", "field": "output"},
            metrics={"quality": project.judge(prompt="{{ output }}")},
        )
        result = project.run("--no-cache")
        assert result.code == 0, result.err
        return {row["id"]: row["scores"]["quality"] for row in project.scores()}


def test_the_judges_answer_is_the_object_with_its_score_and_two_scores_are_unreadable(tmp_path):
    scores = _judged(tmp_path, ANSWERS)
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


QUOTED = {
    # json-score@3: a plain decimal number written as text is the judge's number (version 2: judge_unparseable)
    "quoted": '{"score": "4", "rationale": "good"}',
    "quoted-spaced": '{"score": " 2.0 ", "rationale": "weak"}',
    # then the number meets the rules a bare one does: off the scale is off the scale, never clipped
    "quoted-off-scale": '{"score": "7"}',
    # any other text stays unreadable: words, an exponent, NaN, a fraction, digits among words
    "words": '{"score": "four"}',
    "exponent": '{"score": "4e0"}',
    "nan": '{"score": "NaN"}',
    "fraction": '{"score": "4/5"}',
    "with-words": '{"score": "4 points"}',
}


def test_a_number_quoted_as_text_is_the_judges_score_and_other_text_is_unreadable(tmp_path):
    scores = _judged(tmp_path, QUOTED)
    found = {key: (row["status"], row.get("validity"), row.get("value")) for key, row in scores.items()}
    assert found["quoted"] == ("scored", "valid", 4.0)
    assert found["quoted-spaced"] == ("scored", "valid", 2.0)
    assert found["quoted-off-scale"] == ("scored", "invalid", 7.0)
    assert scores["quoted-off-scale"]["diagnostics"][0]["code"] == "judge_off_scale"
    for key in ("words", "exponent", "nan", "fraction", "with-words"):
        assert found[key][0] == "error", (key, scores[key])
        assert scores[key]["diagnostics"][0]["code"] == "judge_unparseable", scores[key]


def test_an_integer_on_a_label_scale_is_the_label_its_digits_spell(tmp_path):
    answers = {"two": '{"score": 2}', "nine": '{"score": 9}', "true": '{"score": true}', "real": '{"score": 2.0}'}
    with FakeOpenAI() as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.write(
            [{"id": key, "output": text} for key, text in answers.items()],
            task={"type": "recorded", "field": "output"},
            metrics={"quality": project.judge(prompt="{{ output }}", scale={"labels": ["1", "2", "3"]})},
        )
        result = project.run("--no-cache")
        assert result.code == 0, result.err
        scores = {row["id"]: row["scores"]["quality"] for row in project.scores()}
    assert (scores["two"]["status"], scores["two"]["value"]) == ("scored", 1.0)  # "2" is the second label: 1.0
    assert [d["code"] for d in scores["nine"]["diagnostics"]] == ["judge_unparseable"]  # no label spells 9
    assert [d["code"] for d in scores["true"]["diagnostics"]] == ["judge_unparseable"]
    assert [d["code"] for d in scores["real"]["diagnostics"]] == ["judge_unparseable"]
