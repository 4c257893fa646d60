"""Repeated ids are found from one hash per example; equal hashes alone (a collision) never refuse a dataset.

The run sink is the one place ids are checked, for both producers: these tests note ids as a producer does
(``RunSink.note_ids``) and ask as each one asks (the recorded producer once after the stream, the live one per
batch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalglass.core.example import Example
from evalglass.engine.datasets.datasetfile import open_reader
from evalglass.engine.produce.sink import RunSink, open_run_sink, refuse_first_repeat
from evalglass.engine.runs.artifacts import ScoresWriter
from evalglass.engine.spec.config import LoadedConfig, load_config
from evalglass.errors import SetupError


def _project(tmp_path: Path, ids: list[str]) -> LoadedConfig:
    (tmp_path / "data.jsonl").write_text("".join(f'{{"id": "{i}", "output": "x"}}\n' for i in ids))
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    (tmp_path / "evalglass.yaml").write_text(
        "version: 1\ndataset: {name: d, path: data.jsonl}\ntask: {type: recorded, field: output}\n"
        "metrics:\n  m: {type: regex, pattern: x}\n"
    )
    return load_config(tmp_path / "evalglass.yaml")


class _Colliding(str):
    """An id whose hash is chosen: two different ids that collide, as two real ids' 64-bit hashes rarely do."""

    __slots__ = ("forced",)

    forced: int

    def __new__(cls, text: str, forced: int) -> _Colliding:
        made = super().__new__(cls, text)
        made.forced = forced
        return made

    def __hash__(self) -> int:
        return self.forced


def _sink(tmp_path: Path, loaded: LoadedConfig) -> RunSink:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    return open_run_sink(loaded, ScoresWriter(folder))


def _examples(ids: list[str]) -> list[Example]:
    return [Example(id=example_id, line=line, fields={}, output="x") for line, example_id in enumerate(ids, 1)]


def test_equal_hashes_of_different_ids_pass(tmp_path: Path) -> None:
    loaded = _project(tmp_path, ["a", "b", "c"])
    sink = _sink(tmp_path, loaded)
    # As if "a" and "b" collided: the table says "maybe", the lines are read again and the run goes on.
    sink.note_ids(_examples([_Colliding("a", 7), _Colliding("b", 7), _Colliding("c", 9)]))
    sink.check_ids()


@pytest.mark.parametrize("per_batch", [False, True], ids=["after the stream", "batch by batch"])
def test_a_repeated_id_is_refused_with_both_lines(tmp_path: Path, per_batch: bool) -> None:
    ids = ["a", "b", "a"]
    loaded = _project(tmp_path, ids)
    sink = _sink(tmp_path, loaded)
    examples = _examples(ids)
    batches = [[example] for example in examples] if per_batch else [examples]
    with pytest.raises(SetupError, match=r"duplicate example id 'a' \(first at line 1\)") as raised:
        for batch in batches:
            sink.note_ids(batch)
            sink.check_ids()
    assert raised.value.where.endswith("data.jsonl:3")


def test_no_examples_pass(tmp_path: Path) -> None:
    sink = _sink(tmp_path, _project(tmp_path, []))
    sink.note_ids([])
    sink.check_ids()


def test_the_live_re_read_stops_at_the_line_it_was_asked_about(tmp_path: Path) -> None:
    """The live producer re-reads only the lines so far: a "maybe" from a collision there passes, and a repeat
    further on is left for the batch that holds it (whose own check re-reads up to it)."""
    loaded = _project(tmp_path, ["a", "b", "c", "a"])
    refuse_first_repeat(open_reader(loaded), loaded.dataset_path, until=3)
    with pytest.raises(SetupError, match=r"duplicate example id 'a' \(first at line 1\)") as raised:
        refuse_first_repeat(open_reader(loaded), loaded.dataset_path, until=4)
    assert raised.value.where.endswith("data.jsonl:4")


def test_a_repeated_id_is_refused_when_the_readers_lines_do_not_ascend(tmp_path: Path) -> None:
    """Another tool's results come in sample order, each example at the place of its first result (a zip member's
    position): the re-read must not stop at the first line past the last one noted."""
    from evalglass.engine.produce.sink import new_row_shape

    loaded = _project(tmp_path, ["a", "b", "c", "b"])
    examples = [
        Example(id=i, line=line, fields={}, output="x") for i, line in (("a", 2), ("b", 16), ("c", 4), ("b", 6))
    ]
    folder = tmp_path / "run"
    folder.mkdir()
    sink = RunSink(["m"], new_row_shape(loaded.config), ScoresWriter(folder), lambda: examples, loaded.dataset_path)
    sink.note_ids(examples)
    with pytest.raises(SetupError, match=r"duplicate example id 'b' \(first at line 16\)"):
        sink.check_ids()
