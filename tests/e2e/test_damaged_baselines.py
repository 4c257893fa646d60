"""A baseline folder is a previous run's artifacts, which travel as any run's do: a comparative gate's baseline is
checked as a whole artifact set by the check every reader and ``verify`` make (``engine.runs.integrity``), before
any work is done. Each file of the baseline folder truncated, with a byte flipped, swapped for another run's, or
deleted stops ``run`` (and ``preflight``) with exit 2 and one line naming the file; the undamaged folder is
compared as before."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.e2e.project import run_cli
from tests.e2e.test_comparative_gates import NO_CHANGE, gate_of, setup
from tests.e2e.test_damaged_artifacts import DAMAGE, Runs

COMMANDS = {"run": ("run", "--no-progress", "--out", "runs/cand"), "preflight": ("preflight",)}


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """A project whose comparative gate pins ``runs/base`` (a pristine copy kept aside), and the baseline run of
    another project on other data (whose files all differ: the swapped ones)."""
    root = tmp_path_factory.mktemp("pinned")
    setup(root, NO_CHANGE)
    other = tmp_path_factory.mktemp("other")
    setup(other, [(False, True)] * 50)
    shutil.copytree(root / "runs/base", root / "pristine")
    return Runs(root, root / "pristine", other / "runs/base")


def _restore(runs: Runs) -> None:
    base = runs.root / "runs/base"
    shutil.rmtree(base)
    shutil.copytree(runs.pristine, base)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_baseline_stops_the_run_naming_the_file(pinned: Runs, damage: str, command: str) -> None:
    base = pinned.root / "runs/base"
    names = ["digests.json", *sorted(json.loads((pinned.pristine / "digests.json").read_text())["files"])]
    assert {"scores.jsonl", "runrecord.json", "scorecard.json"} <= set(names)
    try:
        for name in names:
            _restore(pinned)
            DAMAGE[damage](pinned, base / name, name)
            result = run_cli(*COMMANDS[command], cwd=pinned.root)
            said = (name, result.code, result.out[-300:], result.err)
            assert result.code == 2, said
            lines = result.err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: runs/base/"), said
            assert "baseline 'main' run does not add up: " in lines[0], said
            assert name in lines[0] and " — " in lines[0] and "Traceback" not in result.err, said
            assert not (pinned.root / "runs/cand").exists(), name  # stopped before any work was done
    finally:
        _restore(pinned)


def test_the_undamaged_baseline_is_compared(pinned: Runs) -> None:
    result = run_cli("run", "--no-progress", "--out", "runs/fine", "--format", "json", cwd=pinned.root)
    assert result.code == 0, result.err
    assert gate_of(result)["outcome"] == "pass"
