"""JSON Schemas of the config, the ledger and every artifact. Committed copies live in ``schemas/``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalglass.core.authority import Ledger
from evalglass.core.compare import Comparison
from evalglass.core.runrecord import RunRecord
from evalglass.core.score import Score
from evalglass.core.scorecard import Scorecard

SCHEMA_NAMES = ("config", "ledger", "scorecard", "runrecord", "scores", "comparison")


def _scores_line_schema() -> dict[str, Any]:
    score = Score.model_json_schema()
    defs = score.pop("$defs", {})
    entry = {"anyOf": [{"type": "number"}, {"$ref": "#/$defs/Score"}]}
    return {
        "title": "EvalGlass scores.jsonl line",
        "description": "A block of consecutive examples, as columns: row i is ids[i] on dataset line lines[i], with "
        "scores[metric][i] (a list of sample scores when the task has samples) and, in a clustered run, "
        "clusters[i]. A bare number is shorthand for a scored, valid score. Every list has one entry per id.",
        "type": "object",
        "additionalProperties": False,
        "required": ["ids", "lines", "scores"],
        "properties": {
            "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "scores": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"anyOf": [entry, {"type": "array", "items": entry, "minItems": 1}]},
                },
            },
            "clusters": {"type": "array", "items": {"type": ["string", "null"]}},
        },
        "$defs": {**defs, "Score": score},
    }


def schema_of(which: str) -> dict[str, Any]:
    if which == "config":
        from evalglass.engine.config import Config

        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **Config.model_json_schema()}
    models: dict[str, type[BaseModel]] = {
        "ledger": Ledger,
        "scorecard": Scorecard,
        "runrecord": RunRecord,
        "comparison": Comparison,
    }
    if which in models:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **models[which].model_json_schema(),
        }
    if which == "scores":
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **_scores_line_schema()}
    raise ValueError(f"unknown schema {which!r}")
