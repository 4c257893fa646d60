"""A check's gate binds the files its variables name and the modules pytest loads by its own settings.

Each case is a pull request's: a check gate over a failing suite is approved; the pull request rewrites a file the
check loads but the approval did not bind, so that the command exits 0. On the old main each of these turned the
approved failing gate into a pass (exit 0); the approval now binds the file, so the rewrite makes it stale (blocked,
exit 1). The same checks left alone keep failing as approved. Through the real CLI.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.e2e.project import Project, make_project

pytestmark = pytest.mark.timeout(300)

FAILING = "def test_sum():\n    assert 1 + 1 == 3\n"
PLUGIN = "def pytest_sessionfinish(session, exitstatus):\n    pass\n"
FORGIVING = "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n"
AT_EXIT_ZERO = "import atexit, os\natexit.register(os._exit, 0)\n\ndef test_nothing():\n    pass\n"
UNITTEST_FAILING = (
    "import unittest\n\nclass Sample(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(2, 3)\n"
)
PYTEST = ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]

#: case: (check declaration, files written before approval, the pull request's files)
CASES: dict[str, tuple[dict[str, Any], dict[str, str], dict[str, str]]] = {
    "a script an env value names": (
        {
            "command": [
                "{python}",
                "-c",
                "import os, runpy; runpy.run_path(os.environ['CHECKER'], run_name='__main__')",
            ],
            "env": {"CHECKER": "checker.py"},
        },
        {"checker.py": "import sys\nsys.exit(1)\n"},
        {"checker.py": "import sys\nsys.exit(0)\n"},
    ),
    "a plugin PYTEST_ADDOPTS names": (
        {"command": [*PYTEST, "tests"], "env": {"PYTEST_ADDOPTS": "-p sessionplug"}, "inputs": ["tests"]},
        {"sessionplug.py": PLUGIN},
        {"sessionplug.py": FORGIVING},
    ),
    "a plugin a bound pytest.ini's addopts names": (
        {"command": [*PYTEST, "tests"], "inputs": ["tests"]},
        {"pytest.ini": "[pytest]\naddopts = -p iniplug\n", "iniplug.py": PLUGIN},
        {"iniplug.py": FORGIVING},
    ),
    "a plugin a bound conftest.py names in pytest_plugins": (
        {"command": [*PYTEST, "tests"], "inputs": ["tests"]},
        {"conftest.py": "pytest_plugins = ['confplug']\n", "confplug.py": PLUGIN},
        {"confplug.py": FORGIVING},
    ),
    "a test module unittest discovers beside the declared one": (
        {"command": ["{python}", "-m", "unittest", "discover"], "inputs": ["test_sample.py"]},
        {"test_sample.py": UNITTEST_FAILING},
        {"test_zz.py": AT_EXIT_ZERO},
    ),
    "a test module python_files selects": (
        {"command": PYTEST, "inputs": ["tests/check_sample.py"]},
        {"pytest.ini": "[pytest]\npython_files = check_*.py\n", "tests/check_sample.py": FAILING},
        {"tests/check_zz.py": AT_EXIT_ZERO},
    ),
}


def _project(tmp_path: Any, check: dict[str, Any], files: dict[str, str]) -> Project:
    env = {"PYTHONDONTWRITEBYTECODE": "1", **check.get("env", {})}
    project = make_project(
        tmp_path,
        checks={"suite": {"timeout": 120, **check, "env": env}},
        gates={"suite-ok": {"check": "suite"}},
    )
    (project.root / ".git").mkdir()
    (project.evals / "tests").mkdir()
    if "tests/check_sample.py" not in files:
        (project.evals / "tests" / "test_sample.py").write_text(FAILING)
    _write(project, files)
    return project


def _write(project: Project, files: dict[str, str]) -> None:
    for name, text in files.items():
        (project.evals / name).write_text(text)


def _gate(project: Project) -> tuple[int, str, list[str]]:
    result = project.run("--no-history", "--format", "json")
    assert result.code in (0, 1), result.err
    found = next(g for g in result.json()["decision"]["gates"] if g["name"] == "suite-ok")
    return result.code, found["outcome"], [reason["code"] for reason in found["reasons"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_rewriting_a_file_the_check_loads_makes_its_approval_stale(tmp_path, case):
    check, before, pull_request = CASES[case]
    project = _project(tmp_path, check, before)
    assert project.run("--no-history").code == 0  # informational: nothing active yet
    fingerprint = project.gate_fingerprint("suite-ok")
    project.write_ledger({"version": 1, "gates": {"suite-ok": {"active": True, "fingerprint": fingerprint}}})
    assert _gate(project) == (1, "fail", ["below_threshold"])  # approved as it stands: the suite fails
    _write(project, pull_request)
    assert _gate(project) == (1, "blocked", ["approval_stale"])  # on the old main: (0, "pass", [])


def _shell_project(tmp_path: Any, **check: Any) -> Project:
    project = _project(tmp_path, {"command": ["sh", "run.sh"], **check}, {})
    (project.evals / "run.sh").write_text(f"exec {sys.executable} helper.py\n")
    (project.evals / "helper.py").write_text("import sys\nsys.exit(1)\n")
    assert project.run("--no-history").code == 0
    fingerprint = project.gate_fingerprint("suite-ok")
    project.write_ledger({"version": 1, "gates": {"suite-ok": {"active": True, "fingerprint": fingerprint}}})
    return project


def test_a_shell_script_whose_calls_no_input_binds_cannot_earn_green(tmp_path):
    """`sh run.sh` binds run.sh's bytes; what it runs (helper.py) is not read, so the check's code is not proven
    bound: blocked (`check_inputs_unbound`, naming the script) until `inputs:` say what it runs."""
    project = _shell_project(tmp_path)
    (project.evals / "helper.py").write_text("import sys\nsys.exit(0)\n")  # the pull request
    code, outcome, reasons = _gate(project)
    assert (code, outcome, reasons) == (1, "blocked", ["check_inputs_unbound"])  # on the old main: (0, "pass", [])
    result = project.run("--no-history", "--format", "json", "--out", "run")
    found = result.json()["decision"]["gates"][0]["reasons"][0]["message"]
    assert "script 'run.sh' (what it runs is not followed)" in found, found
    verified = project.cli("verify", "run")  # re-derived beside the config folder: the same block
    assert verified.code == 0, verified


def test_a_shell_script_whose_calls_are_declared_decides_and_goes_stale(tmp_path):
    project = _shell_project(tmp_path, inputs=["helper.py"])
    assert _gate(project) == (1, "fail", ["below_threshold"])
    (project.evals / "helper.py").write_text("import sys\nsys.exit(0)\n")
    assert _gate(project) == (1, "blocked", ["approval_stale"])


@pytest.mark.parametrize("where", ["checks", "gates"])
def test_the_config_cannot_accept_unbound_code_only_the_ledger_can(tmp_path, where):
    check: dict[str, Any] = {"command": ["sh", "run.sh"]}
    gate: dict[str, Any] = {"check": "suite"}
    (check if where == "checks" else gate)["require_binding"] = False
    project = make_project(tmp_path, checks={"suite": check}, gates={"suite-ok": gate})
    result = project.run("--no-history")
    assert result.code == 2 and "unknown key 'require_binding'" in result.err, result
