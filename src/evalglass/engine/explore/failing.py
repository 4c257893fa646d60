"""The examples behind a run's numbers, read back from its artifacts: per example and metric, a state, the value,
the first diagnostic and the output (whole: renderers shorten it). Nothing is recomputed; ``scores.jsonl`` is
streamed a block at a time and reading stops as soon as ``limit`` rows were found.

States. A score that is not ``scored`` keeps its status (``error``, ``blocked``, ``non_evaluable``, ``skipped``);
``scored`` + ``invalid`` is ``invalid``. A valid value is ``pass`` or ``fail`` by one rule, the same everywhere:

* when a gate on the metric carries a threshold (the approved one, else its ``proposed_threshold``), ``fail`` means
  the value is on the wrong side of it (below it when higher is better), as the gate itself would judge a run whose
  every example scored that value;
* otherwise, for a metric whose every valid value is 0 or 1 (the pass/fail builtins), ``fail`` means 0;
* otherwise (a continuous metric with no threshold to judge by) the value is ``scored``: neither.

Outputs come from the run folder only: the outputs a recorded run kept (``engine.runs.keptoutputs``, checked against
their hash) or a live lane's ``outputs.jsonl`` (in a run with variants, every variant's, checked against
``digests.json`` by ``engine.explore.variantshown``); never from the dataset or outputs file as it is now. A run that
kept neither (made before runs kept their outputs) shows none.

A comparative gate's examples are listed against its baseline: the regressed pairs first (passing in the baseline,
failing now: the flips the scorecard recorded), then new failures (the baseline passed the example, or did not have
it), then the rest (failing, or not measured, in the baseline too); each row says which. The baseline is read from
the copy in the run folder, and only when the regressed pairs do not fill the list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.fieldpath import ABSENT
from evalglass.core.gates import GateResult
from evalglass.core.gatespec import reaches
from evalglass.core.outputparse import DECLARED_JSON, read_stored_output, shown_output
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.core.uniform import all_of_type
from evalglass.engine.runs.artifacts import open_artifact, run_scores_blocks, variant_names_of
from evalglass.engine.runs.scoresblock import ScoresBlock
from evalglass.errors import SetupError


class ExampleState(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SCORED = "scored"
    INVALID = "invalid"
    ERROR = "error"
    BLOCKED = "blocked"
    NON_EVALUABLE = "non_evaluable"
    SKIPPED = "skipped"


_VALID_STATES = frozenset({"pass", "scored"})
#: What "failing" lists by default: everything that is not a pass (or a value no rule can judge).
NOT_PASSING = frozenset(ExampleState) - {ExampleState.PASS, ExampleState.SCORED}


class AgainstBaseline(StrEnum):
    """Where a comparative gate's example stands against its baseline, in the order the reader needs them."""

    REGRESSED = "regressed: passed in the baseline"
    NEW_FAILURE = "new failure: passed in the baseline"
    NEW_EXAMPLE = "new failure: not in the baseline"
    ALSO_FAILED = "failed in the baseline too"
    NOT_MEASURED = "not measured validly in the baseline either"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {
    AgainstBaseline.REGRESSED: 0,
    AgainstBaseline.NEW_FAILURE: 1,
    AgainstBaseline.NEW_EXAMPLE: 1,
    AgainstBaseline.ALSO_FAILED: 2,
    AgainstBaseline.NOT_MEASURED: 2,
}


@dataclass(frozen=True)
class ExampleRow:
    id: str
    line: int
    metric: str
    state: ExampleState
    value: float | None
    diagnostic: str | None
    sample: int | None = None
    #: The output, the record's input and its reference as text, whole (a string as it is, another value as its
    #: JSON); a renderer shortens them, never this row.
    output: str | None = None
    #: A comparative gate's example: where it stands against the baseline (None for other gates).
    baseline: AgainstBaseline | None = None
    input: str | None = None
    reference: str | None = None
    #: In a run with variants: each variant's output for this example (this sample), whole, by variant name (None:
    #: a variant of recorded outputs, which the run folder does not hold).
    outputs: Mapping[str, str | None] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "line": self.line,
            "metric": self.metric,
            "state": self.state.value,
            "value": self.value,
            "diagnostic": self.diagnostic,
            "sample": self.sample,
            "output": self.output,
            "input": self.input,
            "reference": self.reference,
            **({"baseline": self.baseline.value} if self.baseline is not None else {}),
            **({"outputs": dict(self.outputs)} if self.outputs is not None else {}),
        }


@dataclass(frozen=True)
class FailRule:
    """How a valid value of one metric is judged (see the module docstring)."""

    gate: GateResult | None
    binary: bool

    def state(self, value: float) -> ExampleState:
        gate = self.gate
        if gate is not None:
            threshold = gate.threshold if gate.threshold is not None else gate.proposed_threshold
            if threshold is not None:
                return ExampleState.PASS if reaches(value, threshold, gate.direction) else ExampleState.FAIL
        if self.binary:
            return ExampleState.FAIL if value == 0 else ExampleState.PASS
        return ExampleState.SCORED

    def all_pass(self, entries: list[Any]) -> bool:
        """True when every entry is a bare valid value this rule passes (checked with min/max, no loop in Python)."""
        if not all_of_type(entries, float):
            return False
        gate = self.gate
        threshold = None if gate is None else gate.threshold if gate.threshold is not None else gate.proposed_threshold
        if gate is not None and threshold is not None:
            worst = min(entries) if gate.direction.value == "higher_is_better" else max(entries)
            return reaches(worst, threshold, gate.direction)
        return self.binary and min(entries) != 0

    def describe(self) -> str:
        gate = self.gate
        if gate is not None:
            threshold = gate.threshold if gate.threshold is not None else gate.proposed_threshold
            if threshold is not None:
                side = "below" if gate.direction.value == "higher_is_better" else "above"
                kind = "approved" if gate.threshold is not None else "proposed"
                return f"fail = a value {side} gate '{gate.name}''s {kind} threshold {threshold:g}"
        return "fail = a value of 0 (a pass/fail metric)" if self.binary else "no threshold: values are not judged"


def fail_rules(card: Scorecard) -> dict[str, FailRule]:
    """Per metric, how one example's value is judged: by the first gate on it with a threshold (approved, else
    proposed), else by whether it is a pass/fail type. A comparative gate's threshold is a limit on the difference
    between two runs (``-margin``), not on one example's value, so it never judges an example. One pass over the
    gates (a 2,000-gate suite asked every gate for every metric: 4 million questions, once per gate in report.md)."""
    judged_by: dict[str, GateResult] = {}
    for gate in card.decision.gates:
        if gate.comparison is None and (gate.threshold is not None or gate.proposed_threshold is not None):
            judged_by.setdefault(gate.subject, gate)
    return {
        metric.name: FailRule(gate=judged_by.get(metric.name), binary=_binary(metric.type)) for metric in card.metrics
    }


def _binary(metric_type: str) -> bool:
    """Whether the recorded metric type scores 1 for a pass and 0 for a fail (what the type itself declares; a
    type this version does not know is not assumed to)."""
    from evalglass.metrics.registry import TYPE_HOMES, spec_class

    return metric_type in TYPE_HOMES and spec_class(metric_type).binary


def _entry_rows(entry: Any, rule: FailRule) -> Iterator[tuple[ExampleState, float | None, str | None]]:
    if type(entry) is float or type(entry) is int:
        yield rule.state(float(entry)), float(entry), None
        return
    if not isinstance(entry, dict):
        yield ExampleState.ERROR, None, "unreadable score entry"
        return
    diagnostics = entry.get("diagnostics") or []
    first = diagnostics[0] if diagnostics and isinstance(diagnostics[0], dict) else None
    diagnostic = f"{first.get('code')}: {first.get('message')}" if first is not None else None
    status = entry.get("status", "scored")
    value = entry.get("value")
    if status == "scored":
        if entry.get("validity") == "invalid":
            yield ExampleState.INVALID, value, diagnostic
        else:
            measured = float(value) if isinstance(value, int | float) else float("nan")
            yield rule.state(measured), measured, diagnostic
        return
    try:
        yield ExampleState(status), None, diagnostic
    except ValueError:
        yield ExampleState.ERROR, None, diagnostic or f"unknown status {status!r}"


def example_rows(
    folder: Path,
    card: Scorecard,
    *,
    metrics: Iterable[str] | None = None,
    states: frozenset[ExampleState] = NOT_PASSING,
    limit: int | None = 20,
    only: frozenset[str] | None = None,
    rules: dict[str, FailRule] | None = None,
) -> Iterator[ExampleRow]:
    """Rows in dataset order, for the chosen metrics (default: all) and states, at most ``limit``; with ``only``,
    just the examples with those ids. ``rules``: the card's :func:`fail_rules`, when the caller asks for several
    metrics one at a time."""
    rules = fail_rules(card) if rules is None else rules
    wanted = list(metrics) if metrics is not None else list(rules)
    for name in wanted:
        if name not in rules:
            known = ", ".join(rules)
            raise SetupError(f"no metric named '{name}' in this run (known: {known})", where=str(folder))
    yield from _rows_of(folder, rules, wanted, states, limit, only)


def _rows_of(
    folder: Path,
    rules: dict[str, FailRule],
    wanted: list[str],
    states: frozenset[ExampleState],
    limit: int | None,
    only: frozenset[str] | None = None,
) -> Iterator[ExampleRow]:
    found = 0
    for block, _, _ in run_scores_blocks(folder):
        for row in _block_rows(block, rules, wanted, states, only):
            yield row
            found += 1
            if limit is not None and found >= limit:
                return


def _block_rows(
    block: ScoresBlock,
    rules: dict[str, FailRule],
    wanted: list[str],
    states: frozenset[ExampleState],
    only: frozenset[str] | None = None,
) -> Iterator[ExampleRow]:
    """One block's rows for the chosen metrics and states (with ``only``, of those ids), in dataset order."""
    ids, lines, scores = block.ids, block.lines, block.scores
    if only is not None and only.isdisjoint(ids):
        return
    columns = {name: scores.get(name) or [None] * len(ids) for name in wanted}
    if not (states & _VALID_STATES) and all(rules[name].all_pass(columns[name]) for name in wanted):
        return  # every example of the block passes every chosen metric: nothing to list
    candidates: set[int] = set()
    for name in wanted:
        candidates.update(_candidates(columns[name], rules[name], states))
    if only is not None:
        candidates = {index for index in candidates if ids[index] in only}
    for index in sorted(candidates):
        example_id = ids[index]
        for name in wanted:
            entry = columns[name][index]
            samples = entry if isinstance(entry, list) else [entry]
            for sample, value in enumerate(samples):
                for state, measured, diagnostic in _entry_rows(value, rules[name]):
                    if state in states:
                        yield ExampleRow(
                            id=example_id,
                            line=lines[index],
                            metric=name,
                            state=state,
                            value=measured,
                            diagnostic=diagnostic,
                            sample=sample if isinstance(entry, list) else None,
                        )


def _candidates(entries: list[Any], rule: FailRule, states: frozenset[ExampleState]) -> Iterable[int]:
    """The rows of a block's column that may be in ``states``: all of them when valid values that pass are wanted;
    otherwise only full score entries (and, when ``fail`` is wanted, bare values this rule fails)."""
    if states & _VALID_STATES:
        return range(len(entries))
    if ExampleState.FAIL not in states:
        return [index for index, kind in enumerate(map(type, entries)) if kind is not float]
    fail = ExampleState.FAIL
    state = rule.state
    return [index for index, entry in enumerate(entries) if type(entry) is not float or state(entry) is fail]


def as_text(value: Any) -> str:
    """A value whole, as text (:func:`~evalglass.core.outputparse.shown_output`, compact)."""
    return shown_output(value)


def with_outputs(folder: Path, record: RunRecord, rows: list[ExampleRow]) -> tuple[list[ExampleRow], str | None]:
    """The rows with their output each (whole), and where the outputs came from (None when the run kept none)."""
    if not rows:
        return rows, None
    wanted = {row.id for row in rows}
    names = variant_names_of(folder)
    if names:
        return _with_variant_outputs(folder, names, rows, wanted)
    if record.kept_outputs is not None:
        from evalglass.engine.runs.keptoutputs import kept_outputs

        outputs = kept_outputs(folder, record, wanted)
        source: str | None = "what the run scored (kept in its folder, checked against its hash)"
        per_sample = False  # a kept output is a list of samples only in a run with samples
    else:
        outputs, source = _live_outputs(folder, wanted)
        per_sample = True  # outputs.jsonl lists every example's samples
    if source is None:
        return rows, None
    filled = []
    for row in rows:
        value = outputs.get(row.id, ABSENT)
        if isinstance(value, list) and row.sample is not None and row.sample < len(value):
            value = value[row.sample]
        elif per_sample and isinstance(value, list) and row.sample is None and len(value) == 1:
            value = value[0]
        text = "(no output)" if value is ABSENT else as_text(value)
        filled.append(ExampleRow(**{**row.__dict__, "output": text}))
    return filled, source


def _with_variant_outputs(
    folder: Path, names: tuple[str, ...], rows: list[ExampleRow], wanted: set[str]
) -> tuple[list[ExampleRow], str | None]:
    """Each row with every variant's output for its example (its sample's, in a run with samples; None for a variant
    of recorded outputs, which the run folder does not hold), and as its own ``output`` that of the variant its
    metric names (``metric@variant``; none for a difference between two)."""
    from evalglass.core.variants import split_variant_metric
    from evalglass.engine.explore.variantshown import variant_samples, variants_with_outputs

    kept = variants_with_outputs(folder, names)
    if not kept:
        return rows, None
    samples = variant_samples(folder, kept, wanted)
    filled = []
    for row in rows:
        per_variant = samples.get(row.id, {})
        outputs = {name: _sample_text(per_variant.get(name), row.sample) if name in kept else None for name in names}
        split = split_variant_metric(row.metric)
        own = outputs.get(split[1]) if split is not None else None
        filled.append(replace(row, outputs=outputs, output=own))
    return filled, "each variant's outputs.jsonl in the run folder (checked against digests.json)"


def _sample_text(samples: list[dict[str, Any]] | None, sample: int | None) -> str:
    """One variant's output for a row, whole: the row's sample, the one sample, or every sample as a JSON list."""
    from evalglass.engine.explore.variantshown import NO_OUTPUT

    if not samples:
        return NO_OUTPUT
    chosen = samples[sample] if sample is not None and sample < len(samples) else None
    if chosen is None and len(samples) == 1:
        chosen = samples[0]
    if chosen is not None:
        return as_text(live_answer(chosen)) if "output" in chosen else NO_OUTPUT
    return as_text([live_answer(item) if "output" in item else None for item in samples])


def live_answer(sample: Mapping[str, Any]) -> Any:
    """A live lane's stored answer (a sample of ``outputs.jsonl`` that holds ``output``): one that is not JSON read
    back as an ``UnparsedOutput``, so that :func:`as_text` shows it marked as such, not as its bare text."""
    return read_stored_output(sample, "output", DECLARED_JSON)


def _live_outputs(folder: Path, wanted: set[str]) -> tuple[dict[str, Any], str | None]:
    path = folder / "outputs.jsonl"
    if not path.exists():
        return {}, None
    found: dict[str, Any] = {}
    with open_artifact(path, "outputs file") as handle:
        for raw in handle:
            row = orjson.loads(raw)
            if row.get("id") in wanted:
                samples = row.get("samples")
                if isinstance(samples, list):
                    found[row["id"]] = [
                        (live_answer(sample) if "output" in sample else ABSENT) if isinstance(sample, dict) else sample
                        for sample in samples
                    ]
                if len(found) == len(wanted):
                    break
    return found, "outputs.jsonl of the run"


def gate_examples(folder: Path, card: Scorecard, gates: Iterable[str], limit: int) -> dict[str, list[ExampleRow]]:
    """Per metric gate, its metric's first ``limit`` examples that did not pass; for a comparative gate, the
    regressed pairs first, then new failures, then the rest (see the module docstring). The other gates' rows come
    from one read of the scores file (each block decoded once), no further than the last gate still short of
    ``limit`` needs."""
    rules = fail_rules(card)
    named = set(gates)
    found: dict[str, list[ExampleRow]] = {}
    chosen: dict[str, str] = {}
    for gate in card.decision.gates:
        if gate.name in named and gate.subject_kind.value == "metric" and gate.subject in rules:
            if gate.comparison is not None:
                found[gate.name] = comparative_examples(folder, card, gate, limit, rules)
            else:
                chosen[gate.name] = gate.subject
                found[gate.name] = []
    if not chosen:
        return found
    for block, _, _ in run_scores_blocks(folder):
        short = [name for name in chosen if len(found[name]) < limit]
        if not short:
            break
        for name in short:
            rows = found[name]
            for row in _block_rows(block, rules, [chosen[name]], NOT_PASSING):
                rows.append(row)
                if len(rows) >= limit:
                    break
    return found


def comparative_examples(
    folder: Path, card: Scorecard, gate: GateResult, limit: int, rules: dict[str, FailRule] | None = None
) -> list[ExampleRow]:
    """A comparative gate's first ``limit`` example rows: regressed pairs, then new failures, then the rest."""
    rules = fail_rules(card) if rules is None else rules
    detail = gate.comparison
    assert detail is not None
    flips = detail.metric.flips if detail.metric is not None else None
    regressed = flips.regressed if flips is not None else ()
    rows = [
        replace(row, baseline=AgainstBaseline.REGRESSED)
        for row in example_rows(
            folder, card, metrics=[gate.subject], states=frozenset(ExampleState), limit=limit,
            only=frozenset(regressed[:limit]), rules=rules,
        )
    ]  # fmt: skip
    if len(rows) >= limit:
        return rows
    standing = _baseline_standing(folder, gate)
    skip = frozenset(regressed)
    others: list[ExampleRow] = []
    for row in example_rows(folder, card, metrics=[gate.subject], limit=None, rules=rules):
        if row.id in skip:
            continue
        others.append(replace(row, baseline=standing(row.id)))
        if sum(1 for item in others if item.baseline is not None and item.baseline.rank == 1) >= limit - len(rows):
            break
    others.sort(key=lambda row: row.baseline.rank if row.baseline is not None else 3)  # stable: dataset order
    return rows + others[: limit - len(rows)]


def _baseline_standing(folder: Path, gate: GateResult) -> Callable[[str], AgainstBaseline | None]:
    """Where one example stood in the baseline copy of this run, by id; None when the copy cannot be read."""
    import numpy as np

    from evalglass.core.columns import SCORED_VALID
    from evalglass.core.stats import Ties
    from evalglass.core.variantnames import baseline_candidates
    from evalglass.engine.decide.baselines import BASELINES_DIR
    from evalglass.engine.runs.compare import load_for_comparison

    assert gate.comparison is not None
    try:
        run = load_for_comparison(
            folder / BASELINES_DIR / gate.comparison.baseline, metrics=list(baseline_candidates(gate.subject))
        )
        column = run.baseline_name(gate.subject)
        if column is None:
            return lambda _id: None
        # A majority tie broken as the gate's run broke it in this copy (the unfavourable side of its direction).
        side = run.side(column, Ties.against(gate.direction))
    except (SetupError, KeyError):
        return lambda _id: None
    ids = run.ids
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    passes = _passing(side.values, side.scale, gate.direction.value == "higher_is_better")

    def standing(example_id: str) -> AgainstBaseline | None:
        at = int(np.searchsorted(ordered, example_id))
        if at >= ordered.size or ordered[at] != example_id:
            return AgainstBaseline.NEW_EXAMPLE
        index = int(order[at])
        if side.states[index] != SCORED_VALID:
            return AgainstBaseline.NOT_MEASURED
        verdict = passes(float(side.values[index]))
        if verdict is None:
            return None
        return AgainstBaseline.NEW_FAILURE if verdict else AgainstBaseline.ALSO_FAILED

    return standing


def _passing(values: Any, scale: Any, higher: bool) -> Callable[[float], bool | None]:
    """Whether one baseline value passes, by the rule the comparison's flips use (``core.compare``): 1 (or 0 when
    lower is better) for a binary metric, the scale's midpoint for a continuous one; None without such a rule."""
    import numpy as np

    from evalglass.core.stats import is_binary

    if is_binary(values[np.isfinite(values)]):
        target = 1.0 if higher else 0.0
        return lambda value: value == target
    if scale is None:
        return lambda _value: None
    middle = (scale.min + scale.max) / 2.0
    return lambda value: value >= middle if higher else value <= middle
