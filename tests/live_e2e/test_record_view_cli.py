"""What a variant's scorers and lanes are shown of an example in a run whose variants are recorded in the dataset
(llm_judge@3, jury@2): the record as gold sees it, without any variant's recorded output field. A judge of variant
`a` never sees variant `b`'s answer (nor `a`'s own under its field's name: it is `output`); a python, command, chat
or agent lane variant is never fed the recorded variants' answers (a template reading such a field by name is
refused at load: tests/e2e/test_gold_fields_cli.py). Through the CLI, against the fake OpenAI server
on 127.0.0.1 (what it received is what a model would have read) and real host processes."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import JUDGE_MODEL, LiveProject, evalglass


def rows(count: int = 3) -> list[dict[str, Any]]:
    """Each answer is unmistakable (`ALPHA-i`, `BRAVO-i`) and carries the grade the fake judge gives it."""
    return [
        {
            "id": f"e{i}",
            "question": f"question {i}?",
            "answer_a": f"ALPHA-{i} grade=4",
            "answer_b": f"BRAVO-{i} grade=2",
        }
        for i in range(count)
    ]


def texts(server: FakeOpenAI, model: str) -> list[str]:
    """Every message the server received from calls to ``model``, as one text per request."""
    return [
        "\n".join(str(message.get("content", "")) for message in request.body["messages"])
        for request in server.requests
        if request.body.get("model") == model
    ]


def test_a_judge_of_one_recorded_variant_never_sees_the_other_variants_answer(
    project: LiveProject, server: FakeOpenAI
) -> None:
    system = "{% for key, value in example.items() %}{{ key }}: {{ value }}\n{% endfor %}"
    jury = {
        "type": "jury",
        "rubric": "rubric.md",
        "scale": {"min": 1, "max": 5},
        "rule": "mean",
        "judges": {name: {**project.judge(), "temperature": t} for name, t in (("one", 0.0), ("two", 0.5))},
    }
    for member in jury["judges"].values():
        for key in ("type", "rubric", "scale"):
            member.pop(key)
    project.write(
        rows(),
        task={"type": "recorded", "field": "answer_a"},
        variants={"a": {}, "b": {"field": "answer_b"}},
        metrics={"quality": project.judge(), "walked": project.judge(system=system), "panel": jury},
    )
    result = project.run()
    assert result.code == 0, result.err
    card = json.loads(result.out)
    values = {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]}
    # The judge graded each variant's own answer (the grade it carries), so the prompts were about the right output.
    assert values["quality@a"] == 4 and values["quality@b"] == 2
    asked = texts(server, JUDGE_MODEL)
    assert len(asked) == 3 * 2 * 4  # 3 examples, 2 variants, 4 judge calls each (quality, walked, two jurors)
    for index in range(3):
        about_a = [text for text in asked if f"ALPHA-{index}" in text]
        about_b = [text for text in asked if f"BRAVO-{index}" in text]
        assert len(about_a) == len(about_b) == 4
        assert not set(about_a) & set(about_b)  # no prompt shows both answers
        assert all(f"question {index}?" in text for text in about_a + about_b)  # the rest of the record is shown
    # Neither answer is shown under its field's name: the graded one is `output`, the other is not there.
    assert not [text for text in asked if "answer_a" in text or "answer_b" in text]


def test_a_pairwise_judge_of_live_variants_is_not_shown_a_recorded_variants_answer(
    project: LiveProject, server: FakeOpenAI
) -> None:
    pairwise = project.judge(mode="pairwise", compare_variants=["small", "big"], inconsistent="tie")
    pairwise.pop("scale")
    project.write(
        rows(),
        task=project.lane(),
        variants={
            "small": {"model": "small-model"},
            "big": {"model": "big-model"},
            "old": {"type": "recorded", "field": "answer_b"},
        },
        metrics={"versus": pairwise},
    )
    result = project.run()
    assert result.code == 0, result.err
    asked = texts(server, JUDGE_MODEL)
    assert len(asked) == 3 * 2  # each example, both orders
    for index in range(3):
        about = [text for text in asked if f"question {index}?" in text]
        assert len(about) == 2
    # The compared outputs are shown as A and B; the recorded variant's answer, or its field, nowhere (`answer_a`
    # is no variant's output in this run: an input like `question`, shown).
    assert not [text for text in asked if "BRAVO" in text or "answer_b" in text]
    assert all("ALPHA" in text for text in asked)


ECHO = """\
import json


def echo(record):
    return json.dumps(record, sort_keys=True)
"""


@pytest.mark.parametrize("judged", [False, True], ids=["lanes-in-columns", "lanes-per-example"])
def test_live_variants_beside_a_recorded_one_are_never_fed_its_answer(
    project: LiveProject, server: FakeOpenAI, judged: bool
) -> None:
    """Without a judge the lanes are called in columns (``produce_column``), with one example by example: both."""
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(ECHO)
    stdin_echo = [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"]
    recorded_b = [{**row, "answer_b": row["answer_b"].replace("BRAVO", "CHARLIE")} for row in rows()]
    project.write(
        recorded_b,
        task={"type": "recorded", "field": "answer_a"},
        variants={
            "a": {},
            "b": {"field": "answer_b"},
            "py": {"type": "python", "function": "app.py:echo"},
            "cmd": {"type": "command", "argv": stdin_echo},
            "chat": {**project.lane(prompt="{{ example | json }}")},
            "agent": {
                **project.lane(type="agent", model="agent-model", prompt="{{ example | json }}"),
                "tools": {"lookup": "recorded"},
            },
        },
        metrics={
            "asked": {"type": "contains", "reference": "question"},
            **({"quality": project.judge()} if judged else {}),
        },
    )
    result = project.run()
    assert result.code == 0, result.err
    card = json.loads(result.out)
    values = {metric["name"]: (metric["estimate"] or {}).get("point") for metric in card["metrics"]}
    run = project.last_run()
    for variant in ("py", "cmd", "chat"):
        # Each lane was given the rest of the record (its output holds the question)...
        assert values[f"asked@{variant}"] == 1.0
        outputs = (run / "variants" / variant / "outputs.jsonl").read_text()
        assert outputs.count('"output"') == 3
        # ...and no recorded variant's answer, nor its field.
        for leaked in ("ALPHA-", "CHARLIE-", "answer_a", "answer_b"):
            assert leaked not in outputs, (variant, leaked)
    for model in ("app-model", "agent-model"):
        asked = texts(server, model)
        assert len(asked) == 3 and all("question" in text for text in asked)
        assert not [text for text in asked if "ALPHA" in text or "CHARLIE" in text or "answer_" in text]
    if judged:  # the judge of each live variant is shown its output (the record it was given), and no answer
        graded = texts(server, JUDGE_MODEL)
        assert len(graded) >= 3 * 5  # six variants (two outputs alike: the command's and the chat lane's, cached)
        assert not [text for text in graded if "ALPHA" in text and "CHARLIE" in text]


def test_calibration_shows_the_judge_what_a_run_shows_it(project: LiveProject, server: FakeOpenAI) -> None:
    """`evalglass calibrate` builds the judge as the run does: a labels row copied from the dataset, the variants'
    answers and all, shows the judge its graded `output` and no recorded variant's field."""
    project.write(
        rows(),
        task={"type": "recorded", "field": "answer_a"},
        variants={"a": {}, "b": {"field": "answer_b"}},
        metrics={"quality": project.judge()},
    )
    labels = [{**row, "output": row["answer_a"], "label": 4} for row in rows()]
    (project.root / "labels.jsonl").write_text("".join(json.dumps(row) + "\n" for row in labels))
    result = evalglass("calibrate", "quality", "--labels", "labels.jsonl", "--format", "json", cwd=project.root)
    assert result.code == 0, result.err
    asked = texts(server, JUDGE_MODEL)
    assert len(asked) == 3
    for index, text in enumerate(sorted(asked, key=lambda text: text.split("question ")[1])):
        assert f"question {index}?" in text and text.count(f"ALPHA-{index}") == 1  # shown once: as the output
        assert "BRAVO" not in text and "answer_a" not in text and "answer_b" not in text
