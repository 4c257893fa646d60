"""What ``evalglass history`` lists: recorded runs newest first, optionally one branch's, with one metric's
estimate and interval or one gate's outcome per run."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, and_, or_, select

from evalglass.history.schema import GateResultRow, MetricResultRow, RunRow


@dataclass(frozen=True)
class MetricPoint:
    point: float | None
    low: float | None
    high: float | None
    level: float | None
    method: str | None
    included: int
    excluded: int


@dataclass(frozen=True)
class GatePoint:
    outcome: str
    active: bool
    value: float | None
    threshold: float | None
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class HistoryEntry:
    run_id: str
    created_at: datetime
    branch: str | None
    commit: str | None
    dirty: bool | None
    verdict: str
    exit_code: int
    examples: int
    dataset: str
    source: str
    ci_provider: str | None
    ci_job_url: str | None
    metric: MetricPoint | None = None
    gate: GatePoint | None = None
    #: Why the run's readers would refuse it (``history.recheck``); its verdict is then ``refused``.
    refused: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run_id": self.run_id,
            "created_at": self.created_at.isoformat() + "Z",
            "branch": self.branch,
            "commit": self.commit,
            "dirty": self.dirty,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "examples": self.examples,
            "dataset": self.dataset,
            "source": self.source,
            "ci_provider": self.ci_provider,
            "ci_job_url": self.ci_job_url,
        }
        if self.metric is not None:
            data["metric"] = self.metric.__dict__.copy()
        if self.gate is not None:
            data["gate"] = {**self.gate.__dict__, "reasons": list(self.gate.reasons)}
        if self.refused is not None:  # only then: honest rows keep the bytes they always had
            data["refused"] = self.refused
        return data


_RUN_COLUMNS = (
    RunRow.run_id,
    RunRow.created_at,
    RunRow.git_branch,
    RunRow.git_commit,
    RunRow.git_dirty,
    RunRow.verdict,
    RunRow.exit_code,
    RunRow.examples,
    RunRow.dataset_name,
    RunRow.source,
    RunRow.ci_provider,
    RunRow.ci_job_url,
    RunRow.pk,
)
_METRIC_COLUMNS = (
    MetricResultRow.point,
    MetricResultRow.low,
    MetricResultRow.high,
    MetricResultRow.level,
    MetricResultRow.method,
    MetricResultRow.included,
    MetricResultRow.excluded,
)
_GATE_COLUMNS = (
    GateResultRow.outcome,
    GateResultRow.active,
    GateResultRow.value,
    GateResultRow.threshold,
    GateResultRow.reasons,
)


def newest_first(branch: str | None) -> Select[Any]:
    """Runs (optionally one branch's) newest first: ``ix_runs_created`` / ``ix_runs_branch_created`` serve it."""
    query = select(RunRow.pk)
    if branch is not None:
        query = query.where(RunRow.git_branch == branch)
    return query.order_by(RunRow.created_at.desc(), RunRow.pk.desc())


def list_runs(
    engine: Engine,
    *,
    metric: str | None = None,
    gate: str | None = None,
    branch: str | None = None,
    suite: str | None = None,
    limit: int = 20,
) -> list[HistoryEntry]:
    """Up to ``limit`` runs newest first; with ``metric`` / ``gate``, only runs that have it, with its values; with
    ``suite``, only runs of that dataset name or config path (as the run recorded it). Each run is checked again
    from its stored files as its readers check it (``history.recheck``): one they would refuse is listed
    ``refused`` (its verdict, and a green gate outcome), with the reason, never with the verdict its row stores."""
    from evalglass.history.recheck import REFUSED, REFUSED_EXIT, refusals

    columns: list[Any] = [*_RUN_COLUMNS]
    if metric is not None:
        columns += _METRIC_COLUMNS
    if gate is not None:
        columns += _GATE_COLUMNS
    query = select(*columns).select_from(RunRow)
    if metric is not None:
        query = query.join(MetricResultRow, and_(MetricResultRow.run_pk == RunRow.pk, MetricResultRow.name == metric))
    if gate is not None:
        query = query.join(GateResultRow, and_(GateResultRow.run_pk == RunRow.pk, GateResultRow.name == gate))
    if branch is not None:
        query = query.where(RunRow.git_branch == branch)
    if suite is not None:
        query = query.where(or_(RunRow.dataset_name == suite, RunRow.config_path == suite))
    query = query.order_by(RunRow.created_at.desc(), RunRow.pk.desc()).limit(limit)
    with engine.connect() as connection:
        rows = connection.execute(query).all()
    entries: list[HistoryEntry] = []
    keys: list[int] = []
    for row in rows:
        values = list(row)
        base, rest = values[: len(_RUN_COLUMNS)], values[len(_RUN_COLUMNS) :]
        metric_point = gate_point = None
        if metric is not None:
            metric_point = MetricPoint(*rest[: len(_METRIC_COLUMNS)])
            rest = rest[len(_METRIC_COLUMNS) :]
        if gate is not None:
            outcome, active, value, threshold, reasons = rest
            gate_point = GatePoint(outcome, bool(active), value, threshold, tuple(filter(None, reasons.split(","))))
        run_id, created_at, branch, commit, dirty, verdict, exit_code, examples, dataset, source, provider, url, pk = (
            base
        )
        keys.append(pk)
        entries.append(
            HistoryEntry(
                run_id=run_id,
                created_at=created_at,
                branch=branch,
                commit=commit,
                dirty=dirty,
                verdict=verdict,
                exit_code=exit_code,
                examples=examples,
                dataset=dataset,
                source=source,
                ci_provider=provider,
                ci_job_url=url,
                metric=metric_point,
                gate=gate_point,
            )
        )
    refused = refusals(engine, keys)
    return [
        entry
        if (reason := refused.get(pk)) is None
        else replace(
            entry,
            verdict=REFUSED,
            exit_code=REFUSED_EXIT,
            refused=reason,
            gate=None if entry.gate is None else replace(entry.gate, outcome=REFUSED),
        )
        for entry, pk in zip(entries, keys, strict=True)
    ]
