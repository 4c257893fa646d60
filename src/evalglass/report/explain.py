"""Plain-language explanations of gates and metrics, built from a run's artifacts (nothing is recomputed).

The one thing explain adds is the ledger entry a host would write to activate or re-approve a gate, filled in with
the fingerprints the run recorded. It only prints that entry: the tool never writes the ledger.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from evalglass.core.authority import (
    BaselineApproval,
    BlockReason,
    calibration_line,
    calibration_path_text,
    stands_on_gold,
    unbound_inputs_text,
)
from evalglass.core.changes import definition_changes
from evalglass.core.compare import GateComparison, MetricComparison
from evalglass.core.evaluators import evaluator_labels
from evalglass.core.fingerprint import short
from evalglass.core.gates import GateResult, Outcome, interval_label
from evalglass.core.gatespec import GateRule, SubjectKind
from evalglass.core.goldfields import TOOL_FORMATS, gold_excluded_fields
from evalglass.core.runrecord import BaselineRecord, RunRecord
from evalglass.core.scorecard import CheckSummary, MetricSummary, Scorecard
from evalglass.core.variantnames import declared_metric
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


@dataclass(frozen=True)
class LedgerEntry:
    """One entry to write under one section of the ledger: its lines as they stand in the file (the name indented
    by two spaces, its keys by four)."""

    section: str
    name: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class LedgerLayout:
    """Where things are in the host's ledger file, so each entry can be placed exactly (``engine.spec.ledger``)."""

    path: str
    #: Line of each section's key (``gates:``).
    sections: Mapping[str, int] = field(default_factory=dict)
    #: Sections written as an empty flow mapping (``gates: {}``): entries cannot go under them as they are.
    flow_empty: frozenset[str] = frozenset()
    #: Line of each entry already there, by (section, name).
    entries: Mapping[tuple[str, str], int] = field(default_factory=dict)


#: How the examples that pulled a gate down are chosen, unless they are ordered against a baseline.
DATASET_ORDER = "first of the run, in dataset order"


@dataclass
class Explanation:
    subject: str
    kind: str
    summary: str
    details: list[str] = field(default_factory=list)
    entries: tuple[LedgerEntry, ...] = ()
    examples: list[str] = field(default_factory=list)
    layout: LedgerLayout | None = None
    #: Entries (section, name) an earlier explanation of the same output prints already: the text says so instead
    #: of printing them again, so pasting every block of one `explain` never writes an entry twice.
    shown_above: Mapping[tuple[str, str], str] = field(default_factory=dict)
    examples_order: str = DATASET_ORDER

    @property
    def ledger_entry(self) -> str | None:
        """Every entry as one YAML document (section keys included): what a script merges into a ledger."""
        if not self.entries:
            return None
        lines: list[str] = []
        for section in dict.fromkeys(entry.section for entry in self.entries):
            lines.append(f"{section}:")
            lines += [line for entry in self.entries if entry.section == section for line in entry.lines]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "summary": self.summary,
            "details": self.details,
            "ledger_entry": self.ledger_entry,
            "ledger_additions": [
                {"section": entry.section, "name": entry.name, "where": place, "yaml": "\n".join(block)}
                for entry, place, block in placed(self.entries, self.layout)
            ],
            "examples": self.examples,
            "examples_order": self.examples_order,
        }

    def as_text(self) -> str:
        parts = [self.summary, *[f"  - {line}" for line in self.details]]
        if self.examples:
            parts += ["", f"  Examples that pulled it down ({self.examples_order}):"]
            parts += [f"    {line}" for line in self.examples]
        if self.entries:
            # Printed at the file's own indentation, so a block pastes as it is; each says where it goes, so no
            # section is ever written twice (a second `gates:` key is a duplicate the ledger refuses).
            parts += ["", "  Ledger entry to write (EvalGlass never writes the ledger), block by block:"]
            for entry, place, block in placed(self.entries, self.layout):
                earlier = self.shown_above.get((entry.section, entry.name))
                if earlier is not None:
                    parts += [
                        "",
                        f"  The entry '{entry.name}' under `{entry.section}:` is the one printed for {earlier}.",
                    ]
                    continue
                parts += ["", f"  {place}", "", *block]
        return "\n".join(parts)


def placed(entries: Sequence[LedgerEntry], layout: LedgerLayout | None) -> list[tuple[LedgerEntry, str, list[str]]]:
    """Each entry with where it goes in the ledger and the block to paste there: under its section when the file
    has one (replacing an entry of the same name), or with the section key when it has none or writes it ``{}``."""
    out: list[tuple[LedgerEntry, str, list[str]]] = []
    path = layout.path if layout is not None else "the ledger"
    for entry in entries:
        section = entry.section
        line = layout.entries.get((section, entry.name)) if layout is not None else None
        at = layout.sections.get(section) if layout is not None else None
        if line is not None:
            place = f"In {path}, replace the entry '{entry.name}' under `{section}:` (line {line}) with:"
            block = list(entry.lines)
        elif layout is not None and section in layout.flow_empty:
            place = f"In {path}, replace the line `{section}: {{}}` (line {at}) with:"
            block = [f"{section}:", *entry.lines]
        elif at is not None:
            place = f"In {path}, add under `{section}:` (line {at}):"
            block = list(entry.lines)
        elif layout is not None:
            place = f"In {path}, which has no `{section}:` section yet, add at the end:"
            block = [f"{section}:", *entry.lines]
        else:
            place = (
                f"Under `{section}:` in the ledger (replacing an entry '{entry.name}' if there is one; a section "
                f"written `{section}: {{}}` becomes `{section}:` first), add:"
            )
            block = list(entry.lines)
        out.append((entry, place, block))
    return out


def explain(
    card: Scorecard,
    record: RunRecord,
    name: str | None,
    examples: Mapping[str, Sequence[Row]] | None = None,
    definitions: Mapping[str, dict[str, Any]] | None = None,
    baselines: Mapping[str, BaselineRecord] | None = None,
    layout: LedgerLayout | None = None,
) -> list[Explanation]:
    """Explain one gate or metric by name, or every gate (and every metric without a gate) when name is None.

    ``examples`` holds, per gate, the first examples of its metric that did not pass (read from the run's scores);
    ``definitions``, per gate, the canonical definition its fingerprint hashes (from the run's config);
    ``baselines``, per baseline name, a run to propose as the baseline (``explain --baseline RUN``) when the run
    itself found none; ``layout``, where things are in the host's ledger file, so entries say where they go.
    """
    gates = {gate.name: gate for gate in card.decision.gates}
    pulled = examples or {}
    defined = definitions or {}
    proposed = baselines or {}

    def gate_text(gate: GateResult) -> Explanation:
        explained = explain_gate(gate, card, record, pulled.get(gate.name, ()), defined.get(gate.name), proposed)
        return dataclasses.replace(explained, layout=layout)

    if name is not None:
        if name in gates:
            return [gate_text(gates[name])]
        metric = card.metric(name)
        if metric is not None:
            return [explain_metric(metric, card)]
        known = sorted([*gates, *(metric.name for metric in card.metrics)])
        raise SetupError(
            f"no gate or metric named '{name}' in this run (known: {', '.join(known)})",
            fix="pass a gate or metric name from this run",
        )
    out = _once(gate_text(gate) for gate in card.decision.gates)
    gated = {gate.subject for gate in card.decision.gates if gate.subject_kind is SubjectKind.METRIC}
    out += [explain_metric(metric, card) for metric in card.metrics if metric.name not in gated]
    return out


def _once(explanations: Iterable[Explanation]) -> list[Explanation]:
    """The explanations of several gates, each entry printed by the first that proposes it (two gates on one
    dataset both need its gold validated: one `datasets:` entry, not two)."""
    out: list[Explanation] = []
    first: dict[tuple[str, str], str] = {}
    for explained in explanations:
        keys = [(entry.section, entry.name) for entry in explained.entries]
        out.append(dataclasses.replace(explained, shown_above={key: first[key] for key in keys if key in first}))
        for key in keys:
            first.setdefault(key, f"{explained.kind} '{explained.subject}'")
    return out


def explain_gate(
    gate: GateResult,
    card: Scorecard,
    record: RunRecord,
    examples: Sequence[Row] = (),
    definition: dict[str, Any] | None = None,
    proposed: Mapping[str, BaselineRecord] | None = None,
) -> Explanation:
    metric = card.metric(gate.subject) if gate.subject_kind is SubjectKind.METRIC else None
    needs_gold = metric is not None and stands_on_gold(
        check=False, uses_reference=metric.uses_reference, comparative=gate.comparison is not None
    )
    details: list[str] = []
    entries: tuple[LedgerEntry, ...] = ()
    if gate.outcome is Outcome.INFORMATIONAL:
        summary = (
            f"Gate '{gate.name}' is informational: the ledger ({record.ledger_path}) does not activate it, so its "
            f"number is evidence only and can neither pass nor fail CI."
        )
        details.append("To make it gate, the host adds the entry below to the ledger after reviewing the definition.")
        entries = ledger_entries(gate, card, record, needs_gold, definition, proposed)
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
            *BASELINE_APPROVAL_REASONS,
        }:
            entries = ledger_entries(gate, card, record, needs_gold, definition, proposed)
        elif BlockReason.CALIBRATION_UNAPPROVED in codes:
            # The gate's own approval holds: only the judge's entry, naming the record found, is to write.
            entries = tuple(_judge_entries(gate, record))
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
        assert metric is not None
        why = (
            "the metric compares with reference fields"
            if metric.uses_reference
            else "which examples the gate measures is approved with it"
        )
        details.append(
            f"Gold: {why}, so the gate needs dataset '{card.dataset.name}' validated as gold; its gold fingerprint "
            f"{card.dataset.gold} {gold_covers(record)}."
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
        entries=entries,
        examples=shown,
        examples_order=order if order is not None else DATASET_ORDER,
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
    elif gates:
        details.append("A gate on it decides on the dataset's examples as validated gold (their ids and inputs).")
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
    """What the gold fingerprint of this run covers, in one line (the fields left out: ``core.goldfields``)."""
    task = record.config.get("task")
    variants = record.config.get("variants")
    dataset = record.config.get("dataset")
    dataset_format = dataset.get("format") if isinstance(dataset, dict) else None
    fields = gold_excluded_fields(
        task if isinstance(task, dict) else None, variants if isinstance(variants, dict) else None, dataset_format
    )
    if dataset_format in TOOL_FORMATS:
        return (
            f"covers every sample's id, input, target and metadata as {dataset_format}'s file holds them, not the "
            "tool's outputs and scores, nor what the file says of the tool's run (source, not_captured)"
        )
    if len(fields) == 1:
        return f"covers every example's id and fields except the recorded output field '{fields[0]}'"
    if fields:
        named = ", ".join(f"'{field}'" for field in fields)
        return f"covers every example's id and fields except the variants' recorded output fields {named}"
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


def _definition_block(definition: dict[str, Any]) -> list[str]:
    """The definition as a readable YAML block, indented under ``definition:`` in the gate's entry."""
    text = yaml.safe_dump(definition, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)
    return ["    definition:", *(f"      {line}" for line in text.splitlines())]


#: Blocks a baseline entry in the ledger can lift (the others need a new run, not a new approval).
BASELINE_APPROVAL_REASONS = frozenset(
    {
        BlockReason.BASELINE_MISSING,
        BlockReason.BASELINE_STALE,
        BlockReason.BASELINE_EXPIRED,
        BlockReason.BASELINE_UNTRUSTED,
        BlockReason.BASELINE_WRONG_BRANCH,
    }
)
#: What explain proposes as a source's max_age_days: a month of quiet on the branch before the gate asks for a run.
PROPOSED_MAX_AGE_DAYS = 30


def ledger_entries(
    gate: GateResult,
    card: Scorecard,
    record: RunRecord,
    needs_gold: bool,
    definition: dict[str, Any] | None = None,
    proposed: Mapping[str, BaselineRecord] | None = None,
) -> tuple[LedgerEntry, ...]:
    """The entries a host writes to make ``gate`` decide: its own, and the baseline's and the gold's when they are
    not approved yet (or their approval is what blocks)."""
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
    entries = [
        LedgerEntry(
            "gates",
            gate.name,
            (
                f"  {gate.name}:",
                "    active: true",
                *([] if gate.subject_kind is SubjectKind.CHECK else [threshold_line]),
                f'    fingerprint: "{gate.fingerprint}"',
                *_judge_endpoint_lines(record, gate),
                *(_definition_block(definition) if definition is not None else []),
                '    approved_by: "<your name>"',
                *_dated(record, "approved_on"),
            ),
        )
    ]
    entries.extend(_judge_entries(gate, record))
    detail = gate.comparison
    if detail is not None:
        approved = record.ledger.baselines.get(detail.baseline)
        blocking = any(reason.code in BASELINE_APPROVAL_REASONS for reason in gate.reasons)
        if approved is None or blocking:
            found = record.baselines.get(detail.baseline)
            run_text = approved.run if approved is not None and approved.run is not None else None
            if found is not None and found.fingerprint is not None:
                run_text = run_text or found.run_id  # a run id is a reference the history resolves
            elif detail.baseline in (proposed or {}):
                found = (proposed or {})[detail.baseline]
                run_text = found.location  # as explain --baseline was given it, relative to the ledger
            lines = _baseline_lines(detail.baseline, found, approved, run_text)
            entries.append(LedgerEntry("baselines", detail.baseline, lines))
    validation = record.ledger.datasets.get(card.dataset.name)
    gold_ok = (
        validation is not None
        and validation.validated_gold
        and validation.fingerprint == card.dataset.gold
        and all(reason.code is not BlockReason.GOLD_EXPIRED for reason in gate.reasons)
    )
    if needs_gold and not gold_ok:
        entries.append(
            LedgerEntry(
                "datasets",
                card.dataset.name,
                (
                    f"  {card.dataset.name}:",
                    "    validated_gold: true",
                    f"    # {gold_covers(record)}",
                    f'    fingerprint: "{card.dataset.gold}"',
                    '    validated_by: "<your name>"',
                    *_dated(record, "validated_on"),
                ),
            )
        )
    return tuple(entries)


def _judge_entries(gate: GateResult, record: RunRecord) -> list[LedgerEntry]:
    """The judge's ``judges:`` entry approving the calibration record the run found, when that record is what
    blocks the gate (calibration_unapproved), for the host to review the record before pasting."""
    if not any(reason.code is BlockReason.CALIBRATION_UNAPPROVED for reason in gate.reasons):
        return []
    name = declared_metric(gate.subject)
    calibration = record.calibrations.get(name)
    requirement = record.ledger.judges.get(name)
    if calibration is None or requirement is None:
        return []
    return [
        LedgerEntry(
            "judges",
            name,
            (
                f"  {name}:",
                f"    min_agreement: {requirement.min_agreement!r}",
                f"    {calibration_line(calibration)}   # {calibration_path_text(name)}: review it before approving",
                *([f"    expires_on: {_yaml_text(requirement.expires_on)}"] if requirement.expires_on else []),
                '    approved_by: "<your name>"',
            ),
        )
    ]


def _judge_endpoint_lines(record: RunRecord, gate: GateResult) -> list[str]:
    """A gate on a judge approves where the judge is served too: the server the run's judge was served from (a
    jury: per member), for the host to review before pasting. None for a gate whose metric calls no judge."""
    if gate.subject_kind is SubjectKind.CHECK:
        return []
    served = record.judge_endpoints.get(declared_metric(gate.subject))
    if served is None:
        return []
    comment = "   # where the judge is served: approve only a server you trust"
    if isinstance(served, str):
        return [f"    judge_endpoint: {_yaml_text(served)}{comment}"]
    return [
        f"    judge_endpoint:{comment}",
        *(f"      {_yaml_key(name)}: {_yaml_text(text)}" for name, text in served.items()),
    ]


def _yaml_key(name: str) -> str:
    """A jury member's name as a mapping key: bare when it is a plain word, quoted otherwise."""
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name) else _yaml_text(name)


def _baseline_lines(
    name: str, found: BaselineRecord | None, approved: BaselineApproval | None, run_text: str | None
) -> tuple[str, ...]:
    """A baseline's entry in both forms: following the newest signed run of a branch (no ledger edit per merge),
    active when the run found is signed; pinning one run by fingerprint, active otherwise. The other is a comment."""
    max_age = approved.max_age_days if approved is not None and approved.max_age_days else PROPOSED_MAX_AGE_DAYS
    signer = found.signed_by if found is not None and found.branch is not None else None
    branch = found.branch if signer is not None and found is not None else approved_branch(approved)
    follow = [
        f"branch: {_yaml_text(branch or 'main')}",
        f'signed_by: "{signer}"'
        if signer is not None
        else "signed_by: null   # the fingerprint of your CI's public key: `evalglass verify RUN --key KEY.pub`",
        f"max_age_days: {max_age}   # the oldest baseline run accepted, in days",
    ]
    fingerprint = found.fingerprint if found is not None else None
    pin = [
        f"run: {_yaml_text(run_text or '<a run folder, relative to the ledger, or a reference: main@latest>')}",
        f'fingerprint: "{fingerprint}"'
        if fingerprint is not None
        else f"fingerprint: null   # `evalglass explain GATE --baseline RUN` fills it in (e.g. {name}@latest)",
    ]
    first, second = (follow, pin) if signer is not None else (pin, follow)
    other = (
        "# or pin this one run (and edit the ledger whenever it should move):"
        if signer is not None
        else "# or follow the newest run of a branch signed by your CI's key (no ledger edit per merge):"
    )
    return (
        f"  {name}:",
        *(f"    {line}" for line in first),
        '    approved_by: "<your name>"',
        f"    {other}",
        *(f"    # {line}" for line in second),
    )


def approved_branch(approved: BaselineApproval | None) -> str | None:
    return approved.branch if approved is not None else None


def _yaml_text(text: str) -> str:
    """A string as a YAML scalar that reads back as the same string."""
    return json.dumps(text, ensure_ascii=False)


def _dated(record: RunRecord, key: str) -> list[str]:
    """Under the ledger policy's ``max_age_days`` an entry's age counts from this day: without it, it is expired."""
    if record.ledger.policy.max_age_days is None:
        return []
    return [f'    {key}: "YYYY-MM-DD"   # the day you review it; max_age_days counts from it']
