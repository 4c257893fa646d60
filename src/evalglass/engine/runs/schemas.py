"""JSON Schemas of the config, the ledger and every artifact.

Committed copies live in the package (``src/evalglass/schemas/NAME.schema.json``, shipped in the wheel), regenerated
with ``evalglass schema NAME``; tests/e2e/test_artifacts.py fails when one differs from what this module prints.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalglass.core.authority import Ledger
from evalglass.core.compare import Comparison
from evalglass.core.conversation import TraceRecord, Trajectory
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import Scorecard

SCHEMA_NAMES = ("config", "ledger", "scorecard", "runrecord", "scores", "comparison", "trace-record", "trajectory")


def schema_of(which: str) -> dict[str, Any]:
    if which == "config":
        from evalglass.engine.spec.config import Config

        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Config.model_json_schema()}
    models: dict[str, type[BaseModel]] = {
        "ledger": Ledger,
        "scorecard": Scorecard,
        "runrecord": RunRecord,
        "comparison": Comparison,
        "trace-record": TraceRecord,
        "trajectory": Trajectory,
    }
    if which in models:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **models[which].model_json_schema(),
        }
    if which == "scores":
        from evalglass.engine.runs.scoresblock import block_schema

        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **block_schema()}
    raise ValueError(f"unknown schema {which!r}")
