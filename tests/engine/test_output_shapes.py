"""What a metric reads of a whole output against what the task's output is (engine/spec/outputfields.py), and an
output's usage or cost that was not recorded (engine/datasets/uncaptured.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalglass.core.outputshape import OutputShape
from evalglass.engine.datasets.uncaptured import unrecorded_output
from evalglass.engine.spec.outputfields import output_shape_problems, recorded_shape
from evalglass.lanes.agent import _summed
from evalglass.lanes.chatcall import Usage
from evalglass.metrics.registry import METRIC_TYPES, parse_metric_spec

ANSWER_TYPES = {"exact_match", "enum", "numeric_bounds", "set_overlap", "json_valid"}
TEXT_TYPES = {"contains", "regex", "word_count"}
TRAJECTORY_TYPES = {"tool_calls", "steps", "loop"}


def test_every_metric_type_declares_what_it_reads() -> None:
    reads = {name: spec.reads for name, spec in METRIC_TYPES.items()}
    assert {name for name, shape in reads.items() if shape is OutputShape.TEXT} == TEXT_TYPES
    assert {name for name, shape in reads.items() if shape is OutputShape.ANSWER} == ANSWER_TYPES
    assert {name for name, shape in reads.items() if shape is OutputShape.TRAJECTORY} == TRAJECTORY_TYPES


def metrics(**entries: dict[str, Any]) -> dict[str, Any]:
    return {name: parse_metric_spec(entry) for name, entry in entries.items()}


def test_answer_metrics_on_a_trajectory_are_refused_unless_they_read_a_field() -> None:
    declared = metrics(
        same={"type": "exact_match", "expected": "x"},
        says={"type": "contains", "value": "x"},
        final={"type": "contains", "value": "x", "field": "text"},
        calls={"type": "steps", "count": "tool_calls"},
        graded={"type": "field_present", "fields": ["text"]},
    )
    problems = output_shape_problems([(None, OutputShape.TRAJECTORY)], declared)
    assert sorted(at for at, _ in problems) == [("metrics", "same"), ("metrics", "says")]
    assert all("`field: text`" in why for _, why in problems)
    # per variant: named in the line
    (problem,) = output_shape_problems(
        [("tools", OutputShape.TRAJECTORY)], metrics(s={"type": "regex", "pattern": "a"})
    )
    assert "variant 'tools'" in problem[1]
    # Variants of two shapes share the metric: kept (a `field` reading one reads nothing of the other); refused only
    # when no variant's output can be read.
    says = metrics(s={"type": "contains", "value": "a"})
    mixed = [("chat", OutputShape.ANSWER), ("agent", OutputShape.TRAJECTORY)]
    assert output_shape_problems(mixed, says) == []
    both = [("one", OutputShape.TRAJECTORY), ("two", OutputShape.TRAJECTORY)]
    assert [at for at, _ in output_shape_problems(both, says)] == [("metrics", "s")]


def test_a_trajectory_metric_on_an_answer_is_refused() -> None:
    judge = {"type": "llm_judge", "rubric": "r.md", "scale": {"min": 1, "max": 5}, "model": "j", "base_url": "http://x"}
    declared = metrics(
        calls={"type": "loop"},
        same={"type": "exact_match", "expected": "x"},
        shown={**judge, "transcript": {}},
        graded=judge,
    )
    refused = [at for at, _ in output_shape_problems([(None, OutputShape.ANSWER)], declared)]
    assert refused == [("metrics", "calls"), ("metrics", "shown")]


def test_a_recorded_output_is_what_the_run_reads_it_as() -> None:
    both = metrics(calls={"type": "loop"}, says={"type": "contains", "value": "x"})
    assert [at for at, _ in output_shape_problems([(None, OutputShape.ANY)], both)] == [("metrics", "says")]
    # a value may be a list of calls: not refused
    values = metrics(calls={"type": "loop"}, same={"type": "exact_match", "reference": "gold"})
    assert output_shape_problems([(None, OutputShape.ANY)], values) == []
    assert output_shape_problems([(None, OutputShape.ANY)], metrics(says={"type": "contains", "value": "x"})) == []


def test_recorded_shape_of_a_trace() -> None:
    assert recorded_shape("otlp", "output") is OutputShape.TRAJECTORY
    assert recorded_shape("otlp", "output.text") is OutputShape.ANSWER
    assert recorded_shape(None, "output") is OutputShape.ANY
    assert recorded_shape("jsonl", "trajectory") is OutputShape.ANY


counts = st.one_of(st.none(), st.integers(min_value=0, max_value=10_000))
usages = st.one_of(st.none(), st.builds(Usage, counts, counts, counts, counts, counts))


@given(st.lists(usages, min_size=1, max_size=8))
def test_a_total_is_the_sum_only_when_every_step_reported_it(steps: list[Usage | None]) -> None:
    total = _summed(steps)
    if all(step is None for step in steps):
        assert total is None
        return
    assert total is not None
    for name in ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens", "cache_write_tokens"):
        values = [None if step is None else getattr(step, name) for step in steps]
        expected = None if None in values else sum(v for v in values if v is not None)
        assert getattr(total, name) == expected, (name, values)


def test_unrecorded_output_paths() -> None:
    path = ("usage", "input_tokens")
    assert unrecorded_output({"usage": {"input_tokens": 3}}, path) is None
    assert unrecorded_output({"usage": {}}, path) == "usage.input_tokens"
    assert unrecorded_output({"usage": {"input_tokens": None}}, path) == "usage.input_tokens"
    assert unrecorded_output({"usage": {"input_tokens": 3}, "not_recorded": ["usage.input_tokens"]}, path) == (
        "usage.input_tokens"
    )
    # a listed part of usage is needed by a metric of the whole usage
    assert unrecorded_output({"usage": {"output_tokens": 1}, "not_recorded": ["usage.input_tokens"]}, ("usage",)) == (
        "usage.input_tokens"
    )
    assert unrecorded_output({"cost": 0.5, "not_recorded": ["usage.input_tokens"]}, ("cost",)) is None
    assert unrecorded_output("text", ("cost",)) is None
