"""An answer a metric cannot read (issue 27): scored the worst end of the metric's scale for its direction, or left
out, and never confused with what the evaluator lacks. The rules of ``metrics.invalid`` for the cases the builtins'
own tests do not reach: host metrics (scaled or not), judges' scales, gates that disagree on the direction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.outputparse import parse_json_output
from evalglass.core.score import Status
from evalglass.core.stats import Direction
from evalglass.metrics import parse_metric_spec
from evalglass.metrics.base import BuildContext
from tests.metrics.helpers import assert_unmeasured, assert_worst

NOT_JSON = parse_json_output('```json\n{"answer": "4"}\n```')
#: A host metric that leaves a mark each time it is called, beside its file.
HOST = "from pathlib import Path\n\ndef graded(output):\n    Path(__file__).with_suffix('.calls').open('a').write('x')\n    return 0.5\n"


def score(
    config: dict[str, Any],
    output: Any,
    base: Path = Path("."),
    direction: Direction | None = Direction.HIGHER_IS_BETTER,
) -> Any:
    function = parse_metric_spec(config).build(BuildContext(base, name="m", direction=direction))
    return function(Example(id="ex-1", line=2, fields={}, output=output))


def host(tmp_path: Path, **options: Any) -> dict[str, Any]:
    (tmp_path / "graders.py").write_text(HOST)
    return {"type": "python", "function": "graders.py:graded", **options}


@pytest.mark.parametrize(("direction", "worst"), [(Direction.HIGHER_IS_BETTER, 1.0), (Direction.LOWER_IS_BETTER, 10.0)])
def test_a_scaled_host_metric_scores_a_wrong_answer_without_calling_the_function(tmp_path, direction, worst):
    config = host(tmp_path, scale={"min": 1, "max": 10}, field="answer")
    for output, code in ((NOT_JSON, "output_not_json"), ({"other": 1}, "output_field_missing")):
        assert_worst(score(config, output, tmp_path, direction), worst, code)
    assert not (tmp_path / "graders.calls").exists()
    assert score(config, {"answer": 3}, tmp_path, direction) == 0.5
    assert (tmp_path / "graders.calls").read_text() == "x"


def test_an_unscaled_host_metric_has_no_worst_value_and_says_how_to_declare_one(tmp_path):
    config = host(tmp_path)
    result = assert_unmeasured(score(config, NOT_JSON, tmp_path), Status.ERROR, "output_not_json")
    assert "declares no scale" in result.diagnostics[0].message
    missing = assert_unmeasured(score({**config, "field": "x"}, {}, tmp_path), Status.NON_EVALUABLE, "field_missing")
    assert "scale" in missing.diagnostics[0].message


def test_gates_that_disagree_on_the_direction_leave_a_wrong_answer_out_and_say_why():
    config = {"type": "exact_match", "expected": "refund", "field": "intent"}
    result = assert_unmeasured(score(config, {"other": 1}, direction=None), Status.NON_EVALUABLE, "field_missing")
    assert "disagree on which way it improves" in result.diagnostics[0].message
    assert score(config, {"intent": "refund"}, direction=None) == 1.0


def test_a_label_judge_scale_gives_its_lowest_or_highest_label_value():
    config = {
        "type": "llm_judge",
        "rubric": "rubric.md",
        "scale": {"labels": {"unsafe": 3, "borderline": 1, "safe": 0}},
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": None,
    }
    spec = parse_metric_spec(config)
    assert spec.worst_value(Direction.HIGHER_IS_BETTER) == 0.0
    assert spec.worst_value(Direction.LOWER_IS_BETTER) == 3.0


def test_no_output_at_all_is_not_an_answer():
    """Nothing recorded is what the evaluator lacks: never scored, whatever the option."""
    result = score({"type": "regex", "pattern": "a", "field": "x"}, ABSENT)
    assert_unmeasured(result, Status.NON_EVALUABLE, "field_missing")


def test_the_diagnostic_keeps_the_unparsed_text_for_the_reader():
    result = assert_worst(score({"type": "enum", "values": ["a"]}, NOT_JSON), 0.0, "output_not_json")
    assert result.diagnostics[0].detail is not None and '{"answer": "4"}' in result.diagnostics[0].detail
    assert "task.parse is json" in result.diagnostics[0].message
