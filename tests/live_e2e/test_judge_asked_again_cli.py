"""A judge answer that is no score on its scale is not kept in the call cache: the next run asks again (no false
red for good), through the CLI against a real server on 127.0.0.1.

Before, the unreadable answer was stored like any other and replayed by every later run, so the example stayed an
`error` and every gate on the judge `blocked` however often CI ran, while asking once more was what decided it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalglass.testing.fake_openai import FakeOpenAI
from tests.live_e2e.conftest import LiveProject

#: What the judge answers the first time it grades each output; every later time it answers a score.
FIRST = {
    "prose": "Score: 4/5, a good answer.",  # no JSON object: judge_unparseable
    "off-scale": '{"score": 9}',  # a number off the 1-5 scale: judge_off_scale (scored, invalid)
    "fine": '{"score": 2}',
}


def _judged(project: LiveProject) -> dict[str, dict[str, Any]]:
    result = project.run()
    assert result.code == 0, result.err
    return {row["id"]: row["scores"]["quality"] for row in project.scores()}


def test_an_unreadable_judge_answer_is_asked_again_and_a_score_is_kept(tmp_path: Path) -> None:
    asked: dict[str, int] = {}

    def reply(body: dict[str, Any]) -> str:
        output = body["messages"][-1]["content"]
        asked[output] = asked.get(output, 0) + 1
        return FIRST[output] if asked[output] == 1 else '{"score": 4}'

    with FakeOpenAI(reply=reply) as server:
        project = LiveProject(tmp_path / "evals", server.base_url)
        project.write(
            [{"id": key, "output": key} for key in FIRST],
            task={"type": "recorded", "field": "output"},
            metrics={"quality": project.judge(prompt="{{ output }}")},
        )
        first = _judged(project)
        assert first["prose"]["diagnostics"][0]["code"] == "judge_unparseable", first["prose"]
        assert first["off-scale"]["validity"] == "invalid", first["off-scale"]
        for row in (first["prose"], first["off-scale"]):
            assert "the next run asks the judge again" in row["diagnostics"][0]["message"], row
        assert (first["fine"]["status"], first["fine"]["value"]) == ("scored", 2.0)

        second = _judged(project)
        # the two unreadable answers were asked again and read; the score was replayed from the cache, not asked
        assert {key: (row["status"], row.get("validity"), row.get("value")) for key, row in second.items()} == {
            "prose": ("scored", "valid", 4.0),
            "off-scale": ("scored", "valid", 4.0),
            "fine": ("scored", "valid", 2.0),
        }
        assert asked == {"prose": 2, "off-scale": 2, "fine": 1}

        third = _judged(project)  # now every answer is a score: all replayed
        assert third == second and asked == {"prose": 2, "off-scale": 2, "fine": 1}
