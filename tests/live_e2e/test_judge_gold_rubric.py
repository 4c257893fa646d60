"""A rubric per example in the gold, through the real CLI: an agent lane's trajectories graded by an `llm_judge` on
their transcripts, each against the rubric its own example holds (the judge's `reference`). The rubric reaches the
judge beside the transcript, a missing one is a gap in the gold (`non_evaluable`, nothing sent), and the gold
fingerprint changes when any example's rubric does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import JUDGE_MODEL, LiveProject, evalglass

TOOLS = '''
def book(day: str) -> str:
    """Book a table."""
    return f"booked {day}"
'''

#: Each example's rubric in the gold says what grade the fake judge gives (`grade=N`), so the grade can only come
#: from the rubric of the example being graded.
RUBRICS = {
    "monday": "Give 5 if the agent booked Monday. grade=5",
    "friday": "The user wanted Friday: give 2 when it booked another day. grade=2",
}


def judge_reply(body: dict[str, Any]) -> str:
    """The judge's grade is the `grade=N` of the rubric section of its prompt, and it says which transcript it saw."""
    prompt = body["messages"][-1]["content"]
    rubric = prompt.split("# Rubric for this example\n", 1)[1].split("\n#", 1)[0]
    grade = int(rubric.rsplit("grade=", 1)[1].split()[0])
    seen = "-> book(" in prompt.split("# Transcript to grade\n", 1)[1]
    return json.dumps({"score": grade, "rationale": f"saw the booking: {seen}"})


def reply(body: dict[str, Any]) -> str:
    if body.get("model") == JUDGE_MODEL:
        return judge_reply(body)
    return "Booked."


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    turns = {
        f"book {day}": [{"tool_calls": [{"name": "book", "arguments": {"day": "monday"}}]}, "Booked."]
        for day in ("monday", "friday", "sunday")
    }
    with FakeOpenAI(turns=turns, reply=reply) as fake:
        yield fake


PROMPT = """\
# Rubric
{{ rubric }}

# Rubric for this example
{{ reference }}

# Transcript to grade
{{ transcript }}

Answer with one JSON object: {"score": <{{ scale }}>, "rationale": "..."}
"""


def write(project: LiveProject, rubrics: dict[str, str | None]) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "tools.py").write_text(TOOLS)
    (project.root / "rubric.md").write_text("Grade what the agent did for the user.\n")
    task = {
        "type": "agent",
        "base_url": project.base_url,
        "model": "agent-model",
        "api_key_env": "EVALGLASS_E2E_KEY",
        "prompt": "book {{ day }}",
        "tools": {"book": "tools.py:book"},
        "max_steps": 3,
        "timeout": 5,
        "retry": {"max_attempts": 2, "initial_delay": 0.01, "max_delay": 0.02},
    }
    judge = project.judge(reference="rubric", prompt=PROMPT, transcript={"max_chars": 4000})
    rows = [
        {"id": day, "day": day, **({"rubric": rubric} if rubric is not None else {})} for day, rubric in rubrics.items()
    ]
    # A gate on the judge (not approved, so informational) makes the run take the gold fingerprint.
    project.write(rows, task=task, metrics={"graded": judge}, gates={"graded_ok": {"metric": "graded"}})


def scores_of(project: LiveProject) -> dict[str, Any]:
    return {row["id"]: row["scores"]["graded"] for row in project.scores()}


def value(score: Any) -> float:
    return float(score) if isinstance(score, int | float) else float(score["value"])


def test_each_trajectory_is_graded_against_the_rubric_its_own_example_holds(
    project: LiveProject, server: FakeOpenAI
) -> None:
    write(project, {**RUBRICS, "sunday": None})
    result = project.run()
    assert result.code == 0, result.err
    scores = scores_of(project)
    assert (value(scores["monday"]), value(scores["friday"])) == (5.0, 2.0)  # each by its own example's rubric
    sunday = scores["sunday"]
    assert sunday["status"] == "non_evaluable" and "reference_missing" in json.dumps(sunday), sunday

    judged = [r.body for r in server.requests if r.body.get("model") == JUDGE_MODEL]
    assert len(judged) == 2  # the example without a rubric was never sent
    for body in judged:
        prompt = body["messages"][-1]["content"]
        day = "monday" if "book monday" in prompt else "friday"
        assert RUBRICS[day] in prompt and '-> book({"day":"monday"})' in prompt
        assert RUBRICS["friday" if day == "monday" else "monday"] not in prompt

    first = json.loads((project.last_run() / "scorecard.json").read_text())["dataset"]["gold_fingerprint"]
    assert first is not None
    write(project, {**RUBRICS, "friday": RUBRICS["friday"].replace("grade=2", "grade=3"), "sunday": None})
    again = project.run()
    assert again.code == 0, again.err
    card = json.loads((project.last_run() / "scorecard.json").read_text())
    assert card["dataset"]["gold_fingerprint"] not in (None, first)
    assert value(scores_of(project)["friday"]) == 3.0
    assert evalglass("verify", str(project.last_run()), cwd=Path(project.root)).code == 0
