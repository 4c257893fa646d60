"""`evalglass preflight` (and `run --dry-run`): what every gate would be, without running a metric or a lane.

It loads the config and the ledger exactly as a run does (the same validation, the same refusals), fingerprints
every gate, the dataset and each judge, and asks the ledger the question a run asks (``declared_gate_authority``)
on the given day. What it can know without measuring is every authority reason: undeclared, forbidden, unbound,
stale (naming an evaluator whose version changed), expired, unvalidated or stale gold, an uncalibrated judge, a
missing or stale baseline, a check that would run unbound where the ledger requires a binding. What only a run can
tell (nothing measured, excluded examples, below ``min_n``, a failing check, a threshold missed) is not predicted:
"would decide" means the gate may pass, fail, or still block on its measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalglass.core.authority import (
    JudgeStanding,
    Reason,
    check_inputs_unbound_reason,
    check_unbound_reason,
    declared_gate_authority,
    unbound_inputs_text,
    undeclared_gates,
)
from evalglass.core.evaluators import evaluator_labels
from evalglass.core.preflight import GatePreview, Preflight, Standing
from evalglass.engine.config import LoadedConfig, load_config
from evalglass.engine.datasetfile import gold_fingerprint_of
from evalglass.engine.ledger import LoadedLedger, check_against_config, load_ledger, refuse_unpinned_ledger
from evalglass.engine.runlocator import RunLocator
from evalglass.engine.staleness import stale_causes
from evalglass.lanes.checkinputs import unbound_inputs

if TYPE_CHECKING:  # the statistics are imported only when a comparative gate names a readable baseline
    from evalglass.core.comparative import BaselineRun
    from evalglass.core.compare import UnchangedForecast
    from evalglass.core.gatespec import GateSpec


def preflight(
    config_path: Path, *, today: str, pinned_ledger: Path | None = None, locator: RunLocator | None = None
) -> Preflight:
    """Every gate's standing on ``today`` (YYYY-MM-DD). Bad input raises ``SetupError`` as a run would.
    ``locator``: how a run would find a baseline named by reference (``engine.runlocator``)."""
    loaded = load_config(config_path)
    refuse_unpinned_ledger(loaded, pinned_ledger)
    config = loaded.config
    ledger = load_ledger(loaded.ledger_path)
    check_against_config(ledger, config)
    fingerprints = {name: config.gate_fingerprint(name, loaded.definition_files) for name in config.gates}
    dataset_fingerprint = gold_fingerprint_of(loaded) if config.needs_gold else None
    standings: dict[str, JudgeStanding] = {}
    if config.judges:
        from evalglass.engine.calibrate import judge_standings

        standings = judge_standings(loaded)
    causes = stale_causes(config, loaded.definition_files, ledger.ledger, fingerprints)
    previews = [
        _preview(
            loaded, ledger, name, fingerprints[name], dataset_fingerprint, standings, causes.get(name), today, locator
        )
        for name in config.gates
    ]
    for gate in undeclared_gates(ledger.ledger, list(config.gates), ledger.gate_where()):
        previews.append(
            GatePreview(
                name=gate.name,
                subject=gate.name,
                kind="undeclared",
                standing=Standing.BLOCKED,
                fingerprint=gate.fingerprint,
                threshold=gate.threshold,
                reasons=(gate.reason,),
            )
        )
    return Preflight(
        config_path=str(config_path),
        ledger_path=str(ledger.path),
        today=today,
        dataset=config.dataset.name,
        dataset_fingerprint=dataset_fingerprint,
        gates=tuple(previews),
    )


def _preview(
    loaded: LoadedConfig,
    ledger: LoadedLedger,
    name: str,
    fingerprint: str,
    dataset_fingerprint: str | None,
    standings: dict[str, JudgeStanding],
    stale_cause: str | None,
    today: str,
    locator: RunLocator | None,
) -> GatePreview:
    config = loaded.config
    gate = config.gates[name]
    spec = config.metrics[gate.metric] if gate.metric is not None else None
    authority = declared_gate_authority(
        ledger.ledger,
        today=today,
        name=name,
        fingerprint=fingerprint,
        check=gate.check is not None,
        dataset=config.dataset.name,
        dataset_fingerprint=dataset_fingerprint or "",
        uses_reference=spec is not None and spec.uses_reference,
        judge=standings.get(gate.subject),
        stale_cause=stale_cause,
        comparative=gate.compare_to is not None,
        baseline=gate.compare_to,
    )
    kind = "check" if gate.check is not None else "comparative" if gate.compare_to is not None else "metric"
    evaluators = evaluator_labels(config.gate_evaluators(name))
    # What the check's run records too (lanes.checkinputs), from the same declaration and files.
    unbound = unbound_inputs(config.checks[gate.check], loaded.base_dir) if gate.check is not None else ()
    baseline = _Baseline.read(loaded, ledger, name, locator) if gate.compare_to is not None else None
    forecast = baseline.forecast(authority.margin) if baseline is not None else None
    if not authority.active:
        # Said before activation too: the host approves a fingerprint that would not cover that code.
        said = (unbound_inputs_text(gate.subject, unbound),) if unbound else ()
        return GatePreview(
            name,
            gate.subject,
            kind,
            Standing.INFORMATIONAL,
            fingerprint,
            notes=said,
            evaluators=evaluators,
            forecast=forecast,
        )
    reasons = list(authority.reasons)
    notes = authority.notes
    if gate.check is not None and authority.require_binding and gate.expect_state is None:
        reasons.append(check_unbound_reason(gate.check))
    if unbound and authority.require_binding:
        reasons.append(check_inputs_unbound_reason(gate.subject, unbound))
    elif unbound:
        notes = (*notes, unbound_inputs_text(gate.subject, unbound))
    if baseline is not None:
        reasons.extend(baseline.reasons)
    return GatePreview(
        name=name,
        subject=gate.subject,
        kind=kind,
        standing=Standing.BLOCKED if reasons else Standing.WOULD_DECIDE,
        fingerprint=fingerprint,
        threshold=authority.threshold,
        margin=authority.margin,
        reasons=tuple(reasons),
        notes=notes,
        evaluators=evaluators,
        forecast=forecast,
    )


@dataclass(frozen=True)
class _Baseline:
    """The baseline a comparative gate names, as a run would find it: why it cannot be compared with (reasons), and
    what it says about how much an unchanged candidate would vary (its own column of the gate's metric)."""

    gate: GateSpec
    reasons: list[Reason]
    found: BaselineRun | None

    @classmethod
    def read(cls, loaded: LoadedConfig, ledger: LoadedLedger, name: str, locator: RunLocator | None) -> _Baseline:
        from evalglass.core.comparative import baseline_reasons
        from evalglass.engine.baselines import read_baseline

        gate = loaded.config.gates[name]
        assert gate.compare_to is not None and gate.metric is not None
        approval = ledger.ledger.baselines.get(gate.compare_to)
        if approval is None:
            return cls(gate, baseline_reasons(gate.compare_to, None, None, listed=False), None)
        found, _ = read_baseline(gate.compare_to, ledger, [gate.metric], locator)
        return cls(gate, baseline_reasons(gate.compare_to, approval.fingerprint, found, listed=True), found)

    def forecast(self, approved_margin: float | None) -> UnchangedForecast | None:
        """From the baseline's own spread, at the approved margin (else the proposed one); None when there is no
        margin yet or the baseline cannot be read."""
        from evalglass.core.comparative import unchanged_forecast

        margin = approved_margin if approved_margin is not None else self.gate.proposed_margin
        side = self.found.metrics.get(str(self.gate.metric)) if self.found is not None else None
        if margin is None or side is None:
            return None
        return unchanged_forecast(self.gate, None, side, margin)
