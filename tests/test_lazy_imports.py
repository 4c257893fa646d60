"""Heavy modules load only when a command needs them (`evalglass --help` and `view` must start fast).

Each check runs in a fresh interpreter, so what another test imported cannot hide a regression.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = {
    "the CLI module (--help)": (
        "import evalglass.cli",
        ["numpy", "pydantic", "rich", "yaml", "jsonschema", "evalglass.engine.pipeline"],
    ),
    "what `view` loads": (
        "import evalglass.cli\n"
        "from evalglass.engine.artifacts import LAST_RUN_POINTER, load_scorecard\n"
        "from evalglass.report.terminal import render_terminal",
        ["jsonschema", "evalglass.engine.pipeline", "evalglass.engine.config", "evalglass.metrics", "yaml"],
    ),
    "the metric registry": ("import evalglass.metrics.registry", ["jsonschema"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_heavy_modules_are_not_imported_before_they_are_used(case: str) -> None:
    code, absent = CASES[case]
    probe = f"{code}\nimport sys\nprint(' '.join(name for name in {absent!r} if name in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"{case} imported {loaded}"


def test_a_json_schema_metric_still_loads_jsonschema_when_used() -> None:
    from pathlib import Path

    from evalglass.core.example import Example
    from evalglass.metrics import parse_metric_spec

    spec = parse_metric_spec({"type": "json_schema", "schema": {"type": "object", "required": ["a"]}})
    function = spec.build(Path("."))
    assert function(Example(id="x", line=1, fields={}, output={"a": 1})) == 1.0
    assert function(Example(id="y", line=2, fields={}, output={"b": 1})) != 1.0
