"""A live run refuses a dataset that repeats an id before the repeated line's calls are made (it keeps one hash per
id, not every id: engine.produce.seenids), with the one-line error a recorded run gives, naming both lines, whichever path
the lane takes (chunked, or call by call when its calls are cached)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from evalglass.api import run
from evalglass.engine.datasets.dataset import DatasetReader
from evalglass.errors import SetupError
from evalglass.lanes.python_lane import PythonLane

from .conftest import evalglass

APP = textwrap.dedent(
    """
    from pathlib import Path

    def answer(example):
        with open(Path(__file__).with_name("calls.txt"), "a") as calls:
            calls.write(example["id"] + "\\n")
        return example["expected"]
    """
)


def _project(root: Path, lines: list[str], *, cache: bool) -> Path:
    root.mkdir()
    (root / "app.py").write_text(APP)
    config = {
        "dataset": {"name": "repeats", "path": "data.jsonl"},
        "task": {"type": "python", "function": "app.py:answer", "cache": cache},
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
    }
    (root / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "authority.yaml").write_text("{}\n")
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _rows(count: int) -> list[str]:
    return [json.dumps({"id": f"e{n}", "expected": f"a{n}"}) for n in range(count)]


def _called(root: Path) -> list[str]:
    calls = root / "calls.txt"
    return calls.read_text().split() if calls.exists() else []


@pytest.mark.parametrize("cache", [False, True])
def test_a_repeated_id_is_refused_before_its_line_is_called(tmp_path: Path, cache: bool) -> None:
    lines = _rows(900)
    lines[700] = json.dumps({"id": "e4", "expected": "again"})  # line 701 repeats line 5's id, past two batches
    root = _project(tmp_path / "evals", lines, cache=cache)
    result = evalglass("run", "--no-progress", "--no-history", "--out", "out", cwd=root)
    assert result.code == 2, result
    errors = result.err.strip().splitlines()
    assert len(errors) == 1 and "Traceback" not in result.err, result.err
    assert "data.jsonl:701" in errors[0] and "duplicate example id 'e4' (first at line 5)" in errors[0], errors
    called = _called(root)
    assert called.count("e4") <= 1  # the first e4 may have been called; the repeat never is
    assert not {f"e{n}" for n in range(640, 900)} & set(called)  # no line of the repeat's batch (641-768) or after
    assert not (root / "out").exists()


def test_an_id_that_is_a_malformed_lines_made_up_id_is_refused(tmp_path: Path) -> None:
    lines = _rows(20)
    lines[8] = "{not json"
    lines[9] = json.dumps({"id": "line:9", "expected": "x"})
    root = _project(tmp_path / "evals", lines, cache=False)
    result = evalglass("run", "--no-progress", "--no-history", "--out", "out", cwd=root)
    assert result.code == 2, result
    assert (
        "data.jsonl:10" in result.err and "example id 'line:9' is also the id given to malformed line 9" in result.err
    )
    assert "line:9" not in _called(root)


def test_a_repeat_in_a_run_of_batches_is_refused_before_a_later_line_that_stops_the_stream(tmp_path: Path) -> None:
    """Cheap calls gather batches into one hand-off, and their ids are checked together before it: a repeated id
    in a batch read before a line that stops the stream (longer than the reader takes) is still what the run says,
    as when every batch was checked as it was read, and no line of the repeat's batch was called."""
    lines = _rows(900)
    lines[300] = json.dumps({"id": "e4", "expected": "again"})  # line 301 (second batch) repeats line 5's id
    lines[700] = json.dumps({"id": "long", "expected": "x" * 5000})  # line 701 (third batch): too long below
    root = _project(tmp_path / "evals", lines, cache=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PythonLane, "column_size", lambda self: 100_000)  # batches are gathered from the start
        patch.setattr(DatasetReader.__init__, "__kwdefaults__", {"chunk": 1024, "max_line": 4096})
        with pytest.raises(SetupError) as refused:
            run(root / "evalglass.yaml", out=root / "out")
    assert refused.value.where is not None and refused.value.where.endswith("data.jsonl:301"), refused.value
    assert "duplicate example id 'e4' (first at line 5)" in refused.value.what
    assert not {f"e{n}" for n in range(256, 900)} & set(_called(root))
