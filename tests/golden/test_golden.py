"""Every builtin evaluator's outputs on its golden inputs, held against the version they were recorded under.

A change to what a builtin computes must come with a version bump (``evalglass.metrics.versions``), because the
version is what makes approvals made under the old behaviour stale. This test is what enforces it.
"""

from __future__ import annotations

import json

import pytest

from evalglass.core.stats import Method, Reducer
from evalglass.metrics.registry import METRIC_TYPES
from evalglass.metrics.versions import EvaluatorKind, registry
from tests.golden.cases import compute, path_of, same

RECORD = "python -m tests.golden.record"


@pytest.mark.parametrize("key", sorted(registry()))
def test_golden_outputs_change_only_with_a_version_bump(key):
    item = registry()[key]
    path = path_of(item.kind, item.name)
    assert path.is_file(), f"{key} has no golden file: record it with `{RECORD} {key}`"
    document = json.loads(path.read_text())
    assert document["evaluator"] == key
    assert document["cases"], f"{path} holds no cases"
    changed = [
        index
        for index, case in enumerate(document["cases"])
        if not same(case["output"], compute(item.kind, item.name, case["input"]))
    ]
    if document["version"] == item.version:
        assert not changed, (
            f"the outputs of {item.label} changed (cases {changed} of {path.name}) without a version bump: bump its "
            f"version in evalglass/metrics/versions.py (approvals made under the old behaviour must go stale), then "
            f"re-record with `{RECORD} {key}`"
        )
    else:
        pytest.fail(
            f"{path.name} was recorded under {item.name}@{document['version']}, and {item.label} is current: "
            f"re-record it with `{RECORD} {key}`"
        )


def test_every_builtin_has_a_version():
    keys = set(registry())
    builtin_metrics = set(METRIC_TYPES) - {"python"}  # host code is hashed, not versioned
    assert {key for key in keys if key.startswith("metric:")} == {f"metric:{name}" for name in builtin_metrics}
    assert {key for key in keys if key.startswith("reducer:")} == {f"reducer:{item.value}" for item in Reducer}
    assert {key for key in keys if key.startswith("interval:")} == {f"interval:{item.value}" for item in Method}
    assert all(item.version >= 1 for item in registry().values())
    assert {item.kind for item in registry().values()} == set(EvaluatorKind)


def test_golden_files_name_only_known_evaluators():
    folder = path_of(EvaluatorKind.METRIC, "x").parent.parent
    found = {f"{path.parent.name}:{path.stem}" for path in folder.glob("*/*.json")}
    assert found == set(registry()), f"golden files without an evaluator: {sorted(found - set(registry()))}"


def test_a_changed_output_is_caught():
    """The comparison itself can fail: a golden file whose output was edited does not match."""
    item = registry()["metric:exact_match"]
    document = json.loads(path_of(item.kind, item.name).read_text())
    case = document["cases"][0]
    assert same(case["output"], compute(item.kind, item.name, case["input"]))
    edited = json.loads(json.dumps(case["output"]))
    edited[0] = {"value": 0.5}
    assert not same(edited, compute(item.kind, item.name, case["input"]))
    assert not same(1, 1.0) and same(0.1 + 0.2, 0.3)
