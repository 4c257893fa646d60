"""Does a finished run add up? The one check every reader of a run goes through before it shows it.

``verify`` re-derives everything from the recorded scores; this is the part of that every reader can afford every
time (``view``, ``explain``, ``report``, ``compare``, ``export``, ``load_run``, the CI outputs of a loaded run and the
history's readers), with no config validation and none of the metric machinery:

- first the artifacts as a set, by the one check ``verify`` makes of them (``engine.runs.integrity``): ``digests.json``
  is there and is this run's; every file it lists (scores, outputs, kept outputs, report, variants, baselines...)
  has its bytes, streamed through SHA-256 whether or not the reader shows that file; every file the run record binds
  by its hash (the scores, the kept outputs, a judge of variants' scores) is listed and has those bytes. A file
  truncated, with a byte flipped, swapped for another run's, or missing is refused, naming the file;
- the run record's config and ledger snapshots are what the texts it keeps parse to, each text hashing to its
  recorded fingerprint (:func:`snapshot_text_problems`);
- every declared gate is decided again from what the same files record, by the functions that decided it in the
  run (``core.gates``: :func:`~evalglass.core.gates.rederived_gate` and
  :func:`~evalglass.core.gates.evaluate_check_gate`): its spec from the run record's config snapshot (direction,
  rule, level, tolerated exclusions, ``compare_to``), its authority from the ledger snapshot (active or not, the
  approved threshold or margin, every reason that must block it), its value, ``n`` and population from the
  scorecard's own metric summary (under ``lower_bound``, the interval as :func:`~evalglass.core.gates.rederived_gate`
  can know it, and its ends against the value: :func:`~evalglass.core.gates.bound_problem`), a comparative gate's
  numbers from its recorded paired difference, a check gate's outcome from the check result the run record holds;
- every gate the ledger snapshot activates without the config declaring it must block (``gate_undeclared``);
- a record that claims older rules (``core.recordrules``: a missing marker) is decided as it claims, and again under
  the current rules: a gate green only under the older ones refuses the run (so a deleted marker never shows green);
- each check result was judged as the config snapshot declares its check (command, policy, timeout...), and the
  scorecard's check summaries and dataset are the run record's;
- the verdict follows from the gates (``VerdictPayload`` re-derives it on load);

What it cannot see: whether the scores produce the numbers (a consistent rewrite of scores, scorecard, run record and
digests together adds up) and the signature. Every renderer says so in one line (:attr:`CheckedRun.not_checked`);
``evalglass verify`` checks both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalglass.core.authority import (
    Authority,
    BlockReason,
    JudgeStanding,
    decided_judge,
    declared_gate_authority,
    undeclared_active_gates,
)
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.checks import check_code_key
from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.gates import (
    GateResult,
    Outcome,
    bound_problem,
    evaluate_check_gate,
    measurement_reasons,
    rederived_gate,
    undeclared_results,
)
from evalglass.core.gatespec import GateSpec
from evalglass.core.recordrules import (
    CURRENT_RULES,
    JUDGE_TYPES,
    UNBOUND_COUNT_CAUSE,
    CurrentOutcome,
    DecisionRules,
    count_unbound_gates,
    older_rules_problem,
    recorded_rules,
    scoreless_gates,
    unbound_count_fingerprint,
)
from evalglass.core.runrecord import RunRecord
from evalglass.core.scorecard import CheckSummary, MetricSummary, Scorecard
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, SCORECARD_FILE, parse_json_model
from evalglass.errors import SetupError, first_problem

if TYPE_CHECKING:
    from evalglass.engine.runs.integrity import ArtifactProblem
    from evalglass.lanes.checkspec import CheckSpec

#: The fields of a gate whose value decides it or is shown as deciding it, compared between the recorded gate and
#: the re-derived one. Reasons are compared by code (their texts can name a ledger line or a stale evaluator the
#: files do not record); the lower_bound rule's interval ends, its method and its advice come from the gate itself.
DECISION_FIELDS = (
    "subject",
    "subject_kind",
    "active",
    "fingerprint",
    "compare_to",
    "direction",
    "rule",
    "level",
    "threshold",
    "proposed_threshold",
    "value",
    "n",
    "compared",
    "favourable_bound",
    "outcome",
    "notes",
)


class DigestState(StrEnum):
    """What ``digests.json`` let a reader check."""

    UNSIGNED = "unsigned"
    SIGNED = "signed"


@dataclass(frozen=True)
class CheckedRun:
    """A run folder's scorecard and run record, found to add up (:func:`load_checked`)."""

    folder: Path
    scorecard: Scorecard
    record: RunRecord
    digests: DigestState

    @property
    def not_checked(self) -> str:
        """The one line every renderer of a loaded run prints: what this check did not prove, and what does."""
        return not_checked_line(self.folder, self.digests)


def _pasteable(folder: Path) -> str:
    """The folder as the command to paste should name it: relative to the working folder when inside it (a short
    line in a CI log), else as given."""
    try:
        return str(folder.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(folder)


def not_checked_line(folder: Path, digests: DigestState) -> str:
    against = {
        DigestState.UNSIGNED: "its run record and digests (unsigned)",
        DigestState.SIGNED: "its run record and digests (signature not checked)",
    }[digests]
    return (
        f"not re-derived: checked against {against}, not against its scores or what its config implies; "
        f"`evalglass verify {_pasteable(folder)}` re-derives it"
    )


def load_checked(folder: Path) -> CheckedRun:
    """The scorecard and run record of ``folder``, refused in one line (exit 2) unless the run adds up: first its
    artifacts as a set (``engine.runs.integrity``, the check ``verify`` makes: every file ``digests.json`` lists,
    each file the run record binds by its hash), naming the file at fault, then the scorecard against its run
    record, naming the first field. Every command and API function that shows a finished run loads it here."""
    from evalglass.core.fingerprint import fingerprint_of_bytes
    from evalglass.engine.runs.artifacts import refuse_unfinished
    from evalglass.engine.runs.digests import load_digests
    from evalglass.engine.runs.integrity import ArtifactCheck

    refuse_unfinished(folder)
    digests = load_digests(folder)
    # The two files parsed below are hashed as read, so the bytes checked are the bytes shown.
    read = {name: _bytes_if_regular(folder / name) for name in (SCORECARD_FILE, RUNRECORD_FILE)}
    if digests is None and read[SCORECARD_FILE] is None:
        # Neither the first nor the last file a run writes: not a run folder at all, said so (not "damaged").
        from evalglass.engine.runs.artifacts import NOT_A_FILE, NOT_A_RUN
        from evalglass.readers.userfiles import read_regular

        read_regular(folder / SCORECARD_FILE, what="scorecard", missing_fix=NOT_A_RUN, other_fix=NOT_A_FILE)
    check = ArtifactCheck(
        folder, digests, {name: fingerprint_of_bytes(data) for name, data in read.items() if data is not None}
    )
    refuse_damaged(folder, check.listed_problems())
    card: Scorecard = parse_json_model(
        _checked_bytes(SCORECARD_FILE, read), folder / SCORECARD_FILE, Scorecard, "scorecard"
    )
    record: RunRecord = parse_json_model(
        _checked_bytes(RUNRECORD_FILE, read), folder / RUNRECORD_FILE, RunRecord, "run record"
    )
    refuse_damaged(folder, check.record_problems(record))
    problems = scorecard_problems(card, record)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SetupError(
            f"this run does not add up: {problems[0]}{more}",
            where=str(folder),
            fix=f"the artifacts were edited; `evalglass verify {folder}` names every difference, or rerun "
            "`evalglass run`",
        )
    assert digests is not None  # listed_problems refuses a run without one
    state = DigestState.UNSIGNED if digests.signature is None else DigestState.SIGNED
    return CheckedRun(folder=folder, scorecard=card, record=record, digests=state)


def _bytes_if_regular(path: Path) -> bytes | None:
    """A small artifact's bytes when it is a regular file; None otherwise (the integrity check names it)."""
    if path.is_symlink():
        return None
    from evalglass.readers.userfiles import read_regular

    try:  # the regular-file check on the open descriptor: a FIFO swapped in after a check by name cannot hang it
        return read_regular(path, what=path.name)
    except SetupError:
        return None


def _checked_bytes(name: str, read: Mapping[str, bytes | None]) -> bytes:
    """The bytes of ``name`` read and found to be the listed ones (the list must name the file: see
    ``integrity.WRITTEN_BY_EVERY_RUN``)."""
    data = read[name]
    assert data is not None, name
    return data


def refuse_damaged(folder: Path, problems: list[ArtifactProblem], *, what: str = "this run") -> None:
    """One line naming the first damaged artifact (and how many more there are), exit 2. ``what``: the run as the
    line names it (a baseline: ``baseline 'main' run``)."""
    if not problems:
        return
    from evalglass.engine.runs.integrity import FETCH_AGAIN, LINKED_STORE, linked

    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise SetupError(
        f"{what} does not add up: {first.line}{more}",
        where=str(folder / first.file),
        fix=(LINKED_STORE if linked(problems) else FETCH_AGAIN).replace("FOLDER", _pasteable(folder)),
    )


def snapshot_text_problems(record: RunRecord) -> list[str]:
    """The config and ledger snapshots every gate is decided from must be what the texts the run kept parse to, and
    each text must hash to its recorded fingerprint (the one ``verify`` anchors to the host's file). Without this, an
    edited snapshot showed a gate decided by what its text does not say: an approval (a threshold, ``active``) the
    ledger text does not hold, a direction or rule the config text does not declare. A record without a text is
    refused: every run since the snapshots were kept writes both, so an absent one is an edit."""
    from evalglass.core.fingerprint import fingerprint_of_bytes
    from evalglass.engine.spec.config import Config, config_as_recorded
    from evalglass.engine.spec.ledger import parse_ledger
    from evalglass.engine.spec.validation import validate_document
    from evalglass.readers.yamlsource import parse_yaml

    def ledger_of(raw: bytes) -> Any:
        return parse_ledger(raw, Path(record.ledger_path)).ledger.model_dump(mode="json")

    def config_of(raw: bytes) -> Any:
        document = parse_yaml(raw, Path(record.config_path), what="config")
        return config_as_recorded(validate_document(Config, document, what="the config"))

    snapshots = (
        ("ledger", record.ledger_source, record.ledger_fingerprint, record.ledger.model_dump(mode="json"), ledger_of),
        ("config", record.config_source, record.config_fingerprint, record.config, config_of),
    )
    for what, source, fingerprint, snapshot, parsed_of in snapshots:
        text = f"{what} text ({what}_source)"
        if source is None:
            return [f"the run record keeps no {text} to show its {what} snapshot"]
        raw = source.encode("utf-8")
        if fingerprint_of_bytes(raw) != fingerprint:
            return [f"the run record's {text} does not hash to its {what}_fingerprint"]
        try:
            parsed = parsed_of(raw)
        except SetupError as exc:
            return [f"the run record's {text} does not parse: {exc.line()}"]
        if parsed != snapshot:
            return [f"the run record's {what} snapshot is not what its {text} says"]
    return []


def scorecard_problems(card: Scorecard, record: RunRecord) -> list[str]:
    """Each way the scorecard does not follow from what it and its run record say, in plain words naming the
    field; empty when it adds up."""
    if card.run_id != record.run_id:
        return [f"the scorecard is run {card.run_id}, the run record is run {record.run_id}"]
    try:
        today = day_of_timestamp(record.created_at)
    except ValueError:
        return [f"the run record's created_at {record.created_at!r} is not a timestamp"]
    problems: list[str] = snapshot_text_problems(record)
    if card.dataset != record.dataset:
        problems.append("dataset differs between the scorecard and the run record")
    problems += check_declaration_problems(record)
    problems += [claim.line for claim in unbound_claims(record)]
    problems += _check_summary_problems(card, record)
    problems += _metric_problems(card)
    problems += variant_summary_problems(card)
    config_gates: dict[str, Any] = record.config.get("gates") or {}
    declared = list(config_gates)
    recorded = {gate.name: gate for gate in card.decision.gates}
    undeclared = undeclared_active_gates(record.ledger, declared)
    for name in sorted(set(recorded) - set(declared) - set(undeclared)):
        problems.append(f"gate '{name}' is in the payload, but neither the config nor the ledger snapshot has it")
    for name in [*declared, *undeclared]:
        if name not in recorded:
            problems.append(f"gate '{name}' is missing from the payload")
    for expected in undeclared_results(record.ledger, declared, {}):
        gate = recorded.get(expected.name)
        if gate is not None:
            if BlockReason.GATE_UNDECLARED not in {reason.code for reason in gate.reasons}:
                problems.append(
                    f"gate '{expected.name}' is active in the ledger snapshot and undeclared, so it must block"
                )
            else:
                problems += _differences(gate, expected)
    metrics = {metric.name: metric for metric in card.metrics}
    rules = _Rules.of(record)
    current: list[CurrentOutcome] = []
    recorded_outcomes = {gate.name: gate.outcome for gate in card.decision.gates}
    for name in declared:
        gate = recorded.get(name)
        if gate is not None:
            problems += _declared_gate_problems(gate, config_gates[name], metrics, record, today, rules, current)
    if rules.problem is not None:
        problems.append(rules.problem)
    elif (older := older_rules_problem(rules.claimed, recorded_outcomes, current)) is not None:
        problems.append(older.line)
    return problems


def variant_summary_problems(card: Scorecard) -> list[str]:
    """A run with variants: each pair's decision, level and the groups follow from the recorded p-values by Holm's
    procedure (``core/stats/multiple.py``), and each variant's mean is its metric's. What it cannot re-derive
    without the scores (the p-values, the ends) ``verify`` does."""
    summary = card.variants
    if summary is None:
        return []
    import numpy as np

    from evalglass.core.stats.multiple import holm_alphas, indistinguishable_groups
    from evalglass.core.variants import variant_metric

    problems: list[str] = []
    for comparison in summary.metrics:
        where = f"variants.metrics.{comparison.metric}"
        if comparison.variants != summary.names:
            problems.append(f"{where}.variants are not the run's variants")
            continue
        alphas, rejected = holm_alphas(np.array([pair.p_value for pair in comparison.pairs]), 1 - comparison.level)
        for index, pair in enumerate(comparison.pairs):
            ends = (pair.low, pair.high)
            separated = ends[0] is not None and ends[1] is not None and (ends[0] > 0 or ends[1] < 0)
            if pair.distinguishable != bool(rejected[index] and pair.low is not None):
                problems.append(f"{where}: {pair.first} vs {pair.second} is not what Holm's procedure decides")
            elif pair.low is not None and not math.isclose(pair.level, 1 - alphas[index], rel_tol=1e-9):
                problems.append(f"{where}: {pair.first} vs {pair.second} is at a level Holm's procedure does not give")
            elif pair.distinguishable and not separated:
                problems.append(f"{where}: {pair.first} vs {pair.second} is distinguishable with 0 in its interval")
        groups = indistinguishable_groups(
            comparison.variants, comparison.means, comparison.pairs, higher_is_better=comparison.higher_is_better
        )
        if groups != comparison.groups:
            problems.append(f"{where}.groups do not follow from its pairs")
        for variant, mean in zip(comparison.variants, comparison.means, strict=True):
            metric = card.metric(variant_metric(comparison.metric, variant))
            if metric is None:
                problems.append(f"{where}: the scorecard does not summarise {comparison.metric} of {variant}")
            elif (metric.estimate is None) != (mean is None):
                problems.append(f"{where}: the mean of {variant} is not its metric's")
    return problems


def _metric_problems(card: Scorecard) -> list[str]:
    """Each metric's population counts the run's examples, and its estimate the population's included ones (the
    measurement reasons a gate blocks for are read from these)."""
    problems = []
    for metric in card.metrics:
        population, estimate = metric.population, metric.estimate
        if population.expected != card.dataset.examples:
            problems.append(
                f"metrics.{metric.name}.population.expected is {population.expected}; the dataset has "
                f"{card.dataset.examples} examples"
            )
        included = 0 if estimate is None else estimate.n
        if included != population.included:
            problems.append(
                f"metrics.{metric.name}.estimate.n is {included}; its population includes {population.included}"
            )
    return problems


def check_declaration_problems(record: RunRecord) -> list[str]:
    """Each check result was judged as the config snapshot declares the check: the same command, shell, working
    folder, timeout, output cap, permission to write its target and exit-code policy. (The result's own validator
    ties its outcome to its exit code under the policy it records; a policy edited to map the code the command
    ended with to PASS is what this refuses.)"""
    if not record.check_results:
        return []
    from evalglass.lanes.checkspec import CheckSpec

    declared = record.config.get("checks") or {}
    problems: list[str] = []
    for name, result in record.check_results.items():
        entry = declared.get(name) if isinstance(declared, dict) else None
        if entry is None:
            problems.append(f"check_results.{name}: the config snapshot declares no check '{name}'")
            continue
        try:
            spec = CheckSpec.model_validate(entry)
        except ValidationError as exc:
            problems.append(f"check '{name}' in the run record's config snapshot is not a check: {first_problem(exc)}")
            continue
        expected = {
            # The state its gates ask for: a record rewritten from unbound to bound names one the config does not.
            "requested_fingerprint": _expected_state(record, name),
            "command": spec.argv,
            "shell": spec.shell,
            "cwd": spec.cwd or ".",
            "timeout_s": spec.timeout,
            "output_cap_bytes": spec.output_cap_bytes,
            "writes_target": spec.writes_target,
            "policy": spec.policy,
        }
        problems += [
            f"check_results.{name}.{field}: recorded {_shown(getattr(result, field))}; the config snapshot declares "
            f"{_shown(value)}"
            for field, value in expected.items()
            if getattr(result, field) != value
        ]
    return problems


def _expected_state(record: RunRecord, check: str) -> str | None:
    """The target state the config snapshot's gates on ``check`` ask for (``Config.expected_state``; validation
    makes them agree), read from the snapshot's gates as they are written."""
    gates = record.config.get("gates")
    for entry in gates.values() if isinstance(gates, dict) else ():
        if isinstance(entry, dict) and entry.get("check") == check:
            state = entry.get("expect_state")
            return state if isinstance(state, str) else None
    return None


@dataclass(frozen=True)
class UnboundClaim:
    """A run record that says a check runs less unbound code than its re-derivation finds: the gates decided on it
    read the record, so an under-claim would make a blocked gate green."""

    field: str
    check: str
    recorded: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def what(self) -> str:
        said = ", ".join(self.recorded) if self.recorded else "nothing"
        return (
            f"the run record says check '{self.check}' runs {said} unbound; its command runs "
            f"{', '.join(self.missing)}, which no `inputs:` binds"
        )

    @property
    def line(self) -> str:
        return f"{self.field}: {self.what}"


#: How a check's unbound code is re-derived: from its name and declaration, what its command runs unbound.
UnboundOf = Callable[[str, "CheckSpec"], tuple[str, ...]]


def unbound_claims(record: RunRecord, derive: UnboundOf | None = None) -> list[UnboundClaim]:
    """Each place the run record says what a check runs unbound (a check result's ``unbound_inputs``; a check
    metric's ``unbound_check_code`` entry) that leaves out what ``derive`` finds. By default that is what the
    record itself shows (``lanes.checkinputs.declared_unbound``: from the config snapshot's check and the host code
    the run hashed for it); ``evalglass verify`` passes the full analysis over the config folder when it is at hand.
    A check metric the record keeps no entry for is left to ``core.recordrules`` (decided as unknown code)."""
    from evalglass.core.recordrules import check_metrics

    said: list[tuple[str, str, tuple[str, ...]]] = [
        (f"check_results.{name}.unbound_inputs", name, result.unbound_inputs)
        for name, result in record.check_results.items()
    ]
    for metric, checks in check_metrics(record).items():
        if metric in record.unbound_check_code:
            kept = record.unbound_check_code[metric]
            said += [(f"unbound_check_code.{metric}.{check}", check, kept.get(check, ())) for check in checks]
    if not said:
        return []
    from evalglass.lanes.checkinputs import declared_unbound
    from evalglass.lanes.checkspec import CheckSpec

    def from_record(name: str, spec: CheckSpec) -> tuple[str, ...]:
        return declared_unbound(spec, record.definition_files.get(check_code_key(name), {}))

    declared = record.config.get("checks")
    claims: list[UnboundClaim] = []
    for where, check, recorded in said:
        entry = declared.get(check) if isinstance(declared, dict) else None
        try:
            spec = CheckSpec.model_validate(entry)
        except ValidationError:
            continue  # a snapshot that declares no such check is refused where its result is
        missing = tuple(item for item in (derive or from_record)(check, spec) if item not in recorded)
        if missing:
            claims.append(UnboundClaim(where, check, tuple(recorded), missing))
    return claims


def _check_summary_problems(card: Scorecard, record: RunRecord) -> list[str]:
    """The checks a report shows are the results the run record holds."""
    shown = {check.name: check for check in card.checks}
    if set(shown) != set(record.check_results):
        return ["the scorecard's checks are not the run record's check results"]
    return [
        f"checks.{name} shows {shown[name].outcome.value}; the run record's result is {result.outcome.value}"
        if shown[name].outcome is not result.outcome
        else f"checks.{name} differs from the run record's result"
        for name, result in record.check_results.items()
        if shown[name] != CheckSummary.of(name, result)
    ]


def _declared_gate_problems(
    gate: GateResult,
    declared: Any,
    metrics: Mapping[str, MetricSummary],
    record: RunRecord,
    today: str,
    rules: _Rules,
    current: list[CurrentOutcome],
) -> list[str]:
    name = gate.name
    try:
        spec = GateSpec.model_validate(declared or {}).decided()
    except ValidationError as exc:
        return [f"gate '{name}' in the run record's config snapshot is not a gate: {first_problem(exc)}"]
    if gate.fingerprint != record.gate_fingerprints.get(name):
        return [f"gate '{name}' carries a fingerprint the run record does not"]
    summary = metrics.get(spec.subject) if spec.check is None else None
    if spec.check is None and summary is None:
        return [f"gate '{name}' decides on metric '{spec.subject}', which the scorecard does not summarise"]
    authority = _gate_authority(name, spec, summary, record, today, rules.judges, rules.claimed)
    if rules.now is not None and spec.check is None:
        # The older rules a record can select touch a judge's standing, a check metric's unbound code, which gates
        # stand on the dataset's gold and whether a gate's fingerprint bound its samples per example, where only the
        # authority differs under the current ones (an active gate with any authority reason is blocked whatever it
        # measured), where a majority tie went and whether a baseline's samples per example were compared, which
        # change what is measured (the scores decide: verify).
        now = _gate_authority(
            name,
            spec,
            summary,
            record,
            today,
            rules.now,
            CURRENT_RULES,
            count_unbound=name in count_unbound_gates(rules.claimed, record),
        )
        if now.active and now.reasons:
            current.append(CurrentOutcome(name, Outcome.BLOCKED, tuple(reason.code for reason in now.reasons)))
        elif now.active and (note := scoreless_gates(rules.claimed, record).get(name)) is not None:
            # The tie and count rules change what is measured, not the authority: without the scores it cannot be
            # re-derived.
            current.append(CurrentOutcome(name, Outcome.BLOCKED, (), note=note))
    if gate.active != authority.active:
        state = "active" if authority.active else "inactive"
        return [
            f"gate '{name}' is recorded {'active' if gate.active else 'inactive'}; the ledger snapshot makes it {state}"
        ]
    if spec.check is not None:
        result = record.check_results.get(spec.check)
        if result is None:
            return [f"gate '{name}' decides on check '{spec.check}', whose result the run record does not hold"]
        return _differences(gate, evaluate_check_gate(name, spec, gate.fingerprint, authority, result))
    assert summary is not None
    if spec.compare_to is not None:
        return _comparative_problems(gate, spec, authority, record)
    try:
        derived = rederived_gate(gate, spec, authority, summary.estimate, summary.population)
    except ValueError as exc:
        return [f"gate '{name}' cannot be decided from what the scorecard records: {_first_line(exc)}"]
    bound = bound_problem(gate)
    return _differences(gate, derived) + ([f"gate '{name}': {bound}"] if bound is not None else [])


def _gate_authority(
    name: str,
    spec: GateSpec,
    summary: MetricSummary | None,
    record: RunRecord,
    today: str,
    standings: Mapping[str, JudgeStanding],
    rules: DecisionRules,
    *,
    count_unbound: bool = False,
) -> Authority:
    """Gate ``name``'s authority from the ledger snapshot, with the judge it stands on (every kind of gate, or only
    a plain one under the older rule) and where that judge was served when no standing carries it, found as the run
    found them under ``rules``. ``count_unbound``: its recorded fingerprint does not bind the samples per example
    the current rules bind (``core.recordrules.count_unbound_gates``), so no approval covers it: stale."""
    judge, served = (None, None)
    if spec.metric is not None:
        judge, served = decided_judge(
            standings, spec.metric, comparative=spec.compare_to is not None, every=rules.every_judged_gate
        )
    return declared_gate_authority(
        record.ledger,
        today=today,
        name=name,
        fingerprint=unbound_count_fingerprint(record.gate_fingerprints.get(name, ""))
        if count_unbound
        else record.gate_fingerprints.get(name, ""),
        stale_cause=UNBOUND_COUNT_CAUSE if count_unbound else None,
        check=spec.check is not None,
        dataset=record.dataset.name,
        dataset_fingerprint=record.dataset.gold,
        uses_reference=summary is not None and summary.uses_reference,
        judge=judge,
        comparative=spec.compare_to is not None,
        baseline=spec.compare_to,
        judge_endpoint=served,
        unbound_code=rules.unbound_code(record).get(spec.metric) if spec.metric is not None else None,
        examples_bound=rules.examples_bound,
    )


@dataclass(frozen=True)
class _Rules:
    """The rules the run record claims (``core.recordrules``) with each judge's standing under them, and, when they
    are older than the current ones, the standings the current rules decide on."""

    claimed: DecisionRules
    judges: Mapping[str, JudgeStanding]
    now: Mapping[str, JudgeStanding] | None
    #: Why the current rules cannot decide the run from its files (a judge's endpoint that cannot be derived).
    problem: str | None = None

    @classmethod
    def of(cls, record: RunRecord) -> _Rules:
        claimed = recorded_rules(record)
        judges = _recorded_standings(record, claimed, record.judge_endpoints)
        unjudged = _unjudged(record)
        if unjudged is not None:
            return cls(claimed, judges, None, unjudged)
        if claimed.current:
            return cls(claimed, judges, None)
        endpoints, problem = _served_now(record)
        return cls(claimed, judges, _recorded_standings(record, CURRENT_RULES, endpoints), problem)


def _unjudged(record: RunRecord) -> str | None:
    """The judges the run record keeps a standing for (``judge_fingerprints``) must be the config snapshot's judge
    metrics: a judge left out would let its gates decide with no calibration at all, the loosest rule of all."""
    metrics = record.config.get("metrics")
    declared = {
        name
        for name, entry in (metrics.items() if isinstance(metrics, dict) else ())
        if isinstance(entry, dict) and entry.get("type") in JUDGE_TYPES
    }
    kept = set(record.judge_fingerprints)
    if declared == kept:
        return None
    name = sorted(declared ^ kept)[0]
    said = (
        "keeps no standing" if name in declared else "keeps a standing, but the config snapshot declares no such judge"
    )
    return (
        f"the run record {said} for judge '{name}' (judge_fingerprints), so its gates cannot be decided as the run did"
    )


def _recorded_standings(
    record: RunRecord, rules: DecisionRules, endpoints: Mapping[str, JudgeEndpoint]
) -> dict[str, JudgeStanding]:
    """Each judge's standing as the run record snapshotted it (fingerprint, calibration, where it was served),
    under ``rules``."""
    return {
        name: rules.standing(name, fingerprint, record.calibrations.get(name), endpoints.get(name))
        for name, fingerprint in record.judge_fingerprints.items()
    }


def _served_now(record: RunRecord) -> tuple[dict[str, JudgeEndpoint], str | None]:
    """Where each judge was served, for a record that kept no endpoint for some judge (decided before endpoints
    were bound): derived from its config snapshot as the run derives it from the config, so the current rules
    decide on the binding. Parsing the snapshot costs milliseconds, paid only by such records. When the snapshot
    does not say, the current rules cannot decide the run: that is the problem returned."""
    endpoints = dict(record.judge_endpoints)
    missing = sorted(set(record.judge_fingerprints) - set(endpoints))
    if not missing:
        return endpoints, None
    from evalglass.engine.spec.config import config_from_record

    try:
        judges = config_from_record(record.config).judges
    except (ValidationError, ValueError) as exc:
        judges, why = {}, _first_line(exc)
    else:
        why = "it declares no such judge"
    for name in missing:
        spec = judges.get(name)
        if spec is None:
            return endpoints, (
                f"the run record keeps no endpoint for judge '{name}' and its config snapshot does not say where it "
                f"was served ({why}), so the current rules cannot decide it"
            )
        endpoints[name] = spec.judge_endpoint()
    return endpoints, None


def _comparative_problems(gate: GateResult, spec: GateSpec, authority: Authority, record: RunRecord) -> list[str]:
    """A comparative gate, as far as the files decide it (its pairs are in the baseline's scores): the spec and
    margin the snapshots say; the value, ``n``, the compared number and the favourable bound the recorded paired
    difference says (under ``lower_bound`` the ends of its interval, by the function that chose them in the run);
    and every reason the files imply (the ledger snapshot's, the baseline as the run record found it, the recorded
    pairs' population), each by the function that gave it in the run. Its outcome follows from those by
    ``GateResult``'s own rule, checked on load; a reason more than these can only have blocked it."""
    from evalglass.core.baselinesource import BaselineTrust, SignatureState, identity_reasons
    from evalglass.core.comparative import BaselineRun, baseline_reasons, compared_ends

    name = gate.name
    problems = [
        f"decision.gates.{name}.{field}: recorded {_shown(getattr(gate, field))}; the config snapshot says "
        f"{_shown(expected)}"
        for field, expected in (("direction", spec.direction), ("rule", spec.rule), ("compare_to", spec.compare_to))
        if getattr(gate, field) != expected
    ]
    recorded_margin = gate.comparison.margin if gate.comparison is not None else None
    if gate.active and recorded_margin != authority.margin:
        problems.append(
            f"gate '{name}' compares with baseline {gate.compare_to!r} within margin {recorded_margin}; the config "
            f"and ledger snapshot say {spec.compare_to!r} within {authority.margin}"
        )
    detail = gate.comparison.metric if gate.comparison is not None else None
    difference = detail.difference if detail is not None else None
    compared, favourable = compared_ends(spec, difference)
    numbers: dict[str, float | int | None] = {
        "value": None if difference is None else difference.point,
        "n": None if difference is None else difference.n,
        # An inactive gate is informational and records no compared number (core.comparative).
        "compared": compared if gate.active else None,
        "favourable_bound": favourable,
    }
    problems += [
        f"decision.gates.{name}.{field}: recorded {getattr(gate, field)!r}; the recorded paired difference "
        f"says {expected!r}"
        for field, expected in numbers.items()
        if getattr(gate, field) != expected
    ]
    if not gate.active:
        return problems
    implied = {reason.code for reason in authority.reasons}
    baseline = spec.compare_to or ""
    approved = record.ledger.baselines.get(baseline)
    found = record.baselines.get(baseline)
    run = None
    if found is not None:
        code = found.problem_code or BlockReason.BASELINE_MISSING
        run = BaselineRun(baseline, found.location, found.problem, found.fingerprint, found.run_id, problem_code=code)
    if approved is not None and approved.is_source and run is not None and run.problem is None:
        # A baseline that follows a branch: who signed it and for which branch are in the record; its suite and age
        # need the baseline's own files, which verify reads (the copy in baselines/NAME/).
        signed = SignatureState.VALID if found is not None and found.signed_by else SignatureState.UNSIGNED
        trust = BaselineTrust(signed, signer=found.signed_by if found else None, branch=found.branch if found else None)
        implied |= {reason.code for reason in identity_reasons(baseline, approved, trust, suite="")}
    else:
        implied |= {reason.code for reason in baseline_reasons(baseline, approved, run)}
    if detail is not None:
        pairs = measurement_reasons(
            spec, detail.pairs, nothing="", unit="pairs", incomplete=(BlockReason.INCOMPLETE_PAIRS, "")
        )
        implied |= {reason.code for reason in pairs}
    missing = implied - {reason.code for reason in gate.reasons}
    if missing:
        codes = ", ".join(sorted(code.value for code in missing))
        problems.append(f"gate '{name}' is not blocked by {codes}, which the snapshots and the comparison imply")
    return problems


def _differences(recorded: GateResult, derived: GateResult) -> list[str]:
    """Where the recorded gate differs from the one its files decide: each decision field by dotted path, then the
    reason codes."""
    name = recorded.name
    if recorded.active != derived.active:
        state = "active" if derived.active else "inactive"
        was = "active" if recorded.active else "inactive"
        return [f"gate '{name}' is recorded {was}; the ledger snapshot makes it {state}"]
    problems = []
    for field in DECISION_FIELDS:
        mine, theirs = getattr(recorded, field), getattr(derived, field)
        if mine != theirs:
            problems.append(f"decision.gates.{name}.{field}: recorded {_shown(mine)}; its files say {_shown(theirs)}")
    codes = sorted(reason.code.value for reason in recorded.reasons)
    expected = sorted(reason.code.value for reason in derived.reasons)
    if codes != expected:
        missing = sorted(set(expected) - set(codes) - {BlockReason.BELOW_THRESHOLD.value})
        if missing and recorded.active:
            problems.append(
                f"gate '{name}' is not blocked by {', '.join(missing)}, which the ledger snapshot and the "
                "scorecard imply"
            )
        else:
            problems.append(f"decision.gates.{name}.reasons: recorded {codes}; its files say {expected}")
    return problems


def _shown(value: Any) -> str:
    return repr(value.value if isinstance(value, StrEnum) else value)


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return first_problem(exc)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
