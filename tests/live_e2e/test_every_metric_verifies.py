"""One run with every builtin metric type verifies: the run record stores its config so that `verify` reads it
back exactly (an aliased field, like json_schema's `schema`, once came back as `schema_` and failed)."""

from __future__ import annotations

import sys
from typing import Any, get_args

from pydantic import BaseModel

from evalglass.engine.spec.config import Config, config_as_recorded, config_from_record
from evalglass.metrics.registry import METRIC_TYPES
from tests.live_e2e.conftest import LiveProject, evalglass


def every_metric(project: LiveProject) -> dict[str, dict[str, Any]]:
    """A metric of each builtin type, each configured with what it needs (keyed by type name). The trajectory
    metrics read a `field`: on the whole of a chat answer, or beside text metrics on one recorded output, the
    config refuses them (engine/spec/outputfields.py)."""
    project.root.mkdir(parents=True, exist_ok=True)
    (project.root / "score.py").write_text("def score(output):\n    return float(len(str(output)) % 2)\n")
    return {
        "exact_match": {"type": "exact_match", "reference": "question"},
        "contains": {"type": "contains", "reference": "question"},
        "regex": {"type": "regex", "pattern": "q"},
        "json_valid": {"type": "json_valid"},
        "json_schema": {"type": "json_schema", "schema": {"type": "string", "minLength": 1}},
        "field_present": {"type": "field_present", "fields": ["answer"]},
        "numeric_bounds": {"type": "numeric_bounds", "min": 0, "max": 10},
        "word_count": {"type": "word_count", "min": 1, "max": 50},
        "set_overlap": {"type": "set_overlap", "reference": "tags"},
        "enum": {"type": "enum", "values": ["a", "b"]},
        "python": {"type": "python", "function": "score.py:score"},
        "check": {"type": "check", "check": "non-empty"},
        "llm_judge": project.judge(),
        "jury": {
            "type": "jury",
            "rule": "mean",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "judges": {
                name: {key: value for key, value in project.judge().items() if key not in ("type", "rubric", "scale")}
                for name in ("one", "two")
            },
        },
        "recorded_score": {"type": "recorded_score", "scorer": "tool"},
        "tool_calls": {
            "type": "tool_calls",
            "field": "trajectory",
            "reference": "calls",
            "mode": "in_order",
            "extra_calls": "forbid",
            "tools": {"search": {"schema": {"type": "object"}, "arguments": {"q": {"tolerance": 0.5}}}},
        },
        "steps": {"type": "steps", "count": "tool_calls", "max": 3, "field": "trajectory"},
        "loop": {"type": "loop", "repeats": 2, "field": "trajectory"},
        "final_state": {"type": "final_state", "check": "non-empty", "reference": "tags"},
    }


def test_a_run_with_every_metric_type_verifies(project: LiveProject):
    metrics = every_metric(project)
    assert set(metrics) == set(METRIC_TYPES)  # a new metric type needs a case here
    project.write(
        [{"id": f"q{i}", "question": f"question {i}", "tags": ["x"], "calls": []} for i in range(4)],
        metrics={name.replace("_", "-"): spec for name, spec in metrics.items()},
        checks={"non-empty": {"command": [sys.executable, "-c", "import sys; sys.exit(0)"]}},
    )
    result = project.run("--out", "out", env={"EVALGLASS_E2E_KEY": "k"})
    assert result.code == 0, result.err
    verified = evalglass("verify", "out", cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
    assert "verified" in verified.out


def test_the_recorded_config_reads_back_equal_and_uses_the_config_files_names(project: LiveProject):
    metrics = {
        **every_metric(project),
        "check": {"type": "check", "check": "c"},
        "final_state": {"type": "final_state", "check": "c"},
    }
    config = Config.model_validate(
        {"dataset": {"name": "d", "path": "d.jsonl"}, "metrics": metrics, "checks": {"c": {"command": ["x"]}}}
    )
    recorded = config_as_recorded(config)
    assert config_from_record(recorded) == config
    # Read back the way a config file is read (aliases only), it is the same config too.
    assert Config.model_validate(recorded) == config
    assert "schema" in recorded["metrics"]["json_schema"] and "schema_" not in recorded["metrics"]["json_schema"]
    assert "schema" in recorded["metrics"]["tool_calls"]["tools"]["search"]


def test_a_record_written_with_field_names_still_reads(project: LiveProject):
    config = Config.model_validate(
        {"dataset": {"name": "d", "path": "d.jsonl"}, "metrics": {"s": {"type": "json_schema", "schema": {}}}}
    )
    old_style = config.model_dump(mode="json", exclude_unset=True)  # how records were written before
    assert "schema_" in old_style["metrics"]["s"]
    assert config_from_record(old_style) == config


def aliased_fields(model: type[BaseModel], seen: set[type] | None = None) -> set[tuple[str, str, str]]:
    """(model, field, alias) for every aliased field of every model reachable from ``model``'s annotations."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    found: set[tuple[str, str, str]] = set()
    for name, info in model.model_fields.items():
        if info.alias is not None and info.alias != name:
            found.add((model.__name__, name, info.alias))
        stack = [info.annotation]
        while stack:
            annotation = stack.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                found |= aliased_fields(annotation, seen)
            stack.extend(get_args(annotation))
            # An entry validated by its declared type (`metrics.registry.MetricEntry`) stands for its whole union.
            stack.extend(
                meta.validated_as() for meta in getattr(annotation, "__metadata__", ()) if hasattr(meta, "validated_as")
            )
    return found


def test_every_aliased_config_field_is_exercised_by_the_round_trip():
    """A new alias anywhere in the config's models must be covered by the every-metric config above."""
    assert aliased_fields(Config) == {("JsonSchemaSpec", "schema_", "schema"), ("ToolRule", "schema_", "schema")}
