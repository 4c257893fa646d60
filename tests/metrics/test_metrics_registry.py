"""The registry the config loader uses, spec fingerprints, and the YAML examples in docs/metrics.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from evalglass.core.example import Example
from evalglass.core.score import Score, Status
from evalglass.metrics import METRIC_TYPES, AnyMetricSpec, MetricSpec, parse_metric_spec, registry
from evalglass.metrics.base import BuildContext
from evalglass.metrics.registry import BY_NAME, TYPE_HOMES, MetricEntry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
BUILTINS = {
    "exact_match",
    "contains",
    "regex",
    "json_valid",
    "json_schema",
    "field_present",
    "numeric_bounds",
    "word_count",
    "set_overlap",
    "enum",
    "recorded_score",
    "tool_calls",
    "steps",
    "loop",
}


def test_metric_types_are_complete_and_consistent() -> None:
    assert set(METRIC_TYPES) == BUILTINS | {"python", "check", "llm_judge", "jury", "final_state"}
    for name, spec_class in METRIC_TYPES.items():
        assert issubclass(spec_class, MetricSpec)
        assert spec_class.summary, f"{name} has no summary"
        assert spec_class.model_fields["type"].default == name


def test_any_metric_spec_validates_inside_a_config_model() -> None:
    class Config(BaseModel):
        metrics: dict[str, AnyMetricSpec]

    config = Config.model_validate(
        {"metrics": {"a": {"type": "regex", "pattern": "x"}, "b": {"type": "enum", "values": [1]}}}
    )
    assert [type(spec).__name__ for spec in config.metrics.values()] == ["RegexSpec", "EnumSpec"]
    with pytest.raises(ValidationError) as caught:
        Config.model_validate({"metrics": {"a": {"type": "exact_matsh", "expected": 1}}})
    assert "exact_match" in str(caught.value)


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_metric_spec({"type": "contains", "value": "x", "casesensitive": False})
    assert "casesensitive" in str(caught.value)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "regex", "pattern": "a"},
        {"type": "json_valid"},
        {"type": "json_schema", "schema": {}},
        {"type": "field_present", "fields": ["a"]},
        {"type": "numeric_bounds", "min": 0},
        {"type": "word_count", "max": 3},
        {"type": "enum", "values": ["a"]},
    ],
)
def test_metrics_without_a_reference_refuse_one(config: dict[str, Any]) -> None:
    parse_metric_spec(config)
    with pytest.raises(ValidationError) as caught:
        parse_metric_spec({**config, "reference": "gold"})
    assert "does not compare with a reference" in str(caught.value)


def test_fingerprint_tracks_semantics_not_prose() -> None:
    base = {"type": "exact_match", "reference": "gold"}
    plain = parse_metric_spec(base).fingerprint_payload()
    assert parse_metric_spec({**base, "description": "prose"}).fingerprint_payload() == plain
    assert parse_metric_spec({**base, "normalize": {"case": True}}).fingerprint_payload() != plain
    inline = parse_metric_spec({"type": "json_schema", "schema": {"type": "object"}}).fingerprint_payload()
    assert parse_metric_spec({"type": "json_schema", "schema": {"type": "array"}}).fingerprint_payload() != inline


def yaml_blocks() -> list[dict[str, Any]]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [yaml.safe_load(block) for block in blocks]


def documented_entries() -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for block in yaml_blocks():
        entries.update(block["metrics"])
    return entries


def test_every_documented_example_is_a_valid_config_entry() -> None:
    entries = documented_entries()
    assert {entry["type"] for entry in entries.values()} == set(METRIC_TYPES)
    for name, entry in entries.items():
        try:
            parse_metric_spec(entry)
        except ValidationError as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"docs example '{name}' does not validate: {exc}")


def test_host_guide_example_runs_as_documented(tmp_path: Path) -> None:
    (source,) = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "graders.py").write_text(source)
    function = parse_metric_spec(documented_entries()["cites_real_sources"]).build(BuildContext(tmp_path))
    record = {"allowed_sources": ["https://a.example", "https://b.example"]}

    def run(output: str) -> float | Score:
        return function(Example(id="d", line=1, fields=record, output=output))

    assert run("See:\nhttps://a.example\nhttps://evil.example") == 0.5
    declined = run("no links at all")
    assert isinstance(declined, Score) and declined.status is Status.NON_EVALUABLE
    assert declined.diagnostics[0].code == "host_declined"


def test_every_type_lives_where_the_registry_says() -> None:
    """``TYPE_HOMES`` names each type's module without importing it; the union is made from it in the same order."""
    assert [registry.spec_class(name).model_fields["type"].default for name in TYPE_HOMES] == list(TYPE_HOMES)
    assert list(METRIC_TYPES) == list(TYPE_HOMES)
    assert get_args(get_args(AnyMetricSpec)[0]) == tuple(METRIC_TYPES.values())


class _ByDeclaredType(BaseModel):
    metrics: dict[str, MetricEntry]


class _ByUnion(BaseModel):
    metrics: dict[str, AnyMetricSpec]


_KEYS = sorted(
    {field.alias or name for spec in METRIC_TYPES.values() for name, field in spec.model_fields.items()} | {"bogus"}
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(["", "a", "x+", "[", "id"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "type", "name"]), inner, max_size=2)
    ),
    max_leaves=4,
)
_TYPES = st.sampled_from([*TYPE_HOMES, "exact_matsh", ""]) | st.integers(0, 2) | st.none()
_ENTRIES = st.one_of(
    st.builds(
        lambda kind, fields: fields if kind is None else {"type": kind, **fields},
        _TYPES,
        st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=4),
    ),
    _VALUES,
)


def _outcome(model: type[BaseModel], data: Any, by_name: bool) -> Any:
    try:
        found: Any = model.model_validate(data, by_name=by_name, context={BY_NAME: by_name})
    except ValidationError as error:
        return [(item["type"], item["loc"], item["msg"], repr(item.get("ctx"))) for item in error.errors()]
    return [(type(spec), spec.model_dump(mode="json", by_alias=True)) for spec in found.metrics.values()]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["a", "b"]), _ENTRIES, min_size=1, max_size=2), st.booleans())
def test_an_entry_validated_by_its_declared_type_is_judged_as_the_whole_union_judges_it(
    metrics: dict[str, Any], by_name: bool
) -> None:
    """Every entry, valid or not, of a known type, an unknown one or none: the same specs, or the same errors (type,
    location, message, context) in the same order, as the union of every type gives."""
    data = {"metrics": metrics}
    assert _outcome(_ByDeclaredType, data, by_name) == _outcome(_ByUnion, data, by_name)
