"""A metadata-only change to an input file during a run (a ``chmod``, a ``touch``, a checkout or backup tool writing
the same bytes) is not a change of what the run measured: the run used to stop with exit 2 (its state, with the
ctime, moved), a false "cannot tell" on an honest run. Now a moved state makes the run hash the file, and it goes on
when its bytes are the ones it read (and, when host code could run while it read them, the ones from before any
host code ran): ``engine.jobs.pipeline.refuse_changed_inputs``. Bytes that differ still stop it (exit 2), rewritten
and left so, or rewritten and then restored before the run ends. Through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import Project, approve_as_is, make_project

pytestmark = pytest.mark.timeout(300)

#: A python metric that, on its first call, changes the dataset's metadata only: its mode, its times, and a rewrite
#: of the same bytes through a new file renamed over it (as a checkout does: a new inode, the same content).
METADATA_ONLY = """import os, pathlib
def score(example, output):
    data = pathlib.Path(__file__).parent / "{target}"
    flag = pathlib.Path(__file__).parent.parent / "touched"
    if not flag.exists():
        flag.write_text("")
        os.chmod(data, 0o600)
        os.utime(data)
        fresh = data.with_name("fresh.tmp")
        fresh.write_bytes(data.read_bytes())
        os.replace(fresh, data)
    return 1.0
"""
#: On its first call, rewrites (in place) the recorded answers the run has not read yet into the expected ones: those
#: past the middle of the file, well beyond the first megabyte the reader has read when the first batch is scored.
REWRITE = """import pathlib
def score(example, output):
    data = pathlib.Path(__file__).parent / "data.jsonl"
    flag = pathlib.Path(__file__).parent.parent / "rewritten"
    if not flag.exists():
        flag.write_text(data.read_text())  # the committed bytes, for the check that restores them
        text = data.read_bytes()
        cut = len(text) // 2
        with data.open("r+b") as handle:
            handle.seek(cut)
            handle.write(text[cut:].replace(b'"output": "aaa"', b'"output": "bbb"'))
    return 1.0
"""
#: A standalone check (runs after scoring, before the run decides) that puts the committed bytes back.
RESTORE = "import pathlib; pathlib.Path('data.jsonl').write_text(pathlib.Path('../rewritten').read_text())"
ROWS = [{"id": f"e{i}", "expected": "bbb", "output": "aaa"} for i in range(60_000)]  # several batches and read chunks


def with_python_metric(project: Project, source: str, **extra: Any) -> None:
    (project.evals / "meddle.py").write_text(source)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["meddle"] = {"type": "python", "function": "meddle.py:score"}
    config.update(extra)
    project.write_config(config)


def test_a_metadata_only_change_to_the_dataset_during_a_run_decides_the_run(tmp_path: Path) -> None:
    project = make_project(tmp_path)  # 6 of 8 right: 0.75 passes the approved 0.7
    with_python_metric(project, METADATA_ONLY.format(target="data.jsonl"))
    approve_as_is(project, 0.7, ["accuracy"])
    result = project.run("--no-progress", "--no-history")
    assert (tmp_path / "touched").exists()  # the metric did chmod, touch and rewrite the same bytes
    assert result.code == 0, result.out + result.err  # on main: exit 2, "the file changed while the run read it"
    assert "changed while the run read it" not in result.err


def test_a_metadata_only_change_to_the_outputs_file_during_a_run_decides_the_run(tmp_path: Path) -> None:
    project = make_project(tmp_path, task={"type": "recorded", "path": "outputs.jsonl", "field": "output"})
    rows = [{"id": f"ex-{i}", "expected": "yes" if i % 4 else "no"} for i in range(1, 9)]
    project.write_rows(rows)
    lines = [json.dumps({"id": row["id"], "output": "yes"}) for row in rows]
    (project.evals / "outputs.jsonl").write_text("\n".join(lines) + "\n")
    with_python_metric(project, METADATA_ONLY.format(target="outputs.jsonl"))
    approve_as_is(project, 0.7, ["accuracy"])
    result = project.run("--no-progress", "--no-history")
    assert (tmp_path / "touched").exists()
    assert result.code == 0, result.out + result.err  # on main: exit 2
    assert "changed while the run read it" not in result.err


def test_a_check_that_touches_the_dataset_after_scoring_decides_the_run(tmp_path: Path) -> None:
    """No host code runs while a recorded run of builtin metrics reads its dataset: a standalone check (a linter, a
    checkout in its command) that touches it afterwards changes nothing the run measured."""
    project = make_project(tmp_path)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    touch = "import os; os.chmod('data.jsonl', 0o640); os.utime('data.jsonl')"
    config["checks"] = {"touches": {"command": ["{python}", "-c", touch], "timeout": 60}}
    project.write_config(config)
    approve_as_is(project, 0.7, ["accuracy"])
    before = (project.evals / "data.jsonl").stat().st_ctime_ns
    result = project.run("--no-progress", "--no-history")
    assert (project.evals / "data.jsonl").stat().st_ctime_ns != before  # the check did touch it
    assert result.code == 0, result.out + result.err  # on main: exit 2
    assert "changed while the run read it" not in result.err


def test_a_rewrite_left_in_place_still_stops_the_run(tmp_path: Path) -> None:
    """What the run read is the rewritten file's bytes (the lines were rewritten before it read them): that agrees
    with the file now, but not with the bytes from before host code ran, which the run hashed since a python metric
    runs while it reads."""
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    approve_as_is(project, 0.5, ["accuracy"])  # every recorded answer wrong: the gate fails as committed
    with_python_metric(project, REWRITE)
    result = project.run("--no-progress", "--no-history")
    assert (tmp_path / "rewritten").exists()
    assert result.code == 2, result.out + result.err
    assert "data.jsonl: the file changed while the run read it" in result.err, result.err
    # The run did read the bytes the file holds now: the line says what differs, the bytes from before host code ran.
    assert "the run read its bytes as they are now, not as they were before any host code ran" in result.err, result.err


def test_a_rewrite_restored_before_the_run_ends_still_stops_the_run(tmp_path: Path) -> None:
    """The file ends as committed (a check puts the bytes back after scoring), but the run read the rewritten
    answers: the hash of what it read is not the file's."""
    project = make_project(tmp_path)
    project.write_rows(ROWS)
    approve_as_is(project, 0.5, ["accuracy"])
    committed = (project.evals / "data.jsonl").read_bytes()
    with_python_metric(project, REWRITE, checks={"restores": {"command": ["{python}", "-c", RESTORE], "timeout": 60}})
    result = project.run("--no-progress", "--no-history")
    assert (tmp_path / "rewritten").exists()
    assert (project.evals / "data.jsonl").read_bytes() == committed  # restored
    assert result.code == 2, result.out + result.err
    assert "its bytes are not the ones the run read" in result.err, result.err


#: On its first call (variant a's scoring: variant b's reader has not opened the dataset yet), re-points the dataset's
#: link at another file whose answers of variant b are all right.
SWAP = """import os, pathlib
def score(example, output):
    here = pathlib.Path(__file__).parent
    if os.readlink(here / "data.jsonl") == "committed.jsonl" and not (here.parent / "swapped").exists():
        os.symlink("swapped.jsonl", here / "link.tmp")
        os.replace(here / "link.tmp", here / "data.jsonl")
        (here.parent / "swapped").write_text("")
    return 1.0
"""
#: A standalone check (after scoring, before the run decides) that points the link back at the committed file.
POINT_BACK = "import os; os.symlink('committed.jsonl', 'link.tmp'); os.replace('link.tmp', 'data.jsonl')"


def test_another_file_read_under_the_dataset_path_stops_the_run(tmp_path: Path) -> None:
    """The dataset's path is a link (as a pull request may commit it, or a store like git-annex makes it). Host code
    re-points it at a file whose answers are all right before a reader opens it (variants are read one after
    another), and a check points it back after scoring: the path then names the untouched committed file, its state
    as at the start, and the run used to pass on answers the committed file does not hold (exit 0). The file each
    reader opened is now held to the one the path named at the start."""
    project = make_project(tmp_path)
    rows = [{"id": f"e{i}", "expected": "bbb", "out_a": "bbb", "out_b": "aaa"} for i in range(200)]
    (project.evals / "data.jsonl").unlink()
    (project.evals / "committed.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    swapped = [{**row, "out_b": "bbb"} for row in rows]
    (project.evals / "swapped.jsonl").write_text("".join(json.dumps(row) + "\n" for row in swapped))
    (project.evals / "data.jsonl").symlink_to("committed.jsonl")
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["task"] = {"type": "recorded", "field": "out_a"}
    config["variants"] = {"a": {}, "b": {"field": "out_b"}}
    config["gates"] = {"accuracy": {"metric": "exact", "variant": "b", "proposed_threshold": 0.5}}
    project.write_config(config)
    approve_as_is(project, 0.5, ["accuracy"])  # every committed answer of b wrong: the gate fails as committed
    assert project.run("--no-progress", "--no-history").code == 1
    with_python_metric(
        project, SWAP, checks={"points_back": {"command": ["{python}", "-c", POINT_BACK], "timeout": 60}}
    )
    result = project.run("--no-progress", "--no-history")
    assert (tmp_path / "swapped").exists() and (project.evals / "data.jsonl").readlink() == Path("committed.jsonl")
    assert result.code == 2, result.out + result.err  # on main: 0, variant b's swapped answers measured
    assert "another file read under its path" in result.err and "not the ones the run read" in result.err
