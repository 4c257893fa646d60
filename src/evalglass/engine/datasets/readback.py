"""Examples of a finished run read back from a dataset that has its own reader (traces, other tools' results).

``view --examples`` and the HTML report show each example's input and output beside its scores. For JSON Lines they
read the dataset's lines directly; a trace file or another tool's log is no such line per example, so those are
read again through the reader the run used (``open_reader``, with the run's recorded config), keeping only the
examples asked for.
"""

from __future__ import annotations

from pathlib import Path

from evalglass.core.example import Example
from evalglass.core.runrecord import RunRecord
from evalglass.errors import SetupError

#: Formats whose examples are not lines of the file.
OWN_READER_FORMATS = frozenset({"otlp", "inspect", "promptfoo", "lm-eval", "openai-evals"})


def read_by_own_reader(record: RunRecord) -> bool:
    dataset = record.config.get("dataset") if isinstance(record.config, dict) else None
    return isinstance(dataset, dict) and dataset.get("format") in OWN_READER_FORMATS


#: Formats whose rows are not JSON lines either: a CSV or Parquet dataset, named or told by its suffix as the run's
#: reader (``open_reader``) tells it.
TABULAR_FORMATS = frozenset({"csv", "parquet"})


def read_as_rows_by_reader(record: RunRecord) -> bool:
    """Whether ``view --examples`` reads the run's examples back through the run's reader (``examples_by_id``)
    rather than as JSON lines: a format with its own reader, or a CSV or Parquet dataset (whose lines parsed as
    JSON gave no input at all)."""
    if read_by_own_reader(record):
        return True
    dataset = record.config.get("dataset") if isinstance(record.config, dict) else None
    declared = dataset.get("format") if isinstance(dataset, dict) else None
    if declared is not None:
        return declared in TABULAR_FORMATS
    return Path(record.dataset.path).suffix.lower().lstrip(".") in TABULAR_FORMATS


def examples_by_id(record: RunRecord, path: Path, wanted: set[str]) -> dict[str, Example] | None:
    """The examples with these ids in the dataset at ``path``, read as the run read it; None when it cannot be read
    (the file is gone or no longer readable)."""
    from evalglass.engine.datasets.datasetfile import open_reader
    from evalglass.engine.spec.config import RECORDED_CONTEXT, Config, LoadedConfig

    try:
        config = Config.model_validate(record.config, context=RECORDED_CONTEXT)
    except ValueError:
        return None
    config = config.model_copy(update={"dataset": config.dataset.model_copy(update={"path": str(path.resolve())})})
    loaded = LoadedConfig(config=config, path=path.resolve().parent / "evalglass.yaml", fingerprint="")
    found: dict[str, Example] = {}
    try:
        for item in open_reader(loaded, hash_bytes=False):
            if isinstance(item, Example) and item.id in wanted:
                found[item.id] = item
                if len(found) == len(wanted):
                    break
    except SetupError:
        return None
    return found
