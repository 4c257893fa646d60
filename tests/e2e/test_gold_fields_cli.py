"""What the gold fingerprint covers and what a system answered are kept apart field by field (``core.goldfields``):
a dataset field that holds a recorded output may be nothing else. Each case below made a field both a system's
answer and gold (or an input the run feeds the system, which gold binds too), and each is refused with one line
naming the file:line of the output field and how to fix it, by `run` and `preflight` alike (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import make_project

CHAT = {"type": "chat", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "NO_SUCH_KEY"}
JUDGE = {
    "type": "llm_judge",
    "rubric": "rubric.md",
    "scale": {"min": 1, "max": 5},
    "base_url": "http://127.0.0.1:9/v1",
    "model": "judge",
    "api_key_env": "NO_SUCH_KEY",
}
EXACT = {"exact": {"type": "exact_match", "reference": "expected"}}


def config(
    task: dict[str, Any],
    variants: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    dataset: dict[str, Any] | None = None,
) -> dict[str, Any]:
    written: dict[str, Any] = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl", **(dataset or {})},
        "task": task,
        "metrics": metrics or EXACT,
    }
    if variants is not None:
        written["variants"] = variants
    return written


CASES = {
    # (a) one variant's answer is another's input: is `draft` gold (an input) or a system's answer?
    "output-is-another-variants-input": (
        config(
            {"type": "recorded", "field": "draft"},
            {"first": {}, "second": {**CHAT, "prompt": "Improve this answer: {{ draft }}"}},
        ),
        "variants.first.field 'draft' is read as an input by variant 'second' (its prompt)",
    ),
    "output-is-another-variants-input-through-example": (
        config(
            {"type": "recorded", "field": "draft"},
            {"first": {}, "second": {**CHAT, "prompt": "Improve: {{ example.draft }}"}},
        ),
        "variants.first.field 'draft' is read as an input by variant 'second' (its prompt)",
    ),
    # (b) the id is gold: an output there would make every id a system's answer.
    "output-is-the-id": (
        config({"type": "recorded", "field": "id"}),
        "task.field 'id' is the dataset's id_field 'id'",
    ),
    "output-is-the-cluster": (
        config({"type": "recorded", "field": "topic"}, dataset={"cluster_field": "topic"}),
        "task.field 'topic' is the dataset's cluster_field 'topic'",
    ),
    # A reference any metric reads, gated or not: the output would be compared with itself.
    "output-is-an-ungated-reference": (
        config({"type": "recorded", "field": "expected"}),
        "task.field 'expected' overlaps the reference 'expected' of metric 'exact'",
    ),
    # Two variants reading one field: one recorded answer measured as two systems (every difference 0).
    "two-variants-share-an-output": (
        config({"type": "recorded", "field": "out"}, {"a": {}, "b": {"parse": "json"}}),
        "variants.b.field 'out' is also the recorded output of variant 'a'",
    ),
    # A judge that reads a variant's recorded answer as part of the example grades one system by another's output.
    "judge-reads-a-variants-output": (
        config(
            {"type": "recorded", "field": "out_a"},
            {"a": {}, "b": {"field": "out_b"}},
            metrics={"judged": {**JUDGE, "prompt": "{{ rubric }} {{ output }} compare with {{ example.out_b }}"}},
        ),
        "variants.b.field 'out_b' is read as an input by metric 'judged' (its prompt)",
    ),
    # ...or shows it as the conversation's input messages (a path read by name outside any template).
    "judge-transcript-reads-a-variants-output": (
        config(
            {"type": "recorded", "field": "out_a"},
            {"a": {}, "b": {"field": "out_b"}},
            metrics={"judged": {**JUDGE, "transcript": {"input": "out_b"}}},
        ),
        "variants.b.field 'out_b' is read as an input by metric 'judged' (its transcript input)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", ["run", "preflight"])
def test_a_field_that_is_an_output_and_anything_else_is_refused_at_its_line(
    tmp_path: Path, case: str, command: str
) -> None:
    written, message = CASES[case]
    project = make_project(tmp_path)
    project.write_rows(
        [
            {"id": f"ex-{i}", "expected": "yes", "draft": "d", "topic": "t", "out": "yes", "out_a": "y", "out_b": "n"}
            for i in range(3)
        ]
    )
    (project.evals / "rubric.md").write_text("Grade it.\n")
    project.write_config(written)
    result = project.cli(command)
    assert result.code == 2, (result.code, result.out, result.err)
    assert "Traceback" not in result.err
    assert message in result.err, result.err
    assert "evalglass.yaml:" in result.err, result.err  # where: file:line
    assert len(result.err.strip().splitlines()) == 1, result.err


def test_fields_apart_are_accepted(tmp_path: Path) -> None:
    """The same shapes with the fields apart run: a live variant reading an input, each variant its own output."""
    written = config(
        {"type": "recorded", "field": "out_a"},
        {"a": {}, "b": {"field": "out_b"}},
    )
    project = make_project(tmp_path)
    project.write_rows([{"id": f"ex-{i}", "expected": "yes", "out_a": "yes", "out_b": "no"} for i in range(3)])
    project.write_config(written)
    assert project.cli("preflight").code == 0
    assert project.run().code == 0


def test_a_run_record_from_before_a_rule_stays_readable() -> None:
    """A run record's config was decided under the rules of its day: reading it back (view, verify, compare)
    does not apply a rule added since, while loading the same config as a config refuses it."""
    from pydantic import ValidationError

    from evalglass.engine.spec.config import Config, config_from_record

    written, _ = CASES["two-variants-share-an-output"]
    assert config_from_record(written).variant_names == ("a", "b")
    with pytest.raises(ValidationError, match="is also the recorded output of variant 'a'"):
        Config.model_validate(written)


def test_a_reference_in_what_a_tool_reader_records_of_the_run_is_refused(tmp_path: Path) -> None:
    """Another tool's results: what the reader records of the tool's run (`source`, `not_captured`) is left out of
    gold like an output, so a metric may not read its reference there (a new run of the tool would change it without
    gold going stale)."""
    project = make_project(tmp_path)
    written = config({"type": "recorded"}, metrics={"exact": {"type": "exact_match", "reference": "source.model"}})
    written["dataset"] = {"name": "suite", "path": "log.json", "format": "inspect"}
    project.write_config(written)
    result = project.cli("preflight")
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert "the inspect reader's run field 'source' overlaps the reference 'source.model'" in result.err
    assert "read the sample's own fields" in result.err and "evalglass.yaml:" in result.err
