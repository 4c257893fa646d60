"""Renders a preflight: one block per gate (its standing, and every reason with its repair), and the same as JSON."""

from __future__ import annotations

from typing import Any

from evalglass.core.preflight import GatePreview, Preflight, Standing
from evalglass.report.forecast import detectable_text, forecast_text
from evalglass.report.numbers import number
from evalglass.report.repairs import BLOCK_REASON_FIXES

SCHEMA = "evalglass.preflight/1"

_LABEL = {
    Standing.INFORMATIONAL: "informational",
    Standing.WOULD_DECIDE: "would decide",
    Standing.BLOCKED: "BLOCKED now",
}


def preflight_text(found: Preflight) -> str:
    lines = [
        f"preflight of {found.config_path} under ledger {found.ledger_path}, on {found.today} "
        "(no metric, lane or check was run)",
        "",
    ]
    for gate in found.gates:
        lines.append(f"{gate.name}  [{_LABEL[gate.standing]}]  {_what(gate)}")
        for reason in gate.reasons:
            lines.append(f"  - {reason.code.value}: {reason.message}")
            lines.append(f"    repair: {BLOCK_REASON_FIXES[reason.code]}")
        lines.extend(f"  - note: {note}" for note in gate.notes)
        if gate.forecast is not None:
            detectable = detectable_text(gate.forecast)
            lines += [f"  - {text}" for text in (detectable, forecast_text(gate.forecast)) if text is not None]
    if not found.gates:
        lines.append("no gates are declared and the ledger activates none")
    lines += ["", _summary(found)]
    return "\n".join(lines)


def _what(gate: GatePreview) -> str:
    subject = f"{gate.kind} '{gate.subject}'" if gate.kind != "undeclared" else "not declared by the config"
    if gate.standing is Standing.INFORMATIONAL:
        return f"{subject}: not active in the ledger, evidence only"
    if gate.margin is not None:
        subject += f", approved margin {number(gate.margin)}"
    elif gate.threshold is not None:
        subject += f", approved threshold {number(gate.threshold)}"
    if gate.evaluators:
        subject += f" ({', '.join(gate.evaluators)})"
    if gate.standing is Standing.WOULD_DECIDE:
        return subject + ": its approvals hold; a run measures it and passes, fails or blocks on the measurement"
    return subject


def _summary(found: Preflight) -> str:
    counts = {standing: sum(1 for gate in found.gates if gate.standing is standing) for standing in Standing}
    active = counts[Standing.WOULD_DECIDE] + counts[Standing.BLOCKED]
    if active == 0:
        verdict = "no gate is active: a run would be informational (exit 0), and quality would not be checked"
    elif counts[Standing.BLOCKED]:
        verdict = f"{counts[Standing.BLOCKED]} would be blocked before anything is measured"
    else:
        verdict = "every active gate could decide"
    return (
        f"{active} active gate(s): {counts[Standing.WOULD_DECIDE]} would decide, {counts[Standing.BLOCKED]} blocked; "
        f"{counts[Standing.INFORMATIONAL]} informational. {verdict}. exit {int(found.exit_code)}"
    )


def preflight_json(found: Preflight) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "config": found.config_path,
        "ledger": found.ledger_path,
        "today": found.today,
        "dataset": {"name": found.dataset, "fingerprint": found.dataset_fingerprint},
        "exit_code": int(found.exit_code),
        "gates": [
            {
                "name": gate.name,
                "subject": gate.subject,
                "kind": gate.kind,
                "standing": gate.standing.value,
                "fingerprint": gate.fingerprint,
                "threshold": gate.threshold,
                "margin": gate.margin,
                "evaluators": list(gate.evaluators),
                "reasons": [
                    {"code": reason.code.value, "message": reason.message, "repair": BLOCK_REASON_FIXES[reason.code]}
                    for reason in gate.reasons
                ],
                "notes": list(gate.notes),
                **({"forecast": gate.forecast.model_dump(mode="json")} if gate.forecast is not None else {}),
            }
            for gate in found.gates
        ],
    }
