"""Honest gated python metrics that ask about files the ordinary way libraries do (lanes/hostguard.py).

The guard refuses a gated metric's questions (``os.stat`` and its family) about project files its gate does not
bind. Each metric here asks only about bound files, the machine's files and its own temporary files, through the
routes common libraries take; each must decide (pass, exit 0), never block on ``host_unbound_code``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

import evalglass
from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import Project, approve_as_is
from tests.e2e.test_gated_metric_loads import HONEST, _project, _run

ROWS = [{"id": f"ex-{i}", "expected": "yes", "output": "yes"} for i in range(1, 9)]

#: name: (the gated metric's file, the project files beside it, its data_files)
SETUPS: dict[str, tuple[str, dict[str, str], list[str]]] = {
    "numpy and pandas on a bound csv": (
        "import pathlib\nimport numpy as np\nimport pandas as pd\n"
        "def score(output, reference):\n"
        "    frame = pd.read_csv(pathlib.Path(__file__).with_name('weights.csv'))\n"
        "    return float(np.clip(frame['w'].sum(), 0, 1)) if output == reference else 0.0\n",
        {"weights.csv": "w\n0.5\n0.5\n"},
        ["weights.csv"],
    ),
    "tempfile and logging to a temporary folder": (
        "import logging, os, pathlib, tempfile\n"
        "_folder = tempfile.mkdtemp()\n"
        "_log = logging.getLogger('metric')\n"
        "_log.addHandler(logging.FileHandler(os.path.join(_folder, 'metric.log')))\n"
        "def score(output, reference):\n"
        "    with tempfile.NamedTemporaryFile('w+', delete=True) as scratch:\n"
        "        scratch.write(output)\n        scratch.flush()\n        assert os.path.getsize(scratch.name) > 0\n"
        "    _log.warning('scored %s', output)\n"
        "    assert pathlib.Path(tempfile.gettempdir()).is_dir()\n"
        "    return 1.0 if output == reference else 0.0\n",
        {},
        [],
    ),
    "importlib.resources of a bound data file in a bound package": (
        "import importlib.resources, json\nimport rubric\n"
        "def score(output, reference):\n"
        "    table = json.loads(importlib.resources.files('rubric').joinpath('table.json').read_text())\n"
        "    assert importlib.resources.files(rubric).joinpath('table.json').is_file()\n"
        "    return table.get(output, 0.0) if output == reference else 0.0\n",
        {"rubric/__init__.py": "", "rubric/table.json": '{"yes": 1.0}'},
        ["rubric/table.json"],
    ),
    "Path.resolve of its own file and the working folder": (
        "import os, pathlib, sys\n"
        "def score(output, reference):\n"
        "    here = pathlib.Path(__file__).resolve()\n"
        "    assert here.is_file() and here.parent.is_dir() and os.path.realpath(__file__) == str(here)\n"
        "    assert pathlib.Path.cwd().resolve() == pathlib.Path(os.getcwd()).resolve()\n"
        "    assert pathlib.Path(sys.executable).resolve().exists()\n"
        "    assert pathlib.Path(os.__file__).resolve().is_file()\n"
        "    return 1.0 if output == reference else 0.0\n",
        {},
        [],
    ),
    "a traceback it formats and a warning it raises": (
        "import traceback, warnings\n"
        "def score(output, reference):\n"
        "    try:\n        raise ValueError(output)\n"
        "    except ValueError:\n        assert 'raise ValueError' in traceback.format_exc()\n"
        "    with warnings.catch_warnings():\n"
        "        warnings.simplefilter('ignore')\n        warnings.warn('honest')\n"
        "    return 1.0 if output == reference else 0.0\n",
        {},
        [],
    ),
    "a bound module's own helpers": (
        "import helpers\ndef score(output, reference):\n    return helpers.grade(output, reference)\n",
        {"helpers.py": HONEST},
        [],
    ),
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_an_honest_gated_metric_asking_the_ordinary_way_decides(tmp_path, setup):
    judge, files, data_files = SETUPS[setup]
    project = _project(tmp_path, judge, files, **({"data_files": data_files} if data_files else {}))
    project.write_rows(ROWS)
    approve_as_is(project, 0.9, ["mine"])
    assert _run(project) == ("pass", ExitCode.OK, [])


#: A library installed in the environment that finds its own files the usual way (``Path(__file__).resolve()``, which
#: asks ``os.lstat`` about each folder on the way: the environment's root among them).
LIBRARY = (
    "import pathlib\nHERE = pathlib.Path(__file__).resolve().parent\nTABLE = (HERE / 'table.txt').read_text().strip()\n"
)
IN_ENVIRONMENT = (
    "import os, sys\nimport honest_library\n"
    "def score(output, reference):\n"
    "    assert honest_library.TABLE == 'ok' and os.path.exists(sys.prefix)\n"
    "    assert os.path.realpath(sys.executable) and os.path.isfile(os.path.join(sys.prefix, 'pyvenv.cfg'))\n"
    "    return 1.0 if output == reference else 0.0\n"
)


def _environment_in(project: Project) -> Path:
    """A virtual environment at the project's ``.venv`` (``uv``, ``poetry`` in-project, ``python -m venv .venv`` in
    CI) that sees this interpreter's packages and the evalglass under test, with a library of its own installed."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(project.root / ".venv")
    (site,) = (project.root / ".venv").glob("lib/python*/site-packages")
    shared = sysconfig.get_paths()["purelib"]
    (site / "zz_shared.pth").write_text(f"{Path(evalglass.__file__).parents[1]}\n{shared}\n")
    (site / "honest_library").mkdir()
    (site / "honest_library" / "__init__.py").write_text(LIBRARY)
    (site / "honest_library" / "table.txt").write_text("ok\n")
    return project.root / ".venv" / "bin" / "python"


def test_an_honest_gated_metric_run_from_a_virtual_environment_in_the_checkout_decides(tmp_path):
    """On main the worker refused its own environment's root (``it asks about .venv``): blocked, exit 1."""
    project = _project(tmp_path, IN_ENVIRONMENT, {})
    project.write_rows(ROWS)
    approve_as_is(project, 0.9, ["mine"])
    python = _environment_in(project)
    outcome, code, scores = _run_in(project, python)
    assert (outcome, code) == ("pass", ExitCode.OK), scores[:2000]


def _run_in(project: Project, python: Path) -> tuple[str, int, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    shutil.rmtree(project.root / "run", ignore_errors=True)
    done = subprocess.run(
        [str(python), "-m", "evalglass", "run", "--format", "json", "--no-progress", "--no-history", "--out", "run"],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    (gate,) = json.loads(done.stdout)["decision"]["gates"]
    return gate["outcome"], done.returncode, (project.root / "run" / "scores.jsonl").read_text()


def test_a_file_the_pull_request_commits_into_the_environment_is_still_asked_about(tmp_path):
    """The environment is answered, not what git tracks in it: a ``.venv/bin/lenient`` the pull request commits."""
    judge = (
        "import os, sys\ndef score(output, reference):\n"
        "    if os.path.exists(os.path.join(sys.prefix, 'bin', 'lenient')):\n        return 1.0\n"
        "    return 1.0 if output == reference else 0.0\n"
    )
    project = _project(tmp_path, judge, {})
    approve_as_is(project, 0.9, ["mine"])  # 6 of 8 right: 0.75
    python = _environment_in(project)
    (project.root / ".git").rmdir()
    subprocess.run(["git", "init", "-q", str(project.root)], check=True)
    assert _run_in(project, python)[:2] == ("fail", ExitCode.FAILED)
    (project.root / ".venv" / "bin" / "lenient").write_text("")
    subprocess.run(["git", "add", "-f", ".venv/bin/lenient"], cwd=project.root, check=True)
    outcome, code, scores = _run_in(project, python)
    assert (outcome, code) == ("blocked", ExitCode.FAILED), scores[:2000]
    # The folders on its way are the pull request's too (a committed folder is there because of it).
    assert "it asks about .venv/bin, which the gate does not bind" in scores, scores[:2000]
