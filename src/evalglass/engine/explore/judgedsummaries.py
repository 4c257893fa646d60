"""What a metric's judge notes add to the scorecard (a jury's agreement, a pairwise judge's position bias and win
rates), from what ``outputs.jsonl`` keeps: ``run`` reports it and ``verify`` re-derives it from the same file, so it is
checked like the estimates.

Only metrics that keep a tally (``MetricSpec.judged_tally``) are read; a run with none never opens the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from evalglass.core.runrecord import COMPARED_DIR, VARIANTS_DIR
from evalglass.engine.runs.artifacts import open_artifact, written_lines
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.engine.spec.config import Config


def judged_summaries(
    config: Config, folder: Path, written: Mapping[str, str | None] | None = None
) -> dict[str, dict[str, BaseModel]]:
    """Per metric with a tally, its scorecard fields over the run in ``folder``, read from the outputs file its notes
    are in: ``outputs.jsonl``; in a run with variants each variant's ``variants/NAME/outputs.jsonl`` (the metric
    ``metric@NAME``), and for a judge of variants side by side ``compared/outputs.jsonl``. None without the file.
    ``written``: per file (its path in the folder), the hash the run wrote it with; the run passes it, as it reads
    the files after host code ran (``artifacts.written_lines``)."""
    from evalglass.core.variants import variant_metric

    specs = {name: spec for name, spec in config.metrics.items() if spec.judged_tally() is not None}
    if not specs:
        return {}
    compared = set(config.compared_metrics)
    own = [name for name in specs if name not in compared]
    # Per outputs file, each summary's name in the scorecard -> the metric whose notes it tallies.
    files: list[tuple[Path, dict[str, str]]] = (
        [
            (folder / VARIANTS_DIR / variant / OUTPUTS_FILE, {variant_metric(name, variant): name for name in own})
            for variant in config.variant_names
        ]
        if config.variant_names
        else [(folder / OUTPUTS_FILE, {name: name for name in own})]
    )
    files.append((folder / COMPARED_DIR / OUTPUTS_FILE, {name: name for name in specs if name in compared}))
    found: dict[str, dict[str, BaseModel]] = {}
    for path, names in files:
        if not names or not path.exists():
            continue
        tallies = {
            summary: tally for summary, metric in names.items() if (tally := specs[metric].judged_tally()) is not None
        }
        sha256 = None if written is None else written.get(path.relative_to(folder).as_posix())
        for row in outputs_rows(path, sha256):
            judged = row.get("judges")
            if not isinstance(judged, dict):
                continue
            for summary, tally in tallies.items():
                for note in judged.get(names[summary]) or ():
                    if isinstance(note, dict):
                        tally.add(str(row.get("id")), note)
        found.update({summary: tally.summary_fields() for summary, tally in tallies.items()})
    return found


def outputs_rows(path: Path, written: str | None = None) -> Iterator[dict[str, Any]]:
    """Each row of an ``outputs.jsonl`` that is a JSON object; an edited line that is not counts nothing (what is
    derived from the file then differs from what the run recorded: a finding). ``written``: the hash the run wrote
    the file with (``artifacts.written_lines``)."""
    with open_artifact(path, "outputs file") as handle:
        for line in written_lines(handle, path, "outputs file", written):
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict):
                yield row


__all__ = ["judged_summaries", "outputs_rows"]
