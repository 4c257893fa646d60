"""A run's summary rows (the ``runs``, ``gate_results`` and ``metric_results`` columns) as its own artifacts
state them, and the differences between those and rows read back from a database.

The same functions fill the rows when a run is recorded and re-derive them when a recorded run is verified, so
a row edited by hand (a verdict, a metric's point, a gate's outcome) is named like an edited file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.engine.runs.manifest import definitions_fingerprint


def utc_naive(moment: str) -> datetime:
    """An ISO time from an artifact as the naive UTC datetime the tables store."""
    parsed = datetime.fromisoformat(moment)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


def run_columns(card: Scorecard, record: RunRecord) -> dict[str, Any]:
    """The ``runs`` columns the artifacts determine (provenance and bookkeeping columns are not among them)."""
    return {
        "run_id": card.run_id,
        "created_at": utc_naive(card.created_at),
        "tool_version": card.tool_version,
        "config_path": record.config_path,
        "config_fingerprint": record.config_fingerprint,
        "ledger_fingerprint": record.ledger_fingerprint,
        "dataset_name": card.dataset.name,
        "dataset_fingerprint": card.dataset.fingerprint,
        "definitions_fingerprint": definitions_fingerprint(record.definition_files),
        "scores_sha256": record.scores_sha256,
        "examples": card.dataset.examples,
        "verdict": card.decision.verdict.value,
        "exit_code": int(card.decision.exit_code),
    }


def gate_rows(card: Scorecard) -> list[dict[str, Any]]:
    return [
        {
            "name": gate.name,
            "subject": gate.subject,
            "active": gate.active,
            "outcome": gate.outcome.value,
            "value": gate.value,
            "threshold": gate.threshold,
            "reasons": ",".join(reason.code.value for reason in gate.reasons),
        }
        for gate in card.decision.gates
    ]


def metric_rows(card: Scorecard) -> list[dict[str, Any]]:
    rows = []
    for metric in card.metrics:
        estimate = metric.estimate
        interval = None if estimate is None else estimate.interval
        population = metric.population
        rows.append(
            {
                "name": metric.name,
                "point": None if estimate is None else estimate.point,
                "low": None if interval is None else interval.low,
                "high": None if interval is None else interval.high,
                "level": None if interval is None else interval.level,
                "method": None if interval is None else str(interval.method.value),
                "included": population.included,
                "excluded": population.expected - population.included,
            }
        )
    return rows


def row_findings(
    stored_run: dict[str, Any],
    stored_gates: list[dict[str, Any]],
    stored_metrics: list[dict[str, Any]],
    card: Scorecard,
    record: RunRecord,
) -> list[tuple[str, Any, Any]]:
    """(field, stored, derived from the artifacts) for every summary value that differs."""
    found: list[tuple[str, Any, Any]] = []
    for name, derived in run_columns(card, record).items():
        if stored_run.get(name) != derived:
            found.append((f"history.runs.{name}", _shown(stored_run.get(name)), _shown(derived)))
    for table, stored, derived_rows in (
        ("gate_results", stored_gates, gate_rows(card)),
        ("metric_results", stored_metrics, metric_rows(card)),
    ):
        by_name = {row["name"]: row for row in stored}
        derived_by_name = {row["name"]: row for row in derived_rows}
        for name in sorted(set(by_name) | set(derived_by_name)):
            have, want = by_name.get(name), derived_by_name.get(name)
            if have is None or want is None:
                shape = ("<absent>" if have is None else "row", "<absent>" if want is None else "row")
                found.append((f"history.{table}.{name}", *shape))
                continue
            for column, value in want.items():
                if have.get(column) != value:
                    found.append((f"history.{table}.{name}.{column}", have.get(column), value))
    return found


def _shown(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
