"""Repeated ids are found from one hash per example; equal hashes alone (a collision) never refuse a dataset."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from evalglass.engine.config import LoadedConfig, load_config
from evalglass.engine.datasetfile import open_reader
from evalglass.engine.pipeline import refuse_duplicate_ids
from evalglass.engine.sink import refuse_first_repeat
from evalglass.errors import SetupError


def _project(tmp_path: Path, ids: list[str]) -> LoadedConfig:
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{i}", "output": "x"}}\n' for i in ids))
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    (tmp_path / "evalglass.yaml").write_text(
        "version: 1\ndataset: {name: d, path: data.jsonl}\ntask: {type: recorded, field: output}\n"
        "metrics:\n  m: {type: regex, pattern: x}\n"
    )
    return load_config(tmp_path / "evalglass.yaml")


def test_equal_hashes_of_different_ids_pass(tmp_path: Path) -> None:
    loaded = _project(tmp_path, ["a", "b", "c"])
    refuse_duplicate_ids(array("q", [7, 7, 9]), loaded)  # as if "a" and "b" collided: the ids are read again


def test_a_repeated_id_is_refused_with_both_lines(tmp_path: Path) -> None:
    loaded = _project(tmp_path, ["a", "b", "a"])
    with pytest.raises(SetupError, match=r"duplicate example id 'a' \(first at line 1\)") as raised:
        refuse_duplicate_ids(array("q", map(hash, ["a", "b", "a"])), loaded)
    assert raised.value.where.endswith("data.jsonl:3")


def test_no_examples_pass(tmp_path: Path) -> None:
    refuse_duplicate_ids(array("q"), _project(tmp_path, []))


def test_the_live_re_read_stops_at_the_line_it_was_asked_about(tmp_path: Path) -> None:
    """The live producer re-reads only the lines so far: a "maybe" from a collision there passes, and a repeat
    further on is left for the batch that holds it (whose own check re-reads up to it)."""
    loaded = _project(tmp_path, ["a", "b", "c", "a"])
    refuse_first_repeat(open_reader(loaded), loaded.dataset_path, until=3)
    with pytest.raises(SetupError, match=r"duplicate example id 'a' \(first at line 1\)") as raised:
        refuse_first_repeat(open_reader(loaded), loaded.dataset_path, until=4)
    assert raised.value.where.endswith("data.jsonl:4")
