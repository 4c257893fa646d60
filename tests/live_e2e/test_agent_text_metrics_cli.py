"""A metric of an answer (text or a value) on the whole of an agent's trajectory is the config's mistake, refused at
the metric's line before any call (exit 2), with the fix (`field: text`): never 0.0 (`type_mismatch`) or an `error`
(`wrong_type`) on every example. With `field: text` the same metric measures the final answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject
from .test_agent_fields_cli import scripted, write


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(turns=scripted) as fake:
        yield fake


def test_an_answer_metric_on_a_whole_trajectory_is_refused_at_its_line(
    project: LiveProject, server: FakeOpenAI
) -> None:
    metrics = {
        "same": {"type": "exact_match", "expected": "Done."},
        "says_done": {"type": "contains", "value": "Done"},
        "is_json": {"type": "json_valid"},
        "calls": {"type": "steps", "count": "tool_calls"},
    }
    write(project, metrics, {"weather": "tools.py:weather"})
    result = project.run()
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(lines) == 3, result.err
    config = (project.root / "evalglass.yaml").read_text().splitlines()
    for name in ("same", "says_done", "is_json"):
        (line,) = [line for line in lines if f"metric '{name}'" in line]
        assert "trajectory" in line and "`field: text`" in line
        number = int(line.split("evalglass.yaml:")[1].split(":")[0])
        assert config[number - 1].strip() == f"{name}:", (line, config[number - 1])
    assert server.request_count == 0

    # The fix the line gives: the final answer is measured.
    for name in ("same", "says_done"):
        metrics[name]["field"] = "text"
    metrics.pop("is_json")
    write(project, metrics, {"weather": "tools.py:weather"})
    result = project.run()
    assert result.code == 0, result.err
    rows = project.scores()
    assert [row["scores"]["same"] for row in rows] == [1.0, 1.0, 1.0]
    assert [row["scores"]["says_done"] for row in rows] == [1.0, 1.0, 1.0]


def test_a_trajectory_metric_on_a_chat_answer_is_refused(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(
        [{"id": "q1", "question": "hello"}],
        metrics={"calls": {"type": "tool_calls", "reference": "expected", "mode": "exact"}},
    )
    result = project.run()
    assert result.code == 2, result.out + result.err
    assert "metric 'calls' (tool_calls) reads a trajectory" in result.err and "Traceback" not in result.err
    assert server.request_count == 0
