"""One run: stream the dataset, score every example, decide, write artifacts.

The loop keeps no per-example objects: scores go into compact columns and straight to ``scores.jsonl``.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalglass import __version__
from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import GateInput, MetricInput, decide_run
from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.runrecord import RunRecord
from evalglass.core.score import Score, ScoreContractError, Status
from evalglass.core.scorecard import DatasetSummary, Scorecard
from evalglass.engine.artifacts import (
    DIR_MODE,
    REPORT_FILE,
    RUNRECORD_FILE,
    SCORECARD_FILE,
    ScoresWriter,
    score_to_json,
    write_atomic,
    write_model,
)
from evalglass.engine.config import LoadedConfig, load_config
from evalglass.engine.dataset import BadLine, DatasetReader
from evalglass.engine.ledger import LoadedLedger, load_ledger
from evalglass.errors import SetupError
from evalglass.metrics.base import MetricFn
from evalglass.metrics.errors import MetricLoadError

LAST_RUN_POINTER = Path(".evalglass") / "last-run"


@dataclass(frozen=True)
class RunOutcome:
    folder: Path
    scorecard: Scorecard
    record: RunRecord


def new_run_id(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def default_run_folder(run_id: str) -> Path:
    return Path(".evalglass") / "runs" / run_id


def build_metrics(loaded: LoadedConfig) -> dict[str, MetricFn]:
    functions: dict[str, MetricFn] = {}
    for name, spec in loaded.config.metrics.items():
        try:
            functions[name] = spec.build(loaded.base_dir)
        except MetricLoadError as exc:
            raise SetupError(f"metric '{name}': {exc}", where=str(loaded.path)) from None
    return functions


def _raised(name: str, exc: Exception) -> Score:
    tail = "".join(traceback.format_exception(exc, limit=-3)).strip()
    return Score.error("metric_raised", f"metric '{name}' raised {type(exc).__name__}: {exc}", tail[-2000:])


def _bad_result(name: str, result: object, why: str) -> Score:
    return Score.error("metric_bad_result", f"metric '{name}' returned {result!r}: {why}")


def score_example(example: Example, functions: dict[str, MetricFn], columns: dict[str, ScoreColumn]) -> dict[str, Any]:
    """Score one example with every metric; any fault becomes an error score, never a number."""
    row: dict[str, Any] = {}
    if example.output is ABSENT:
        blocked = Score.unmeasured(
            Status.BLOCKED,
            "output_missing",
            f"example {example.id} (line {example.line}) has no recorded output",
        )
        for name, column in columns.items():
            column.append(blocked)
            row[name] = score_to_json(blocked)
        return row
    for name, function in functions.items():
        try:
            result: Any = function(example)
        except Exception as exc:
            result = _raised(name, exc)
        column = columns[name]
        try:
            column.append(result)
        except (ScoreContractError, TypeError) as exc:
            result = _bad_result(name, result, str(exc))
            column.append(result)
        row[name] = score_to_json(result)
    return row


def score_bad_line(bad: BadLine, columns: dict[str, ScoreColumn]) -> dict[str, Any]:
    score = Score.error(bad.code, bad.message)
    for column in columns.values():
        column.append(score)
    return {name: score_to_json(score) for name in columns}


def run(config_path: Path, out: Path | None = None, *, now: datetime | None = None) -> RunOutcome:
    loaded = load_config(config_path)
    ledger = load_ledger(loaded.ledger_path)
    functions = build_metrics(loaded)
    moment = now or datetime.now(UTC)
    run_id = new_run_id(moment)
    folder = out if out is not None else default_run_folder(run_id)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    writer = ScoresWriter(folder)
    try:
        outcome = _evaluate(loaded, ledger, functions, folder, writer, run_id, moment)
    except BaseException:
        writer.abort()
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    with contextlib.suppress(OSError):
        LAST_RUN_POINTER.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(LAST_RUN_POINTER, str(folder.resolve()).encode() + b"\n")
    return outcome


def _evaluate(
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    functions: dict[str, MetricFn],
    folder: Path,
    writer: ScoresWriter,
    run_id: str,
    moment: datetime,
) -> RunOutcome:
    config = loaded.config
    reader = DatasetReader(loaded.dataset_path, id_field=config.dataset.id_field, output_field=config.task.field)
    columns = {name: ScoreColumn() for name in config.metrics}
    first_line: dict[str, int] = {}
    for item in reader:
        if isinstance(item, BadLine):
            writer.write(item.id, item.line, score_bad_line(item, columns))
            continue
        seen = first_line.setdefault(item.id, item.line)
        if seen != item.line:
            raise SetupError(
                f"duplicate example id '{item.id}' (first at line {seen})",
                where=f"{reader.path}:{item.line}",
                fix="give every example a unique id",
            )
        writer.write(item.id, item.line, score_example(item, functions, columns))
    scores_sha256 = writer.commit()
    dataset = DatasetSummary(
        name=config.dataset.name,
        path=config.dataset.path,
        fingerprint=reader.fingerprint,
        examples=reader.examples,
        malformed_lines=reader.bad_lines,
    )
    gate_fingerprints = {name: config.gate_fingerprint(name) for name in config.gates}
    summaries, payload = decide_run(
        metric_inputs(loaded, columns),
        [GateInput(name=name, spec=spec, fingerprint=gate_fingerprints[name]) for name, spec in config.gates.items()],
        ledger.ledger,
        config.dataset.name,
        dataset.fingerprint,
        dataset.examples,
    )
    created_at = moment.isoformat().replace("+00:00", "Z")
    scorecard = Scorecard(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        dataset=dataset,
        decision=payload,
        metrics=summaries,
    )
    record = RunRecord(
        run_id=run_id,
        created_at=created_at,
        tool_version=__version__,
        config_path=str(loaded.path),
        config_fingerprint=loaded.fingerprint,
        config=config.model_dump(mode="json", exclude_unset=True),
        ledger_path=str(ledger.path),
        ledger_fingerprint=ledger.fingerprint,
        ledger=ledger.ledger,
        dataset=dataset,
        gate_fingerprints=gate_fingerprints,
        scores_sha256=scores_sha256,
    )
    from evalglass.report.markdown import render_markdown

    write_model(folder / RUNRECORD_FILE, record)
    write_model(folder / SCORECARD_FILE, scorecard)
    write_atomic(folder / REPORT_FILE, render_markdown(scorecard).encode())
    return RunOutcome(folder=folder, scorecard=scorecard, record=record)


def metric_inputs(loaded: LoadedConfig, columns: dict[str, ScoreColumn]) -> list[MetricInput]:
    return [
        MetricInput(
            name=name,
            type=spec.type,
            description=spec.description,
            uses_reference=spec.uses_reference,
            column=columns[name],
        )
        for name, spec in loaded.config.metrics.items()
    ]
