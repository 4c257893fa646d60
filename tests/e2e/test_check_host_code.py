"""A check's gate binds the host code its command runs by name, wherever that code lies: what a checker script
imports (inside the config folder or outside it, through the script's folder or a `PYTHONPATH` the check declares),
a script outside the config folder itself, a module run with `-m`, the `conftest.py` and configuration pytest reads
on its own. A pull request that changes any of them, and not the ledger, cannot keep the approved gate green: the
approval goes stale, and the reason names the file (an earlier run made when the approval was fresh kept its hash).
Variables that change what Python loads in ways that cannot be bound are refused. And a stale python metric gate
approved without its `definition:` names its changed host file the same way.

Through the real CLI, in a repository laid out as projects are: the config folder `evals/` inside a repository
whose helpers lie beside it (`lib/`, `tools/`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, base_config, make_project, validated_gold
from tests.e2e.test_check_inputs import bind_target

pytestmark = pytest.mark.timeout(300)

CHECKER = "import sys\n\nfrom verdicts import ok\n\nsys.exit(0 if ok() else 1)\n"
STRICT = "def ok():\n    return 1 + 1 == 2\n"
#: What a pull request would write: the helper accepts everything.
LAX = "def ok():\n    return True  # and now without looking\n"


def check_project(tmp_path: Path, check: dict[str, Any]) -> Project:
    project = make_project(
        tmp_path, checks={"suite": {"timeout": 120, **check}}, gates={"suite-ok": {"check": "suite"}}
    )
    (tmp_path / ".git").mkdir()  # the repository's root: where pytest's own files stop being looked for
    return project


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def approve(project: Project, gate: str = "suite-ok", **entry: Any) -> None:
    """The host approves the gate as it stands, with the fingerprint `explain` prints (no `definition:`)."""
    assert project.run().code in (0, 1)
    fingerprint = project.gate_fingerprint(gate)
    ledger: dict[str, Any] = {"version": 1, "gates": {gate: {"active": True, "fingerprint": fingerprint, **entry}}}
    if "threshold" in entry:  # a metric gate: it stands on the dataset's gold
        ledger["datasets"] = validated_gold(project.evals)
    project.write_ledger(ledger)


def decided(project: Project, gate: str = "suite-ok") -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json")
    assert result.code in (0, 1), result.err
    return result.code, next(g for g in result.json()["decision"]["gates"] if g["name"] == gate)


def stale_reason(found: dict[str, Any]) -> str:
    assert found["outcome"] == "blocked", found
    (message,) = [reason["message"] for reason in found["reasons"] if reason["code"] == "approval_stale"]
    return str(message)


def sorted_runs(project: Project) -> list[str]:
    """The run folders other than the last, oldest first."""
    runs = project.root / ".evalglass" / "runs"
    return sorted(
        (folder.name for folder in runs.iterdir() if folder != project.last_run()),
        key=lambda name: (runs / name).stat().st_mtime,
    )


def recorded_code(project: Project) -> dict[str, str]:
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    return dict(record["definition_files"].get("code:suite", {}))


def test_a_helper_outside_the_config_folder_on_the_declared_pythonpath_is_bound(tmp_path):
    """`env: {PYTHONPATH: ../lib}` makes `lib/verdicts.py` what the checker imports: bound, so the pull request that
    makes it lax turns the approval stale, and the reason names the file."""
    project = check_project(tmp_path, {"command": ["{python}", "check.py"], "env": {"PYTHONPATH": "../lib"}})
    write(project.evals / "check.py", CHECKER)
    helper = write(tmp_path / "lib" / "verdicts.py", STRICT)
    bind_target(project)  # under require_binding the target is bound by its state: only the checker's code is left
    approve(project, require_binding=True)
    code, found = decided(project)
    assert (code, found["outcome"]) == (0, "pass"), found  # nothing unbound: the helper is bound, not named
    assert list(recorded_code(project)) == ["../lib/verdicts.py"]

    helper.write_text(LAX)
    code, found = decided(project)
    assert code == 1
    assert "changed ../lib/verdicts.py" in stale_reason(found)
    # The reason was named from an earlier run's files; the record keeps them, so verify re-derives it alone.
    shutil.rmtree(project.root / ".evalglass" / "runs" / sorted_runs(project)[0])
    assert project.cli("verify", str(project.last_run())).code == 0
    helper.write_text(STRICT)  # undone: the same bytes, the same approval
    assert decided(project)[0] == 0


def test_a_script_outside_the_config_folder_and_what_it_imports_are_bound(tmp_path):
    project = check_project(tmp_path, {"command": ["{python}", "../tools/check.py"]})
    script = write(tmp_path / "tools" / "check.py", CHECKER)
    helper = write(tmp_path / "tools" / "verdicts.py", STRICT)
    approve(project)
    assert decided(project)[0] == 0
    assert sorted(recorded_code(project)) == ["../tools/check.py", "../tools/verdicts.py"]
    for path, edit in ((helper, LAX), (script, "import sys\n\nsys.exit(0)\n")):
        original = path.read_text()
        path.write_text(edit)
        code, found = decided(project)
        assert code == 1 and f"changed ../tools/{path.name}" in stale_reason(found), path
        path.write_text(original)
    assert decided(project)[0] == 0


def test_a_module_run_with_m_binds_what_it_imports(tmp_path):
    """`python -m selftest`: the module and the helper it imports (from the declared path) are bound."""
    project = check_project(tmp_path, {"command": ["{python}", "-m", "selftest"], "env": {"PYTHONPATH": "../lib"}})
    write(tmp_path / "lib" / "selftest.py", CHECKER)
    helper = write(tmp_path / "lib" / "verdicts.py", STRICT)
    bind_target(project)  # under require_binding the target is bound by its state: only the checker's code is left
    approve(project, require_binding=True)
    code, found = decided(project)
    assert code == 0, found
    helper.write_text(LAX)
    code, found = decided(project)
    assert code == 1 and "changed ../lib/verdicts.py" in stale_reason(found)


def test_pytest_s_conftest_and_configuration_above_the_config_folder_are_bound(tmp_path):
    """A pytest check declares its tests under `inputs:`; the repository's `conftest.py` (and what it imports) and
    `pyproject.toml` are read by pytest on its own, from above the config folder: bound too."""
    project = check_project(
        tmp_path,
        {
            "command": ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
            "inputs": ["tests"],
            "env": {"PYTHONDONTWRITEBYTECODE": "1"},
        },
    )
    write(project.evals / "tests" / "test_sample.py", "def test_sum(strict):\n    assert strict\n")
    conftest = write(
        tmp_path / "conftest.py",
        "import pytest\n\nfrom fixturehelp import verdict\n\n\n@pytest.fixture\ndef strict():\n    return verdict()\n",
    )
    helper = write(tmp_path / "fixturehelp.py", "def verdict():\n    return 1 + 1 == 3\n")
    settings = write(tmp_path / "pyproject.toml", "[tool.pytest.ini_options]\npythonpath = ['.']\n")
    approve(project)
    code, found = decided(project)
    assert (code, found["outcome"]) == (1, "fail"), found  # approved while failing: a fail is a decision
    assert sorted(recorded_code(project)) == ["../conftest.py", "../fixturehelp.py", "../pyproject.toml"]
    for path, edit in (
        (helper, "def verdict():\n    return True\n"),
        (conftest, conftest.read_text().replace("return verdict()", "return True")),
        (settings, settings.read_text() + "addopts = '--deselect evals/tests/test_sample.py::test_sum'\n"),
    ):
        original = path.read_text()
        path.write_text(edit)
        code, found = decided(project)
        assert code == 1 and f"changed ../{path.name}" in stale_reason(found), path
        path.write_text(original)
    assert decided(project)[1]["outcome"] == "fail"


@pytest.mark.parametrize("variable", ["PYTHONUSERBASE", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONPLATLIBDIR"])
def test_a_variable_that_changes_what_python_loads_unbound_is_refused(tmp_path, variable):
    project = check_project(tmp_path, {"command": ["{python}", "check.py"], "env": {variable: "../elsewhere"}})
    write(project.evals / "check.py", "print('ok')\n")
    result = project.run()
    assert result.code == 2
    assert f"env {variable} changes which code Python loads" in result.err and "Traceback" not in result.err
    assert "evalglass.yaml:" in result.err


def test_an_approval_from_before_check_code_was_bound_is_stale_and_says_so(tmp_path):
    from evalglass.engine.spec.config import load_config

    project = check_project(tmp_path, {"command": ["{python}", "check.py"]})
    write(project.evals / "check.py", CHECKER)
    write(project.evals / "verdicts.py", STRICT)
    assert project.run().code == 0
    files = json.loads((project.last_run() / "runrecord.json").read_text())["definition_files"]
    config = load_config(project.evals / "evalglass.yaml").config
    old = config.gate_fingerprint("suite-ok", {key: value for key, value in files.items() if key != "code:suite"})
    project.write_ledger({"version": 1, "gates": {"suite-ok": {"active": True, "fingerprint": old}}})
    code, found = decided(project)
    assert code == 1
    reason = stale_reason(found)
    assert "approved before EvalGlass bound the host code its check runs by name" in reason
    assert "now also binds verdicts.py" in reason


# --- a python metric approved without its definition ------------------------------------------------------------


SCORER = "from hostlib.rules import KEEP\n\n\ndef score(output, record):\n    return 1.0 if KEEP else 0.0\n"


def metric_project(tmp_path: Path) -> Project:
    project = make_project(tmp_path)
    write(tmp_path / "hostlib" / "__init__.py", "")
    write(tmp_path / "hostlib" / "rules.py", "KEEP = True\n")
    write(project.evals / "scorer.py", SCORER)
    project.write_config(
        base_config(
            metrics={"host": {"type": "python", "function": "scorer.py:score", "scale": {"min": 0, "max": 1}}},
            gates={"accuracy": {"metric": "host", "proposed_threshold": 0.7}},
        )
    )
    return project


def test_a_stale_python_metric_without_definition_names_the_changed_host_file(tmp_path):
    project = metric_project(tmp_path)
    approve(project, "accuracy", threshold=0.7)
    assert decided(project, "accuracy")[0] == 0
    (tmp_path / "hostlib" / "rules.py").write_text("KEEP = 1\n")
    code, found = decided(project, "accuracy")
    assert code == 1
    assert "changed ../hostlib/rules.py" in stale_reason(found)
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    (kept,) = record["approved_files"]  # the approved hashes, from the run made when the host approved
    assert sorted(kept["imports:host"]) == ["../hostlib/__init__.py", "../hostlib/rules.py"]
    assert (
        kept["imports:host"]["../hostlib/rules.py"] != record["definition_files"]["imports:host"]["../hostlib/rules.py"]
    )
    assert project.cli("verify", str(project.last_run())).code == 0
    preview = project.cli("preflight", "--format", "json")
    assert "changed ../hostlib/rules.py" in preview.out, preview.err


def test_without_an_earlier_run_an_added_file_is_named_and_a_change_is_said_to_be_unknowable(tmp_path):
    """On a fresh checkout no run made at approval is at hand. A module that did not exist then, imported
    conditionally, is found as added; a changed file cannot be named from a hash, and the reason says so."""
    project = metric_project(tmp_path)
    optional = "try:\n    from hostlib import extra\nexcept ImportError:\n    extra = None\n"
    (project.evals / "scorer.py").write_text(optional + SCORER)
    approve(project, "accuracy", threshold=0.7)
    shutil.rmtree(tmp_path / ".evalglass" / "runs")
    extra = write(tmp_path / "hostlib" / "extra.py", "KEEP = False\n")
    code, found = decided(project, "accuracy")
    assert code == 1
    assert "was added since approval (the declaration is unchanged): ../hostlib/extra.py" in stale_reason(found)

    extra.unlink()
    shutil.rmtree(tmp_path / ".evalglass" / "runs")
    (tmp_path / "hostlib" / "rules.py").write_text("KEEP = 1\n")
    code, found = decided(project, "accuracy")
    reason = stale_reason(found)
    assert code == 1 and "which cannot be told" in reason and "no earlier run at hand" in reason
    assert "It binds ../hostlib/__init__.py, ../hostlib/rules.py, scorer.py" in reason


def test_preflight_says_what_a_check_metric_s_per_example_check_leaves_unbound(tmp_path):
    """A gate on a `check` metric binds the check's declaration and host code; what its command discovers (`pytest
    tests` without `inputs:`) is not bound, and preflight says so for the metric gate too, active or not."""
    project = make_project(tmp_path)
    write(project.evals / "tests" / "test_x.py", "def test_x():\n    pass\n")
    config = base_config(
        metrics={"ok": {"type": "check", "check": "solution"}},
        gates={"solutions": {"metric": "ok", "proposed_threshold": 0.5}},
    )
    config["checks"] = {"solution": {"command": ["{python}", "-m", "pytest", "-q", "tests", "{target}"]}}
    project.write_config(config)

    def notes() -> list[str]:
        result = project.cli("preflight", "--format", "json")
        assert result.code in (0, 1), result.err
        (gate,) = [g for g in result.json()["gates"] if g["name"] == "solutions"]
        return [note for note in gate["notes"] if "does not bind its test code" in note]

    (said,) = notes()
    assert "check 'solution'" in said and "folder 'tests'" in said and "module 'pytest' (-m)" in said
    config["checks"]["solution"]["inputs"] = ["tests"]
    project.write_config(config)
    assert notes() == []


def failing_pytest_suite(tmp_path: Path, args: list[str], inputs: list[str]) -> Project:
    """A pytest check on a failing test, approved as it stands (so it decides `fail`)."""
    command = ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    project = check_project(tmp_path, {"command": command, "inputs": inputs, "env": {"PYTHONDONTWRITEBYTECODE": "1"}})
    write(project.evals / "tests" / "test_sample.py", "def test_sum():\n    assert 1 + 1 == 3\n")
    approve(project)
    code, found = decided(project)
    assert (code, found["outcome"]) == (1, "fail"), found
    return project


def assert_stale_once_added(project: Project, path: Path, text: str) -> None:
    write(path, text)
    code, found = decided(project)
    assert code == 1 and path.name in stale_reason(found), found


@pytest.mark.parametrize("name", ["pytest.toml", ".pytest.toml"])
@pytest.mark.parametrize("where", ["evals", "."])
def test_pytest_s_toml_configuration_is_bound_too(tmp_path, name, where):
    """pytest 9 reads `pytest.toml` and `.pytest.toml` before any other configuration file: one a pull request adds
    (`addopts = ["--collect-only"]`: collect the tests, run none, exit 0) must make the approval stale, never turn
    a failing suite into a PASS."""
    project = failing_pytest_suite(tmp_path, ["tests"], ["tests"])
    assert_stale_once_added(project, tmp_path / where / name, '[pytest]\naddopts = ["--collect-only"]\n')


#: What a pull request would add below the check's working folder: a conftest.py that pytest discovers on its way to
#: the tests, and whose hook ends the session with exit status 0 whatever its tests did.
EVERY_TEST_PASSES = """\
def pytest_sessionfinish(session, exitstatus):
    session.exitstatus = 0
"""


@pytest.mark.parametrize(
    ("args", "inputs", "folder"),
    [
        ([], ["tests/test_sample.py"], "tests"),
        ([], ["tests/test_sample.py"], "tests/deeper"),
        (["tests"], ["tests/test_*.py"], "tests"),
    ],
)
def test_a_conftest_pytest_discovers_below_the_working_folder_is_bound(tmp_path, args, inputs, folder):
    """The inputs bind the test files; a `conftest.py` a pull request adds where pytest collects (a folder below its
    `cwd`) runs hooks for the whole session: it must make the approval stale, never a failing suite PASS."""
    project = failing_pytest_suite(tmp_path, args, inputs)
    assert_stale_once_added(project, project.evals / folder / "conftest.py", EVERY_TEST_PASSES)


#: Module code that ends the process with 0 whatever pytest concluded, once pytest exits.
EXIT_0_AT_THE_END = "import atexit\nimport os\n\natexit.register(os._exit, 0)\n"


@pytest.mark.parametrize("name", ["test_added.py", "added_test.py", "__init__.py"])
def test_a_module_pytest_collects_beside_the_bound_tests_is_bound(tmp_path, name):
    """pytest imports every test module (and the packages holding them) it discovers: one a pull request adds
    beside the bound test file runs at collection, and can end the process with 0 after a failing session."""
    project = failing_pytest_suite(tmp_path, [], ["tests/test_sample.py"])
    assert_stale_once_added(project, project.evals / "tests" / name, EXIT_0_AT_THE_END)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\naddopts = --collect-only\n"),
        ("pytest.toml", '[pytest]\naddopts = ["--collect-only"]\n'),
    ],
)
def test_pytest_s_configuration_in_the_folder_it_is_told_to_collect_is_bound(tmp_path, name, text):
    """pytest looks for its configuration from the folders named on its command line up, before its `cwd`: one a
    pull request adds in `tests/` (which a glob input does not hold) must make the approval stale."""
    project = failing_pytest_suite(tmp_path, ["tests"], ["tests/test_*.py"])
    assert_stale_once_added(project, project.evals / "tests" / name, text)


#: A module named like one pytest imports (`iniconfig`), put where `python -m pytest` looks first (its `cwd`): it
#: hands pytest the installed module, and ends the process with 0 at exit.
SHADOW = """\
import atexit
import os
import sys

atexit.register(os._exit, 0)
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
del sys.modules[__name__]
import iniconfig  # noqa: E402  the installed one
"""


def test_a_module_shadowing_an_installed_one_where_python_looks_first_is_bound(tmp_path):
    project = failing_pytest_suite(tmp_path, ["tests"], ["tests"])
    assert_stale_once_added(project, project.evals / "iniconfig.py", SHADOW)
