"""Re-derive a run from its recorded scores and name every field that does not match.

The VerdictPayload already refuses an inconsistent verdict. ``verify`` goes further: it rebuilds aggregates, gate
outcomes and the verdict from ``scores.jsonl`` and the ledger snapshot with the same code the run used, so a forged
"pass" whose gate list, verdict and CI flag were all edited together still shows up as a list of edited fields.

Limits: the scores file and the run record are checked against each other, not against an outside signature. An
editor who rewrites the scores, their hash in the run record and the scorecard consistently produces a run that
verifies; re-running the evaluation is the only defence against that.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from evalglass.core.authority import JudgeStanding
from evalglass.core.decide import RunShape, decide_run
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import CheckSummary, DatasetSummary, Scorecard
from evalglass.engine.artifacts import (
    SCORECARD_FILE,
    load_columns,
    load_runrecord,
    load_scorecard,
)
from evalglass.engine.config import Config
from evalglass.engine.pipeline import gate_inputs, metric_inputs
from evalglass.errors import SetupError
from evalglass.metrics.llm_judge import judge_fingerprint_of


@dataclass(frozen=True)
class Finding:
    field: str
    recorded: Any
    derived: Any


@dataclass(frozen=True)
class VerifyReport:
    folder: Path
    findings: tuple[Finding, ...]
    examples: int

    @property
    def ok(self) -> bool:
        return not self.findings


def verify_run(folder: Path) -> VerifyReport:
    record = load_runrecord(folder)
    raw_scorecard = _raw_json(folder / SCORECARD_FILE)
    findings: list[Finding] = []
    try:
        config = Config.model_validate(record.config)
    except Exception as exc:
        raise SetupError(f"run record's config no longer validates: {exc}", where=str(folder)) from None
    names = list(config.metrics)
    loaded_scores = load_columns(
        folder / record.scores_file,
        names,
        samples=config.samples,
        clustered=config.dataset.cluster_field is not None,
    )
    columns, examples, scores_sha = loaded_scores.columns, loaded_scores.examples, loaded_scores.sha256
    if scores_sha != record.scores_sha256:
        findings.append(Finding("runrecord.scores_sha256", record.scores_sha256, scores_sha))
    if examples != record.dataset.examples:
        findings.append(Finding("runrecord.dataset.examples", record.dataset.examples, examples))
    gate_fingerprints = {name: config.gate_fingerprint(name, record.definition_files) for name in config.gates}
    for name, fingerprint in gate_fingerprints.items():
        if record.gate_fingerprints.get(name) != fingerprint:
            findings.append(
                Finding(f"runrecord.gate_fingerprints.{name}", record.gate_fingerprints.get(name), fingerprint)
            )
    standings = _judge_standings(config, record, findings)
    summaries, payload = decide_run(
        metric_inputs(config, columns),
        gate_inputs(config, gate_fingerprints, record.check_results),
        record.ledger,
        config.dataset.name,
        record.dataset.gold,
        RunShape(
            examples=examples,
            example_of_row=_ints(loaded_scores.example_of_row),
            clusters=_ints(loaded_scores.cluster_ids),
        ),
        standings,
    )
    derived = Scorecard(
        run_id=record.run_id,
        created_at=record.created_at,
        tool_version=record.tool_version,
        dataset=DatasetSummary(**{**record.dataset.model_dump(), "examples": examples}),
        decision=payload,
        metrics=summaries,
        checks=tuple(CheckSummary.of(name, result) for name, result in record.check_results.items()),
        usage=record.usage,  # counted as calls completed; nothing to re-derive from the scores
    )
    findings.extend(_diff("scorecard", raw_scorecard, orjson.loads(orjson.dumps(derived.model_dump(mode="json")))))
    if not findings:
        # Only a scorecard that matches field by field is also loaded through its own validators.
        load_scorecard(folder)
    return VerifyReport(folder=folder, findings=tuple(findings), examples=examples)


def _judge_standings(config: Config, record: RunRecord, findings: list[Finding]) -> dict[str, JudgeStanding]:
    """Each judge's fingerprint re-derived from its spec and the rubric hash the run recorded, with the calibration
    record the run snapshotted (a later recalibration does not change what this run decided on)."""
    standings: dict[str, JudgeStanding] = {}
    for name, spec in config.judges.items():
        files = record.definition_files.get(name, {})
        recorded = record.judge_fingerprints.get(name)
        derived = judge_fingerprint_of(spec, next(iter(files.values()))) if files else recorded
        if derived is None:
            findings.append(Finding(f"runrecord.judge_fingerprints.{name}", recorded, "<cannot be derived>"))
            continue
        if recorded != derived:
            findings.append(Finding(f"runrecord.judge_fingerprints.{name}", recorded, derived))
        standings[name] = JudgeStanding(metric=name, fingerprint=derived, calibration=record.calibrations.get(name))
    return standings


def _ints(values: array[int] | None) -> npt.NDArray[np.int64] | None:
    return None if values is None else np.frombuffer(values, dtype=np.int64)


def _raw_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise SetupError("scorecard not found", where=str(path)) from None
    except orjson.JSONDecodeError as exc:
        raise SetupError(f"scorecard is not valid JSON ({exc})", where=str(path)) from None


def _diff(path: str, recorded: Any, derived: Any) -> list[Finding]:
    """Every leaf where the recorded document differs from the derived one, by dotted path."""
    if isinstance(recorded, dict) and isinstance(derived, dict):
        out: list[Finding] = []
        for key in sorted(set(recorded) | set(derived)):
            out.extend(_diff(f"{path}.{key}", recorded.get(key, "<absent>"), derived.get(key, "<absent>")))
        return out
    if isinstance(recorded, list) and isinstance(derived, list):
        out = []
        for index in range(max(len(recorded), len(derived))):
            left = recorded[index] if index < len(recorded) else "<absent>"
            right = derived[index] if index < len(derived) else "<absent>"
            out.extend(_diff(f"{path}[{_label(right, left, index)}]", left, right))
        return out
    if recorded != derived or (type(recorded) is not type(derived) and not _same_number(recorded, derived)):
        return [Finding(path, recorded, derived)]
    return []


def _same_number(left: Any, right: Any) -> bool:
    return (
        isinstance(left, int | float)
        and isinstance(right, int | float)
        and not isinstance(left, bool)
        and not isinstance(right, bool)
        and left == right
    )


def _label(derived: Any, recorded: Any, index: int) -> str:
    for item in (derived, recorded):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            return str(item["name"])
    return str(index)
