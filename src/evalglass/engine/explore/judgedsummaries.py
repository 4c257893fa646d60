"""What a metric's judge notes add to the scorecard (a jury's agreement, a pairwise judge's position bias and win
rates), from what ``outputs.jsonl`` keeps: ``run`` reports it and ``verify`` re-derives it from the same file, so it is
checked like the estimates.

Only metrics that keep a tally (``MetricSpec.judged_tally``) are read; a run with none never opens the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from evalglass.core.runrecord import COMPARED_DIR
from evalglass.engine.runs.artifacts import open_artifact
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.engine.spec.config import Config


def judged_summaries(config: Config, folder: Path) -> dict[str, dict[str, BaseModel]]:
    """Per metric with a tally, its scorecard fields over the run in ``folder`` (none without the outputs file its
    notes are in: ``outputs.jsonl``, or for a judge of variants side by side ``compared/outputs.jsonl``)."""
    tallies = {name: tally for name, spec in config.metrics.items() if (tally := spec.judged_tally()) is not None}
    compared = set(config.compared_metrics)
    files = {
        folder / OUTPUTS_FILE: {name: tally for name, tally in tallies.items() if name not in compared},
        folder / COMPARED_DIR / OUTPUTS_FILE: {name: tally for name, tally in tallies.items() if name in compared},
    }
    found: dict[str, dict[str, BaseModel]] = {}
    for path, group in files.items():
        if not group or not path.exists():
            continue
        for row in outputs_rows(path):
            judged = row.get("judges")
            if not isinstance(judged, dict):
                continue
            for name, tally in group.items():
                for note in judged.get(name) or ():
                    if isinstance(note, dict):
                        tally.add(str(row.get("id")), note)
        found.update({name: tally.summary_fields() for name, tally in group.items()})
    return found


def outputs_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Each row of an ``outputs.jsonl`` that is a JSON object; an edited line that is not counts nothing (what is
    derived from the file then differs from what the run recorded: a finding)."""
    with open_artifact(path, "outputs file") as handle:
        for line in handle:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield row


__all__ = ["judged_summaries", "outputs_rows"]
