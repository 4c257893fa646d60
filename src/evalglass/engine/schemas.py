"""JSON Schemas of the config, the ledger and every artifact. Committed copies live in ``schemas/``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalglass.core.authority import Ledger
from evalglass.core.runrecord import RunRecord
from evalglass.core.score import Score
from evalglass.core.scorecard import Scorecard

SCHEMA_NAMES = ("config", "ledger", "scorecard", "runrecord", "scores")


def _scores_line_schema() -> dict[str, Any]:
    score = Score.model_json_schema()
    defs = score.pop("$defs", {})
    return {
        "title": "EvalGlass scores.jsonl line",
        "description": "One example's scores. A bare number is shorthand for a scored, valid score.",
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "line", "scores"],
        "properties": {
            "id": {"type": "string"},
            "line": {"type": "integer", "minimum": 1},
            "scores": {
                "type": "object",
                "additionalProperties": {"anyOf": [{"type": "number"}, {"$ref": "#/$defs/Score"}]},
            },
        },
        "$defs": {**defs, "Score": score},
    }


def schema_of(which: str) -> dict[str, Any]:
    if which == "config":
        from evalglass.engine.config import Config

        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Config.model_json_schema()}
    models: dict[str, type[BaseModel]] = {"ledger": Ledger, "scorecard": Scorecard, "runrecord": RunRecord}
    if which in models:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **models[which].model_json_schema(),
        }
    if which == "scores":
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **_scores_line_schema()}
    raise ValueError(f"unknown schema {which!r}")
