"""Plain-language explanations of gates and metrics, built from a run's artifacts (nothing is recomputed).

The one thing explain adds is the ledger entry a host would write to activate or re-approve a gate, filled in with
the fingerprints the run recorded. It only prints that entry: the tool never writes the ledger.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from evalglass.core.authority import BlockReason, unbound_inputs_text
from evalglass.core.compare import GateComparison, MetricComparison
from evalglass.core.evaluators import evaluator_labels
from evalglass.core.fingerprint import short
from evalglass.core.gates import GateResult, Outcome, interval_label
from evalglass.core.gatespec import GateRule, SubjectKind
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import CheckSummary, MetricSummary, Scorecard
from evalglass.errors import SetupError
from evalglass.report.examples import AGAINST_BASELINE_ORDER, Row, example_line
from evalglass.report.fmt import (
    comparison,
    diagnostic_count_text,
    difference_text,
    estimate_text,
    gate_value_text,
    ids_text,
    interval_text,
    number,
    samples_text,
    signed,
    test_text,
)
from evalglass.report.forecast import detectable_text, forecast_text
from evalglass.report.repairs import BLOCK_REASON_FIXES


@dataclass
class Explanation:
    subject: str
    kind: str
    summary: str
    details: list[str] = field(default_factory=list)
    ledger_entry: str | None = None
    examples: list[str] = field(default_factory=list)
    examples_order: str = "first of the run, in dataset order"

    def as_dict(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "summary": self.summary,
            "details": self.details,
            "ledger_entry": self.ledger_entry,
            "examples": self.examples,
            "examples_order": self.examples_order,
        }

    def as_text(self) -> str:
        parts = [self.summary, *[f"  - {line}" for line in self.details]]
        if self.examples:
            parts += ["", f"  Examples that pulled it down ({self.examples_order}):"]
            parts += [f"    {line}" for line in self.examples]
        if self.ledger_entry:
            parts += ["", "  Ledger entry to write (EvalGlass never writes the ledger):", ""]
            parts += [f"    {line}" for line in self.ledger_entry.splitlines()]
        return "\n".join(parts)


def explain(
    card: Scorecard,
    record: RunRecord,
    name: str | None,
    examples: Mapping[str, Sequence[Row]] | None = None,
    definitions: Mapping[str, dict[str, Any]] | None = None,
) -> list[Explanation]:
    """Explain one gate or metric by name, or every gate (and every metric without a gate) when name is None.

    ``examples`` holds, per gate, the first examples of its metric that did not pass (read from the run's scores);
    ``definitions``, per gate, the canonical definition its fingerprint hashes (from the run's config).
    """
    gates = {gate.name: gate for gate in card.decision.gates}
    pulled = examples or {}
    defined = definitions or {}
    if name is not None:
        if name in gates:
            return [explain_gate(gates[name], card, record, pulled.get(name, ()), defined.get(name))]
        metric = card.metric(name)
        if metric is not None:
            return [explain_metric(metric, card)]
        known = sorted([*gates, *(metric.name for metric in card.metrics)])
        raise SetupError(
            f"no gate or metric named '{name}' in this run (known: {', '.join(known)})",
            fix="pass a gate or metric name from this run",
        )
    out = [
        explain_gate(gate, card, record, pulled.get(gate.name, ()), defined.get(gate.name))
        for gate in card.decision.gates
    ]
    gated = {gate.subject for gate in card.decision.gates if gate.subject_kind is SubjectKind.METRIC}
    out += [explain_metric(metric, card) for metric in card.metrics if metric.name not in gated]
    return out


def explain_gate(
    gate: GateResult,
    card: Scorecard,
    record: RunRecord,
    examples: Sequence[Row] = (),
    definition: dict[str, Any] | None = None,
) -> Explanation:
    metric = card.metric(gate.subject) if gate.subject_kind is SubjectKind.METRIC else None
    needs_gold = metric is not None and metric.uses_reference
    details: list[str] = []
    entry: str | None = None
    if gate.outcome is Outcome.INFORMATIONAL:
        summary = (
            f"Gate '{gate.name}' is informational: the ledger ({record.ledger_path}) does not activate it, so its "
            f"number is evidence only and can neither pass nor fail CI."
        )
        details.append("To make it gate, the host adds the entry below to the ledger after reviewing the definition.")
        entry = _ledger_entry(gate, card, record, needs_gold, definition)
    elif gate.outcome is Outcome.BLOCKED and [reason.code for reason in gate.reasons] == [BlockReason.UNDECIDED]:
        summary = (
            f"Gate '{gate.name}' is blocked as undecided: the interval straddles the approved threshold, so the data "
            "show neither that it is met nor that it is missed. Nothing was shown to be worse: gather better "
            "evidence rather than change the system."
        )
        details.extend(_reason_lines(gate))
    elif gate.outcome is Outcome.BLOCKED:
        summary = f"Gate '{gate.name}' is blocked: it is active, but it cannot be decided honestly."
        for reason in gate.reasons:
            details.append(f"{reason.code.value}: {reason.message}. {BLOCK_REASON_FIXES[reason.code]}")
            if reason.code is BlockReason.APPROVAL_STALE:
                details.append(_what_changed(record, gate.name, definition))
        codes = {reason.code for reason in gate.reasons}
        if codes & {
            BlockReason.APPROVAL_STALE,
            BlockReason.APPROVAL_EXPIRED,
            BlockReason.GOLD_EXPIRED,
            BlockReason.APPROVAL_UNBOUND,
            BlockReason.NO_APPROVED_THRESHOLD,
            BlockReason.GOLD_NOT_VALIDATED,
            BlockReason.GOLD_STALE,
            BlockReason.BASELINE_MISSING,
            BlockReason.BASELINE_STALE,
            BlockReason.BASELINE_EXPIRED,
        }:
            entry = _ledger_entry(gate, card, record, needs_gold, definition)
    elif gate.subject_kind is SubjectKind.CHECK:
        summary = f"Gate '{gate.name}' is {gate.outcome.value}: check '{gate.subject}' ended {gate_value_text(gate)}."
        details.extend(_reason_lines(gate))
    elif gate.comparison is not None:
        assert gate.compared is not None and gate.threshold is not None
        what = "its one-sided bound" if gate.rule is GateRule.LOWER_BOUND else "the difference"
        verb = "is no worse than" if gate.outcome is Outcome.PASS else "is worse than"
        summary = (
            f"Gate '{gate.name}' is {gate.outcome.value}: compared with baseline '{gate.comparison.baseline}', "
            f"{what} ({signed(gate.compared)}) {verb} the approved margin allows ({signed(gate.threshold)})."
        )
        details.extend(_reason_lines(gate))
    else:
        assert gate.compared is not None and gate.threshold is not None
        verb = "meets" if gate.outcome is Outcome.PASS else "does not meet"
        summary = (
            f"Gate '{gate.name}' is {gate.outcome.value}: {number(gate.compared)} {verb} the approved threshold "
            f"{comparison(gate.direction)} {number(gate.threshold)}."
        )
        details.extend(_reason_lines(gate))
    details.extend(f"note: {note}" for note in gate.notes)
    details.extend(_unbound_inputs_line(gate, record))
    evaluators = _evaluators_line(record, gate)
    if evaluators is not None:
        details.append(evaluators)
    if gate.comparison is not None:
        details.extend(comparison_story(gate))
    elif gate.rule is GateRule.LOWER_BOUND:
        details.append(_lower_bound_story(gate))
    if metric is not None:
        details.append(_coverage(metric))
    if needs_gold:
        details.append(
            f"Gold: the metric compares with reference fields, so the gate needs dataset '{card.dataset.name}' "
            f"validated as gold; its gold fingerprint {card.dataset.gold} {gold_covers(record)}."
        )
    check = next((item for item in card.checks if item.name == gate.subject), None)
    if gate.subject_kind is SubjectKind.CHECK and check is not None:
        details.append(_check_story(check))
    shown = [example_line(row) for row in examples]
    if shown:
        shown.append(f"(all of them: evalglass view --examples --metric {gate.subject})")
    order = AGAINST_BASELINE_ORDER if any(row.baseline is not None for row in examples) else None
    return Explanation(
        subject=gate.name,
        kind="gate",
        summary=summary,
        details=details,
        ledger_entry=entry,
        examples=shown,
        **({"examples_order": order} if order is not None else {}),
    )


def _unbound_inputs_line(gate: GateResult, record: RunRecord) -> list[str]:
    """What the check's command runs that no input binds, when the gate's notes and reasons do not already say it
    (an informational gate about to be approved, a check that ended ERROR)."""
    result = record.check_results.get(gate.subject) if gate.subject_kind is SubjectKind.CHECK else None
    if result is None or not result.unbound_inputs:
        return []
    text = unbound_inputs_text(gate.subject, result.unbound_inputs)
    said = text in gate.notes or any(reason.code is BlockReason.CHECK_INPUTS_UNBOUND for reason in gate.reasons)
    return [] if said else [f"note: {text}"]


def _evaluators_line(record: RunRecord, gate: GateResult) -> str | None:
    """Which builtin evaluator versions decided the gate, as the run recorded them (none for a check or host code)."""
    recorded = record.gate_evaluators.get(gate.name)
    if recorded:
        return (
            f"Evaluators: {', '.join(evaluator_labels(recorded))} decided this run (the versions are part of the "
            "gate's fingerprint: an approval made under other versions is approval_stale)."
        )
    if gate.subject_kind is SubjectKind.METRIC and "gate_evaluators" not in record.model_fields_set:
        return "Evaluators: this run record does not say which versions decided (it predates recording them)."
    return None


def _reason_lines(gate: GateResult) -> list[str]:
    return [f"{reason.code.value}: {reason.message}. {BLOCK_REASON_FIXES[reason.code]}" for reason in gate.reasons]


def explain_metric(metric: MetricSummary, card: Scorecard) -> Explanation:
    population = metric.population
    if metric.estimate is None:
        summary = (
            f"Metric '{metric.name}' ({metric.type}) has no value: "
            f"none of its {population.expected} scores was measured validly."
        )
    else:
        summary = f"Metric '{metric.name}' ({metric.type}) is {estimate_text(metric.estimate)}."
    details = [_coverage(metric), *_uncertainty(metric)]
    for item in population.top_diagnostics:
        details.append(f"{diagnostic_count_text(item)}, e.g. {item.example}")
    gates = [gate.name for gate in card.decision.gates if gate.subject == metric.name]
    if gates:
        details.append(f"Gated by: {', '.join(gates)}.")
    else:
        details.append("No gate uses this metric: it is evidence only.")
    if metric.uses_reference:
        details.append("It compares with reference answers, so it can gate only on a dataset validated as gold.")
    return Explanation(subject=metric.name, kind="metric", summary=summary, details=details)


def comparison_story(gate: GateResult, top: int = 10) -> list[str]:
    """A comparative gate: what it compared, the rule, the power statement and the flips."""
    detail = gate.comparison
    assert detail is not None
    baseline = f"baseline '{detail.baseline}'"
    if detail.baseline_run_id is not None:
        baseline += f" (run {detail.baseline_run_id}, {short(detail.baseline_fingerprint or '')})"
    lines = [f"Compares this run with {baseline}, example by example (paired by id), on metric '{gate.subject}'."]
    metric = detail.metric
    if metric is None or metric.difference is None:
        forecast = detail.unchanged
        if forecast is not None:  # no comparison yet: what this run, as a baseline, would let candidates show
            lines.append(
                "Before approving a margin: were this run the baseline, a later run of the same system over these "
                f"{forecast.pairs:,} examples would meet the following."
            )
            lines += [text for text in (detectable_text(forecast), forecast_text(forecast)) if text is not None]
        return lines
    difference = metric.difference
    lines.append(
        f"Baseline {number(difference.base)}, this run {number(difference.candidate)} over {difference.n} pairs "
        f"measured in both; difference {difference_text(metric)} ({difference.interval.method.value}; "
        f"{test_text(metric)})."
    )
    margin = detail.margin
    if gate.rule is GateRule.LOWER_BOUND:
        lines.append(f"Rule lower_bound (three ways): {_three_way_text(gate, 'the difference', '-margin')}")
    else:
        lines.append(
            "Rule point: the difference itself must be no worse than -margin. A true drop just past the margin "
            "still passes about half the time; lower_bound does not let it."
        )
    lines.append(power_story(gate))
    flips = metric.flips
    if flips.pass_rule is None:
        lines.append("The metric has no bounded scale, so examples have no pass/fail and nothing flips.")
    else:
        lines.append(
            f"Flips (passing: {flips.pass_rule}): {len(flips.regressed)} regressed"
            + (f" ({ids_text(flips.regressed, top)})" if flips.regressed else "")
            + f", {len(flips.improved)} improved"
            + (f" ({ids_text(flips.improved, top)})" if flips.improved else "")
            + "."
        )
    if margin is None:
        lines.append("No margin is approved yet: the host writes `margin:` (the largest drop accepted) in the ledger.")
    return lines


def power_story(gate: GateResult) -> str:
    """What the pairs can decide, from the gate's recorded power statements (the HTML report too). It never says a
    suite is large enough: at any size a candidate near the margin can come out undecided, and the numbers say how
    often an unchanged one does."""
    detail = gate.comparison
    assert detail is not None and detail.metric is not None and detail.metric.difference is not None
    difference = detail.metric.difference
    pairs = difference.n
    level = f"{gate.level if gate.level is not None else 0.95:.0%}"
    spread = _spread_text(detail.metric)
    if detail.detectable_drop is None:
        return (
            f"Power: no example's score changed between the runs, so the {pairs:,} pairs show no spread; an unchanged "
            "candidate that varies as little is decided at any margin."
        )
    power = f"{detail.power or 0.8:.0%}"
    text = (
        f"Power (from the observed {spread}, {level} one-sided, {power} power): over these {pairs:,} pairs a true "
        f"difference must lie about {number(detail.detectable_drop)} or more from the limit (-margin) to be decided "
        f"{power} of the time (the minimum detectable effect)."
    )
    margin = detail.power_margin
    if margin and detail.required_pairs is not None:
        approved = "margin" if detail.margin is not None else "proposed margin"
        text += (
            f" An unchanged candidate passes {power} of the time against the {approved} ({number(margin)}) from about "
            f"{detail.required_pairs:,} pairs"
        )
        text += (
            f"; with {pairs:,} this suite cannot reliably detect a drop of that size: add examples before trusting it."
            if detail.required_pairs > pairs
            else "."
        )
    return " ".join([text, *_forecast_lines(detail), *_epochs_lines(detail)])


def _spread_text(metric: MetricComparison) -> str:
    """The observed paired spread in words: for a binary metric the discordant-pair rate it comes from."""
    difference = metric.difference
    assert difference is not None
    spread = number(difference.std_error * math.sqrt(difference.n))
    table = difference.table
    if table is not None and table.n:
        discordant = table.base_only + table.candidate_only
        return f"discordant-pair rate {number(discordant / table.n)} ({discordant:,} of {table.n:,} pairs flipped)"
    return f"paired spread ({spread} per pair)"


def _forecast_lines(detail: GateComparison) -> list[str]:
    """How often an unchanged candidate would come out undecided at the margin, and what would bring it under 5%."""
    return [forecast_text(detail.unchanged)] if detail.unchanged is not None else []


def _epochs_lines(detail: GateComparison) -> list[str]:
    """What sampling each example more often (epochs) would buy, at the observed within-example variance."""
    if detail.samples is None:
        return []
    if detail.epochs_to_halve is None:
        return [
            f"Samples: each side averages {detail.samples} samples per example; no number of samples per example "
            "halves the interval here (the spread between examples dominates): about 4x the examples would."
        ]
    return [
        f"Samples: each side averages {detail.samples} samples per example; about {detail.epochs_to_halve} samples "
        "per example would halve the interval at the observed within-example variance."
    ]


def _three_way_text(gate: GateResult, what: str, limit: str) -> str:
    """The three-way interval rule, with the interval it decided on when it was computed."""
    level = gate.level if gate.level is not None else 0.95
    text = (
        f"the {interval_label(level)} interval of {what} (each end a {level:.0%} "
        f"one-sided bound) is compared with {limit}: pass when its unfavourable end meets it, fail only when its "
        "favourable end misses it too (the shortfall is shown), otherwise undecided (blocked: gather better evidence)."
    )
    show = signed if gate.comparison is not None else number
    if gate.compared is not None and gate.favourable_bound is not None:
        low, high = sorted((gate.compared, gate.favourable_bound))
        text += f" Here [{show(low)}, {show(high)}]"
        text += f" against {show(gate.threshold)}." if gate.threshold is not None else "."
    return text


def _proposed_margin(gate: GateResult, record: RunRecord) -> float | None:
    spec = record.config.get("gates", {}).get(gate.name, {})
    value = spec.get("proposed_margin") if isinstance(spec, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _lower_bound_story(gate: GateResult) -> str:
    """Why the experimental rule decided as it did, and what evidence would decide it otherwise."""
    text = (
        f"Rule lower_bound (EXPERIMENTAL, three ways): {_three_way_text(gate, 'the value', 'the approved threshold')} "
        "The point "
        f"value is {number(gate.value)} ({gate.bound_method or 'no method'})."
    )
    if gate.outcome is Outcome.BLOCKED and any(reason.code is BlockReason.UNDECIDED for reason in gate.reasons):
        if gate.required_n is not None:
            text += f" At the current point and spread, about {gate.required_n} examples (now {gate.n}) would decide."
        if gate.required_epochs is not None:
            text += f" About {gate.required_epochs} samples per example over the same examples would too."
    elif gate.outcome is Outcome.FAIL:
        text += " The whole interval misses the threshold: the shortfall is shown, more examples alone will not help."
    return text


def _uncertainty(metric: MetricSummary) -> list[str]:
    estimate = metric.estimate
    if estimate is None:
        return []
    lines = [f"Interval: {interval_text(estimate)} over {estimate.n} examples."]
    interval = estimate.interval
    if interval is not None and interval.few_clusters:
        lines.append(
            f"Only {interval.clusters} clusters: cluster-robust intervals are too narrow with so few; "
            "add examples from more groups before trusting it."
        )
    if estimate.sensitivity is not None and estimate.sensitivity.excluded:
        bounds = estimate.sensitivity
        lines.append(
            f"Sensitivity: with the {bounds.excluded} excluded examples all at {number(bounds.scale_min)} the value "
            f"would be {number(bounds.low)}; all at {number(bounds.scale_max)}, {number(bounds.high)}. "
            "These bounds are shown, never mixed into the value."
        )
    samples = samples_text(estimate)
    if samples:
        lines.append(f"Samples: {samples} per example before the interval.")
    return lines


def _check_story(check: CheckSummary) -> str:
    ran = "the command ran" if check.command_started else "the command never started"
    exit_text = f" and exited {check.exit_code}" if check.exit_code is not None else ""
    why = f" ({check.reason.value}: {check.detail})" if check.reason is not None else ""
    return (
        f"Check '{check.name}': {check.outcome.value}, binding {check.binding.value}; {ran}{exit_text}{why}. "
        f"Next step: {check.repair.value}. Policy {check.policy_id} ({check.policy_fingerprint})."
    )


def _coverage(metric: MetricSummary) -> str:
    population = metric.population
    if population.excluded_total == 0:
        return f"All {population.expected} examples were measured validly and enter the value."
    parts = ", ".join(f"{count} {status}" for status, count in population.excluded_by_status.items())
    return (
        f"The value covers {population.included} of {population.expected} examples; excluded ({parts}) are left "
        f"out of the value, never counted as 0."
    )


def gold_covers(record: RunRecord) -> str:
    """What the gold fingerprint of this run covers, in one line."""
    task = record.config.get("task") or {}
    recorded = task.get("type", "recorded") == "recorded" if isinstance(task, dict) else False
    if recorded and isinstance(task, dict) and task.get("path") is None:
        field = task.get("field", "output")
        return f"covers every example's id and fields except the recorded output field '{field}'"
    return "covers every example's id and fields (the outputs are not in the dataset file)"


def _what_changed(record: RunRecord, gate: str, definition: dict[str, Any] | None) -> str:
    """Field by field, what differs between the approved definition (when the ledger entry carries it) and now."""
    approval = record.ledger.gates.get(gate)
    approved = approval.definition if approval is not None else None
    if approved is None or definition is None:
        return (
            "What changed cannot be shown: the ledger entry carries no `definition:`. Approvals that paste the "
            "definition block below let the next stale approval say what changed, field by field."
        )
    changes = definition_changes(approved, definition)
    if not changes:
        return "The definitions are equal field by field (only their encoding differs)."
    return "Changed since approval: " + "; ".join(changes) + "."


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def definition_changes(approved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """``path: old → new`` for each changed field, ``+ path: new`` added, ``- path: old`` removed, sorted by path."""
    before, after = _flatten(approved), _flatten(current)
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            changes.append(f"- {path}: {_shown(before[path])}")
        elif path not in before:
            changes.append(f"+ {path}: {_shown(after[path])}")
        elif before[path] != after[path]:
            changes.append(f"{path}: {_shown(before[path])} → {_shown(after[path])}")
    return changes


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _definition_block(definition: dict[str, Any]) -> list[str]:
    """The definition as a readable YAML block, indented under ``definition:`` in the gate's entry."""
    text = yaml.safe_dump(definition, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)
    return ["    definition:", *(f"      {line}" for line in text.splitlines())]


def _ledger_entry(
    gate: GateResult, card: Scorecard, record: RunRecord, needs_gold: bool, definition: dict[str, Any] | None = None
) -> str:
    threshold = gate.threshold if gate.threshold is not None else gate.proposed_threshold
    threshold_line = (
        f"    threshold: {threshold!r}"
        if threshold is not None
        else "    threshold: null   # write the threshold you approve; a null threshold keeps the gate blocked"
    )
    if gate.comparison is not None:
        margin = gate.comparison.margin if gate.comparison.margin is not None else _proposed_margin(gate, record)
        threshold_line = (
            f"    margin: {margin!r}   # the largest drop from the baseline you accept"
            if margin is not None
            else "    margin: null   # write the largest drop you accept; a null margin keeps the gate blocked"
        )
    lines = [
        "gates:",
        f"  {gate.name}:",
        "    active: true",
        *([] if gate.subject_kind is SubjectKind.CHECK else [threshold_line]),
        f'    fingerprint: "{gate.fingerprint}"',
        *(_definition_block(definition) if definition is not None else []),
        '    approved_by: "<your name>"',
        *_dated(record, "approved_on"),
    ]
    validation = record.ledger.datasets.get(card.dataset.name)
    gold_ok = (
        validation is not None
        and validation.validated_gold
        and validation.fingerprint == card.dataset.gold
        and all(reason.code is not BlockReason.GOLD_EXPIRED for reason in gate.reasons)
    )
    if gate.comparison is not None and gate.comparison.baseline_fingerprint is not None:
        detail = gate.comparison
        approved = record.ledger.baselines.get(detail.baseline)
        run = approved.run if approved is not None else "<the baseline run folder, relative to the ledger>"
        lines += [
            "baselines:",
            f"  {detail.baseline}:",
            f"    run: {run!r}",
            f'    fingerprint: "{detail.baseline_fingerprint}"',
            '    approved_by: "<your name>"',
        ]
    elif gate.comparison is not None:
        lines += [
            "baselines:",
            f"  {gate.comparison.baseline}:",
            '    run: "<the baseline run folder, relative to the ledger>"',
            "    fingerprint: null   # `evalglass compare BASELINE_FOLDER THIS_RUN` prints the baseline's fingerprint",
        ]
    if needs_gold and not gold_ok:
        lines += [
            "datasets:",
            f"  {card.dataset.name}:",
            "    validated_gold: true",
            f"    # {gold_covers(record)}",
            f'    fingerprint: "{card.dataset.gold}"',
            '    validated_by: "<your name>"',
            *_dated(record, "validated_on"),
        ]
    return "\n".join(lines)


def _dated(record: RunRecord, key: str) -> list[str]:
    """Under the ledger policy's ``max_age_days`` an entry's age counts from this day: without it, it is expired."""
    if record.ledger.policy.max_age_days is None:
        return []
    return [f'    {key}: "YYYY-MM-DD"   # the day you review it; max_age_days counts from it']
