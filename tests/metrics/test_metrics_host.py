"""The host ``python`` metric: calling rule, every return kind, exceptions, load errors from real files."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.example import Example
from evalglass.core.score import Score, Status, Validity
from evalglass.metrics import MetricFn, MetricLoadError, MetricResult, parse_metric_spec
from evalglass.metrics.base import BuildContext
from tests.metrics.helpers import assert_unmeasured

RECORD = {"question": "2+2?", "gold": {"answer": "4"}}


def write(tmp_path: Path, source: str, name: str = "host_metrics.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def build(tmp_path: Path, function: str, **options: Any) -> MetricFn:
    return parse_metric_spec({"type": "python", "function": function, **options}).build(BuildContext(tmp_path))


def run(function: MetricFn, output: Any = "4", record: dict[str, Any] | None = None) -> MetricResult:
    return function(Example(id="ex-7", line=8, fields=RECORD if record is None else record, output=output))


RETURNS = """
import math
from evalglass.core.score import Score, Status

def as_float(output): return 0.75
def as_int(output): return 1
def as_numpy(output):
    import numpy
    return numpy.float32(0.5)
def as_score(output): return Score.untrusted(0.9, "off_scale", "judge answered 11 on a 1-10 scale")
def as_skipped(output): return Score.unmeasured(Status.SKIPPED, "not_applicable_here", "math only")
def declined(output): return (None, "the question has no single answer")
def declined_silently(output): return (None, "  ")
def as_none(output): return None
def as_bool(output): return True
def as_numpy_bool(output):
    import numpy
    return numpy.bool_(True)
def as_nan(output): return math.nan
def as_inf(output): return -math.inf
def as_huge_int(output): return 10**400
def as_text(output): return "0.5"
def as_list(output): return [1.0]
def as_illegal_score(output):
    return Score.model_construct(status=Status.ERROR, validity="valid", value=0.0, diagnostics=())
"""


@pytest.mark.parametrize(("name", "value"), [("as_float", 0.75), ("as_int", 1.0), ("as_numpy", 0.5)])
def test_numbers_are_measurements(tmp_path: Path, name: str, value: float) -> None:
    write(tmp_path, RETURNS)
    result = run(build(tmp_path, f"host_metrics.py:{name}"))
    assert type(result) is float
    assert result == value


def test_scores_pass_through(tmp_path: Path) -> None:
    write(tmp_path, RETURNS)
    untrusted = run(build(tmp_path, "host_metrics.py:as_score"))
    assert isinstance(untrusted, Score)
    assert (untrusted.status, untrusted.validity, untrusted.value) == (Status.SCORED, Validity.INVALID, 0.9)
    assert_unmeasured(run(build(tmp_path, "host_metrics.py:as_skipped")), Status.SKIPPED, "not_applicable_here")


def test_declining_with_a_reason_is_non_evaluable(tmp_path: Path) -> None:
    write(tmp_path, RETURNS)
    score = assert_unmeasured(run(build(tmp_path, "host_metrics.py:declined")), Status.NON_EVALUABLE, "host_declined")
    assert score.diagnostics[0].message == "the question has no single answer"


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("declined_silently", "without a reason"),
        ("as_none", "returned None"),
        ("as_bool", "bool"),
        ("as_numpy_bool", "returned a bool, which is not a measurement"),
        ("as_nan", "finite"),
        ("as_inf", "finite"),
        ("as_huge_int", "does not fit"),
        ("as_text", "returned a str"),
        ("as_list", "returned a list"),
        ("as_illegal_score", "illegal Score"),
    ],
)
def test_bad_returns_are_errors_never_zero(tmp_path: Path, name: str, fragment: str) -> None:
    write(tmp_path, RETURNS)
    score = assert_unmeasured(run(build(tmp_path, f"host_metrics.py:{name}")), Status.ERROR, "host_bad_return")
    assert fragment in score.diagnostics[0].message


RAISES = """
import sys

def helper(value):
    raise ValueError(f"cannot grade {value!r}")

def boom(output):
    return helper(output)

def quiet(output):
    raise RuntimeError()

def exits(output):
    sys.exit(3)

def interrupted(output):
    raise KeyboardInterrupt
"""


def test_exception_becomes_error_with_type_message_and_traceback(tmp_path: Path) -> None:
    write(tmp_path, RAISES)
    score = assert_unmeasured(run(build(tmp_path, "host_metrics.py:boom")), Status.ERROR, "host_raised")
    assert score.diagnostics[0].message == "the metric function raised ValueError: cannot grade '4'"
    detail = score.diagnostics[0].detail
    assert detail is not None
    assert "host_metrics.py" in detail and "in helper" in detail and detail.endswith("ValueError: cannot grade '4'")


def test_exception_without_message_and_sys_exit(tmp_path: Path) -> None:
    write(tmp_path, RAISES)
    quiet = assert_unmeasured(run(build(tmp_path, "host_metrics.py:quiet")), Status.ERROR, "host_raised")
    assert quiet.diagnostics[0].message == "the metric function raised RuntimeError"
    exited = assert_unmeasured(run(build(tmp_path, "host_metrics.py:exits")), Status.ERROR, "host_raised")
    assert "SystemExit" in exited.diagnostics[0].message


def test_keyboard_interrupt_still_stops_the_run(tmp_path: Path) -> None:
    write(tmp_path, RAISES)
    with pytest.raises(KeyboardInterrupt):
        run(build(tmp_path, "host_metrics.py:interrupted"))


ARGUMENTS = """
def by_output(output):
    return float(len(output))

def by_record(record):
    return float(len(record["question"]))

def by_reference(output, reference):
    return 1.0 if output == reference else 0.0

def by_example(example):
    return float(example.line)

def by_kwargs(**given):
    return float(len(given))

def with_default(output, scale=2.0):
    return len(output) * scale

def must_not_run(output, reference):
    raise AssertionError("called although the reference is missing")
"""


@pytest.mark.parametrize(
    ("function", "options", "value"),
    [
        ("by_output", {}, 1.0),
        ("by_record", {}, 4.0),
        ("by_reference", {"reference": "gold.answer"}, 1.0),
        ("by_example", {}, 8.0),
        ("by_kwargs", {}, 3.0),
        ("by_kwargs", {"reference": "gold.answer"}, 4.0),
        ("with_default", {}, 2.0),
        ("by_output", {"field": "text"}, 5.0),
    ],
)
def test_parameters_are_filled_by_name(tmp_path: Path, function: str, options: dict[str, Any], value: float) -> None:
    write(tmp_path, ARGUMENTS)
    output = {"text": "hello"} if "field" in options else "4"
    assert run(build(tmp_path, f"host_metrics.py:{function}", **options), output) == value


def test_missing_reference_and_field_are_non_evaluable_without_calling(tmp_path: Path) -> None:
    write(tmp_path, ARGUMENTS)
    gated = build(tmp_path, "host_metrics.py:must_not_run", reference="gold.missing")
    assert_unmeasured(run(gated), Status.NON_EVALUABLE, "reference_missing")
    nested = build(tmp_path, "host_metrics.py:by_output", field="answer.text")
    assert_unmeasured(run(nested, {"answer": {}}), Status.NON_EVALUABLE, "field_missing")


def test_module_form_and_shared_module_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "graders_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text("def exact(output, reference):\n    return float(output == reference)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    metric = build(tmp_path, "graders_pkg_for_test.core:exact", reference="gold.answer")
    assert run(metric, "4") == 1.0
    assert run(metric, "5") == 0.0

    write(
        tmp_path,
        "calls = []\ndef count(output):\n    calls.append(output)\n    return float(len(calls))\n",
        "counter.py",
    )
    first, second = build(tmp_path, "counter.py:count"), build(tmp_path, "counter.py:count")
    assert (run(first), run(second)) == (1.0, 2.0)


def test_edited_file_is_reloaded(tmp_path: Path) -> None:
    write(tmp_path, "def version(output):\n    return 1.0\n", "edited.py")
    assert run(build(tmp_path, "edited.py:version")) == 1.0
    write(tmp_path, "def version(output):\n    return 2.00\n", "edited.py")
    assert run(build(tmp_path, "edited.py:version")) == 2.0


@pytest.mark.parametrize(
    ("source", "function", "fragments"),
    [
        (None, "nowhere/missing.py:metric", ["does not exist", "missing.py", "relative to"]),
        ("def other(output): return 1.0\n", "host_metrics.py:metric", ["has no function 'metric'", "other"]),
        (
            "def metric(output)\n    return 1.0\n",
            "host_metrics.py:metric",
            ["syntax error at", "host_metrics.py:1"],
        ),
        ("raise ImportError('no GPU here')\n", "host_metrics.py:metric", ["raised ImportError: no GPU here"]),
        ("metric = 3\n", "host_metrics.py:metric", ["is a int, not a function"]),
        ("async def metric(output): return 1.0\n", "host_metrics.py:metric", ["is async"]),
        (
            "def metric(answer): return 1.0\n",
            "host_metrics.py:metric",
            ["parameter 'answer', which cannot be filled"],
        ),
        (
            "def metric(output, /): return 1.0\n",
            "host_metrics.py:metric",
            ["positional-only parameter 'output'"],
        ),
        ("def metric(output, reference): return 1.0\n", "host_metrics.py:metric", ["no 'reference:' path"]),
        ("def metric(): return 1.0\n", "host_metrics.py:metric", ["takes none of output, record"]),
        (None, "no_such_module_xyz.graders:metric", ["module 'no_such_module_xyz.graders' was not found"]),
        (None, "json:loads", ["json:loads has parameter 's'"]),
    ],
)
def test_load_errors_are_one_clear_line(
    tmp_path: Path, source: str | None, function: str, fragments: list[str]
) -> None:
    if source is not None:
        write(tmp_path, source)
    with pytest.raises(MetricLoadError) as caught:
        build(tmp_path, function)
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    assert isinstance(caught.value, ValueError)


def test_failed_import_does_not_leave_a_half_module(tmp_path: Path) -> None:
    write(tmp_path, "raise RuntimeError('first try fails')\n", "flaky.py")
    with pytest.raises(MetricLoadError):
        build(tmp_path, "flaky.py:metric")
    write(tmp_path, "def metric(output):\n    return 0.25\n", "flaky.py")
    assert run(build(tmp_path, "flaky.py:metric")) == 0.25


@pytest.mark.parametrize("function", ["metrics.py", "metrics.py:", ":metric", "metrics.py:not-an-identifier", ""])
def test_function_reference_shape_is_checked_at_config_load(function: str) -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "python", "function": function})


def test_referenced_files(tmp_path: Path) -> None:
    file_spec = parse_metric_spec({"type": "python", "function": "lib/grade.py:metric"})
    module_spec = parse_metric_spec({"type": "python", "function": "lib.grade:metric"})
    assert file_spec.referenced_files(tmp_path) == ((tmp_path / "lib" / "grade.py").resolve(),)  # type: ignore[attr-defined]
    assert module_spec.referenced_files(tmp_path) == ()  # type: ignore[attr-defined]
