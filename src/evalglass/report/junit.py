"""junit.xml: the verdict payload as JUnit XML, for CI systems that read test reports. It renders; it decides nothing.

One ``<testsuite>`` per run, one ``<testcase>`` per gate: pass → passed, fail → ``<failure>`` with the value and
the approved threshold, blocked → ``<error>`` with every reason, informational → ``<skipped>`` ("not an active
gate"). Standalone checks are testcases too; a check that no active gate decides on is evidence only and is skipped
with its outcome, so the report shows a failure or an error exactly when the run's verdict fails CI.

The suite name (``evalglass.<dataset>``) and the testcase names stay the same from run to run, so CI systems can
track a gate's history; the run id is the suite's ``id``.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from evalglass.core.checks import CheckOutcome
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import GateRule, SubjectKind
from evalglass.core.scorecard import CheckSummary, Scorecard
from evalglass.report.fmt import (
    NOT_ACTIVE,
    OUTCOME_LABEL,
    estimate_text,
    excluded_text,
    gate_sentence,
    interval_text,
    reasons_text,
    rule_text,
    verdict_meaning,
)
from evalglass.report.safetext import visible

# Characters XML 1.0 cannot carry at all (not even escaped): most C0 controls, surrogates, U+FFFE/U+FFFF. Command
# output and names from a tampered artifact may hold them; they are shown as \xNN instead of making the file invalid.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


def _x(text: str) -> str:
    """Text from data as XML can carry it and a reader sees it (``report.safetext.visible``)."""
    return _NOT_XML.sub(lambda match: f"\\x{ord(match.group()):02x}", visible(text))


def _element(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    child = ET.SubElement(parent, tag, {key: _x(value) for key, value in attributes.items()})
    if text is not None:
        child.text = _x(text)
    return child


def _gate_case(suite: ET.Element, classname: str, gate: GateResult) -> str:
    """The gate's testcase; returns the JUnit outcome it was given. Its message carries what the terminal says
    beside the outcome too: an EXPERIMENTAL rule, and every note (an unbound check, an approval about to expire)."""
    case = _element(suite, "testcase", name=gate.name, classname=classname)
    sentence = gate_sentence(gate) + "".join(f" [{caveat}]" for caveat in _caveats(gate))
    if gate.outcome is Outcome.FAIL:
        _element(case, "failure", _gate_details(gate), type="fail", message=sentence)
        return "failure"
    if gate.outcome is Outcome.BLOCKED:
        _element(case, "error", _gate_details(gate), type="blocked", message=sentence)
        return "error"
    if gate.outcome is Outcome.INFORMATIONAL:
        _element(case, "skipped", _gate_details(gate), type="informational", message=f"{NOT_ACTIVE}: evidence only")
        return "skipped"
    _element(case, "system-out", _gate_details(gate))
    return "passed"


def _caveats(gate: GateResult) -> list[str]:
    rule = [f"rule: {rule_text(gate)}"] if gate.rule is not GateRule.POINT else []
    return [*rule, *(f"note: {note}" for note in gate.notes)]


def _gate_details(gate: GateResult) -> str:
    lines = [gate_sentence(gate), *_caveats(gate), f"subject: {gate.subject_kind.value} {gate.subject}"]
    if gate.subject_kind is SubjectKind.METRIC:
        lines.append(f"direction: {gate.direction.value}; rule: {rule_text(gate)}")
        lines.append(f"value: {gate.value}; compared: {gate.compared}; n: {gate.n}")
    approved = "none approved" if gate.threshold is None else f"{gate.threshold}"
    proposed = "" if gate.proposed_threshold is None else f"; proposed (not approved): {gate.proposed_threshold}"
    lines.append(f"approved threshold: {approved}{proposed}")
    lines += [f"reason {reason.code.value}: {reason.message}" for reason in gate.reasons]
    lines.append(f"gate fingerprint: {gate.fingerprint}")
    return "\n".join(lines)


def _check_case(suite: ET.Element, classname: str, check: CheckSummary, gated: bool) -> str:
    case = _element(suite, "testcase", name=check.name, classname=classname)
    details = _check_details(check)
    outcome = check.outcome.value
    why = f" ({check.reason.value})" if check.reason is not None else ""
    message = f"check {check.name} ended {outcome}{why}: {check.repair.value}"
    if not gated:
        _element(case, "skipped", details, type=outcome, message=f"{NOT_ACTIVE}: {message} (evidence only)")
        return "skipped"
    if check.outcome is CheckOutcome.PASS:
        _element(case, "system-out", details)
        return "passed"
    if check.outcome is CheckOutcome.FAIL:
        _element(case, "failure", details, type=outcome, message=message)
        return "failure"
    _element(case, "error", details, type=outcome, message=message)
    return "error"


def _check_details(check: CheckSummary) -> str:
    """Everything the scorecard records about the check, the command's detail in full (tables shorten it)."""
    lines = [
        f"outcome: {check.outcome.value}; repair: {check.repair.value}",
        f"binding: {check.binding.value}; command started: {'yes' if check.command_started else 'no'}; "
        f"exit code: {'none' if check.exit_code is None else check.exit_code}",
        f"policy: {check.policy_id} ({check.policy_fingerprint})",
    ]
    if check.reason is not None:
        lines.append(f"reason: {check.reason.value}")
    if check.requested_fingerprint is not None or check.observed_fingerprint is not None:
        lines.append(f"target state requested: {check.requested_fingerprint}; observed: {check.observed_fingerprint}")
    if check.detail:
        lines.append(f"detail: {check.detail}")
    return "\n".join(lines)


def _suite_text(card: Scorecard) -> str:
    decision = card.decision
    lines = [
        f"EvalGlass verdict: {OUTCOME_LABEL[decision.verdict]} (exit code {decision.exit_code})",
        verdict_meaning(card),
        f"run {card.run_id}; dataset {card.dataset.name}, {card.dataset.examples} examples",
        "",
        "metrics (excluded scores never count as 0):",
    ]
    for metric in card.metrics:
        population = metric.population
        lines.append(
            f"  {metric.name}: {estimate_text(metric.estimate)} {interval_text(metric.estimate)}; "
            f"included {population.included}/{population.expected}; excluded {excluded_text(population)}"
        )
    lines += [f"  gate {gate.name}: {reasons_text(gate)}" for gate in decision.gates if gate.reasons]
    return "\n".join(lines)


def render_junit(card: Scorecard, not_checked: str | None = None) -> bytes:
    """``not_checked``: for a run loaded from its folder, the line saying what loading it did not check (a
    property and the suite's output carry it)."""
    decision = card.decision
    suite_name = f"evalglass.{card.dataset.name}"
    root = ET.Element("testsuites", {"name": "evalglass"})
    suite = _element(root, "testsuite", name=suite_name, id=card.run_id)
    if _TIMESTAMP.match(card.created_at):
        suite.set("timestamp", card.created_at[:19])
    properties = _element(suite, "properties")
    for name, value in (
        ("evalglass.verdict", decision.verdict.value),
        ("evalglass.exit_code", str(decision.exit_code)),
        ("evalglass.ci_should_fail", str(decision.ci_should_fail).lower()),
        ("evalglass.meaning", verdict_meaning(card)),
        ("evalglass.run_id", card.run_id),
        ("evalglass.dataset_fingerprint", card.dataset.fingerprint),
        ("evalglass.tool_version", card.tool_version),
        *([("evalglass.not_checked", not_checked)] if not_checked is not None else []),
    ):
        _element(properties, "property", name=name, value=value)
    outcomes = [_gate_case(suite, f"{suite_name}.gates", gate) for gate in decision.gates]
    gated = {gate.subject for gate in decision.gates if gate.subject_kind is SubjectKind.CHECK and gate.active}
    outcomes += [_check_case(suite, f"{suite_name}.checks", check, check.name in gated) for check in card.checks]
    _element(suite, "system-out", _suite_text(card) + (f"\n{not_checked}" if not_checked is not None else ""))
    counts = {
        "tests": str(len(outcomes)),
        "failures": str(outcomes.count("failure")),
        "errors": str(outcomes.count("error")),
    }
    for key, value in counts.items():
        root.set(key, value)
        suite.set(key, value)
    suite.set("skipped", str(outcomes.count("skipped")))
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"
