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
from evalglass.core.variants import split_variant_metric, variant_metric
from evalglass.engine.runs.artifacts import RUNRECORD_FILE, LoadedScores, load_columns, load_json_model_and_bytes
from evalglass.engine.spec.config import Config
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
        parts = split_variant_metric(name) if self.config.variant_names else None
        return parts[0] if parts is not None else name

    def definition_payload(self, name: str) -> dict[str, Any]:
        return metric_definition_payload(self.config, self.declared(name), self.record.definition_files)

    def side(self, name: str) -> MetricSide:
        declared = self.declared(name)
        spec = self.config.metrics[declared]
        shape, rows = self.shape, self.scores.columns[name]
        column = per_example(rows, shape, spec.reducer, spec.k)
        return MetricSide(
            values=column.values(),
            states=column.states(),
            definition=metric_definition(self.config, declared, self.record.definition_files),
            scale=spec.value_scale(),
            within=within_of(rows, shape.example_of_row, shape.examples, spec.reducer),
        )


def run_fingerprint(runrecord_bytes: bytes, scores_sha256: str) -> str:
    """What a ledger binds a baseline run by: its run record's bytes (config, definitions, dataset) and its scores.

    Any edit to either file, including one that keeps them consistent with each other, changes it.
    """
    return fingerprint_of({"runrecord": fingerprint_of_bytes(runrecord_bytes), "scores": scores_sha256})


def metric_definition_payload(config: Config, name: str, definition_files: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A metric's definition: its semantics and the files it is defined by (what a comparison requires equal)."""
    return {"metric": config.metrics[name].fingerprint_payload(), "files": definition_files.get(name, {})}


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
        config = Config.model_validate(record.config)
    except Exception as exc:
        raise SetupError(f"the run record's config no longer validates: {exc}", where=str(folder)) from None
    scores = _comparison_scores(folder, record, config, metrics)
    return RunForComparison(
        folder=folder,
        record=record,
        config=config,
        scores=scores,
        fingerprint=run_fingerprint(raw, scores.sha256),
        record_sha256=fingerprint_of_bytes(raw),
    )


def _comparison_scores(folder: Path, record: RunRecord, config: Config, metrics: list[str] | None) -> LoadedScores:
    """The run's columns with ids; in a run with variants every variant's, named ``metric@variant``, and the hash
    that stands for its scores the fingerprint of every variant's scores hash."""
    samples, clustered = config.samples, config.dataset.cluster_field is not None
    if not config.variant_names:
        names = [name for name in config.metrics if metrics is None or name in metrics]
        return load_columns(folder / record.scores_file, names, samples=samples, clustered=clustered, ids=True)
    compared = config.compared_metrics
    loaded = {
        variant: load_columns(
            folder / VARIANTS_DIR / variant / SCORES_FILE,
            [name for name in config.metrics if name not in compared],
            samples=samples,
            clustered=clustered,
            ids=True,
        )
        for variant in config.variant_names
    }
    first = next(iter(loaded.values()))
    columns = {
        variant_metric(metric, variant): column
        for variant, each in loaded.items()
        for metric, column in each.columns.items()
        if metrics is None or variant_metric(metric, variant) in metrics
    }
    hashes = {variant: each.sha256 for variant, each in loaded.items()}
    if compared:  # the judges of variants side by side, under their own names (a variant cannot be named `compared/`)
        judged = load_columns(folder / COMPARED_DIR / SCORES_FILE, list(compared), samples=samples, clustered=clustered)
        columns.update({name: column for name, column in judged.columns.items() if metrics is None or name in metrics})
        hashes[f"{COMPARED_DIR}/"] = judged.sha256
    return dataclasses.replace(first, columns=columns, sha256=fingerprint_of(hashes))


def compare_runs(base_folder: Path, candidate_folder: Path, metrics: list[str] | None = None) -> Comparison:
    """Compare every metric the two runs share (or the ones named); a SetupError when they cannot be compared."""
    base = load_for_comparison(base_folder, what="baseline run", metrics=metrics)
    candidate = load_for_comparison(candidate_folder, what="candidate run", metrics=metrics)
    shared = [name for name in candidate.metric_names if name in base.metric_names]
    if metrics:
        for name in metrics:
            missing = [
                side for side, run in (("baseline", base), ("candidate", candidate)) if name not in run.metric_names
            ]
            if missing:
                raise SetupError(
                    f"metric '{name}' is not in the {' and '.join(missing)} run",
                    fix=f"compare one of the metrics both runs have: {', '.join(shared) or '(none)'}",
                )
        shared = list(dict.fromkeys(metrics))
    if not shared:
        raise SetupError("the two runs have no metric in common", fix="compare runs of the same evaluation")
    pairing = pair_ids(base.ids, candidate.ids)
    if pairing.candidate.size == 0:
        raise SetupError(
            "the two runs have no example id in common",
            fix="compare runs on the same dataset (examples are matched by id)",
        )
    clusters = candidate.shape.clusters
    compared: list[MetricComparison] = [
        compare_metric(
            name,
            base.side(name),
            candidate.side(name),
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
