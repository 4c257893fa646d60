"""The Python API: `evalglass.run`, `load_run`, `verify`, and the CLI going through them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import evalglass
from evalglass.core.gates import Outcome
from tests.e2e.project import make_project
from tests.e2e.test_ci_outputs import three_gates


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """A run records `.evalglass/last-run` under the working directory: keep it out of the repository."""
    monkeypatch.chdir(tmp_path)


def test_the_public_surface_is_what_all_lists():
    import evalglass.api

    assert {"RunInterrupted", "RunResult", "SetupError", "VerifyReport", "load_run", "run", "verify"} <= set(
        evalglass.__all__
    )
    assert set(evalglass.api.__all__) == {
        name for name in evalglass.__all__ if evalglass._HOMES.get(name) == "evalglass.api"
    }
    for name in evalglass.__all__:
        assert getattr(evalglass, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'pipeline_run'"):
        evalglass.pipeline_run  # noqa: B018


def test_run_returns_the_artifacts_verdict_gates_and_metrics(tmp_path):
    project = three_gates(tmp_path)
    result = evalglass.run(project.evals / "evalglass.yaml", out=tmp_path / "run")
    written = json.loads((tmp_path / "run" / "scorecard.json").read_text())
    assert result.folder == tmp_path / "run"
    assert (result.verdict, result.exit_code, result.ci_should_fail) == (Outcome.BLOCKED, 1, True)
    assert result.verdict == written["decision"]["verdict"] == "blocked"
    assert [gate.model_dump(mode="json") for gate in result.gates] == written["decision"]["gates"]
    assert result.payload == result.scorecard.decision
    assert result.gate("strict").outcome is Outcome.FAIL
    assert result.metrics["exact"].estimate is not None and result.metrics["exact"].estimate.point == 0.75
    with pytest.raises(KeyError, match="accuracy, strict, broken"):
        result.gate("nope")


def test_the_result_cannot_be_edited(tmp_path):
    result = evalglass.run(make_project(tmp_path).evals / "evalglass.yaml", out=tmp_path / "run")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.folder = tmp_path  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.metrics["exact"] = result.metrics["exact"]  # type: ignore[index]


def test_load_run_reads_what_run_wrote_and_verify_re_derives_it(tmp_path):
    result = evalglass.run(three_gates(tmp_path).evals / "evalglass.yaml", out=tmp_path / "run")
    loaded = evalglass.load_run(tmp_path / "run")
    assert dataclasses.replace(loaded, not_checked=None) == result and result.not_checked is None
    # The folder is named relative to the working folder (tmp_path here): short to paste.
    assert loaded.not_checked == (
        "not re-derived: checked against its run record and digests (unsigned), not against its scores or what "
        "its config implies; `evalglass verify run` re-derives it"
    )
    report = evalglass.verify(str(tmp_path / "run"))
    assert isinstance(report, evalglass.VerifyReport)
    assert (report.ok, report.examples, report.findings) == (True, 8, ())


def test_a_setup_problem_raises_the_projects_error_type(tmp_path):
    from evalglass.errors import SetupError

    assert evalglass.SetupError is SetupError
    with pytest.raises(evalglass.SetupError, match="config not found"):
        evalglass.run(tmp_path / "missing.yaml")
    with pytest.raises(evalglass.SetupError, match="scorecard not found"):
        evalglass.load_run(tmp_path)
    (tmp_path / "p").mkdir()
    project = make_project(tmp_path / "p")
    with pytest.raises(evalglass.SetupError, match="not a cache mode"):
        evalglass.run(project.evals / "evalglass.yaml", cache="sometimes")  # type: ignore[arg-type]
    with pytest.raises(
        evalglass.OptionError, match=r'^resume reuses completed calls .* cache="off" or cache="refresh"'
    ):
        evalglass.run(project.evals / "evalglass.yaml", resume=tmp_path, cache="off")
    with pytest.raises(evalglass.OptionError, match=r"^resume continues in the run's own folder — drop out / example$"):
        evalglass.run(project.evals / "evalglass.yaml", resume=tmp_path, out=tmp_path / "elsewhere")


def test_a_fail_verdict_is_a_result_not_an_exception(tmp_path):
    project = three_gates(tmp_path)
    result = evalglass.run(project.evals / "evalglass.yaml", out=tmp_path / "run")
    assert result.gate("strict").outcome is Outcome.FAIL and result.exit_code == 1


def test_the_cli_run_view_and_verify_go_through_the_api(tmp_path):
    """Each command in a fresh interpreter whose API functions record their calls: one path, not a parallel one."""
    project = make_project(tmp_path)
    probe = (
        "import sys, evalglass.api as api\n"
        "from evalglass.cli import main\n"
        "calls = []\n"
        "for name in ('run', 'load_run', 'verify'):\n"
        "    def wrap(real, name=name):\n"
        "        def recorded(*args, **kwargs):\n"
        "            calls.append(name)\n"
        "            return real(*args, **kwargs)\n"
        "        return recorded\n"
        "    setattr(api, name, wrap(getattr(api, name)))\n"
        "for argv in (['run', '--out', 'run'], ['view', 'run'], ['verify', 'run']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as done:\n"
        "        assert done.code in (0, None), (argv, done.code)\n"
        "print(' '.join(calls), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=project.root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "run load_run verify"
    assert Path(project.root / "run" / "scorecard.json").exists()
