"""The baselines comparative gates compare with: found through the ledger, read, fingerprinted, copied.

At run time a baseline is read from the folder the ledger's ``baselines:`` entry names (relative to the ledger
file) and its two fingerprinted files are copied into the run folder (``baselines/NAME/``); ``verify`` reads that
copy, so it re-derives a comparative gate from the run's own artifacts, through the same code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from evalglass.core.comparative import BaselineRun, ComparativeInputs
from evalglass.core.runrecord import SCORES_FILE, BaselineRecord, RunRecord
from evalglass.core.scorecard import DatasetSummary
from evalglass.engine.artifacts import RUNRECORD_FILE, load_columns
from evalglass.engine.compare import RunForComparison, load_for_comparison, metric_definition
from evalglass.engine.config import Config
from evalglass.engine.ledger import LoadedLedger
from evalglass.engine.runfolder import atomically, make_dirs
from evalglass.engine.runlocator import RunLocator
from evalglass.errors import SetupError

BASELINES_DIR = "baselines"


def compared_metrics(config: Config) -> list[str]:
    """The metrics comparative gates decide on (empty: the run has no comparative gate)."""
    names = [gate.metric for gate in config.gates.values() if gate.compare_to is not None and gate.metric]
    return list(dict.fromkeys(names))


def _read(name: str, folder: Path, location: str, metrics: list[str]) -> tuple[BaselineRun, RunForComparison | None]:
    try:
        run = load_for_comparison(folder, what=f"baseline '{name}' run", metrics=metrics)
    except SetupError as exc:
        return BaselineRun(name=name, location=location, problem=exc.what), None
    return (
        BaselineRun(
            name=name,
            location=location,
            fingerprint=run.fingerprint,
            run_id=run.record.run_id,
            dataset_fingerprint=run.record.dataset.fingerprint,
            gold_fingerprint=run.record.dataset.gold_fingerprint,
            ids=run.ids,
            metrics={metric: run.side(metric) for metric in metrics if metric in run.config.metrics},
        ),
        run,
    )


def read_baseline(
    name: str, ledger: LoadedLedger, metrics: list[str], locator: RunLocator | None
) -> tuple[BaselineRun, RunForComparison | None]:
    """The baseline the ledger lists under ``name``: its ``run`` folder, relative to the ledger file, or else a run
    reference that ``locator`` (the run's, see ``engine.runlocator``) finds."""
    reference = ledger.ledger.baselines[name].run
    source, location = ledger.path.parent / reference, str(ledger.path.parent / reference)
    if not source.exists() and locator is not None:
        found_run = _locate(reference, locator)
        if found_run is not None:  # a run reference (main@latest): its fingerprint is still checked
            source, location = found_run, reference
    return _read(name, source, location, metrics)


def _copy(source: Path, target: Path) -> None:
    """Byte for byte, atomically, mode 0600 (through the run folder's private partial files)."""
    with atomically(target) as out, source.open("rb") as src:
        shutil.copyfileobj(src, out)


def _locate(reference: str, locator: RunLocator) -> Path | None:
    try:
        return locator(reference)
    except SetupError:
        return None  # read as a folder below, which says the baseline's run cannot be read


def baselines_for_run(
    config: Config, ledger: LoadedLedger, folder: Path, locator: RunLocator | None
) -> tuple[dict[str, BaselineRun], dict[str, BaselineRecord]]:
    """Read every baseline the config's comparative gates name and the ledger lists; copy each into the run."""
    metrics = compared_metrics(config)
    found: dict[str, BaselineRun] = {}
    records: dict[str, BaselineRecord] = {}
    for name in dict.fromkeys(gate.compare_to for gate in config.gates.values() if gate.compare_to is not None):
        assert name is not None
        approval = ledger.ledger.baselines.get(name)
        if approval is None:
            continue  # the gate blocks with baseline_missing: the ledger lists no such baseline
        baseline, run = read_baseline(name, ledger, metrics, locator)
        if run is not None:
            target = folder / BASELINES_DIR / name
            make_dirs(target)
            _copy(run.folder / RUNRECORD_FILE, target / RUNRECORD_FILE)
            _copy(run.folder / run.record.scores_file, target / SCORES_FILE)
        found[name] = baseline
        records[name] = BaselineRecord(
            location=baseline.location,
            problem=baseline.problem,
            fingerprint=baseline.fingerprint,
            run_id=baseline.run_id,
        )
    return found, records


def baselines_for_verify(config: Config, record: RunRecord, folder: Path) -> dict[str, BaselineRun]:
    """The baselines as the run found them, re-read from the copies in its folder (nothing outside it)."""
    metrics = compared_metrics(config)
    found: dict[str, BaselineRun] = {}
    for name, recorded in record.baselines.items():
        if recorded.problem is not None:
            found[name] = BaselineRun(name=name, location=recorded.location, problem=recorded.problem)
        else:
            found[name] = _read(name, folder / BASELINES_DIR / name, recorded.location, metrics)[0]
    return found


def comparative_inputs(
    config: Config,
    scores: Path,
    definition_files: dict[str, dict[str, str]],
    dataset: DatasetSummary,
    baselines: dict[str, BaselineRun],
) -> ComparativeInputs:
    """This run's side: its example ids (read back from its scores file), gold and metric definitions."""
    loaded = load_columns(
        scores, [], samples=config.samples, clustered=config.dataset.cluster_field is not None, ids=True
    )
    assert loaded.ids is not None
    return ComparativeInputs(
        ids=loaded.ids,
        dataset_fingerprint=dataset.fingerprint,
        gold_fingerprint=dataset.gold_fingerprint,
        definitions={name: metric_definition(config, name, definition_files) for name in compared_metrics(config)},
        baselines=baselines,
    )
