"""Which fields of a dataset record hold a system output, so the gold fingerprint leaves them out.

A run's outputs are what it measures, never its gold: a new batch of outputs must not make validated gold stale,
while an edited reference, input or id always does. The fields holding outputs are those a recorded task reads from
the dataset file itself: the task's ``field``, or, in a run with variants, every recorded variant's ``field`` (each
variant is a task of its own, and re-recording any variant's outputs is what a variant run is for). A task whose
outputs come from their own file (``path``), or from a live lane, holds none in the dataset file.

The config's own validation (``Config._output_is_not_gold``) refuses an output field that overlaps a gated metric's
reference, so a field left out here never holds gold a gate decides on.

These are plain functions of the config's raw values (as declared, or as a run record stores them), so the config
and the reports that explain a run's gold (``report.explain``) read the same answer from one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RECORDED = "recorded"
DEFAULT_OUTPUT_FIELD = "output"
#: Other evaluation tools' results (``dataset.format``), read by ``engine.datasets.toollogs``.
TOOL_FORMATS = ("inspect", "promptfoo", "lm-eval", "openai-evals")
#: What a tool's reader adds to each record about the tool's run rather than the sample: ``source`` (the run's id,
#: the tool's version, the model, the log's status) and ``not_captured`` (which lists the outputs the file lacks).
#: Neither is gold: a new run of the tool on the same samples must keep a validated gold, as new outputs do.
TOOL_RUN_FIELDS = ("source", "not_captured")


def merged_task(task: Mapping[str, Any] | None, override: Mapping[str, Any]) -> dict[str, Any]:
    """The task a variant runs, as raw config values: ``override`` over ``task`` key by key (a nested value such
    as ``retry`` is replaced whole), or ``override`` alone when it names another ``type``."""
    base = dict(task or {})
    if "type" in override and override["type"] != base.get("type", RECORDED):
        return dict(override)
    return {**base, **override}


def run_tasks(task: Mapping[str, Any] | None, variants: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every task a run scores, as raw values: each variant's (in declared order), or the task itself."""
    if not variants:
        return [dict(task or {})]
    return [merged_task(task, override) for override in variants.values() if isinstance(override, Mapping)]


def gold_excluded_fields(
    task: Mapping[str, Any] | None, variants: Mapping[str, Any] | None, dataset_format: object = None
) -> tuple[str, ...]:
    """The dataset fields holding a recorded output of some task the run scores, in declared order, each once;
    empty when no output is recorded in the dataset file. One field for a run without variants: the same field,
    and so the same fingerprint, as before variants existed. Another tool's results (``dataset_format``) also leave
    out what their reader records about the tool's run (:data:`TOOL_RUN_FIELDS`)."""
    fields: dict[str, None] = dict.fromkeys(TOOL_RUN_FIELDS) if dataset_format in TOOL_FORMATS else {}
    for one in run_tasks(task, variants):
        if one.get("type", RECORDED) == RECORDED and one.get("path") is None:
            field = one.get("field", DEFAULT_OUTPUT_FIELD)
            if isinstance(field, str):
                fields[field] = None
    return tuple(fields)
