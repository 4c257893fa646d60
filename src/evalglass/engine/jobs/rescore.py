"""``verify``'s re-scoring: every metric that declares itself deterministic (``MetricSpec.deterministic``: the
builtin rules) scored again from the outputs a run kept and the dataset it read, score by score against
``scores.jsonl``; the columns it makes then decide the scorecard in ``verify`` (``decided_scorecard``, the one
assembly ``run`` uses), so the aggregates and the verdict are re-derived from re-derived scores.

What it re-scores, and what it only says:

- **Which runs.** Any run that kept what it scored (a run with variants variant by variant:
  ``_rescore_variants``, a recorded variant from the dataset file the run read, which must be that very file, or
  from its own outputs file, only when that file hashes to ``RunRecord.variant_outputs``'s SHA-256): a
  recorded run its outputs (``runrecord.kept_outputs``, ``engine.runs.keptoutputs``), a live lane's run each
  sample's answer or failure in
  ``outputs.jsonl`` (``engine.produce.liveoutputs``), made into the sample rows the live scorer made
  (``LiveScorer._lane_rows``: ``parse: json``, an answer marked not JSON, a failure's score, a cut-off answer's
  note). A failure keeps its code and message only, so its score is held to its state and code, not byte for byte.
- **Which metrics.** Those declaring ``deterministic`` whose definition files beside the config are the ones the
  run hashed and whose evaluator version is the one the run's gates recorded; with ``host=True``
  (``verify --rescore-host``) also python metrics, through the same worker processes ``run`` uses
  (``metrics/hostscoring.py``: the metrics are built by the run's own ``build_metrics``). Judges (a model's answer)
  and metrics that run a command are never run again: checked for consistency only, and named so.
- **From what.** The kept outputs, with the records of the dataset file at the path the config snapshot names
  beside the config (or ``dataset``), read by the run's own reader (``DatasetSource``). That file must be the one
  the run read: its file fingerprint the run record's (then, where the outputs are recorded in the dataset itself,
  each kept output must be the one the file holds: one that is not is a finding naming the example), or its gold
  fingerprint the run record's (the same ids, inputs and references: outputs recorded in the file since are not
  held to). Otherwise nothing is re-scored and that is said: the records are not the ones scored. (``verify
  --strict`` counts a dataset that is not the run's through its anchor already.)
- **Compared how.** Each re-derived block is encoded as the run's sink encodes it (``RunSink``, the same
  ``encode_score`` and redactor) and compared with the recorded block metric by metric, as JSON; the first
  differing score is one finding naming the example, the metric and both scores, with how many differ in all.

- **Limits hit.** A score that is an ``error`` because a bound of time or depth was reached (:data:`LIMIT_CODES`:
  ``regex_timeout``, a CPU-time bound; ``metric_timeout``, a python metric's wall-clock bound; ``too_deep``, a
  recursion bound whose reach depends on the stack at the call) on either side is not re-derived: that outcome
  depends on the machine, its load and the call stack, not only on the inputs, so an honest run re-scored on a slower
  or faster machine can differ there. Such a score is counted and said ("not re-derived"), never a finding, and its
  metric's scorecard is decided from the recorded column (every other score of it was compared and agreed). What
  that does not prove: the recorded score of such an example, whichever it is.

Limits: a score that differs because this EvalGlass computes a metric of a type whose gates recorded no version (an
ungated metric) differently from the one that ran shows as a difference; an output holding a secret the run
redacted re-scores from its redacted text. Outputs rewritten together with their scores agree with each other:
re-scoring cannot see that, the dataset the run read (outputs recorded in it) or the signature can. What is
re-scored is chosen by the run record (its kept outputs, definition hashes, evaluator versions): a record rewritten
to name less re-scores less, said in the line, not a finding (a signature catches the rewrite). Memory: one compact
column per re-scored metric (as ``run`` holds) and one block at a time of everything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evalglass import redaction
from evalglass.core.columns import ScoreColumn
from evalglass.core.example import Example, ExampleBatch
from evalglass.core.fieldpath import ABSENT
from evalglass.core.fingerprint import short
from evalglass.core.outputparse import parse_json_output, read_stored_output
from evalglass.core.runrecord import SCORES_FILE, VARIANTS_DIR, RunRecord
from evalglass.core.score import Score
from evalglass.core.scorecard import DatasetSummary
from evalglass.engine.datasets.dataset import BadLine
from evalglass.engine.datasets.source import Batch, DatasetSource
from evalglass.engine.produce.livescorer import note_truncated
from evalglass.engine.produce.metricbuild import build_metrics
from evalglass.engine.produce.recordedrun import score_batch
from evalglass.engine.produce.scoring import BuiltMetric, call_metric, metric_pool
from evalglass.engine.produce.sink import Rows, RunSink, new_row_shape
from evalglass.engine.runs.keptoutputs import decoded_block, kept_lines
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.engine.runs.scoresblock import ScoresBlock, decode_block
from evalglass.engine.spec.config import Config, LoadedConfig, imports_key, metric_definition_hashes
from evalglass.errors import SetupError
from evalglass.lanes.base import DECLARED_JSON
from evalglass.lanes.metricworker import TIMED_OUT
from evalglass.lanes.ports import LaneFailure, failure_score
from evalglass.metrics.versions import METRIC_VERSIONS, EvaluatorKind, key_of

if TYPE_CHECKING:
    from concurrent.futures import Executor

#: (field, recorded, derived), as ``verify`` reports a finding.
Found = tuple[str, Any, Any]

#: Error codes whose outcome depends on time, load or the call stack rather than on the inputs alone (module
#: docstring, "Limits hit"): a score one side has with one of these is not held to the other side's.
LIMIT_CODES = frozenset({"regex_timeout", TIMED_OUT, "too_deep"})


@dataclass(frozen=True)
class Rescored:
    """What re-scoring found: the re-derived column of each metric scored again (empty when none was), the
    findings, and the lines saying what was re-scored and what was only checked for consistency."""

    columns: dict[str, ScoreColumn] = field(default_factory=dict)
    findings: tuple[Found, ...] = ()
    said: tuple[str, ...] = ()


def rescore_run(
    folder: Path,
    record: RunRecord,
    config: Config,
    config_path: Path,
    *,
    dataset: Path | None = None,
    host: bool = False,
) -> Rescored:
    """Score the run in ``folder`` again where it can be (module docstring). ``config``: the snapshot the run
    decided with; ``config_path``: the config file the run read, whose folder its relative paths resolve in."""
    if config.variant_names:
        return _rescore_variants(folder, record, config, config_path, dataset=dataset, host=host)
    chosen, only_consistent = _metrics_to_rescore(config, record, config_path.parent, host)
    consistent = _consistency_line(only_consistent)
    why_not = _why_not_rescored(folder, config, record)
    if why_not is None and not chosen:
        return Rescored(said=(f"re-scored: none; {consistent}",))
    path = dataset if dataset is not None else config_path.parent / config.dataset.path
    if why_not is None and not path.is_file():
        why_not = f"the dataset {path} is not at hand (pass --dataset PATH)"
    if why_not is not None:
        return Rescored(said=(f"re-scored: none ({why_not}); {_nothing_rescored(config)}",))
    redaction.declare(config.secret_names)  # as loading the config does for a run: its secrets are redacted alike
    if dataset is not None:
        config = config.model_copy(update={"dataset": config.dataset.model_copy(update={"path": str(dataset)})})
    loaded = LoadedConfig(config, config_path, record.config_fingerprint, record.definition_files)
    found = _Rescoring(folder, record, loaded, chosen).run()
    bound = record.dataset
    same_file = found.dataset.fingerprint == bound.fingerprint
    same_gold = bound.gold_fingerprint is not None and found.dataset.gold_fingerprint == bound.gold_fingerprint
    if not same_file and not same_gold:
        line = (
            f"re-scored: none (the dataset {path} is not the one the run read: its fingerprint is "
            f"{short(found.dataset.fingerprint)}, the run recorded {short(bound.fingerprint)}"
            + (", and its gold differs too" if bound.gold_fingerprint is not None else "")
            + f"); {_nothing_rescored(config)}"
        )
        return Rescored(said=(line,))
    if not same_file and found.stopped:
        return Rescored(said=(f"re-scored: none ({_reordered(path)}); {_nothing_rescored(config)}",))
    # The kept outputs held to the dataset's only where the file is the one the run read: outputs recorded in a file
    # whose gold is the run's may have been recorded again since.
    findings = (*found.findings, *(found.kept_differs if same_file else ()))
    source = (
        f"{path}, the file the run read"
        if same_file
        else f"the records of {path} (its gold fingerprint is the run's; its outputs are not the ones the run read)"
    )
    said = (
        f"re-scored {len(chosen)} of {len(config.metrics)} metrics ({', '.join(chosen)}) from "
        f"{'the lane answers in ' + OUTPUTS_FILE if config.lane is not None else 'the kept outputs'} and "
        f"{source}, score by score against {SCORES_FILE}"
        + (
            ": stopped, what it kept is not one entry per line of the dataset (see the findings)"
            if found.stopped
            else f": {found.differing} score(s) differ"
            if found.differing
            else ": every score as recorded"
        )
        + _limited_line(found.limited)
        + f"; {consistent}",
    )
    return Rescored(columns=found.columns, findings=findings, said=said)


def _reordered(path: Path) -> str:
    """Why a dataset that holds the run's gold but is not its file re-scores nothing when what the run kept (its
    outputs, a lane's answers) does not line up with it: re-scoring pairs them line by line, in the order the run
    read, and the gold fingerprint does not count the examples' order (``engine.datasets.gold``): the same gold in
    another order is no finding, only not the file the run read (``--strict`` counts that)."""
    return (
        f"the dataset {path} holds the run's gold, its examples in another order than the run read them or with "
        "other lines: what the run kept is paired with it line by line; pass the file the run read with --dataset"
    )


def _rescore_variants(
    folder: Path, record: RunRecord, config: Config, config_path: Path, *, dataset: Path | None, host: bool
) -> Rescored:
    """A run with variants, each variant scored again as ``run`` scored it (``Config.for_variant``), against its
    own ``variants/<name>/scores.jsonl``: a lane's variant from its answers in ``variants/<name>/outputs.jsonl``, a
    recorded one from the dataset file itself (such a run keeps no outputs: the file must be the one the run read,
    by its file fingerprint) or from its own outputs file (``task.path``), only when that file's SHA-256 is the one
    the run record binds (``variant_outputs``; none bound, an older record: that variant is consistency only). Its
    columns are the run's ``<metric>@<variant>`` ones. The judges of variants side by side (``compare_variants``) ask
    a model: checked for consistency only. Limit: an own outputs file is hashed, then read; a write in between moves
    its ctime, which is compared after."""
    from evalglass.core.variants import variant_metric
    from evalglass.readers.userfiles import file_state

    path = dataset if dataset is not None else config_path.parent / config.dataset.path
    compared = {
        f"{config.metrics[name].type} '{name}'": "a model's judgement, not asked again"
        for name in config.compared_metrics
    }
    if not path.is_file():
        return Rescored(
            said=(
                f"re-scored: none (the dataset {path} is not at hand (pass --dataset PATH)); "
                + _nothing_rescored(config),
            )
        )
    redaction.declare(config.secret_names)
    columns: dict[str, ScoreColumn] = {}
    findings: list[Found] = []
    parts: list[str] = []
    consistent: dict[str, str] = dict(compared)
    for name in config.variant_names:
        variant = config.for_variant(name)
        if dataset is not None:
            variant = variant.model_copy(update={"dataset": variant.dataset.model_copy(update={"path": str(dataset)})})
        chosen, only_consistent = _metrics_to_rescore(variant, record, config_path.parent, host)
        consistent.update({f"{kind} of variant '{name}'": why for kind, why in only_consistent.items()})
        where = f"{VARIANTS_DIR}/{name}/"
        live = variant.lane is not None
        if not chosen:
            continue
        if live and not (folder / where / OUTPUTS_FILE).is_file():
            parts.append(f"variant '{name}': none (the run kept no {where}{OUTPUTS_FILE})")
            continue
        own = config_path.parent / variant.outputs_path if variant.outputs_path is not None else None
        if live:
            source = f"the lane answers in {where}{OUTPUTS_FILE}"
        elif own is None:
            source = f"the outputs in the dataset {path}, the file the run read"
        else:
            # Its state before it is hashed: a write after that (which always moves its ctime) is seen below.
            state = file_state(own)
            why_not, source = _own_outputs(own, record.variant_outputs.get(name))
            if why_not is not None:
                parts.append(f"variant '{name}': none ({why_not})")
                continue
        loaded = LoadedConfig(variant, config_path, record.config_fingerprint, record.definition_files)
        found = _Rescoring(folder / where, record, loaded, chosen, label=where, source=source).run()
        same_file = found.dataset.fingerprint == record.dataset.fingerprint
        same_gold = (
            record.dataset.gold_fingerprint is not None
            and found.dataset.gold_fingerprint == record.dataset.gold_fingerprint
        )
        if not same_file and not ((live or own is not None) and same_gold):
            # Outputs recorded in the dataset file are its own: other bytes are other outputs. A lane's answers or
            # a variant's own outputs file need only the run's gold beside them.
            parts.append(
                f"variant '{name}': none (the dataset {path} is not the one the run read: its fingerprint is "
                f"{short(found.dataset.fingerprint)}, the run recorded {short(record.dataset.fingerprint)})"
            )
            continue
        if not same_file and found.stopped:
            parts.append(f"variant '{name}': none ({_reordered(path)})")
            continue
        if own is not None and file_state(own) != state:
            # Hashed, then read: a write in between (which always moves its ctime) is not what the run read.
            parts.append(f"variant '{name}': none (its outputs file {own} changed while verify read it)")
            continue
        findings.extend(found.findings)
        columns.update({variant_metric(metric, name): column for metric, column in found.columns.items()})
        parts.append(
            f"variant '{name}': {len(chosen)} of {len(variant.metrics)} metrics ({', '.join(chosen)}) from {source}, "
            f"score by score against {where}{SCORES_FILE}"
            + (
                ": stopped (see the findings)"
                if found.stopped
                else f": {found.differing} score(s) differ"
                if found.differing
                else ": every score as recorded"
            )
            + _limited_line(found.limited)
        )
    line = "re-scored per variant: " + "; ".join(parts) if parts else "re-scored: none"
    return Rescored(columns=columns, findings=tuple(findings), said=(f"{line}; {_consistency_line(consistent)}",))


def _own_outputs(path: Path, bound: str | None) -> tuple[str | None, str]:
    """Whether a recorded variant's own outputs file (``path``) is the one the run read, by the hash its run record
    binds (``RunRecord.variant_outputs``; a run with variants keeps no copy of its outputs): (why not, or None;
    the source to name)."""
    from evalglass.engine.runs.digests import file_sha256

    if bound is None:
        return (
            f"the run record binds no hash of its outputs file {path} (a run recorded before runs bound it, or a "
            "record rewritten so): nothing ties that file to the run",
            "",
        )
    if not path.is_file():
        return f"its outputs file {path} is not at hand", ""
    now = file_sha256(path)
    if now != bound:
        return (
            f"its outputs file {path} changed since the run: its sha256 is {short(now)}, the run recorded "
            f"{short(bound)}",
            "",
        )
    return None, f"the outputs in {path}, the file the run read (sha256 {short(bound)})"


def _metrics_to_rescore(
    config: Config, record: RunRecord, base_dir: Path, host: bool
) -> tuple[list[str], dict[str, str]]:
    """The metrics to score again, and for every other one why it is checked for consistency only."""
    try:
        current = metric_definition_hashes(config, base_dir)
    except SetupError as exc:
        current = {}
        unhashable: str | None = exc.what
    else:
        unhashable = None
    recorded_versions = {
        key: version for evaluators in record.gate_evaluators.values() for key, version in evaluators.items()
    }
    chosen: list[str] = []
    consistent: dict[str, str] = {}
    for name, spec in config.metrics.items():
        kind = f"{spec.type} '{name}'"
        version_key = key_of(EvaluatorKind.METRIC, spec.type)
        recorded = recorded_versions.get(version_key)
        if spec.live:
            consistent[kind] = "a model's judgement, not asked again"
        elif spec.host_functions() and not host:
            consistent[kind] = "host code, run again only with --rescore-host"
        elif not spec.deterministic and not spec.host_functions():
            consistent[kind] = "runs a command, not run again"
        elif unhashable is not None:
            consistent[kind] = f"its definition files cannot be hashed here ({unhashable})"
        elif any(current.get(key) != record.definition_files.get(key) for key in (name, imports_key(name))):
            consistent[kind] = f"its definition files in {base_dir} are not the ones the run hashed"
        elif recorded is not None and recorded != METRIC_VERSIONS.get(spec.type, recorded):
            consistent[kind] = (
                f"the run scored it with {spec.type}@{recorded}, this EvalGlass has @{METRIC_VERSIONS[spec.type]}"
            )
        else:
            chosen.append(name)
    return chosen, consistent


def _limited_line(limited: dict[str, int]) -> str:
    if not limited:
        return ""
    counts = ", ".join(f"{count} of '{name}'" for name, count in limited.items())
    return (
        f" ({counts} not re-derived: a bound of time or depth ({', '.join(sorted(LIMIT_CODES))}) was reached in the "
        "run or here, an outcome of the machine and its load, not of the outputs; those metrics decided from "
        "their recorded scores)"
    )


def _nothing_rescored(config: Config) -> str:
    return f"every metric ({', '.join(config.metrics)}) checked for consistency only"


def _consistency_line(consistent: dict[str, str]) -> str:
    if not consistent:
        return "nothing checked for consistency only"
    return "checked for consistency only: " + "; ".join(f"{kind} ({why})" for kind, why in consistent.items())


def _why_not_rescored(folder: Path, config: Config, record: RunRecord) -> str | None:
    """Why this run's scores cannot be re-derived from kept outputs at all; None when they can."""
    if config.lane is not None:
        return None if (folder / OUTPUTS_FILE).is_file() else f"the run kept no {OUTPUTS_FILE}"
    if record.kept_outputs is None:
        return "the run record names no kept outputs (a run recorded before runs kept them, or a record rewritten so)"
    return None


@dataclass
class _Found:
    columns: dict[str, ScoreColumn]
    findings: list[Found]
    differing: int
    #: The dataset as read: its file and gold fingerprints.
    dataset: DatasetSummary
    #: The first kept output that is not the one the dataset file holds (outputs recorded in the dataset only).
    kept_differs: list[Found]
    #: Scoring stopped where the dataset's lines were not the kept ones (the findings say where).
    stopped: bool
    #: Per metric, the scores not re-derived because a limit was hit on one side (``LIMIT_CODES``).
    limited: dict[str, int]


class _Rescoring:
    """One pass over the dataset, the kept outputs and ``scores.jsonl`` together, a batch (one block) at a time."""

    def __init__(
        self,
        folder: Path,
        record: RunRecord,
        loaded: LoadedConfig,
        chosen: list[str],
        *,
        label: str = "",
        source: str = "",
    ) -> None:
        """``folder``: where the scored files are (a variant's folder in a run with variants, ``label`` its path
        in the run folder, which findings name); a variant keeps no outputs: a recorded one is scored from the
        dataset file's own or its own outputs file's (the caller holds that file to the run's fingerprint).
        ``source``: what the outputs are read from, as findings name it (a run's kept outputs by default)."""
        self._folder = folder
        self._label = label
        self._loaded = loaded
        self._chosen = chosen
        self._findings: list[Found] = []
        self._kept_differs: list[Found] = []
        self._stopped = False  # the dataset's lines are not the kept outputs' (the findings say how)
        self._redactor = redaction.current()
        # A live lane's run: its answers in outputs.jsonl, one row per dataset line (engine.produce.liveoutputs).
        self._live = loaded.config.lane is not None
        self._kept_name = record.kept_outputs.file if record.kept_outputs is not None else OUTPUTS_FILE
        self._kept: Iterator[tuple[list[str], list[Any]]] = iter(())
        #: A recorded variant: its outputs read from the dataset file, as the run read them.
        self._from_dataset = bool(label) and not self._live
        if record.kept_outputs is not None and not label:
            kept_where = str(folder / self._kept_name)
            self._kept = (decoded_block(raw, kept_where) for raw in kept_lines(folder, record))
        # Outputs in the dataset file itself: the kept ones are held to them (rescore_run says when that counts).
        self._in_dataset = loaded.outputs_file is None and not self._live and not label
        scores = folder / SCORES_FILE if label else folder / record.scores_file
        if not source:
            source = f"the lane answers in {OUTPUTS_FILE}" if self._live else f"the kept outputs {self._kept_name}"
        self._compare = _ComparingWriter(_recorded_blocks(scores), chosen, label + SCORES_FILE, source)

    def run(self) -> _Found:
        loaded = self._loaded
        metrics = build_metrics(loaded, only=self._chosen)
        compare = self._compare
        sink = RunSink(self._chosen, new_row_shape(loaded.config), compare, tuple, loaded.dataset_path)
        source = DatasetSource(loaded, outputs=None if self._live or self._from_dataset else self._outputs_of)
        pool = metric_pool(loaded.config, metrics)
        answers = _outputs_rows(self._folder / OUTPUTS_FILE) if self._live else iter(())
        try:
            for batch in source.batches():
                if self._stopped:
                    continue
                if self._live:
                    self._score_answers(batch, answers, metrics, sink, pool)
                else:
                    score_batch(batch, metrics, sink, pool)
            dataset = source.summary()
        finally:
            source.close()
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if not self._stopped and next(answers, None) is not None:
            self._stop((self._label + OUTPUTS_FILE, "one row per line of the dataset", "rows beyond its end"))
        if not self._stopped and next(self._kept, None) is not None:
            self._stop(("runrecord.kept_outputs", "one block per batch of the dataset", "blocks beyond its end"))
        self._findings += compare.finish(whole=not self._stopped)
        # A metric with a score not re-derived is decided from its recorded column: its re-derived one holds the
        # other side of a limit there (every other score of it agreed).
        columns = {} if self._stopped else {k: v for k, v in sink.columns.items() if k not in compare.limited}
        limited = dict(compare.limited)
        return _Found(columns, self._findings, compare.differing, dataset, self._kept_differs, self._stopped, limited)

    def _score_answers(
        self,
        batch: Batch,
        answers: Iterator[dict[str, Any]],
        metrics: list[BuiltMetric],
        sink: RunSink,
        pool: Executor | None,
    ) -> None:
        """One batch of a live lane's run, its sample rows made from ``outputs.jsonl`` as the live scorer made them
        from the lane's outcomes (``LiveScorer._lane_rows``), every metric over the answered rows at once."""
        items = batch.examples() if isinstance(batch, ExampleBatch) else batch
        rows: list[Example | Score] = []
        entries: list[dict[str, Any]] = []
        per_line: list[int] = []
        failed: set[tuple[int, int]] = set()
        parse = self._loaded.config.parse_json
        for line, item in enumerate(items):
            row = next(answers, None)
            if row is None or row.get("id") != item.id:
                found = "<absent>" if row is None else row.get("id")
                where = self._label + OUTPUTS_FILE
                self._stop((f"{where}: example {item.id!r}", found, "a row per dataset line, in its order"))
                return
            samples = row.get("samples")
            if isinstance(item, BadLine) or not isinstance(samples, list) or not samples:
                rows.append(Score.error(item.code, item.message) if isinstance(item, BadLine) else _unreadable(row))
                entries.append({})
                per_line.append(1)
                continue
            for index, entry in enumerate(samples):
                if "output" in entry:
                    output = read_stored_output(entry, "output", DECLARED_JSON)
                    output = parse_json_output(output) if parse else output
                    rows.append(Example(item.id, item.line, item.fields, output, index))
                else:
                    error = entry.get("error") or {}
                    failure = LaneFailure(str(error.get("code")), str(error.get("message")), index)
                    rows.append(failure_score(failure))
                    failed.add((line, index))
                entries.append(entry)
            per_line.append(len(samples))
        measured = ExampleBatch.of([row for row in rows if type(row) is Example])
        results: dict[str, list[Any]] = {}
        for metric in metrics:
            found = iter(call_metric(metric, measured, pool))
            results[metric.name] = [next(found) if type(row) is Example else row for row in rows]
        note_truncated(results, entries)
        self._compare.failed = failed  # the block sink.add writes next, at once
        ids = [item.id for item in items]
        records = [item.fields if isinstance(item, Example) else None for item in items]
        lines = [item.line for item in items]
        sink.add(Rows(ids, lines, records, results, per_line=per_line if sink.samples else 1))

    def _stop(self, found: Found) -> None:
        self._stopped = True
        self._findings.append(found)

    def _outputs_of(self, batch: Batch) -> Batch:
        """The batch with the outputs to score (module docstring), the kept ones checked against it."""
        ids = batch.ids if isinstance(batch, ExampleBatch) else [item.id for item in batch]
        if self._stopped or not ids:  # the kept file holds no block for an empty batch
            return batch
        kept_ids, kept = next(self._kept, ([], []))
        if kept_ids != ids:
            pairs = zip(kept_ids, ids, strict=False)
            first = next((index for index, (theirs, mine) in enumerate(pairs) if theirs != mine), None)
            first = min(len(kept_ids), len(ids) - 1) if first is None else first
            self._stop(
                (
                    f"{self._kept_name}: example {ids[first]!r}",
                    kept_ids[first] if first < len(kept_ids) else "<absent>",
                    "the dataset's id at that line (the kept outputs are not of this dataset)",
                )
            )
            return batch
        if self._in_dataset and not self._kept_differs:
            self._held_to(ids, batch, kept)
        if isinstance(batch, ExampleBatch):
            return ExampleBatch(ids=batch.ids, lines=batch.lines, records=batch.records, outputs=kept)
        return [
            item if isinstance(item, BadLine) else Example(item.id, item.line, item.fields, output, item.sample)
            for item, output in zip(batch, kept, strict=True)
        ]

    def _held_to(self, ids: list[str], batch: Batch, kept: list[Any]) -> None:
        """The first kept output that is not the dataset's (as the run's redactor writes it), named."""
        if isinstance(batch, ExampleBatch):
            outputs = batch.outputs
        else:
            outputs = [ABSENT if isinstance(item, BadLine) else item.output for item in batch]
        if _json(kept) == self._redactor.json_bytes(_json(outputs)):
            return
        for index, (mine, theirs) in enumerate(zip(outputs, kept, strict=True)):
            if _json([theirs]) != self._redactor.json_bytes(_json([mine])):
                self._kept_differs.append(
                    (
                        f"{self._kept_name}: example {ids[index]!r}",
                        _shown(theirs),
                        f"the dataset's output {_shown(mine)}",
                    )
                )
                return


def _json(values: list[Any]) -> bytes:
    """Outputs as one JSON array, an absent one as the marker the kept file's ``absent`` list stands for."""
    return orjson.dumps([{"\x00absent": True} if value is ABSENT else value for value in values], default=str)


def _shown(value: Any) -> Any:
    if value is ABSENT:
        return "<absent>"
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 200 else text[:200] + "…"


def _agrees(recorded: Any, derived: Any, failed: set[int]) -> bool:
    """One line's recorded entry against the re-derived one; a sample a lane failure scored (``failed``, by sample
    index) agrees when the recorded score is an error with the failure's code (all ``outputs.jsonl`` keeps)."""
    if orjson.dumps(recorded) == orjson.dumps(derived):
        return True
    if not failed:
        return False
    pairs = list(zip(recorded, derived, strict=False)) if isinstance(recorded, list) else [(recorded, derived)]
    if isinstance(recorded, list) and (not isinstance(derived, list) or len(recorded) != len(derived)):
        return False
    for sample, (old, new) in enumerate(pairs):
        if not (sample in failed and _same_failure(old, new)) and orjson.dumps(old) != orjson.dumps(new):
            return False
    return True


def _beyond_a_limit(recorded: Any, derived: Any) -> bool:
    """Whether every sample where the two entries differ has, on one side, an ``error`` a limit made
    (``LIMIT_CODES``): not comparable, not a difference."""
    if isinstance(recorded, list) and isinstance(derived, list) and len(recorded) == len(derived):
        return any(_limit_hit(old) or _limit_hit(new) for old, new in zip(recorded, derived, strict=True)) and all(
            _limit_hit(old) or _limit_hit(new) or orjson.dumps(old) == orjson.dumps(new)
            for old, new in zip(recorded, derived, strict=True)
        )
    return _limit_hit(recorded) or _limit_hit(derived)


def _limit_hit(score: Any) -> bool:
    return isinstance(score, dict) and score.get("status") == "error" and _first_code(score) in LIMIT_CODES


def _same_failure(recorded: Any, derived: Any) -> bool:
    return (
        isinstance(recorded, dict)
        and isinstance(derived, dict)
        and recorded.get("status") == derived.get("status")
        and _first_code(recorded) == _first_code(derived)
    )


def _first_code(score: dict[str, Any]) -> Any:
    diagnostics = score.get("diagnostics")
    return diagnostics[0].get("code") if isinstance(diagnostics, list) and diagnostics else None


def _unreadable(row: dict[str, Any]) -> Score:
    return Score.error("outputs_row_unreadable", f"{OUTPUTS_FILE} holds no samples for example {row.get('id')!r}")


def _outputs_rows(path: Path) -> Iterator[dict[str, Any]]:
    """``outputs.jsonl``'s rows, one at a time (verify checked its bytes against the digests)."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                row = orjson.loads(raw)
                yield row if isinstance(row, dict) else {}


def _recorded_blocks(path: Path) -> Iterator[ScoresBlock]:
    """``scores.jsonl``'s blocks, one at a time (verify has checked its bytes against the digests already)."""
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                yield decode_block(raw)


class _ComparingWriter:
    """The run sink's writer (``sink.ScoresSink``) that compares each block it is given with the recorded one
    instead of writing it: each re-scored metric's entries as JSON, after the redactor the run's writer applies."""

    def __init__(self, recorded: Iterator[ScoresBlock], names: list[str], label: str, source: str) -> None:
        """``label``: the scores file findings name; ``source``: what the scores were derived from, named too."""
        self._recorded = recorded
        self._names = names
        self._label = label
        self._source = source
        #: The rows of the block written next whose score a lane failure made, as (line, sample): compared by state
        #: and code only (outputs.jsonl keeps a failure's code and message, not its detail or call evidence).
        self.failed: set[tuple[int, int]] = set()
        self._redactor = redaction.current()
        self._first: Found | None = None
        self.differing = 0
        #: Per metric, the entries not compared because a limit was hit on one side (``_beyond_a_limit``).
        self.limited: dict[str, int] = {}

    def write_block(
        self, ids: list[str], lines: list[int], scores: dict[str, list[Any]], clusters: list[str | None] | None
    ) -> None:
        if not ids:
            return
        failed, self.failed = self.failed, set()
        block = next(self._recorded, None)
        if block is None or block.ids != ids:
            self._note(
                (
                    f"{self._label}: example {ids[0]!r}",
                    "<absent or other ids>" if block is None else block.ids[0],
                    ids[0],
                )
            )
            self.differing += len(ids)
            return
        for name in self._names:
            derived = self._redactor.json_bytes(orjson.dumps(scores[name]))
            recorded = block.scores.get(name)
            if derived == orjson.dumps(recorded):
                continue
            mine = orjson.loads(derived)
            theirs = recorded if isinstance(recorded, list) else [None] * len(ids)
            for index, (old, new) in enumerate(zip(theirs, mine, strict=True)):
                if _agrees(old, new, {sample for line, sample in failed if line == index}):
                    continue
                if _beyond_a_limit(old, new):
                    self.limited[name] = self.limited.get(name, 0) + 1
                else:
                    self.differing += 1
                    self._note((f"{self._label}: example {ids[index]!r}, metric '{name}'", old, new))

    def _note(self, found: Found) -> None:
        if self._first is None:
            self._first = found

    def finish(self, *, whole: bool) -> list[Found]:
        """The first difference, with how many; ``whole``: every batch was scored, so a recorded block beyond them
        is one (not when scoring stopped early)."""
        if whole and self._first is None and next(self._recorded, None) is not None:
            self._first = (self._label, "blocks beyond the dataset's end", "one block per batch of the dataset")
        if self._first is None:
            return []
        field_name, recorded, derived = self._first
        more = f"; {self.differing} scores differ in all" if self.differing > 1 else ""
        return [(f"{field_name} (re-scored from {self._source}{more})", recorded, derived)]

    def commit(self) -> str:
        return ""

    def abort(self) -> None:
        return None


__all__ = ["Rescored", "rescore_run"]
