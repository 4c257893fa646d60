"""Shared formatting for every renderer, so the terminal, Markdown and explain texts say the same thing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evalglass.core.estimate import Estimate
from evalglass.core.gates import GateResult, Outcome
from evalglass.core.gatespec import GateRule, SubjectKind
from evalglass.core.population import DiagnosticCount, Population
from evalglass.core.scorecard import CheckSummary, DatasetSummary, MetricSummary, Scorecard
from evalglass.core.stats import Direction, Interval, Note
from evalglass.core.tables import total
from evalglass.core.usage import TokenUsage, total_usage
from evalglass.report.numbers import number as number  # re-exported: every renderer formats through fmt

if TYPE_CHECKING:  # `evalglass view` renders through this module and needs no numpy
    from evalglass.core.compare import MetricComparison
    from evalglass.core.stats.multiplemodel import PairComparison, VariantComparison
    from evalglass.core.variantsummary import VariantsSummary

OUTCOME_LABEL: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "informational",
    Outcome.PASS: "pass",
    Outcome.FAIL: "fail",
    Outcome.BLOCKED: "blocked",
}
OUTCOME_ICON: dict[Outcome, str] = {
    Outcome.INFORMATIONAL: "ℹ️",
    Outcome.PASS: "✅",
    Outcome.FAIL: "❌",
    Outcome.BLOCKED: "⛔",
}


def estimate_text(estimate: Estimate | None) -> str:
    if estimate is None:
        return "no measured value"
    return number(estimate.point)


def interval_text(estimate: Estimate | None) -> str:
    """``[low, high]`` at its level and method; says why when there is none."""
    if estimate is None:
        return "—"
    interval = estimate.interval
    if interval is None:
        return f"none ({estimate.interval_problem})" if estimate.interval_problem else "—"
    if not interval.defined:
        return f"undefined for n={interval.n} ({interval.method.value})"
    return f"[{number(interval.low)}, {number(interval.high)}] {interval.level:.0%} {interval.method.value}" + (
        notes_text(interval)
    )


def notes_text(interval: Interval) -> str:
    """`` (12 clusters; no spread in the data)``: what a reader must know about an interval; empty when nothing."""
    notes = [NOTE_TEXT[note] for note in interval.notes]
    if interval.clusters is not None:
        notes.insert(0, f"{interval.clusters} clusters")
    return f" ({'; '.join(notes)})" if notes else ""


NOTE_TEXT: Mapping[Note, str] = total(
    Note,
    {
        Note.UNDEFINED: "undefined for so few values",
        Note.FEW_CLUSTERS: "⚠ too few clusters to trust the interval",
        Note.ZERO_SPREAD: "no spread in the data",
        Note.BCA_FALLBACK: "BCa undefined, percentile used",
    },
)


def sensitivity_text(estimate: Estimate | None) -> str:
    """What the value would be with every excluded example at the scale's ends; empty when nothing was excluded."""
    if estimate is None or estimate.sensitivity is None or estimate.sensitivity.excluded == 0:
        return ""
    bounds = estimate.sensitivity
    return f"{number(bounds.low)} … {number(bounds.high)}"


def samples_text(estimate: Estimate | None) -> str:
    if estimate is None or estimate.samples is None or estimate.reducer is None:
        return ""
    reducer = estimate.reducer.value + (f"@{estimate.k}" if estimate.k is not None else "")
    return f"{estimate.samples} samples → {reducer}"


def comparison(direction: Direction) -> str:
    return "≥" if direction is Direction.HIGHER_IS_BETTER else "≤"


def threshold_text(gate: GateResult) -> str:
    if gate.subject_kind is SubjectKind.CHECK:
        return "check must PASS"
    if gate.comparison is not None:
        versus = f"vs baseline '{gate.comparison.baseline}'"
        if gate.threshold is None:
            return f"no approved margin ({versus})"
        return (
            f"{comparison(gate.direction)} {signed(gate.threshold)} (margin {number(gate.comparison.margin)} {versus})"
        )
    if gate.threshold is not None:
        return f"{comparison(gate.direction)} {number(gate.threshold)}"
    if gate.proposed_threshold is not None:
        return f"{comparison(gate.direction)} {number(gate.proposed_threshold)} (proposed, not approved)"
    return "—"


def excluded_text(population: Population) -> str:
    if population.excluded_total == 0:
        return "none"
    parts = [
        f"{item.count} invalid"
        if item.status.value == "scored"
        else f"{item.count} {item.status.value}/{item.validity.value}"
        for item in population.excluded
    ]
    if population.missing:
        parts.append(f"{population.missing} missing")
    return ", ".join(parts)


def diagnostics_text(population: Population, limit: int = 3) -> str:
    if not population.top_diagnostics:
        return ""
    return ", ".join(diagnostic_count_text(item) for item in population.top_diagnostics[:limit])


def diagnostic_count_text(item: DiagnosticCount) -> str:
    """``output_not_json ×28 (in value)``: the code and its :func:`diagnostic_tally`."""
    return f"{item.code} {diagnostic_tally(item)}"


def diagnostic_tally(item: DiagnosticCount) -> str:
    """``×count``, and how many of those scores are in the value (measured with this diagnostic, such as a wrong
    answer scored its metric's worst value) when any are."""
    text = f"×{item.count}"
    if item.included == item.count:
        return f"{text} (in value)"
    if item.included:
        return f"{text} ({item.included} in value)"
    return text


def gate_value_text(gate: GateResult) -> str:
    if gate.subject_kind is SubjectKind.CHECK:
        return {1.0: "PASS", 0.0: "FAIL"}.get(gate.compared, "—") if gate.compared is not None else "—"
    show = signed if gate.comparison is not None else number
    if gate.rule is GateRule.LOWER_BOUND:
        side = "lower" if gate.direction is Direction.HIGHER_IS_BETTER else "upper"
        level = f"{gate.level:.0%} " if gate.level is not None else ""
        interval = ""
        if gate.compared is not None and gate.favourable_bound is not None:
            low, high = sorted((gate.compared, gate.favourable_bound))
            interval = f" of [{show(low)}, {show(high)}]"
        return f"{show(gate.compared)} ({level}{side} bound{interval}; point {show(gate.value)})"
    text = show(gate.compared if gate.compared is not None else gate.value)
    return f"{text} (difference)" if gate.comparison is not None and gate.value is not None else text


def rule_text(gate: GateResult) -> str:
    return "lower_bound (EXPERIMENTAL)" if gate.rule is GateRule.LOWER_BOUND else gate.rule.value


DETAIL_CHARS = 90
CHECK_COLUMNS = ("check", "outcome", "binding", "ran", "exit", "repair", "why")


def check_row(check: CheckSummary) -> tuple[str, ...]:
    """One row of the checks table: the outcome, how it was bound, whether the command ran, and the repair."""
    why = check.reason.value if check.reason is not None else ""
    if check.detail:
        detail = check.detail if len(check.detail) <= DETAIL_CHARS else check.detail[: DETAIL_CHARS - 1] + "…"
        why = f"{why}: {detail}" if why else detail
    return (
        check.name,
        check.outcome.value,
        check.binding.value,
        "yes" if check.command_started else "no",
        "—" if check.exit_code is None else str(check.exit_code),
        check.repair.value,
        why,
    )


def reasons_text(gate: GateResult) -> str:
    return "; ".join(f"{reason.code.value}: {reason.message}" for reason in gate.reasons)


NOT_ACTIVE = "not an active gate"


def gate_sentence(gate: GateResult) -> str:
    """One gate's outcome as one plain sentence, for consumers without tables (JUnit messages, GitHub annotations,
    pytest): a failing gate with its value and approved threshold, a blocked one with every reason."""
    value, threshold = gate_value_text(gate), threshold_text(gate)
    n = f" (n={gate.n})" if gate.n is not None and gate.subject_kind is SubjectKind.METRIC else ""
    if gate.outcome is Outcome.INFORMATIONAL:
        return f"{gate.name}: informational: {NOT_ACTIVE} (evidence only; the ledger does not activate it)"
    if gate.outcome is Outcome.BLOCKED:
        return f"{gate.name}: blocked: {reasons_text(gate)}"
    if gate.subject_kind is SubjectKind.CHECK:
        return f"{gate.name}: {gate.outcome.value}: check '{gate.subject}' ended {value}; the gate needs PASS"
    verb = "meets" if gate.outcome is Outcome.PASS else "does not meet"
    return f"{gate.name}: {gate.outcome.value}: {value}{n} {verb} the approved threshold {threshold}"


def unmatched_outputs_text(dataset: DatasetSummary) -> str | None:
    """The outputs that joined no example, when outputs come from their own file and some did not."""
    outputs = dataset.outputs
    if outputs is None or not outputs.unmatched:
        return None
    named = ", ".join(outputs.unmatched_ids)
    more = ", …" if outputs.unmatched > len(outputs.unmatched_ids) else ""
    return (
        f"{outputs.unmatched} recorded output(s) in {outputs.path} name an id not in the dataset and were not "
        f"scored (e.g. {named}{more})"
    )


def _cost(value: float | None) -> str:
    return "" if value is None else f", cost {value:.6g}"


def usage_text(usage: TokenUsage) -> str:
    """One lane's, judge's or the run's tokens: calls made now, then calls answered from the cache."""
    model = f" ({usage.model})" if usage.model else ""
    text = (
        f"{usage.source}{model}: {usage.calls} call(s), {usage.prompt_tokens:,} prompt + "
        f"{usage.completion_tokens:,} completion tokens{_cost(usage.cost)}"
    )
    if usage.prompt_cache_read_tokens or usage.prompt_cache_write_tokens:
        text += f" (prompt cache: {usage.prompt_cache_read_tokens:,} read, {usage.prompt_cache_write_tokens:,} written)"
    if usage.cached_calls:
        original = "" if usage.cached_original_cost is None else f", {usage.cached_original_cost:.6g}"
        text += (
            f"; {usage.cached_calls} cached call(s): cost 0 now, originally {usage.cached_prompt_tokens:,} + "
            f"{usage.cached_completion_tokens:,} tokens{original}"
        )
    if usage.calls_without_usage:
        text += f"; {usage.calls_without_usage} call(s) reported no usage (not counted)"
    return text


def usage_lines(usages: tuple[TokenUsage, ...]) -> list[str]:
    """Per lane and judge, then the run's total (when there is more than one)."""
    if not usages:
        return []
    lines = [usage_text(usage) for usage in usages]
    if len(usages) > 1:
        lines.append(usage_text(total_usage(usages)))
    return lines


def judges_lines(metrics: Sequence[MetricSummary]) -> list[str]:
    """A jury's agreement and a pairwise judge's position bias, win rates and supported orderings, one line each."""
    lines: list[str] = []
    for metric in metrics:
        agreement = metric.agreement
        if agreement is not None:
            alpha = agreement.alpha
            if alpha.alpha is None:
                shown = f"undefined ({alpha.units} examples with two votes)"
            else:
                ends = (
                    "" if alpha.low is None or alpha.high is None else f" [{number(alpha.low)}, {number(alpha.high)}]"
                )
                shown = f"{number(alpha.alpha)}{ends} {alpha.confidence:.0%} over {alpha.units} examples"
            low = agreement.low_agreement_examples
            named = ", ".join(agreement.low_agreement_ids)
            lines.append(
                f"{metric.name}: Krippendorff's alpha ({alpha.measurement.value}) {shown}; {low} low-agreement "
                f"example{'s' if low != 1 else ''}{': ' + named if named else ''}"
            )
        pairwise = metric.pairwise
        if pairwise is not None:
            bias = "—" if pairwise.position_bias is None else number(pairwise.position_bias)
            parts = [f"{metric.name}: position bias {bias} (inconsistent: {pairwise.inconsistent.value})"]
            for pair in pairwise.pairs:
                rate = "—" if pair.win_rate is None else number(pair.win_rate)
                if pair.win_rate_low is not None and pair.win_rate_high is not None:
                    rate += f" [{number(pair.win_rate_low)}, {number(pair.win_rate_high)}]"
                parts.append(
                    f"{pair.a} vs {pair.b}: {pair.a_wins}-{pair.b_wins}, {pair.ties} ties, {pair.excluded} excluded, "
                    f"win rate {rate}"
                )
            if pairwise.strengths:
                ordered = ", ".join(f"{better} > {worse}" for better, worse in pairwise.separated) or "none"
                parts.append(f"orderings the intervals support: {ordered}")
            lines.append("; ".join(parts))
    return lines


def signed(value: float | None) -> str:
    """A difference with its sign always shown (+0.02, -0.013)."""
    if value is None:
        return "—"
    text = number(abs(value))
    return ("-" if value < 0 else "+") + text


def difference_text(metric: MetricComparison) -> str:
    """``+0.02 [-0.01, +0.05] 95% newcombe_paired``, or why there is no difference."""
    difference = metric.difference
    if difference is None:
        return f"none ({metric.difference_problem})" if metric.difference_problem else "no pair measured in both runs"
    interval = difference.interval
    if not interval.defined:
        return f"{signed(difference.point)} (interval undefined for n={interval.n}, {interval.method.value})"
    text = f"{signed(difference.point)} [{signed(interval.low)}, {signed(interval.high)}] {interval.level:.0%}"
    return text + notes_text(interval)


def test_text(metric: MetricComparison) -> str:
    difference = metric.difference
    if difference is None or difference.p_value is None:
        return "—"
    return f"{difference.test.value} p={difference.p_value:.3g}"


def ids_text(ids: tuple[str, ...], top: int) -> str:
    """The first ``top`` ids and how many more there are."""
    if top <= 0:
        return f"… ({len(ids)})" if ids else ""
    shown = ", ".join(ids[:top])
    return shown + (f", … (+{len(ids) - top} more)" if len(ids) > top else "")


def malformed_text(dataset: DatasetSummary) -> str:
    """How many dataset lines were malformed and where the first few are (``path:line``); empty when none were."""
    count = dataset.malformed_lines
    if not count:
        return ""
    where = ", ".join(f"{dataset.path}:{line}" for line in dataset.first_malformed)
    more = f" (first {len(dataset.first_malformed)} of {count})" if count > len(dataset.first_malformed) else ""
    return f"{count} malformed dataset line(s) were scored as errors" + (f": {where}{more}" if where else "") + "."


#: Metrics the terminal summary lists at most. A terminal table of thousands of rows is unreadable, and laying one
#: out took longer than the whole run (2,000 metrics: ~1.5 s of a 2.4 s run); the artifacts list every metric.
TERMINAL_METRICS = 50


def metrics_to_show(card: Scorecard, limit: int = TERMINAL_METRICS) -> tuple[list[MetricSummary], int]:
    """The metrics a summary lists (every gated metric, then the others in order, up to ``limit`` in all, in the
    scorecard's order) and how many it leaves out."""
    if len(card.metrics) <= limit:
        return list(card.metrics), 0
    gated = {gate.subject for gate in card.decision.gates if gate.subject_kind is SubjectKind.METRIC}
    room = max(limit - len(gated), 0)
    chosen = gated | set([name for name in (metric.name for metric in card.metrics) if name not in gated][:room])
    shown = [metric for metric in card.metrics if metric.name in chosen]
    return shown, len(card.metrics) - len(shown)


def verdict_meaning(card: Scorecard) -> str:
    """What the verdict means, in one sentence. A pass whose gates left out examples they declare tolerable
    (``tolerate:``) says which and how many, instead of claiming that every gate measured its whole population."""
    decision = card.decision
    if decision.verdict is not Outcome.PASS:
        return decision.meaning
    metrics = {metric.name: metric for metric in card.metrics}
    tolerated = []
    for gate in decision.gates:
        if gate.outcome is not Outcome.PASS:
            continue
        compared = gate.comparison.metric if gate.comparison is not None else None
        metric = metrics.get(gate.subject) if gate.subject_kind is SubjectKind.METRIC else None
        population = compared.pairs if compared is not None else metric.population if metric is not None else None
        if population is not None and population.excluded_total:
            unit = "pairs" if compared is not None else "examples"
            tolerated.append(
                f"'{gate.name}' {population.included} of {population.expected} {unit} "
                f"({excluded_text(population)} left out)"
            )
    if not tolerated:
        return decision.meaning
    return (
        "Every active gate met its approved threshold, each on every example it does not declare tolerable to "
        f"leave out; tolerated and left out: {'; '.join(tolerated)}."
    )


def why_text(gate: GateResult) -> str:
    """The "why" cell of a gate: its rule when not the installed one, its blocking reasons, and its notes."""
    why = reasons_text(gate) if gate.reasons else ("not active in the ledger" if not gate.active else "")
    if gate.notes:
        why = "; ".join([*([why] if why else []), *(f"note: {note}" for note in gate.notes)])
    if gate.rule is not GateRule.POINT:
        why = f"rule: {rule_text(gate)}" + (f"; {why}" if why else "")
    return why


def variants_heading(summary: VariantsSummary, comparison: VariantComparison) -> str:
    """What a metric's pair table is: how many pairs, at which family-wise level, adjusted how (stated everywhere
    the pairs are shown)."""
    pairs = len(comparison.pairs)
    return (
        f"{comparison.metric} across {len(summary.names)} variants: every pair's paired difference, "
        f"{number(100 * comparison.level)}% intervals Holm-adjusted for {pairs} pair{'s' if pairs != 1 else ''}"
    )


def pair_row(pair: PairComparison, higher_is_better: bool = True) -> tuple[str, str, str, str, str]:
    """One pair as every renderer shows it: the pair, the difference, the adjusted interval (at its Holm level),
    the pairs measured, and whether the data separate the two."""
    if pair.low is None or pair.high is None:
        interval = "— (fewer than 2 pairs)"
    else:
        interval = f"[{signed(pair.low)}, {signed(pair.high)}] at {number(100 * pair.level)}%"
    first_ahead = (pair.difference or 0) > 0 if higher_is_better else (pair.difference or 0) < 0
    verdict = (
        f"{pair.first if first_ahead else pair.second} better"
        if pair.distinguishable
        else "indistinguishable at this n"
    )
    return (f"{pair.first} − {pair.second}", signed(pair.difference), interval, str(pair.n), verdict)


def groups_text(comparison: VariantComparison) -> str:
    """The groups the data cannot separate, best first; a ranking only where groups are apart."""
    if len(comparison.groups) == 1:
        return f"indistinguishable at this n: {', '.join(comparison.groups[0])} (no ranking is supported)"
    shown = " | ".join("{" + ", ".join(group) + "}" for group in comparison.groups)
    return f"groups the data cannot separate, best first: {shown}"


def variant_mean_text(comparison: VariantComparison) -> str:
    return ", ".join(f"{name} {number(mean)}" for name, mean in zip(comparison.variants, comparison.means, strict=True))
