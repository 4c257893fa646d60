"""Which decision rules a run record can select, in one place, and the one rule about them: a record's own fields
may explain why it was decided as it was, never make green what the current rules do not.

EvalGlass added rules after runs had been recorded without them (judges' standings; a check metric's unbound
check code). Such a run record carries no marker of the rule
(the marker's absence is how every record made before it reads), so whoever re-decides it from its files
(``evalglass verify``, every reader's check in ``engine.decide.consistency``) re-derives it under the rules it was
decided by, or its recorded numbers would not add up. But the marker is a field of the record, and ``tool_version``
cannot tell the eras apart (every record says 0.1.0): deleting a marker from ``runrecord.json`` and rewriting the
scorecard and digests to match is a consistent rewrite that selects looser rules. So each re-decision is taken twice
when the record claims an older era: under the recorded rules (does it add up?) and under the current ones (is it
green?); a gate green only under the older rules is a problem (:func:`older_rules_problem`), naming the markers, the
rules and the gates, so such a run is never shown or verified as green. An honest old run that is as green under
the current rules as it was recorded keeps verifying.

Every rule a record can select is a member of :class:`LaterRule`; :func:`recorded_rules` is the only reader of the
markers. A rule added later (one more marker) is one member here, and every consumer follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from evalglass.core.authority import BlockReason, CalibrationRecord, JudgeStanding
from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.fingerprint import fingerprint_of
from evalglass.core.gates import Outcome
from evalglass.core.runrecord import RunRecord


class LaterRule(StrEnum):
    """A rule added after runs were recorded without it; the value is the run record's marker field, whose absence
    says the run was decided before the rule."""

    #: Every gate on a judge (comparative, on a variant, between variants) stands on its calibration, not only a
    #: plain gate on the judge's own metric. Marker: ``judge_gates: every``.
    EVERY_JUDGED_GATE = "judge_gates"
    #: A gate on a judge decides only on the calibration record the ledger approves (``calibration``), not on any
    #: record found. Marker: ``judge_calibrations: approved``.
    APPROVED_CALIBRATION = "judge_calibrations"
    #: Where a judge is served is bound (the calibration measured that server; the gate approval's
    #: ``judge_endpoint``). Marker: a ``judge_endpoints`` entry per judge.
    ENDPOINT_BINDING = "judge_endpoints"
    #: A gate on a ``check`` metric whose check runs code no input binds is blocked (``check_inputs_unbound``)
    #: unless the ledger accepts it. Marker: an ``unbound_check_code`` entry per metric that runs a check.
    CHECK_CODE_BINDING = "unbound_check_code"
    #: Every metric gate that is not comparative stands on the dataset's validated gold, not only a gate on a
    #: reference metric: which examples it measures is approved too. Marker: ``gold_gates: every`` (written when
    #: the config has such a gate on a metric without a reference: :func:`examples_gates`).
    EXAMPLES_BINDING = "gold_gates"
    #: A gate on a metric whose reducer depends on the samples per example (max, min, majority, at_least_k) binds
    #: that count in its fingerprint. Marker: ``sample_counts: bound`` (written when the config has such a gate:
    #: :func:`count_gates`).
    SAMPLES_BINDING = "sample_counts"
    #: A tie between a ``majority`` metric's samples goes to the side unfavourable to its gates' direction, not
    #: always to the lowest value (which is the favourable side of a lower-is-better gate). Marker:
    #: ``majority_ties: unfavourable`` (written when the config has a gate the rule changes: :func:`tie_gates`).
    UNFAVOURABLE_TIES = "majority_ties"
    #: A comparative gate on a reducer that depends on the samples per example is ``not_comparable`` with a baseline
    #: whose paired examples were reduced from other counts. Marker: ``baseline_counts: compared`` (written when the
    #: config has such a gate: :func:`compared_count_gates`).
    COMPARED_COUNTS = "baseline_counts"

    @property
    def before(self) -> str:
        """What deciding before the rule meant, as a reader is told."""
        return _BEFORE[self]


_BEFORE: Mapping[LaterRule, str] = {
    LaterRule.EVERY_JUDGED_GATE: "every gate on a judge needed its calibration (only plain gates did)",
    LaterRule.APPROVED_CALIBRATION: "the ledger approved calibration records (any record found counted)",
    LaterRule.ENDPOINT_BINDING: "where a judge is served was bound (no endpoint was checked)",
    LaterRule.CHECK_CODE_BINDING: "a check metric's unbound check code blocked its gates (it was not looked for)",
    LaterRule.EXAMPLES_BINDING: "every metric gate stood on the validated gold of the dataset (only gates on a "
    "reference metric did, so the examples a gate measured were not approved)",
    LaterRule.SAMPLES_BINDING: "a gate bound how many samples each example is reduced from under a reducer that "
    "depends on it (max, min, majority, at_least_k: more samples could raise the number with the approval standing)",
    LaterRule.UNFAVOURABLE_TIES: "a tie between the samples of a majority metric went to the side unfavourable to "
    "its gates (it always went to the lowest value, the favourable side of a lower-is-better gate)",
    LaterRule.COMPARED_COUNTS: "a comparative gate compared the samples per example with the baseline's under a "
    "reducer that depends on them (max, min, majority, at_least_k: a baseline of other counts was compared as if "
    "it measured the same)",
}


@dataclass(frozen=True)
class DecisionRules:
    """The rules a decision is taken under: the current ones, less the later rules a record was decided before."""

    before: frozenset[LaterRule] = frozenset()

    @property
    def current(self) -> bool:
        return not self.before

    @property
    def every_judged_gate(self) -> bool:
        return LaterRule.EVERY_JUDGED_GATE not in self.before

    @property
    def examples_bound(self) -> bool:
        """Whether a metric gate on a metric without a reference stands on the dataset's gold
        (``core.authority.stands_on_gold``)."""
        return LaterRule.EXAMPLES_BINDING not in self.before

    @property
    def unfavourable_ties(self) -> bool:
        """Whether a ``majority`` tie goes to the unfavourable side of its metric's direction (else to the lowest
        value, as runs recorded before :attr:`LaterRule.UNFAVOURABLE_TIES` were decided)."""
        return LaterRule.UNFAVOURABLE_TIES not in self.before

    @property
    def counts_compared(self) -> bool:
        """Whether a comparative gate blocks ``not_comparable`` on a baseline reduced from other samples per example
        (else not, as runs recorded before :attr:`LaterRule.COMPARED_COUNTS` were decided)."""
        return LaterRule.COMPARED_COUNTS not in self.before

    def unbound_code(self, record: RunRecord) -> dict[str, dict[str, tuple[str, ...]]]:
        """Per metric that runs a check, what its check ran unbound, as these rules decide on it: as recorded; under
        the current rules, a metric the record keeps no entry for (recorded before the rule) is unknown, and
        unknown code is not bound (each of its checks is named with what the record does not say)."""
        found = {metric: dict(checks) for metric, checks in record.unbound_check_code.items()}
        if LaterRule.CHECK_CODE_BINDING in self.before:
            return found
        for metric, checks in check_metrics(record).items():
            if metric not in found:
                found[metric] = {check: (UNRECORDED_CODE,) for check in checks}
        return found

    def standing(
        self, name: str, fingerprint: str, calibration: CalibrationRecord | None, endpoint: JudgeEndpoint | None
    ) -> JudgeStanding:
        """Judge ``name``'s standing under these rules: its endpoint unbound and any calibration record counting
        when the record was decided before those rules."""
        return JudgeStanding(
            metric=name,
            fingerprint=fingerprint,
            calibration=calibration,
            endpoint=None if LaterRule.ENDPOINT_BINDING in self.before else endpoint,
            approved_record=LaterRule.APPROVED_CALIBRATION not in self.before,
        )


CURRENT_RULES = DecisionRules()

#: The metric types whose gates stand on a calibration (``MetricSpec.calibrated``): a run record keeps a judge
#: standing (``judge_fingerprints``) for each metric of these types, and a record without one for such a metric
#: claims the loosest rule of all, no calibration. Written out so the readers need none of the metric machinery;
#: tests/core/test_recordrules.py holds it equal to the registry's.
JUDGE_TYPES: frozenset[str] = frozenset({"llm_judge", "jury"})


#: The metric types that run a declared check per example (``MetricSpec.check_references``), each naming it under
#: ``check``: a run record keeps an ``unbound_check_code`` entry for each metric of these types. Written out so the
#: readers need none of the metric machinery; tests/core/test_recordrules.py holds it equal to the registry's.
CHECK_TYPES: frozenset[str] = frozenset({"check", "final_state"})

#: What a reader says of a check whose unbound code a record from before the rule does not name.
UNRECORDED_CODE = (
    "what the run record does not say (it was recorded before EvalGlass kept a check metric's unbound code)"
)


def check_metrics(record: RunRecord) -> dict[str, tuple[str, ...]]:
    """The config snapshot's metrics that run a check per example, with the check each names."""
    metrics = record.config.get("metrics")
    return {
        name: (str(entry.get("check")),)
        for name, entry in (metrics.items() if isinstance(metrics, dict) else ())
        if isinstance(entry, dict) and entry.get("type") in CHECK_TYPES
    }


def examples_gates(config: Mapping[str, object]) -> tuple[str, ...]:
    """The gates of a config (as a run record snapshots it) that stand on the dataset's gold only since the examples
    were bound (:attr:`LaterRule.EXAMPLES_BINDING`): a gate on a metric (not a check, not comparative) whose metric
    has no ``reference``. A run writes the marker when there is any, and a record without it claims the older rule;
    a run without any is decided the same under both rules and keeps its bytes."""
    gates, metrics = config.get("gates"), config.get("metrics")
    if not isinstance(gates, dict) or not isinstance(metrics, dict):
        return ()
    found: list[str] = []
    for name, gate in gates.items():
        if not isinstance(gate, dict) or gate.get("compare_to") is not None:
            continue
        metric = metrics.get(gate.get("metric"))
        if isinstance(metric, dict) and metric.get("reference") is None:
            found.append(str(name))
    return tuple(found)


#: The reducers whose expected value moves with the samples per example (``core.stats.Reducer.depends_on_count``),
#: written out for readers of a config snapshot; tests/core/test_recordrules.py holds it equal to the enum's.
COUNT_REDUCERS: frozenset[str] = frozenset({"max", "min", "majority", "at_least_k"})

#: Other tools' result formats, whose epochs and repeats are always samples (``core.goldfields.TOOL_FORMATS``).
_SAMPLED_FORMATS: frozenset[str] = frozenset({"inspect", "promptfoo", "lm-eval", "openai-evals"})

#: Why the current rules read an approval in a record from before :attr:`LaterRule.SAMPLES_BINDING` as stale.
UNBOUND_COUNT_CAUSE = (
    "the run was recorded before EvalGlass bound how many samples each example is reduced from under its reducer, "
    "so its approval did not cover that count"
)


def _several_samples(config: Mapping[str, object]) -> bool:
    """Whether a config snapshot gives each example several samples (``Config.samples``): another tool's results,
    recorded ``samples: true``, or a lane's ``epochs`` above 1 (in a run with variants, its first variant's)."""
    dataset, task, variants = config.get("dataset"), config.get("task"), config.get("variants")
    if isinstance(dataset, dict) and dataset.get("format") in _SAMPLED_FORMATS:
        return True
    merged = dict(task) if isinstance(task, dict) else {}
    if isinstance(variants, dict) and variants:
        first = next(iter(variants.values()))
        if isinstance(first, dict):
            kind = first.get("type")
            merged = dict(first) if kind is not None and kind != merged.get("type") else {**merged, **first}
    if merged.get("type", "recorded") == "recorded":
        return merged.get("samples") is True
    epochs = merged.get("epochs", 1)
    return isinstance(epochs, int) and epochs > 1


def count_gates(config: Mapping[str, object]) -> tuple[str, ...]:
    """The gates of a config (as a run record snapshots it) whose fingerprint binds the samples per example since
    :attr:`LaterRule.SAMPLES_BINDING`: a gate on a metric whose reducer depends on the count, when examples have
    several samples. A run writes the marker when there is any; a run without any keeps its bytes."""
    gates, metrics = config.get("gates"), config.get("metrics")
    if not isinstance(gates, dict) or not isinstance(metrics, dict) or not _several_samples(config):
        return ()
    found: list[str] = []
    for name, gate in gates.items():
        metric = metrics.get(gate.get("metric")) if isinstance(gate, dict) else None
        if isinstance(metric, dict) and metric.get("reducer") in COUNT_REDUCERS:
            found.append(str(name))
    return tuple(found)


def tie_gates(config: Mapping[str, object]) -> tuple[str, ...]:
    """The gates of a config (as a run record snapshots it) that :attr:`LaterRule.UNFAVOURABLE_TIES` decides
    otherwise than the rule before it could: a lower-is-better gate (plain, comparative, on a variant) on a
    ``majority`` metric, when examples have several samples. Under a higher-is-better gate both rules break a tie
    low, so a run without such a gate writes no marker and keeps its bytes."""
    gates, metrics = config.get("gates"), config.get("metrics")
    if not isinstance(gates, dict) or not isinstance(metrics, dict) or not _several_samples(config):
        return ()
    found: list[str] = []
    for name, gate in gates.items():
        if not isinstance(gate, dict) or gate.get("direction") != "lower_is_better":
            continue
        metric = metrics.get(gate.get("metric"))
        if isinstance(metric, dict) and metric.get("reducer") == "majority":
            found.append(str(name))
    return tuple(found)


def compared_count_gates(config: Mapping[str, object]) -> tuple[str, ...]:
    """The gates of a config (as a run record snapshots it) that :attr:`LaterRule.COMPARED_COUNTS` can decide
    otherwise: a comparative gate on a metric whose reducer depends on the samples per example (whatever this run's
    count: the baseline's may differ from it). A run without one writes no marker and keeps its bytes."""
    gates, metrics = config.get("gates"), config.get("metrics")
    if not isinstance(gates, dict) or not isinstance(metrics, dict):
        return ()
    found: list[str] = []
    for name, gate in gates.items():
        if not isinstance(gate, dict) or gate.get("compare_to") is None:
            continue
        metric = metrics.get(gate.get("metric"))
        if isinstance(metric, dict) and metric.get("reducer") in COUNT_REDUCERS:
            found.append(str(name))
    return tuple(found)


#: What a reader without the scores says of a gate a record from before :attr:`LaterRule.UNFAVOURABLE_TIES` may have
#: decided green otherwise (:func:`scoreless_gates`).
UNDECIDED_TIES_NOTE = (
    "cannot be decided without the scores (its majority ties may have gone to the favourable side): "
    "`evalglass verify` re-derives it from them"
)
#: ... and from before :attr:`LaterRule.COMPARED_COUNTS`.
UNDECIDED_COUNTS_NOTE = (
    "cannot be decided without the scores (its baseline may have other samples per example): `evalglass verify` "
    "re-derives it from them"
)


def scoreless_gates(claimed: DecisionRules, record: RunRecord) -> dict[str, str]:
    """The gates a reader that has not the scores cannot decide under the current rules, each with why: in a record
    from before :attr:`LaterRule.UNFAVOURABLE_TIES`, those :func:`tie_gates` names (their value may rest on a tie
    broken to the favourable side); from before :attr:`LaterRule.COMPARED_COUNTS`, those
    :func:`compared_count_gates` names (their baseline may have been reduced from other counts)."""
    found: dict[str, str] = {}
    for rule, gates, note in (
        (LaterRule.UNFAVOURABLE_TIES, tie_gates, UNDECIDED_TIES_NOTE),
        (LaterRule.COMPARED_COUNTS, compared_count_gates, UNDECIDED_COUNTS_NOTE),
    ):
        if rule in claimed.before:
            for gate in gates(record.config):
                found.setdefault(gate, note)
    return found


def count_unbound_gates(claimed: DecisionRules, record: RunRecord) -> tuple[str, ...]:
    """The gates whose recorded fingerprint does not bind the samples per example although the current rules bind
    it (a record from before :attr:`LaterRule.SAMPLES_BINDING`): under the current rules their approval is stale."""
    return count_gates(record.config) if LaterRule.SAMPLES_BINDING in claimed.before else ()


def unbound_count_fingerprint(recorded: str) -> str:
    """What the current rules read as the fingerprint of a gate whose record did not bind its samples per example
    (:func:`count_unbound_gates`): not the recorded one, and none an approval names, so the gate is stale."""
    return fingerprint_of({"recorded": recorded, "samples_per_example": "unbound"})


def recorded_rules(record: RunRecord) -> DecisionRules:
    """The rules ``record`` says it was decided under. A run without judges is decided the same under every judge
    rule (its record leaves the markers out), so it claims none of them older. A judge without an endpoint claims
    the older rule for the whole run, as a run decided before endpoints were bound kept none; so does a metric that
    runs a check without its ``unbound_check_code`` entry."""
    before: set[LaterRule] = set()
    if not set(check_metrics(record)) <= set(record.unbound_check_code):
        before.add(LaterRule.CHECK_CODE_BINDING)
    if record.gold_gates != "every" and examples_gates(record.config):
        before.add(LaterRule.EXAMPLES_BINDING)
    if record.sample_counts != "bound" and count_gates(record.config):
        before.add(LaterRule.SAMPLES_BINDING)
    if record.majority_ties != "unfavourable" and tie_gates(record.config):
        before.add(LaterRule.UNFAVOURABLE_TIES)
    if record.baseline_counts != "compared" and compared_count_gates(record.config):
        before.add(LaterRule.COMPARED_COUNTS)
    judges = set(record.judge_fingerprints)
    if not judges:
        return DecisionRules(frozenset(before))
    if record.judge_gates != "every":
        before.add(LaterRule.EVERY_JUDGED_GATE)
    if record.judge_calibrations != "approved":
        before.add(LaterRule.APPROVED_CALIBRATION)
    if not judges <= set(record.judge_endpoints):
        before.add(LaterRule.ENDPOINT_BINDING)
    return DecisionRules(frozenset(before))


def green(outcome: Outcome) -> bool:
    """Whether an outcome lets CI pass (a gate that passed, or an inactive one that only informs)."""
    return outcome in (Outcome.PASS, Outcome.INFORMATIONAL)


@dataclass(frozen=True)
class CurrentOutcome:
    """A gate as the current rules decide it, beside the recorded one."""

    gate: str
    outcome: Outcome
    reasons: tuple[BlockReason, ...]
    #: Said instead of the reasons when the current rules cannot decide the gate from what the reader has (a tie
    #: rule needs the scores: only ``verify`` reads them).
    note: str | None = None


@dataclass(frozen=True)
class OlderRulesProblem:
    """A run green only under the older rules its record claims: one finding, naming the markers, the rules and
    every gate the current rules do not pass."""

    field: str
    claimed: str
    current: str

    @property
    def line(self) -> str:
        return f"{self.field}: {self.claimed}; {self.current}"


def older_rules_problem(
    rules: DecisionRules, recorded: Mapping[str, Outcome], current: Sequence[CurrentOutcome]
) -> OlderRulesProblem | None:
    """None when every gate ``recorded`` green (outcome by gate name) is green under the current rules too
    (``current``; a gate it leaves out is as recorded); else the problem, whatever explains the difference: the
    current rules decide whether a run is green, the record's markers only why it was recorded otherwise."""
    if rules.current:
        return None
    worse = [item for item in current if green(recorded.get(item.gate, Outcome.BLOCKED)) and not green(item.outcome)]
    if not worse:
        return None
    order = list(LaterRule)
    claimed = sorted(rules.before, key=order.index)
    gates = "; ".join(
        f"gate '{item.gate}' {item.note}"
        if item.note is not None
        else f"gate '{item.gate}' is {item.outcome.value}"
        + (f": {', '.join(reason.value for reason in item.reasons)}" if item.reasons else "")
        for item in worse
    )
    return OlderRulesProblem(
        field="runrecord." + "/".join(rule.value for rule in claimed),
        claimed="the run record says it was decided before " + " and before ".join(r.before for r in claimed),
        current=f"under the current rules {gates}; re-run `evalglass run` to decide it under them",
    )
