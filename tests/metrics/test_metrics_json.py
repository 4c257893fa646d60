"""json_valid, field_present and json_schema: parsing rules, schema dialects, schema files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.example import Example
from evalglass.core.score import Score, Status, Validity
from evalglass.metrics import MetricLoadError, MetricResult, parse_metric_spec
from evalglass.metrics.base import BuildContext
from tests.metrics.helpers import assert_worst


def measure(config: dict[str, Any], output: Any, base_dir: Path = Path(".")) -> MetricResult:
    function = parse_metric_spec(config).build(BuildContext(base_dir))
    return function(Example(id="ex-1", line=3, fields={}, output=output))


def assert_noted_zero(result: MetricResult, code: str) -> str:
    """A validly measured 0.0 that says why; returns the message."""
    assert isinstance(result, Score)
    assert (result.status, result.validity, result.value) == (Status.SCORED, Validity.VALID, 0.0)
    assert result.diagnostics[0].code == code
    return result.diagnostics[0].message


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        "[1, 2]",
        '"just a string"',
        "3",
        "null",
        "  {}  ",
        '{"big": 123456789012345678901234567890}',
    ],
)
def test_json_valid_accepts_json_text(text: str) -> None:
    assert measure({"type": "json_valid"}, text) == 1.0


@pytest.mark.parametrize(
    "text", ["", "{a: 1}", "[1, 2,]", "NaN", "[Infinity]", '{"a": 1} trailing', "```json\n{}\n```"]
)
def test_json_valid_rejects_non_json_text_as_measured_zero(text: str) -> None:
    assert "not valid JSON" in assert_noted_zero(measure({"type": "json_valid"}, text), "invalid_json")


def test_json_valid_structured_outputs() -> None:
    assert measure({"type": "json_valid"}, {"a": [1, None, "x"]}) == 1.0
    assert measure({"type": "json_valid"}, [1, 2]) == 1.0
    assert_noted_zero(measure({"type": "json_valid"}, {"a": {1, 2}}), "not_json")
    assert_noted_zero(measure({"type": "json_valid"}, {1: "non-string key"}), "not_json")
    assert_noted_zero(measure({"type": "json_valid"}, [float("nan")]), "not_json")


@pytest.mark.parametrize("output", [3, 2.5, True, None, 0, "42", "null"])
def test_json_valid_a_bare_number_boolean_or_null_is_valid_json(output: Any) -> None:
    """json_valid@3: a bare scalar is a JSON document (RFC 8259), parsed or not; it was an error wrong_type."""
    assert measure({"type": "json_valid"}, output) == 1.0


@pytest.mark.parametrize(
    ("output", "named"),
    [(float("nan"), "nan"), (float("inf"), "inf"), ({1, 2}, "set"), (b"x", "bytes"), (object(), "object")],
)
def test_json_valid_a_value_json_cannot_hold_is_an_invalid_answer(output: Any, named: str) -> None:
    assert named in assert_noted_zero(measure({"type": "json_valid"}, output), "not_json")


@pytest.mark.parametrize(
    ("config", "output", "result"),
    [
        ({"fields": ["a", "b.c"]}, '{"a": 1, "b": {"c": 2}}', 1.0),
        ({"fields": ["a", "b.c"]}, {"a": 1, "b": {"c": 2}}, 1.0),
        ({"fields": ["items.1.id"]}, {"items": [{"id": 1}, {"id": 2}]}, 1.0),
        ({"fields": ["a"]}, {"a": None}, 1.0),
        ({"fields": ["a"], "non_null": True}, {"a": 0}, 1.0),
        ({"fields": ["a"], "non_null": True}, {"a": False}, 1.0),
    ],
)
def test_field_present_passes(config: dict[str, Any], output: Any, result: float) -> None:
    assert measure({"type": "field_present", **config}, output) == result


def test_field_present_failures_name_the_fields() -> None:
    message = assert_noted_zero(
        measure({"type": "field_present", "fields": ["a", "b.c", "d"], "non_null": True}, {"a": None, "d": 1}),
        "fields_missing",
    )
    assert message == "missing or null: a, b.c"
    assert_noted_zero(measure({"type": "field_present", "fields": ["a"]}, "{oops"), "invalid_json")
    assert_noted_zero(measure({"type": "field_present", "fields": ["a"]}, "42"), "not_an_object")
    assert_noted_zero(
        measure({"type": "field_present", "fields": ["a"], "parse_strings": False}, '{"a": 1}'),
        "not_an_object",
    )


def test_field_present_with_field_and_bad_config() -> None:
    assert measure({"type": "field_present", "fields": ["x"], "field": "inner"}, {"inner": {"x": 1}}) == 1.0
    assert_worst(measure({"type": "field_present", "fields": ["x"], "field": "inner"}, {}), 0.0, "output_field_missing")
    for fields in ([], ["a..b"], [".a"]):
        with pytest.raises(ValidationError):
            parse_metric_spec({"type": "field_present", "fields": fields})


PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
}


@pytest.mark.parametrize(
    ("output", "result"),
    [
        ('{"name": "Ada", "age": 36}', 1.0),
        ({"name": "Ada", "age": 36}, 1.0),
        ('{"name": "Ada"}', 0.0),
        ('{"name": "Ada", "age": -1}', 0.0),
        ('{"name": "Ada", "age": "36"}', 0.0),
    ],
)
def test_json_schema_inline(output: Any, result: float) -> None:
    outcome = measure({"type": "json_schema", "schema": PERSON}, output)
    if result == 1.0:
        assert outcome == 1.0
    else:
        assert_noted_zero(outcome, "schema_mismatch")


def test_json_schema_mismatch_message_points_at_the_violation() -> None:
    message = assert_noted_zero(
        measure({"type": "json_schema", "schema": PERSON}, '{"name": "Ada", "age": -1}'), "schema_mismatch"
    )
    assert message.startswith("$.age:")
    assert "minimum" in message or "less than" in message


def test_json_schema_parse_options() -> None:
    schema = {"type": "string", "pattern": "^[A-Z]+$"}
    assert measure({"type": "json_schema", "schema": schema, "parse_strings": False}, "ABC") == 1.0
    assert_noted_zero(measure({"type": "json_schema", "schema": schema}, "ABC"), "invalid_json")
    assert measure({"type": "json_schema", "schema": schema}, '"ABC"') == 1.0
    assert_worst(measure({"type": "json_schema", "schema": {}}, {1, 2}), 0.0, "wrong_type")  # json_schema@3


def test_json_schema_follows_declared_dialect() -> None:
    # Draft 4 spells an exclusive bound as a boolean modifier; 2020-12 refuses that form as a schema.
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "maximum": 10,
        "exclusiveMaximum": True,
    }
    assert measure({"type": "json_schema", "schema": draft4}, "9") == 1.0
    assert_noted_zero(measure({"type": "json_schema", "schema": draft4}, "10"), "schema_mismatch")
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "json_schema", "schema": {k: v for k, v in draft4.items() if k != "$schema"}})


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "nope"}, "not valid"),
        ({"$schema": "https://example.com/my-dialect", "type": "object"}, "unknown $schema"),
        ({"minimum": "zero"}, "not valid"),
    ],
)
def test_json_schema_invalid_schema_refused_at_config_load(schema: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_metric_spec({"type": "json_schema", "schema": schema})
    assert fragment in str(caught.value)


def test_json_schema_needs_exactly_one_source() -> None:
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "json_schema"})
    with pytest.raises(ValidationError):
        parse_metric_spec({"type": "json_schema", "schema": {}, "schema_file": "s.json"})


def test_json_schema_formats_are_opt_in() -> None:
    schema = {"type": "string", "format": "date"}
    config = {"type": "json_schema", "schema": schema}
    assert measure(config, '"not a date"') == 1.0
    assert_noted_zero(measure({**config, "check_formats": True}, '"not a date"'), "schema_mismatch")
    assert measure({**config, "check_formats": True}, '"2024-02-29"') == 1.0


def test_json_schema_file_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "person.json").write_text(json.dumps(PERSON))
    (tmp_path / "schemas" / "person.yaml").write_text("type: object\nrequired: [name]\n")
    assert (
        measure({"type": "json_schema", "schema_file": "schemas/person.json"}, '{"name": "A", "age": 1}', tmp_path)
        == 1.0
    )
    assert_noted_zero(
        measure({"type": "json_schema", "schema_file": "schemas/person.yaml"}, "{}", tmp_path),
        "schema_mismatch",
    )
    spec = parse_metric_spec({"type": "json_schema", "schema_file": "schemas/person.json"})
    assert spec.referenced_files(tmp_path) == ((tmp_path / "schemas" / "person.json").resolve(),)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("missing.json", None, "does not exist"),
        ("broken.json", "{not json", "is not valid JSON"),
        ("broken.yaml", "a: [unclosed", "is not valid YAML"),
        ("list.json", "[1, 2]", "holds a list"),
        ("bad.json", '{"type": 12}', "not valid"),
    ],
)
def test_json_schema_file_problems_raise_metric_load_error(
    tmp_path: Path, name: str, content: str | None, fragment: str
) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    spec = parse_metric_spec({"type": "json_schema", "schema_file": name})
    with pytest.raises(MetricLoadError) as caught:
        spec.build(BuildContext(tmp_path))
    message = str(caught.value)
    assert fragment in message
    assert name in message
    assert "\n" not in message


def test_unresolvable_ref_is_refused_before_scoring_not_a_zero() -> None:
    # Issue 10: every $ref is resolved when the metric is built, so an unresolvable one is a setup error (it used
    # to be a per-example schema_unusable error).
    spec = parse_metric_spec({"type": "json_schema", "schema": {"$ref": "#/$defs/missing"}})
    with pytest.raises(MetricLoadError, match=r"\$ref '#/\$defs/missing' does not resolve inside the schema"):
        spec.build(BuildContext(Path(".")))
