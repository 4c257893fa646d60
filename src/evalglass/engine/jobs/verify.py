"""Re-derive a run from its recorded scores, check every artifact and snapshot, and name every field that differs.

What a verified run proves depends on what ``verify`` can check it against (docs/config.md, "What verify proves"):

- **Consistent** (always): every file matches ``digests.json`` and every file the run record binds by its hash has
  those bytes (``engine.runs.integrity``: the one check of the artifacts as a set, which every reader makes too);
  the config and ledger snapshots in the run record hash to the fingerprints recorded beside them and parse to
  exactly the snapshots the run decided with; the gate and judge fingerprints, every aggregate, gate and the verdict
  re-derive from ``scores.jsonl`` with the same code the run used; and ``report.md`` renders from the scorecard
  byte for byte. A record that claims it was decided under older rules (a missing marker, ``core.recordrules``) is
  re-derived under them and decided again under the current ones: a gate green only under the older rules is a
  finding, so a deleted marker never verifies green.
- **Anchored** (when the config and ledger files are at hand): the run read exactly the files in the repository
  now, so it was decided under the ledger the host keeps there, not under one rewritten inside the run folder.
- **Signed** (with ``--key``): the digest list was signed by the holder of the signing key.
- **Strict** (``--strict``): anchored in full: the config and ledger are at hand and are the files the run read,
  and so are the definition files and the dataset beside the config (each difference, or a file that cannot be
  read, is a finding instead of a statement). It proves the run still stands on the repository as it is now; it
  proves nothing more about who wrote the run (a signature does).

What the run found about its checks is re-derived too (``_check_facts``): each result judged as its check is
declared, bound to the state its gates ask for, and not claiming less unbound code than its command runs (from the
record alone, or in full in the config folder when the files there are the ones the run hashed). Files beside the
config (definitions, the dataset) other than the run hashed are said, not counted (``_files_at_hand``): a later
change and a rewritten record look alike without a signature. A check's outcome is the run's word, and said so.

The outputs a recorded run kept (``engine.runs.keptoutputs``) are checked as bytes (digests, the run record's hash) and
as the outputs of the scored lines (one per line of ``scores.jsonl``, same ids, same order). Where the dataset the run
read is at hand, each deterministic metric whose definitions and version are the run's is scored again from them (a
live lane's run: from its answers in ``outputs.jsonl``) (``engine.jobs.rescore``): each score against the recorded
one, and the scorecard decided from the re-derived columns (a run with variants variant by variant). Judges,
commands and (unless asked) host code are checked for consistency only; one line says which were re-scored.

Limits: without anchoring or a signature, whoever can write the folder can rewrite scores, snapshots, fingerprints,
scorecard and digests consistently, and such a run verifies as consistent; only the anchors above catch that.
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import orjson

from evalglass.core.authority import CalibrationRecord, JudgeStanding, Ledger
from evalglass.core.calendar import day_of_timestamp
from evalglass.core.columns import ScoreColumn
from evalglass.core.decide import RunShape
from evalglass.core.endpoint import JudgeEndpoint
from evalglass.core.fingerprint import PREFIX, fingerprint_of, fingerprint_of_bytes, short
from evalglass.core.recordrules import (
    CURRENT_RULES,
    CurrentOutcome,
    DecisionRules,
    count_unbound_gates,
    older_rules_problem,
    recorded_rules,
)
from evalglass.core.runrecord import COMPARED_DIR, GRADED_FILE, SCORES_FILE, VARIANTS_DIR, RunRecord
from evalglass.core.scorecard import CallTotals, DatasetSummary, Scorecard, count_call_attempts
from evalglass.engine.decide.decision import Evidence, decided_scorecard
from evalglass.engine.runs.artifacts import (
    REPORT_FILE,
    RUNRECORD_FILE,
    SCORECARD_FILE,
    load_columns,
    load_json,
    load_runrecord,
    load_scorecard,
    model_bytes,
    refuse_unfinished,
)
from evalglass.engine.runs.digests import (
    DIGESTS_FILE,
    artifact_names,
    file_sha256,
    key_fingerprint,
    load_digests,
    public_key,
    signature_valid,
)
from evalglass.engine.runs.integrity import ArtifactCheck, ArtifactProblem
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.engine.spec.config import Config, config_as_recorded, config_from_record, definition_file_hashes
from evalglass.engine.spec.ledger import ledger_problems, parse_ledger
from evalglass.engine.spec.samplecount import SAMPLES_KEY
from evalglass.engine.spec.staleness import stale_causes
from evalglass.engine.spec.validation import validate_document
from evalglass.errors import SetupError
from evalglass.lanes.checkspec import CheckSpec
from evalglass.readers.userfiles import open_regular, read_regular
from evalglass.readers.yamlsource import parse_yaml

if TYPE_CHECKING:
    from evalglass.engine.jobs.rescore import Rescored

#: A run with judges of variants side by side: their scores.
COMPARED_SCORES = f"{COMPARED_DIR}/{SCORES_FILE}"


@dataclass(frozen=True)
class Finding:
    field: str
    recorded: Any
    derived: Any


@dataclass(frozen=True)
class VerifyReport:
    folder: Path
    findings: tuple[Finding, ...]
    examples: int
    anchors: tuple[str, ...] = field(default=())
    signature: str = "unsigned"

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def exit_code(self) -> int:
        """What ``evalglass verify`` exits with: 0 when the run re-derives exactly, 1 when anything differs."""
        from evalglass.core.exitcodes import ExitCode

        return int(ExitCode.OK if self.ok else ExitCode.FAILED)


@dataclass(frozen=True)
class Anchors:
    """The files to anchor a run to: explicit paths must exist; by default, the paths the run record names."""

    config: Path | None = None
    ledger: Path | None = None
    #: The dataset to re-score from (default: the path the config snapshot names, beside the config).
    dataset: Path | None = None


def verify_run(
    folder: Path,
    anchors: Anchors | None = None,
    key: str | None = None,
    *,
    strict: bool = False,
    rescore_host: bool = False,
) -> VerifyReport:
    """Verify the run in ``folder`` (module docstring). ``strict``: what the anchoring could not establish is a
    finding, not a statement: a config or ledger not at hand, and definition files or a dataset beside the config
    that are not the ones the run hashed (or cannot be hashed), so that a run verifies only while the repository
    still holds exactly what it was decided on. ``rescore_host``: python metrics are scored again too (in their
    worker processes, as ``run`` scores them)."""
    if key is not None:
        public_key(key)  # a key that is no key is exit 2 at once, not "NOT signed" (exit 1) for an unsigned run
    refuse_unfinished(folder)
    record = load_runrecord(folder)
    raw_scorecard = load_json(folder / SCORECARD_FILE, "scorecard")
    findings: list[Finding] = []
    config = _config_snapshot(record, findings)
    ledger, ledger_where = _ledger_snapshot(record, config, findings)
    names = list(config.metrics)
    files = _scores_files(config, record)
    by_file = {
        file: load_columns(
            folder / file,
            names,
            samples=config.samples,
            clustered=config.dataset.cluster_field is not None,
            ids=record.kept_outputs is not None,
        )
        for file in files.values()
    }
    loaded_scores = by_file[record.scores_file] if record.scores_file in by_file else next(iter(by_file.values()))
    examples = loaded_scores.examples
    columns = _flattened_columns(files, by_file)
    known = {file: loaded.sha256 for file, loaded in by_file.items()}
    if config.variant_names and config.compared_metrics:
        compared = load_columns(
            folder / COMPARED_SCORES,
            list(config.compared_metrics),
            samples=config.samples,
            clustered=config.dataset.cluster_field is not None,
        )
        columns.update(compared.columns)
        known[COMPARED_SCORES] = compared.sha256
        if record.compared_scores is None:  # the record binds none; when it does, ArtifactCheck checks them
            findings.append(Finding("runrecord.compared_scores", record.compared_scores, compared.sha256))
        if compared.examples != examples:
            findings.append(Finding(f"{COMPARED_SCORES}: examples", examples, compared.examples))
        findings.extend(_graded_findings(folder, config))
    # The artifacts as a set, by the one check every reader makes too: every listed file's bytes, and every file the
    # run record binds by its hash (the scores as loaded above, a variant's, the kept outputs).
    damaged = ArtifactCheck(folder, load_digests(folder), known).problems(record)
    findings[:0] = [Finding(item.field, item.recorded, item.found) for item in damaged]
    for file, loaded in by_file.items():
        if record.variant_scores and file not in record.variant_scores:
            # A variant the config implies that the record binds no scores of (those it binds: the check above).
            findings.append(Finding(f"runrecord.variant_scores.{file}", None, loaded.sha256))
        if loaded.examples != examples:
            findings.append(Finding(f"{file}: examples", examples, loaded.examples))
    if examples != record.dataset.examples:
        findings.append(Finding("runrecord.dataset.examples", record.dataset.examples, examples))
    anchors = _checked(anchors or Anchors())
    config_path = anchors.config if anchors.config is not None else Path(record.config_path)
    rescored = _rescored(folder, record, config, config_path, anchors, damaged, rescore_host)
    findings.extend(Finding(*item) for item in rescored.findings)
    for metric, column in rescored.columns.items():
        recorded_column = columns.get(metric)
        if recorded_column is not None and len(column) == len(recorded_column):  # decided from the re-derived scores
            columns[metric] = column
    rules = recorded_rules(record)
    now_fingerprints = {name: config.gate_fingerprint(name, record.definition_files) for name in config.gates}
    # As the record's rules fingerprinted its gates: one recorded before the samples per example were bound
    # (core/recordrules.py) without that count.
    gate_fingerprints = {
        **now_fingerprints,
        **{name: _without_count(config, name, record) for name in count_unbound_gates(rules, record)},
    }
    for name in sorted(set(gate_fingerprints) | set(record.gate_fingerprints)):
        if record.gate_fingerprints.get(name) != gate_fingerprints.get(name):
            findings.append(
                Finding(
                    f"runrecord.gate_fingerprints.{name}",
                    record.gate_fingerprints.get(name, "<absent>"),
                    gate_fingerprints.get(name, "<absent>"),
                )
            )
    # Which evaluator versions decided: recorded by the run, re-derived from its config by this EvalGlass. A
    # difference names the evaluator and both versions (a record edited, or a version bumped since the run).
    findings.extend(_diff("runrecord.gate_evaluators", record.gate_evaluators, config.evaluators_by_gate()))
    standings, current_standings = _judge_standings(config, record, rules, findings)
    comparative = None
    if any(gate.compare_to is not None for gate in config.gates.values()):
        from evalglass.engine.decide.baselines import baselines_for_verify, comparative_inputs

        comparative = comparative_inputs(
            config,
            folder / record.scores_file,
            record.definition_files,
            record.dataset,
            baselines_for_verify(config, record, folder, unfavourable_ties=rules.unfavourable_ties),
            run_day(record),
        )
    evidence = Evidence(
        run_id=record.run_id,
        created_at=record.created_at,
        tool_version=record.tool_version,
        ledger=ledger,
        gate_fingerprints=gate_fingerprints,
        check_results=record.check_results,
        today=run_day(record),
        standings=standings,
        comparative=comparative,
        ledger_where=ledger_where,
        # A reason the run named from an earlier run's files is re-derived from the files it recorded (checked
        # against the approved fingerprint again, so a forged entry names nothing).
        stale=stale_causes(
            config, record.definition_files, ledger, gate_fingerprints, earlier=lambda: record.approved_files
        ),
        every_judged_gate=rules.every_judged_gate,
        examples_bound=rules.examples_bound,
        unfavourable_ties=rules.unfavourable_ties,
        counts_compared=rules.counts_compared,
        # What the run found its checks leave unbound: found from the files then, recorded (as the record's rules
        # read it: core/recordrules.py).
        unbound_check_code=rules.unbound_code(record),
    )
    shape = RunShape(
        examples=examples,
        example_of_row=_ints(loaded_scores.example_of_row),
        clusters=_ints(loaded_scores.cluster_ids),
    )
    dataset = DatasetSummary(**{**record.dataset.model_dump(), "examples": examples})
    # Usage is counted as calls complete; there is nothing to re-derive it from in the scores.
    # What judge notes add (a jury's agreement, pairwise win rates) is re-derived from outputs.jsonl, as the run did.
    from evalglass.engine.explore.judgedsummaries import judged_summaries

    calls = recorded_call_totals(folder, config.variant_names, compared=bool(config.compared_metrics))
    judged = judged_summaries(config, folder)
    derived = decided_scorecard(config, columns, shape, dataset, evidence, calls, record.usage, judged)
    derived_json = derived.model_dump(mode="json")
    findings.extend(_diff("scorecard", raw_scorecard, orjson.loads(orjson.dumps(derived_json))))
    if not findings:
        # Equal values in other bytes (a repeated key, whose last copy a JSON reader keeps) are an edit too.
        findings.extend(_byte_findings(folder / SCORECARD_FILE, derived_json))
        findings.extend(_byte_findings(folder / RUNRECORD_FILE, record.model_dump(mode="json")))
    findings.extend(_report_findings(folder, derived))
    if not findings:
        # Only a scorecard that matches field by field is also loaded through its own validators.
        load_scorecard(folder)
    if not rules.current:
        # Re-derived as recorded, the run adds up; whether it is green is the current rules' to say.
        current = replace(
            evidence,
            gate_fingerprints=now_fingerprints,
            stale=stale_causes(
                config, record.definition_files, ledger, now_fingerprints, earlier=lambda: record.approved_files
            ),
            standings=current_standings,
            every_judged_gate=CURRENT_RULES.every_judged_gate,
            examples_bound=CURRENT_RULES.examples_bound,
            unfavourable_ties=CURRENT_RULES.unfavourable_ties,
            counts_compared=CURRENT_RULES.counts_compared,
            unbound_check_code=CURRENT_RULES.unbound_code(record),
            comparative=comparative
            if comparative is None or rules.unfavourable_ties
            else replace(comparative, baselines=baselines_for_verify(config, record, folder, unfavourable_ties=True)),
        )
        decided_now = decided_scorecard(config, columns, shape, dataset, current, calls, record.usage, judged)
        findings.extend(_older_rules_findings(rules, derived, decided_now))
    statements = _anchor(record, anchors, findings, strict=strict)
    said, as_recorded = _files_at_hand(record, config, config_path, findings if strict else None)
    statements += said
    statements += _check_facts(record, config_path, as_recorded, findings)
    if record.kept_outputs is not None and all(item.file != record.kept_outputs.file for item in damaged):
        from evalglass.engine.runs.keptoutputs import kept_against_scores

        scored_ids = loaded_scores.ids.tolist() if loaded_scores.ids is not None else []
        kept_findings, kept_statement = kept_against_scores(folder, record, scored_ids)
        findings.extend(Finding(*item) for item in kept_findings)
        if kept_statement is not None:
            statements.append(kept_statement)
    statements += rescored.said
    extra = _unlisted(folder)
    if extra:
        # Said, not counted: files written into the folder after the run (a JUnit report, an HTML page) are not
        # artifacts the run vouches for, and nothing verify checks reads them.
        statements.append(f"not covered by the digests (added after the run): {', '.join(extra)}")
    signature = _signature(folder, key, findings)
    return VerifyReport(
        folder=folder, findings=tuple(findings), examples=examples, anchors=tuple(statements), signature=signature
    )


def _rescored(
    folder: Path,
    record: RunRecord,
    config: Config,
    config_path: Path,
    anchors: Anchors,
    damaged: list[ArtifactProblem],
    host: bool,
) -> Rescored:
    """The run's deterministic metrics scored again from its kept outputs (``engine.jobs.rescore``), once the
    files that reads (the scores, the kept outputs or a lane's answers) are the ones the digests name."""
    from evalglass.engine.jobs.rescore import Rescored, rescore_run

    read = {record.scores_file, OUTPUTS_FILE, record.kept_outputs.file if record.kept_outputs is not None else ""}
    for name in config.variant_names:  # a variant's scores and answers, each re-scored from its folder
        read |= {f"{VARIANTS_DIR}/{name}/{SCORES_FILE}", f"{VARIANTS_DIR}/{name}/{OUTPUTS_FILE}"}
    if any(item.file in read for item in damaged):
        return Rescored(said=("re-scored: none (the files it reads do not add up: see the findings)",))
    return rescore_run(folder, record, config, config_path, dataset=anchors.dataset, host=host)


def _without_count(config: Config, name: str, record: RunRecord) -> str:
    """Gate ``name``'s fingerprint as a run recorded before the samples per example were bound took it."""
    definition = config.gate_definition(name, record.definition_files)
    definition.pop(SAMPLES_KEY, None)
    return fingerprint_of(definition)


def run_day(record: RunRecord) -> str:
    """The day a run decided on (approvals expire by it): the date of its ``created_at``, which the digests cover."""
    try:
        return day_of_timestamp(record.created_at)
    except ValueError:
        raise SetupError(
            f"the run record's created_at {record.created_at!r} is not a timestamp", where="runrecord.json"
        ) from None


def _scores_files(config: Config, record: RunRecord) -> dict[str | None, str]:
    """Per variant (None: a run without variants), the scores file its columns are read from: the files the
    config's variants imply, never a list the run record could shorten."""
    if not config.variant_names:
        return {None: record.scores_file}
    return {name: f"{VARIANTS_DIR}/{name}/{SCORES_FILE}" for name in config.variant_names}


def _graded_findings(folder: Path, config: Config) -> list[Finding]:
    """``compared/graded.jsonl`` is what the judges of variants were shown: it must be what the variants' outputs
    files imply, byte for byte (an edited copy, digests resealed, would claim they judged something else)."""
    import hashlib

    from evalglass.engine.explore.variantoutputs import graded_lines

    derived = hashlib.sha256()
    for line in graded_lines(folder, config.compared_variants, samples=config.samples):
        derived.update(line)
    path = folder / COMPARED_DIR / GRADED_FILE
    found = file_sha256(path) if path.is_file() else "<missing>"
    expected = PREFIX + derived.hexdigest()
    return [] if found == expected else [Finding(f"{COMPARED_DIR}/{GRADED_FILE}", expected, found)]


def _flattened_columns(files: dict[str | None, str], by_file: dict[str, Any]) -> dict[str, ScoreColumn]:
    from evalglass.core.variants import variant_metric

    columns: dict[str, ScoreColumn] = {}
    for variant, file in files.items():
        for metric, column in by_file[file].columns.items():
            columns[metric if variant is None else variant_metric(metric, variant)] = column
    return columns


def _unlisted(folder: Path) -> list[str]:
    digests = load_digests(folder)
    return [] if digests is None else [name for name in artifact_names(folder) if name not in digests.files]


def _config_snapshot(record: RunRecord, findings: list[Finding]) -> Config:
    """The config the run decided with: parsed from the recorded source when it hashes to the recorded fingerprint,
    with every difference from the parsed snapshot reported."""
    try:
        snapshot = config_from_record(record.config)
    except Exception as exc:
        raise SetupError(f"run record's config no longer validates: {exc}", where="runrecord.json") from None
    source = record.config_source
    if source is None:
        findings.append(Finding("runrecord.config_source", "<absent>", "the config's text as the run read it"))
        return snapshot
    raw = source.encode("utf-8")
    if fingerprint_of_bytes(raw) != record.config_fingerprint:
        findings.append(Finding("runrecord.config_fingerprint", record.config_fingerprint, fingerprint_of_bytes(raw)))
    try:
        parsed = validate_document(Config, parse_yaml(raw, Path(record.config_path), what="config"), what="the config")
    except SetupError as exc:
        findings.append(Finding("runrecord.config_source", "<does not parse>", exc.line()))
        return snapshot
    findings.extend(_diff("runrecord.config", record.config, config_as_recorded(parsed)))
    return parsed


def _ledger_snapshot(record: RunRecord, config: Config, findings: list[Finding]) -> tuple[Ledger, dict[str, str]]:
    """The ledger the run decided with, as :func:`_config_snapshot` finds the config; the decisions are then
    re-applied from it, so an edited threshold, ``active`` or dataset fingerprint in the snapshot is a finding."""
    source = record.ledger_source
    if source is None:
        findings.append(Finding("runrecord.ledger_source", "<absent>", "the ledger's text as the run read it"))
        return record.ledger, {}
    raw = source.encode("utf-8")
    if fingerprint_of_bytes(raw) != record.ledger_fingerprint:
        findings.append(Finding("runrecord.ledger_fingerprint", record.ledger_fingerprint, fingerprint_of_bytes(raw)))
    try:
        loaded = parse_ledger(raw, Path(record.ledger_path))
    except SetupError as exc:
        findings.append(Finding("runrecord.ledger_source", "<does not parse>", exc.line()))
        return record.ledger, {}
    findings.extend(
        _diff("runrecord.ledger", record.ledger.model_dump(mode="json"), loaded.ledger.model_dump(mode="json"))
    )
    for loc, problem, _ in ledger_problems(loaded.ledger, config):
        findings.append(Finding("runrecord.ledger_source", loaded.where(loc), f"a run refuses this ledger: {problem}"))
    return loaded.ledger, loaded.gate_where()


def _byte_findings(path: Path, document: Any) -> list[Finding]:
    """The file must hold exactly the bytes ``run`` writes for ``document`` (see ``artifacts.write_model``)."""
    if _artifact_bytes(path) != model_bytes(document):
        return [Finding(path.name, "<other bytes>", "the bytes `evalglass run` writes for the same values")]
    return []


def _report_findings(folder: Path, derived: Scorecard) -> list[Finding]:
    from evalglass.engine.explore.reportfile import report_markdown

    recorded = _artifact_bytes(folder / REPORT_FILE)
    if recorded is None:
        return [Finding(REPORT_FILE, "<missing>", "rendered from the scorecard")]
    rendered = report_markdown(folder, derived).encode()
    if recorded != rendered:
        return [Finding(REPORT_FILE, _first_difference(recorded, rendered), "rendered from the scorecard")]
    return []


def _artifact_bytes(path: Path) -> bytes | None:
    """A run artifact's bytes, or None when it is no regular file it can read. Verify goes on past a damaged
    folder to name every difference, so a FIFO in place of ``report.md`` hung it (``readers.userfiles``); the
    integrity check has named it already."""
    try:
        return read_regular(path, what=path.name)
    except SetupError:
        return None


def _first_difference(recorded: bytes, rendered: bytes) -> str:
    old, new = recorded.decode("utf-8", "replace").splitlines(), rendered.decode().splitlines()
    for number, (left, right) in enumerate(zip(old, new, strict=False), start=1):
        if left != right:
            return f"line {number} differs: {left[:120]!r}"
    return f"{len(old)} lines where the scorecard renders {len(new)}"


def _checked(anchors: Anchors) -> Anchors:
    """``anchors`` with an explicit dataset checked now and made absolute. A dataset the user named that is not a
    regular file was said as "not at hand" and the run passed without a single score re-derived (a silent pass);
    a relative one was checked from the working folder but then read from the config's folder."""
    if anchors.dataset is None:
        return anchors
    fix = "pass --dataset the dataset file the run read"
    open_regular(anchors.dataset, what="dataset to re-score from", missing_fix=fix, other_fix=fix).close()
    return replace(anchors, dataset=Path(os.path.abspath(anchors.dataset)))


def _anchor(record: RunRecord, anchors: Anchors, findings: list[Finding], *, strict: bool = False) -> list[str]:
    """Whether the run read the config and ledger files at hand now; a difference is a finding, said plainly, and
    so (``strict``) is a file not at hand."""
    statements: list[str] = []
    for what, explicit, recorded_path, recorded in (
        ("config", anchors.config, record.config_path, record.config_fingerprint),
        ("ledger", anchors.ledger, record.ledger_path, record.ledger_fingerprint),
    ):
        path = explicit if explicit is not None else Path(recorded_path)
        try:
            # Only a regular file: a FIFO named by --config would hang the read (readers.userfiles).
            current = fingerprint_of_bytes(
                read_regular(
                    path,
                    what=f"{what} to anchor to",
                    missing_fix=f"check the --{what} path",
                    other_fix=f"pass --{what} the {what} file itself",
                )
            )
        except SetupError:
            if explicit is not None:
                raise
            statements.append(f"{what}: not anchored ({path} is not at hand here; pass --{what} PATH)")
            if strict:
                findings.append(Finding(f"anchor.{what}", recorded, f"{path}: <not at hand>"))
            continue
        if current == recorded:
            statements.append(f"{what}: decided under {path} as it is now ({short(recorded)})")
        else:
            statements.append(
                f"{what}: NOT decided under {path} as it is now: the run read {short(recorded)}, the file is "
                f"{short(current)}"
            )
            findings.append(Finding(f"anchor.{what}", recorded, f"{path}: {current}"))
    return statements


def _files_at_hand(
    record: RunRecord, config: Config, config_path: Path, strict: list[Finding] | None = None
) -> tuple[list[str], bool]:
    """Whether the files beside the config the run read (the definition files its gate fingerprints re-derive
    from, the dataset whose gold the ledger approves) are the ones it hashed, said in one line each, and whether
    the definition files are (so what the run found in that folder can be found again). A difference is said, not
    counted: verify cannot tell a file changed since the run (an earlier run keeps verifying on its own snapshot)
    from a record rewritten to the approved hashes; a signature tells them apart. Under ``verify --strict`` (the
    findings list ``strict``) each difference, and a file that cannot be read, is also a finding: the run verifies
    only while the folder holds what it was decided on. (A config that is not the one the run read is the
    anchor's finding already.)"""
    if not _read_as_recorded(config_path, record):
        return [], False
    folder = config_path.parent
    try:
        files = definition_file_hashes(config, folder)
    except SetupError as exc:
        if strict is not None:
            strict.append(Finding("anchor.definition_files", "<hashed by the run>", f"cannot be hashed: {exc.what}"))
        return [f"definition files: cannot be hashed here ({exc.what})"], False
    recorded_files = record.definition_files
    differ = sorted(key for key in {*files, *recorded_files} if files.get(key) != recorded_files.get(key))
    if strict is not None:
        strict.extend(
            Finding(f"anchor.definition_files.{key}", recorded_files.get(key, "<absent>"), files.get(key, "<absent>"))
            for key in differ
        )
    said = [
        f"definition files: NOT the ones the run hashed ({', '.join(differ)} in {folder}): changed since the run, or "
        "the record rewritten; its gate fingerprints re-derive from the recorded hashes"
        if differ
        else f"definition files: the ones in {folder} are the ones the run hashed"
    ]
    from evalglass.engine.datasets.datasetfile import comparison_identity
    from evalglass.engine.spec.config import load_config

    try:
        gold, fingerprint, _ = comparison_identity(load_config(config_path))
    except SetupError as exc:
        if strict is not None:
            strict.append(Finding("anchor.dataset", record.dataset.fingerprint, f"cannot be read: {exc.what}"))
        said.append(f"dataset: cannot be read here ({exc.what})")
        return said, not differ
    dataset = record.dataset
    found = (("file", dataset.fingerprint, fingerprint), ("gold", dataset.gold_fingerprint, gold))
    changed = [name for name, recorded, now in found if recorded is not None and recorded != now]
    if strict is not None:
        strict.extend(
            Finding(f"anchor.dataset.{'fingerprint' if name == 'file' else 'gold_fingerprint'}", recorded, now)
            for name, recorded, now in found
            if name in changed
        )
    said.append(
        f"dataset: NOT the one the run read (its {' and '.join(changed)} fingerprint differ): changed since the run, "
        "or the record rewritten; the ledger approved the recorded gold fingerprint"
        if changed
        else f"dataset: {dataset.path} is the one the run read"
    )
    return said, not differ


def _read_as_recorded(path: Path, record: RunRecord) -> bool:
    """Whether ``path`` holds the config text the run read (so its folder is the one the run read its files in).
    Only a regular file is read: a FIFO at the recorded path hung verify (``readers.userfiles``); one that cannot be
    read is not the file the run read (the anchor says it is not at hand)."""
    try:
        return fingerprint_of_bytes(read_regular(path, what="config")) == record.config_fingerprint
    except SetupError:
        return False


def _check_facts(record: RunRecord, config_path: Path, as_recorded: bool, findings: list[Finding]) -> list[str]:
    """What the record says of its checks, against the config snapshot: each result judged as its check is declared
    (``consistency.check_declaration_problems``), and what each check runs unbound re-derived. With the config file
    the run read at hand and its definition files as the run hashed them (``as_recorded``), re-derived in full in
    its folder (``lanes.checkinputs.unbound_inputs``); otherwise from the record alone, which cannot see the folders
    a command names: said in one line. A check's outcome and
    its target's state are the run's word (a check is not re-run): only a signature vouches for them."""
    from evalglass.engine.decide.consistency import check_declaration_problems, unbound_claims

    declared = check_declaration_problems(record)
    findings.extend(
        Finding("runrecord.check_results", line, "as the config snapshot declares the check") for line in declared
    )
    if not record.check_results and not record.unbound_check_code:
        return []
    base = config_path.parent

    def in_folder(_: str, spec: CheckSpec) -> tuple[str, ...]:
        from evalglass.lanes.checkinputs import unbound_inputs

        return unbound_inputs(spec, base)

    for claim in unbound_claims(record, in_folder if as_recorded else None):
        findings.append(Finding(f"runrecord.{claim.field}", claim.recorded, claim.what))
    said = [
        f"check code binding: what each check runs unbound re-derived in {base}"
        if as_recorded
        else "check code binding: re-derived from the run record alone (runners, -m modules, variables); the "
        f"folders a check's command names were NOT checked ({base} is not at hand as the run read it: pass --config, "
        "or verify where the run ran)"
    ]
    if record.check_results:
        said.append(
            "check results: outcomes and target states are the run's word (checks are not re-run; a signature "
            "vouches for them)"
        )
    return said


def _signature(folder: Path, key: str | None, findings: list[Finding]) -> str:
    digests = load_digests(folder)
    signed = digests is not None and digests.signature is not None
    if key is None:
        return "signed, but not checked (pass --key)" if signed else "unsigned"
    if digests is None or digests.signature is None:
        findings.append(Finding(f"{DIGESTS_FILE}.signature", "<absent>", "a signature by the given key"))
        return "NOT signed"
    if not signature_valid(digests, key):
        findings.append(Finding(f"{DIGESTS_FILE}.signature", digests.signature.value, "<does not match the key>"))
        return "signature does NOT match the given key"
    # The fingerprint a ledger names the key by (a baseline that follows a branch: `signed_by:`).
    return f"signed by the given key ({key_fingerprint(key)})"


def recorded_call_totals(folder: Path, variants: tuple[str, ...] = (), *, compared: bool = False) -> CallTotals | None:
    """The call totals ``outputs.jsonl`` records (None when the run wrote none: a recorded run); a run with
    ``variants``, the sum of every variant's (and, ``compared``, of its judges of variants side by side)."""
    if variants:
        folders = [folder / VARIANTS_DIR / name for name in variants] + ([folder / COMPARED_DIR] if compared else [])
        each = [totals for found in folders if (totals := recorded_call_totals(found)) is not None]
        if not each:
            return None
        return CallTotals(calls=sum(t.calls for t in each), attempts=sum(t.attempts for t in each))
    path = folder / "outputs.jsonl"
    if not path.exists():
        return None
    from evalglass.engine.explore.judgedsummaries import outputs_rows

    calls = attempts = 0
    for row in outputs_rows(path):
        found = count_call_attempts(row)
        calls, attempts = calls + found[0], attempts + found[1]
    return CallTotals(calls=calls, attempts=attempts)


@dataclass(frozen=True)
class _Judge:
    """A judge as verify re-derives it: its fingerprint and endpoint from its spec, its calibration as recorded."""

    name: str
    fingerprint: str
    calibration: CalibrationRecord | None
    endpoint: JudgeEndpoint


def _judge_standings(
    config: Config, record: RunRecord, rules: DecisionRules, findings: list[Finding]
) -> tuple[dict[str, JudgeStanding], dict[str, JudgeStanding]]:
    """Each judge's standing under the rules the record claims and under the current ones
    (``core.recordrules``): its fingerprint and serving endpoint re-derived from its spec and the rubric hash the
    run recorded, with the calibration record the run snapshotted (a later recalibration does not change what this
    run decided on)."""
    judges: list[_Judge] = []
    for name, spec in config.judges.items():
        files = record.definition_files.get(name, {})
        recorded = record.judge_fingerprints.get(name)
        derived = spec.calibration_fingerprint(next(iter(files.values()))) if files else recorded
        if derived is None:
            findings.append(Finding(f"runrecord.judge_fingerprints.{name}", recorded, "<cannot be derived>"))
            continue
        if recorded != derived:
            findings.append(Finding(f"runrecord.judge_fingerprints.{name}", recorded, derived))
        endpoint = spec.judge_endpoint()
        if name in record.judge_endpoints and record.judge_endpoints[name] != endpoint:
            findings.append(Finding(f"runrecord.judge_endpoints.{name}", record.judge_endpoints[name], endpoint))
        judges.append(_Judge(name, derived, record.calibrations.get(name), endpoint))
    claimed = {
        judge.name: rules.standing(judge.name, judge.fingerprint, judge.calibration, judge.endpoint) for judge in judges
    }
    current = {
        judge.name: CURRENT_RULES.standing(judge.name, judge.fingerprint, judge.calibration, judge.endpoint)
        for judge in judges
    }
    return claimed, current


def _older_rules_findings(rules: DecisionRules, recorded: Scorecard, current: Scorecard) -> list[Finding]:
    """A run whose record claims older rules must be as green under the current ones (``core.recordrules``)."""
    problem = older_rules_problem(
        rules,
        {gate.name: gate.outcome for gate in recorded.decision.gates},
        [
            CurrentOutcome(gate.name, gate.outcome, tuple(reason.code for reason in gate.reasons if reason.code.blocks))
            for gate in current.decision.gates
        ],
    )
    return [] if problem is None else [Finding(problem.field, problem.claimed, problem.current)]


def _ints(values: array[int] | None) -> npt.NDArray[np.int64] | None:
    return None if values is None else np.frombuffer(values, dtype=np.int64)


def _diff(path: str, recorded: Any, derived: Any) -> list[Finding]:
    """Every leaf where the recorded document differs from the derived one, by dotted path."""
    if isinstance(recorded, dict) and isinstance(derived, dict):
        out: list[Finding] = []
        for key in sorted(set(recorded) | set(derived)):
            out.extend(_diff(f"{path}.{key}", recorded.get(key, "<absent>"), derived.get(key, "<absent>")))
        return out
    if isinstance(recorded, list) and isinstance(derived, list):
        out = []
        for index in range(max(len(recorded), len(derived))):
            left = recorded[index] if index < len(recorded) else "<absent>"
            right = derived[index] if index < len(derived) else "<absent>"
            out.extend(_diff(f"{path}[{_label(right, left, index)}]", left, right))
        return out
    if recorded != derived or (type(recorded) is not type(derived) and not _same_number(recorded, derived)):
        return [Finding(path, recorded, derived)]
    return []


def _same_number(left: Any, right: Any) -> bool:
    return (
        isinstance(left, int | float)
        and isinstance(right, int | float)
        and not isinstance(left, bool)
        and not isinstance(right, bool)
        and left == right
    )


def _label(derived: Any, recorded: Any, index: int) -> str:
    for item in (derived, recorded):
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            return str(item["name"])
    return str(index)
