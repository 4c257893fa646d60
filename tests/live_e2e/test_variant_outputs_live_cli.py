"""A chat lane's variants against the fake server, as `view --examples` shows them (issues 33 and 30): each
variant's answer per example, from the run folder, whole; the variants differ by prompt, so their answers do."""

from __future__ import annotations

import json

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, evalglass, questions


def test_view_examples_shows_each_chat_variants_answer(project: LiveProject, server: FakeOpenAI) -> None:
    rows = questions(4)
    long_tail = " and more" * 200  # past the terminal's default 200 characters: json must still hold it whole
    project.write(
        rows,
        variants={"plain": {}, "polite": {"prompt": "Please answer: {{ question }}" + long_tail}},
    )
    result = project.run()
    assert result.code == 0, result.err
    assert server.request_count == 8
    listed = evalglass("view", "--examples", "--state", "all", "--format", "json", "--limit", "100", cwd=project.root)
    assert listed.code == 0, listed.err
    examples = json.loads(listed.out)["examples"]
    assert {row["metric"] for row in examples} == {"echoed@plain", "echoed@polite"}
    for row in examples:
        question = next(item["question"] for item in rows if item["id"] == row["id"])
        # The fake echoes the last user message: each variant's prompt as the lane sent it.
        assert row["outputs"] == {"plain": question, "polite": f"Please answer: {question}{long_tail}"}
        assert row["reference"] == question  # the `contains` metric's reference field
