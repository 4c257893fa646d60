"""Does a run's payload say what its run record's ledger snapshot says? Checked before `view` or `explain` show it.

``verify`` re-derives everything from the recorded scores; this is the cheap part of that, done from the two JSON
files alone (no scores, no config validation, none of the metric machinery): every declared gate's standing in
the ledger snapshot (active or not, the approved threshold, the authority reasons that must block it) and every
gate the snapshot activates without the config declaring it. A payload flipped to inactive, or given a threshold
the ledger never approved, is refused instead of shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalglass.core.authority import (
    BlockReason,
    JudgeStanding,
    declared_gate_authority,
    undeclared_active_gates,
)
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.checks import BindingStatus, CheckOutcome
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.errors import SetupError


def payload_problems(card: Scorecard, record: RunRecord) -> list[str]:
    """Each way the scorecard's decision contradicts the run record's ledger snapshot, in plain words."""
    if card.run_id != record.run_id:
        return [f"the scorecard is run {card.run_id}, the run record is run {record.run_id}"]
    try:
        today = day_of_timestamp(record.created_at)
    except ValueError:
        return [f"the run record's created_at {record.created_at!r} is not a timestamp"]
    config_gates: dict[str, Any] = record.config.get("gates") or {}
    declared = list(config_gates)
    recorded = {gate.name: gate for gate in card.decision.gates}
    problems: list[str] = []
    undeclared = undeclared_active_gates(record.ledger, declared)
    for name in sorted(set(recorded) - set(declared) - set(undeclared)):
        problems.append(f"gate '{name}' is in the payload, but neither the config nor the ledger snapshot has it")
    for name in [*declared, *undeclared]:
        if name not in recorded:
            problems.append(f"gate '{name}' is missing from the payload")
    for name in undeclared:
        gate = recorded.get(name)
        if gate is not None and BlockReason.GATE_UNDECLARED not in {reason.code for reason in gate.reasons}:
            problems.append(f"gate '{name}' is active in the ledger snapshot and undeclared, so it must block")
    for name in declared:
        gate = recorded.get(name)
        if gate is None:
            continue
        spec = config_gates[name] or {}
        check = spec.get("check") is not None
        compare_to = spec.get("compare_to")
        metric = None if check else spec.get("metric")
        summary = card.metric(metric) if isinstance(metric, str) else None
        judge = None
        if isinstance(metric, str) and metric in record.judge_fingerprints:
            judge = JudgeStanding(
                metric=metric,
                fingerprint=record.judge_fingerprints[metric],
                calibration=record.calibrations.get(metric),
            )
        authority = declared_gate_authority(
            record.ledger,
            today=today,
            name=name,
            fingerprint=record.gate_fingerprints.get(name, ""),
            check=check,
            dataset=record.dataset.name,
            dataset_fingerprint=record.dataset.gold,
            uses_reference=summary is not None and summary.uses_reference,
            judge=judge,
            comparative=compare_to is not None,
            baseline=compare_to if isinstance(compare_to, str) else None,
        )
        if gate.fingerprint != record.gate_fingerprints.get(name):
            problems.append(f"gate '{name}' carries a fingerprint the run record does not")
        if gate.active != authority.active:
            state = "active" if authority.active else "inactive"
            problems.append(
                f"gate '{name}' is recorded {'active' if gate.active else 'inactive'}; the ledger "
                f"snapshot makes it {state}"
            )
            continue
        if not authority.active:
            continue
        if compare_to is not None:
            # A comparative gate's threshold is -margin (its own validator ties the two): check the margin.
            margin = gate.comparison.margin if gate.comparison is not None else None
            if gate.compare_to != compare_to or margin != authority.margin:
                problems.append(
                    f"gate '{name}' compares with baseline {gate.compare_to!r} within margin {margin}; the config "
                    f"and ledger snapshot say {compare_to!r} within {authority.margin}"
                )
        elif not check and gate.threshold != authority.threshold:
            problems.append(
                f"gate '{name}' compares with threshold {gate.threshold}; the ledger snapshot approves "
                f"{authority.threshold}"
            )
        implied = {reason.code for reason in authority.reasons}
        result = record.check_results.get(str(spec.get("check"))) if check else None
        measured = result is not None and result.outcome in (CheckOutcome.PASS, CheckOutcome.FAIL)
        if authority.require_binding and measured and result is not None:
            # Only a measured outcome is judged on its binding (core.gates.evaluate_check_gate): an ERROR blocks
            # as check_not_passed whatever it was bound to.
            if result.binding is BindingStatus.UNBOUND:
                implied.add(BlockReason.CHECK_UNBOUND)
            if result.unbound_inputs:
                implied.add(BlockReason.CHECK_INPUTS_UNBOUND)
        missing = implied - {reason.code for reason in gate.reasons}
        if missing:
            codes = ", ".join(sorted(code.value for code in missing))
            problems.append(f"gate '{name}' is not blocked by {codes}, which the ledger snapshot implies")
    return problems


def refuse_contradicted(folder: Path, card: Scorecard, record: RunRecord) -> None:
    """One line (exit 2) when the payload contradicts the ledger snapshot; nothing otherwise."""
    problems = payload_problems(card, record)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SetupError(
            f"this run's payload disagrees with its run record's ledger snapshot: {problems[0]}{more}",
            where=str(folder),
            fix="the artifacts were edited; run `evalglass verify` on the folder, or rerun `evalglass run`",
        )
