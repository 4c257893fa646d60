"""Each jury's agreement over a run, from the votes ``outputs.jsonl`` keeps: what ``run`` reports and ``verify``
re-derives from the same file, so the scorecard's agreement is checked like its estimates.

Only metrics whose spec keeps a vote tally (``MetricSpec.vote_tally``: a jury) are read; a run with none never opens
the file.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from evalglass.core.agreement import JuryAgreement
from evalglass.engine.artifacts import open_artifact
from evalglass.engine.config import Config
from evalglass.engine.liveoutputs import OUTPUTS_FILE


def jury_agreements(config: Config, folder: Path) -> dict[str, JuryAgreement]:
    """Per jury metric, its judges' agreement over the run in ``folder`` (none without ``outputs.jsonl``)."""
    tallies = {name: tally for name, spec in config.metrics.items() if (tally := spec.vote_tally()) is not None}
    path = folder / OUTPUTS_FILE
    if not tallies or not path.exists():
        return {}
    with open_artifact(path, "outputs file") as handle:
        for line in handle:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:  # an edited line counts nothing: the agreement then differs, a finding
                continue
            judged = row.get("judges") if isinstance(row, dict) else None
            if not isinstance(judged, dict):
                continue
            for name, tally in tallies.items():
                for note in judged.get(name) or ():
                    if isinstance(note, dict) and isinstance(note.get("votes"), dict):
                        tally.add(str(row.get("id")), note["votes"])
    return {name: tally.agreement() for name, tally in tallies.items()}


__all__ = ["jury_agreements"]
