"""The files a run holds to their state (``source_files``: what each dataset format's reader declares it opens, and
a recorded outputs file) are every file reading the source opens: a format with a second file (lm-eval's results
file beside its samples file) that its reader did not declare would be read after host code ran, unheld. Checked for
every format the config accepts, with an audit hook recording each file opened while the source is read."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest
import yaml

from evalglass.engine.spec.config import DatasetFormat
from tests.traces.otel import chat_span, recording, write_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LM_EVAL = FIXTURES / "lm-eval"
PROBE = """import json, sys
from pathlib import Path
from evalglass.engine.datasets.source import DatasetSource, source_files
from evalglass.engine.spec.config import load_config

loaded = load_config(Path(sys.argv[1]))
folder = str(loaded.base_dir.resolve())
declared = sorted(str(path.resolve()) for path in source_files(loaded))
opened = set()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        path = str(Path(args[0].decode() if isinstance(args[0], bytes) else args[0]).resolve())
        if path.startswith(folder):
            opened.add(path)
sys.addaudithook(hook)
source = DatasetSource(loaded)
for batch in source.batches():
    pass
print(json.dumps({"declared": declared, "opened": sorted(opened)}))
"""


def _dataset(evals: Path, format: str) -> str:
    """A dataset of ``format`` in ``evals``; its path."""
    if format == "lm-eval":
        for fixture in (*LM_EVAL.glob("samples_capitals_gen_*.jsonl"), *LM_EVAL.glob("results_*.json")):
            shutil.copyfile(fixture, evals / fixture.name)
        return next(LM_EVAL.glob("samples_capitals_gen_*.jsonl")).name
    if format == "otlp":
        with recording() as (tracer, finished):
            chat_span(tracer, "Can I return it?", "Yes.")
            spans = finished()
        write_json(spans, evals / "traces.jsonl")
        return "traces.jsonl"
    if format == "csv":
        (evals / "data.csv").write_text("id,expected,output\na,x,x\n")
        return "data.csv"
    if format == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
        import pyarrow as pa

        pq.write_table(pa.table({"id": ["a"], "expected": ["x"], "output": ["x"]}), evals / "data.parquet")
        return "data.parquet"
    if format == "jsonl":
        (evals / "data.jsonl").write_text('{"id": "a", "expected": "x"}\n')
        return "data.jsonl"
    fixture = {
        "inspect": FIXTURES / "inspect" / "capitals.eval",
        "promptfoo": FIXTURES / "promptfoo" / "capitals.json",
        "openai-evals": FIXTURES / "openai-evals" / "capitals.jsonl",
    }[format]
    shutil.copyfile(fixture, evals / fixture.name)
    return fixture.name


@pytest.mark.parametrize("format", get_args(DatasetFormat))
def test_every_file_a_source_opens_is_one_the_run_holds(tmp_path: Path, format: str) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    document: dict[str, object] = {
        "version": 1,
        "dataset": {"name": "suite", "path": _dataset(evals, format), "format": format},
        "metrics": {"m": {"type": "exact_match", "field": "text", "reference": "target"}},
    }
    if format in ("jsonl", "csv", "parquet"):
        document["metrics"] = {"m": {"type": "exact_match", "reference": "expected"}}
    if format == "jsonl":  # outputs in a file of their own: the source's second file
        (evals / "outputs.jsonl").write_text('{"id": "a", "output": "x"}\n')
        document["task"] = {"type": "recorded", "path": "outputs.jsonl"}
    config = evals / "evalglass.yaml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(config)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = yaml.safe_load(done.stdout)
    assert found["opened"], found  # the hook saw the reads
    assert set(found["opened"]) <= set(found["declared"]), found
    if format == "lm-eval":
        assert any(name.endswith(".json") for name in found["declared"])  # the results file is one of them
    if format == "jsonl":
        assert any(name.endswith("outputs.jsonl") for name in found["opened"])
