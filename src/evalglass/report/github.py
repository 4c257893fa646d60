"""GitHub Actions: workflow-command annotations for the gates that fail CI. It renders; it decides nothing.

A failing or blocked gate becomes an ``::error`` annotation placed on the line of the config where the gate is
declared (or, for ``gate_undeclared``, the ledger entry that still activates it); an informational run gets one
``::warning`` saying no gate was active, so a green check mark never reads as "quality verified". Both fail and
blocked are errors: both fail CI, and blocked ("we cannot honestly tell") must never look milder than fail.

Names, reasons and paths can come from a pull request (or from a travelling artifact), so every value is escaped
the way the runner decodes it: ``%``, CR and LF in the message; those and ``:`` and ``,`` in properties. An escaped
message is one line, so nothing in it can start a workflow command of its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalglass.core.gates import Outcome
from evalglass.core.scorecard import Scorecard
from evalglass.report.fmt import OUTCOME_LABEL, gate_sentence
from evalglass.report.safetext import visible

#: Where a gate is declared: (file path as the annotation should name it, 1-based line).
Site = tuple[str, int]


def escape_data(text: str) -> str:
    """A workflow command's message: the runner turns %25, %0D and %0A back into %, CR and LF. Control characters
    from data are shown as escapes first (``report.safetext.visible``), so only the message's own line breaks
    remain."""
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (``file=``, ``title=``): also ``:`` and ``,``, which would end the value or the list."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: str | int | None) -> str:
    given = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items() if value is not None)
    return f"::{command}{' ' + given if given else ''}::{escape_data(message)}"


def gate_annotations(card: Scorecard, sites: Mapping[str, Site], not_checked: str | None = None) -> list[str]:
    """One ``::error`` per failing or blocked gate (at its declaration when ``sites`` knows it), a ``::warning``
    for an informational run, and for a run loaded from its folder a ``::notice`` saying what was not checked."""
    decision = card.decision
    lines = []
    for gate in decision.gates:
        if gate.outcome not in (Outcome.FAIL, Outcome.BLOCKED):
            continue
        site = sites.get(gate.name)
        what = "failed" if gate.outcome is Outcome.FAIL else "blocked"
        text = gate_sentence(gate)
        if gate.outcome is Outcome.BLOCKED:
            # Each message made visible on its own: a carriage return ending one would otherwise meet the line
            # break after it and be read as one CRLF line end, so the reason would not read back as written.
            text = f"{gate.name}: blocked, every reason:\n" + "\n".join(
                f"{reason.code.value}: {visible(reason.message)}" for reason in gate.reasons
            )
        lines.append(
            workflow_command(
                "error",
                f"{text}\n{decision.meaning}",
                file=site[0] if site else None,
                line=site[1] if site else None,
                title=f"EvalGlass gate {gate.name} {what}",
            )
        )
    if decision.verdict is Outcome.INFORMATIONAL:
        lines.append(
            workflow_command("warning", decision.meaning, title=f"EvalGlass: {OUTCOME_LABEL[decision.verdict]}")
        )
    if not_checked is not None:
        lines.append(workflow_command("notice", not_checked, title="EvalGlass: not re-derived"))
    return lines
