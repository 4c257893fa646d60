"""Reading two finished runs for a comparison: their records, fingerprints and per-example columns.

`evalglass compare` and the comparative gates (run and verify) read a run through :func:`load_for_comparison`, so
a baseline is fingerprinted, paired and measured the same way wherever it is used. Each scores file is streamed once
into compact columns (numpy arrays: values, state bytes, ids), never into an object per example.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalglass.core.compare import (
    Comparison,
    MetricComparison,
    MetricSide,
    RunRef,
    compare_metric,
    pair_ids,
    run_differences,
)
from evalglass.core.decide import RunShape, per_example
from evalglass.core.fingerprint import fingerprint_of, fingerprint_of_bytes
from evalglass.core.reduce import within_of
from evalglass.core.runrecord import COMPARED_DIR, SCORES_FILE, VARIANTS_DIR, RunRecord
from evalglass.core.stats import Ties
from evalglass.core.variantnames import (
    baseline_candidates,
    baseline_column,
    declared_metric,
    variant_metric,
)
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, LoadedScores, load_columns, load_json_model_and_bytes
from evalglass.engine.spec.config import RECORDED_CONTEXT, Config, imports_key
from evalglass.errors import SetupError


@dataclass(frozen=True)
class RunForComparison:
    folder: Path
    record: RunRecord
    config: Config
    scores: LoadedScores
    fingerprint: str
    #: The SHA-256 of the run record's bytes as read (what a digest list names it by).
    record_sha256: str = ""
    #: Every scores file read, by its path in the run folder, with the SHA-256 of its bytes as read: the run's
    #: ``scores.jsonl``, or in a run with variants each variant's.
    score_files: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def shape(self) -> RunShape:
        example_of_row = self.scores.example_of_row
        clusters = self.scores.cluster_ids
        return RunShape(
            examples=self.scores.examples,
            example_of_row=None if example_of_row is None else np.frombuffer(example_of_row, dtype=np.int64),
            clusters=None if clusters is None else np.frombuffer(clusters, dtype=np.int64),
        )

    @property
    def ids(self) -> np.ndarray:
        assert self.scores.ids is not None
        return self.scores.ids

    def ref(self) -> RunRef:
        return RunRef(
            run_id=self.record.run_id,
            folder=str(self.folder),
            fingerprint=self.fingerprint,
            dataset=self.record.dataset.name,
            dataset_fingerprint=self.record.dataset.fingerprint,
            gold_fingerprint=self.record.dataset.gold_fingerprint,
            examples=self.scores.examples,
        )

    @property
    def metric_names(self) -> list[str]:
        """The run's metrics as its scorecard names them (``metric@variant`` in a run with variants)."""
        return list(self.scores.columns)

    def declared(self, name: str) -> str:
        """The declared metric a scorecard name stands for."""
        return declared_metric(name) if self.config.variant_names else name

    def definition_payload(self, name: str) -> dict[str, Any]:
        return metric_definition_payload(self.config, self.declared(name), self.record.definition_files)

    def baseline_name(self, name: str) -> str | None:
        """This run's column that a comparative gate deciding on ``name`` compares with, when this run is its
        baseline (``core.variantnames.baseline_column``); None when it has none."""
        column = baseline_column(name, self.config.variant_names)
        return column if column is not None and column in self.scores.columns else None

    def side(self, name: str, ties: Ties) -> MetricSide:
        """This run's column ``name``, one row per example; ``ties``: where a ``majority`` tie goes, which the
        caller takes from the run the column is compared for (a comparative gate's own metric: the baseline is
        reduced under the candidate's rule, so both sides of a pair break a tie alike)."""
        declared = self.declared(name)
        spec = self.config.metrics[declared]
        shape, rows = self.shape, self.scores.columns[name]
        column = per_example(rows, shape, spec.reducer, spec.k, ties=ties)
        definition = metric_definition_payload(self.config, declared, self.record.definition_files)
        return MetricSide(
            values=column.values(),
            states=column.states(),
            definition=fingerprint_of(definition),
            scale=spec.value_scale(),
            within=within_of(rows, shape.example_of_row, shape.examples, spec.reducer),
            definition_payload=definition,
            reducer=spec.reducer,
            counts=shape.sample_counts(),
        )


def run_fingerprint(runrecord_bytes: bytes, scores_sha256: str) -> str:
    """What a ledger binds a baseline run by: its run record's bytes (config, definitions, dataset) and its scores.

    Any edit to either file, including one that keeps them consistent with each other, changes it.
    """
    return fingerprint_of({"runrecord": fingerprint_of_bytes(runrecord_bytes), "scores": scores_sha256})


def metric_definition_payload(config: Config, name: str, definition_files: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A metric's definition: its semantics and the files it is defined by (what a comparison requires equal).

    For a ``check`` metric that is also what its gate's approval binds of the check it runs per example: the
    check's declaration, the files its command names, its declared inputs and the host code it runs by name
    (``Config.metric_checks_payload``), so two runs whose checkers differ are not "the same metric". Each only when
    there is any: other metrics keep the definition they had."""
    payload: dict[str, Any] = {
        "metric": config.metrics[name].fingerprint_payload(),
        "files": definition_files.get(name, {}),
    }
    imported = definition_files.get(imports_key(name))
    if imported:  # the host code it imports
        payload["imports"] = imported
    payload.update(config.metric_checks_payload(name, definition_files))
    return payload


def metric_definition(config: Config, name: str, definition_files: dict[str, dict[str, str]]) -> str:
    """The fingerprint of a metric's definition (:func:`metric_definition_payload`)."""
    return fingerprint_of(metric_definition_payload(config, name, definition_files))


def load_for_comparison(folder: Path, *, what: str = "run", metrics: list[str] | None = None) -> RunForComparison:
    """A finished run's record, config and columns (with ids), and its fingerprint as computed from its files.

    ``metrics`` limits the columns loaded (default: every metric of the run)."""
    if not folder.is_dir():
        raise SetupError(
            f"{what} folder not found", where=str(folder), fix="name a run folder written by `evalglass run`"
        )
    record, raw = load_json_model_and_bytes(folder / RUNRECORD_FILE, RunRecord, "run record")
    assert isinstance(record, RunRecord)
    try:
        config = Config.model_validate(record.config, context=RECORDED_CONTEXT)
    except Exception as exc:
        raise SetupError(f"the run record's config no longer validates: {exc}", where=str(folder)) from None
    scores, files = _comparison_scores(folder, record, config, metrics)
    return RunForComparison(
        folder=folder,
        record=record,
        config=config,
        scores=scores,
        fingerprint=run_fingerprint(raw, scores.sha256),
        record_sha256=fingerprint_of_bytes(raw),
        score_files=files,
    )


def _comparison_scores(
    folder: Path, record: RunRecord, config: Config, metrics: list[str] | None
) -> tuple[LoadedScores, dict[str, str]]:
    """The run's columns with ids, and each scores file read with its hash; in a run with variants every
    variant's, named ``metric@variant``, and the hash that stands for its scores the fingerprint of every variant's
    scores hash; the judges of variants side by side (``compared/``) under their own names. The columns share one
    list of ids: a scores file whose examples are not the first variant's, line for line, is refused (its rows
    would be paired with other examples' rows)."""
    samples, clustered = config.samples, config.dataset.cluster_field is not None
    if not config.variant_names:
        names = [name for name in config.metrics if metrics is None or name in metrics]
        scores = load_columns(folder / record.scores_file, names, samples=samples, clustered=clustered, ids=True)
        return scores, {record.scores_file: scores.sha256}
    compared = config.compared_metrics
    files = {variant: f"{VARIANTS_DIR}/{variant}/{SCORES_FILE}" for variant in config.variant_names}
    loaded = {
        variant: load_columns(
            folder / file,
            [
                name
                for name in config.metrics
                if name not in compared and (metrics is None or variant_metric(name, variant) in metrics)
            ],
            samples=samples,
            clustered=clustered,
            ids=True,
        )
        for variant, file in files.items()
    }
    first = next(iter(loaded.values()))
    for variant, each in loaded.items():
        _refuse_other_examples(first, each, folder / files[variant], f"variant '{variant}'")
    columns = {
        variant_metric(metric, variant): column
        for variant, each in loaded.items()
        for metric, column in each.columns.items()
    }
    hashes = {variant: each.sha256 for variant, each in loaded.items()}
    read = {files[variant]: each.sha256 for variant, each in loaded.items()}
    if compared:  # the judges of variants side by side, under their own names (a variant cannot be named `compared/`)
        judged_file = f"{COMPARED_DIR}/{SCORES_FILE}"
        judged = load_columns(folder / judged_file, list(compared), samples=samples, clustered=clustered, ids=True)
        _refuse_other_examples(first, judged, folder / judged_file, "the judges of variants")
        columns.update({name: column for name, column in judged.columns.items() if metrics is None or name in metrics})
        hashes[f"{COMPARED_DIR}/"] = judged.sha256
        read[judged_file] = judged.sha256
    return dataclasses.replace(first, columns=columns, sha256=fingerprint_of(hashes)), read


def _refuse_other_examples(first: LoadedScores, each: LoadedScores, path: Path, what: str) -> None:
    """A SetupError unless ``each`` scored the first variant's examples, line for line."""
    if each.ids is None or first.ids is None or not np.array_equal(each.ids, first.ids):
        raise SetupError(
            f"{what} scored other examples (or in another order) than the run's first variant",
            where=str(path),
            fix="every variant of a run is scored on the same examples; re-run it",
        )


def compare_runs(base_folder: Path, candidate_folder: Path, metrics: list[str] | None = None) -> Comparison:
    """Compare every metric of the candidate the baseline has a column for (or the ones named, as the candidate
    names them); a SetupError when they cannot be compared. Each is paired with the baseline's column a comparative
    gate would take (``RunForComparison.baseline_name``): the same name, or for a variant of a candidate with
    variants, the one column of a baseline without variants."""
    wanted = None if metrics is None else [column for name in metrics for column in baseline_candidates(name)]
    base = load_for_comparison(base_folder, what="baseline run", metrics=wanted)
    candidate = load_for_comparison(candidate_folder, what="candidate run", metrics=metrics)
    columns = {name: column for name in candidate.metric_names if (column := base.baseline_name(name)) is not None}
    shared = list(columns)
    if metrics:
        for name in metrics:
            missing = [
                side
                for side, absent in (
                    ("baseline", base.baseline_name(name) is None),
                    ("candidate", name not in candidate.metric_names),
                )
                if absent
            ]
            if missing:
                raise SetupError(
                    f"metric '{name}' is not in the {' and '.join(missing)} run",
                    fix=f"compare one of the metrics both runs have: {', '.join(shared) or '(none)'}",
                )
        shared = list(dict.fromkeys(metrics))
    if not shared:
        raise SetupError("the two runs have no metric in common", fix=_no_common_fix(base, candidate))
    pairing = pair_ids(base.ids, candidate.ids)
    if pairing.candidate.size == 0:
        raise SetupError(
            "the two runs have no example id in common",
            fix="compare runs on the same dataset (examples are matched by id)",
        )
    clusters = candidate.shape.clusters
    # Both sides break a majority tie as the candidate's gates would (its metric's direction), so a pair of runs
    # that sampled alike compares equal.
    ties = {name: candidate.config.tie_side(candidate.declared(name)) for name in shared}
    compared: list[MetricComparison] = [
        compare_metric(
            name,
            base.side(columns[name], ties[name]),
            candidate.side(name, ties[name]),
            pairing,
            candidate.ids,
            interval=candidate.config.metrics[candidate.declared(name)].interval,
            clusters=clusters,
        )
        for name in shared
    ]
    base_ref, candidate_ref = base.ref(), candidate.ref()
    return Comparison(
        base=base_ref,
        candidate=candidate_ref,
        paired=int(pairing.candidate.size),
        only_in_base=tuple(base.ids[pairing.only_base].tolist()),
        only_in_candidate=tuple(candidate.ids[pairing.only_candidate].tolist()),
        incomparable=run_differences(base_ref, candidate_ref, pairing),
        metrics=tuple(compared),
    )


def _no_common_fix(base: RunForComparison, candidate: RunForComparison) -> str:
    if base.config.variant_names and not candidate.config.variant_names:
        return (
            f"the baseline is a run with variants ({', '.join(base.config.variant_names)}) and the candidate is not: "
            "compare the candidate with a run without variants, or swap them to compare each variant with it"
        )
    return "compare runs of the same evaluation"
