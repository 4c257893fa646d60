"""A check's `inputs:` and what its command runs unbound (lanes/checkinputs.py): the classes it finds, what covers
them, how inputs are hashed (folders, globs, modules, links, bytecode, the cap), and that gates without inputs keep
the fingerprint they had."""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.engine.spec.config import Config, definition_file_hashes
from evalglass.lanes.checkinputs import (
    PYTEST_IMPLICIT,
    InputProblem,
    check_host_files,
    find_module,
    input_hashes,
    unbound_inputs,
)
from evalglass.lanes.checkspec import CheckSpec
from evalglass.lanes.targetstate import Budget, TargetTooLarge, fingerprint_target


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    (root / "tests" / "unit").mkdir(parents=True)
    (root / "tests" / "unit" / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n")
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (root / "check.py").write_text("print('ok')\n")
    return root


def found(project: Path, command: list[str] | str, **fields: Any) -> tuple[str, ...]:
    shell = {"shell": True} if isinstance(command, str) else {}
    return unbound_inputs(CheckSpec(command=command, **shell, **fields), project)


# --- what the command runs that no input binds ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["{python}", "-m", "unittest", "discover", "-s", "tests"], ("folder 'tests'", "module 'unittest' (-m)")),
        (["pytest", "-q", "tests/"], ("folder 'tests'", "runner 'pytest'")),
        (["{python}", "-I", "-X", "dev", "-m", "pytest"], ("module 'pytest' (-m)",)),
        (["python3.11", "-mpytest", "--rootdir=tests/unit"], ("folder 'tests/unit'", "module 'pytest' (-m)")),
        (["uv", "run", "--", "npm", "test"], ("runner 'npm'",)),
        (["sh", "-c", "cd src && go test ./..."], ("folder 'src'", "runner 'go'")),
        ("make -C tests check", ("folder 'tests'", "runner 'make'")),
        (["ruff", "check", "."], ("folder '.'",)),
        # Named files are hashed (engine.spec.config), inline code is in the declaration: nothing is unbound.
        (["{python}", "check.py", "{target}"], ()),
        (["{python}", "-c", "import sys; sys.exit(0)", "tests"], ("folder 'tests'",)),
        (["{python}", "check.py", "-m", "x"], ()),
        (["echo", "/tmp", "../outside", "not-there"], ()),
    ],
)
def test_what_a_command_runs_is_found_by_class(project, command, expected):
    assert found(project, command) == expected


def test_inputs_and_the_target_cover_what_they_hold(project):
    command = ["{python}", "-m", "pytest", "tests/unit", "src"]
    assert found(project, command) == ("folder 'tests/unit'", "folder 'src'", "module 'pytest' (-m)")
    # An input at or above a folder covers it; a glob by its literal folder; a runner by any input at all.
    assert found(project, command, inputs=["tests"]) == ("folder 'src'",)
    assert found(project, command, inputs=["tests/**/*.py", "src/pkg"]) == ("folder 'src'",)
    assert found(project, command, inputs=["tests", "src"]) == ()
    # The target binds what it holds (its state is expect_state's business); a target above cwd binds discovery.
    assert found(project, command, inputs=["tests"], target="src") == ()
    assert found(project, ["pytest"], target=".") == ()
    assert found(project, ["pytest"], target="src") == ("runner 'pytest'",)


def test_the_project_modules_a_named_script_imports_are_bound_not_named(project):
    """The script is hashed as a named file; what it imports from the project (its folder first, as `python
    script.py` looks) is code it runs too: bound (lanes.checkinputs.check_host_files), so not said as unbound."""
    (project / "checks").mkdir()
    (project / "checks" / "run.py").write_text("import json\nimport rules\n")
    (project / "checks" / "rules.py").write_text("from pkg import *\nraise SystemExit('imported')\n")
    command = ["{python}", "checks/run.py", "{target}"]
    assert found(project, command) == ()
    # `pkg` is not importable from the script's folder or sys.path: not found, so not bound (a limit).
    assert check_host_files(CheckSpec(command=command), project) == ((project / "checks" / "rules.py").resolve(),)


def test_a_module_of_the_project_run_with_m_is_bound_not_named(project):
    (project / "selftest.py").write_text("import helpers\nraise SystemExit('imported while fingerprinting')\n")
    (project / "helpers.py").write_text("")
    command = ["{python}", "-m", "selftest"]
    assert found(project, command) == ()
    assert check_host_files(CheckSpec(command=command), project) == (
        (project / "selftest.py").resolve(),
        (project / "helpers.py").resolve(),
    )
    dotted = ["{python}", "-m", "pkg"]
    (project / "src" / "pkg" / "__main__.py").write_text("from . import runner\n")
    (project / "src" / "pkg" / "runner.py").write_text("")
    assert found(project, dotted, cwd="src") == ()
    assert set(check_host_files(CheckSpec(command=dotted, cwd="src"), project)) == {
        (project / "src" / "pkg" / name).resolve() for name in ("__init__.py", "__main__.py", "runner.py")
    }


def test_finding_a_module_imports_nothing(project, tmp_path):
    marker = tmp_path / "ran"
    package = project / "noisy"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (package / "inner.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    spec = find_module("noisy.inner", project)
    assert spec is not None and Path(str(spec.origin)) == package / "inner.py"
    assert not marker.exists() and "noisy" not in sys.modules
    assert find_module("noisy.absent", project) is None
    assert find_module("json", project) is not None  # the interpreter's own, through its finders
    assert find_module("unittest", project).submodule_search_locations  # type: ignore[union-attr]


# --- hashing inputs ---------------------------------------------------------------------------------------------


def hashes(project: Path, *inputs: Any) -> dict[str, str]:
    return input_hashes(CheckSpec(command=["pytest"], inputs=list(inputs)), project)


def test_an_input_folder_changes_with_any_file_under_it_and_only_then(project):
    before = hashes(project, "tests")
    (project / "tests" / "unit" / "__pycache__").mkdir()
    (project / "tests" / ".pytest_cache" / "v").mkdir(parents=True)
    (project / "tests" / ".pytest_cache" / "v" / "lastfailed").write_text("{}")  # a tool's cache: not code
    assert hashes(project, "tests") == before
    (project / "tests" / "unit" / "test_a.py").write_text("def test_a():\n    pass\n")
    assert hashes(project, "tests") != before
    (project / "tests" / "unit" / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n")
    assert hashes(project, "tests") == before
    (project / "tests" / "conftest.py").write_text("")
    assert hashes(project, "tests") != before


def test_a_glob_binds_only_what_it_matches_from_its_literal_folder(project):
    (project / "tests" / "data.json").write_text("{}")
    before = hashes(project, "tests/**/*.py")
    (project / "tests" / "data.json").write_text('{"changed": true}')
    assert hashes(project, "tests/**/*.py") == before
    (project / "tests" / "unit" / "test_b.py").write_text("")
    assert hashes(project, "tests/**/*.py") != before
    top = hashes(project, "*.py")
    (project / "tests" / "unit" / "test_c.py").write_text("")
    assert hashes(project, "*.py") == top  # anchored: `*.py` is the config folder's own files, not any depth
    (project / "run.py").write_text("")
    assert hashes(project, "*.py") != top


def test_bytecode_python_checks_against_its_source_is_left_out_and_unchecked_bytecode_is_not(project):
    source = project / "tests" / "unit" / "test_a.py"
    before = hashes(project, "tests")
    cache = project / "tests" / "unit" / "__pycache__"
    for mode in (py_compile.PycInvalidationMode.TIMESTAMP, py_compile.PycInvalidationMode.CHECKED_HASH):
        py_compile.compile(str(source), cfile=str(cache / "test_a.cpython-311.pyc"), invalidation_mode=mode)
        assert hashes(project, "tests") == before
    # An unchecked-hash .pyc runs instead of its source whatever the source says: it is code, so it is bound.
    py_compile.compile(
        str(source),
        cfile=str(cache / "test_a.cpython-311.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    assert hashes(project, "tests") != before


def test_a_link_is_bound_by_what_it_points_to_and_never_followed(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "helper.py").write_text("A = 1\n")
    (project / "tests" / "helpers").symlink_to(outside)
    before = hashes(project, "tests")
    (outside / "helper.py").write_text("A = 2\n")
    assert hashes(project, "tests") == before  # not followed: what it points to is not part of the input
    (project / "tests" / "helpers").unlink()
    (project / "tests" / "helpers").symlink_to(project / "src")
    assert hashes(project, "tests") != before  # re-pointed: a change


def test_a_module_input_binds_its_package_folder(project):
    (project / "src" / "pkg" / "core.py").write_text("X = 1\n")
    spec = CheckSpec(command=["pytest"], cwd="src", inputs=[{"module": "pkg"}])
    before = input_hashes(spec, project)
    (project / "src" / "pkg" / "core.py").write_text("X = 2\n")
    assert input_hashes(spec, project) != before


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (["nowhere"], "no such file or folder"),
        (["tests/**/*.rs"], "matches no file"),
        (["check.py/*.py"], "not a folder"),
        ([{"module": "no_such_module_evalglass"}], "no module"),
        ([{"module": "sys"}], "built into the interpreter"),
        (["escape"], "outside the config folder"),
    ],
)
def test_an_input_that_binds_nothing_is_refused_at_its_entry(project, tmp_path, inputs, says):
    (project / "escape").symlink_to(tmp_path)
    with pytest.raises(InputProblem, match=says) as refused:
        hashes(project, "tests", *inputs)
    assert refused.value.index == 1


def test_the_cap_is_checked_before_a_file_is_read(project):
    (project / "tests" / "big.bin").write_bytes(b"\0" * 4096)
    budget = Budget(max_files=100, max_bytes=1024)
    with pytest.raises(TargetTooLarge, match=r"MiB to hash \(at 'big.bin'\)"):
        fingerprint_target(project / "tests", budget=budget)
    with pytest.raises(TargetTooLarge, match="more than 1 files"):
        fingerprint_target(project / "tests", budget=Budget(max_files=1, max_bytes=1 << 20))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.dictionaries(
        st.lists(st.sampled_from(["a", "b", "t_1.py", "sub"]), min_size=1, max_size=3).map("/".join),
        st.binary(max_size=20),
        min_size=1,
        max_size=6,
    ),
    data=st.data(),
)
def test_an_input_folder_hash_depends_on_its_content_alone(tmp_path_factory, files, data):
    """Written in any order, the same files hash the same; change any one file's bytes and the hash changes."""
    paths = {
        path: content for path, content in files.items() if not any(other.startswith(path + "/") for other in files)
    }

    def write(root: Path, order: list[str], changed: str | None = None) -> str:
        for path in order:
            target = root / "tests" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(paths[path] + (b"!" if path == changed else b""))
        return hashes(root, "tests")["tests"]

    order = list(paths)
    shuffled = data.draw(st.permutations(order))
    first = write(tmp_path_factory.mktemp("one"), order)
    assert write(tmp_path_factory.mktemp("two"), list(shuffled)) == first
    changed = data.draw(st.sampled_from(order))
    assert write(tmp_path_factory.mktemp("three"), order, changed) != first


# --- fingerprints -----------------------------------------------------------------------------------------------

_BASE: dict[str, Any] = {
    "version": 1,
    "dataset": {"name": "s", "path": "d.jsonl"},
    "metrics": {"m": {"type": "exact_match", "reference": "e"}},
}
#: Gate fingerprints of checks without `inputs:`, as main computed them before checks had inputs: unchanged, so
#: no approval of such a gate goes stale.
_PINNED = {
    "argv": ({"command": ["{python}", "check.py"]}, "44c5533994793840d54b2d143f4f3c6c54a5f12b5898db0b6ba85dfecf4a7c9a"),
    "shell": (
        {"command": "pytest -q tests", "shell": True},
        "2b0607330c47751bc61f4e530835d9f8fd257ba9dd6aeb34a184a587610fb3f4",
    ),
    "full": (
        {
            "command": ["{python}", "-m", "unittest", "discover", "-s", "tests"],
            "target": {"path": "check.py"},
            "policy": {"id": "u-v1", "pass_codes": [0], "fail_codes": [1]},
            "timeout": 30,
            "env": {"A": "1"},
        },
        "5956d115aaee5efbff101dc5dd5494ffec6aba6c5434e186d04ef3e2831c3dd8",
    ),
}


def test_gates_on_checks_without_inputs_keep_their_fingerprint(tmp_path):
    (tmp_path / "check.py").write_text("print(1)\n")
    checks = {name: declared for name, (declared, _) in _PINNED.items()}
    config = Config.model_validate({**_BASE, "checks": checks, "gates": {f"g-{n}": {"check": n} for n in checks}})
    files = definition_file_hashes(config, tmp_path)
    for name, (_, pinned) in _PINNED.items():
        assert config.gate_fingerprint(f"g-{name}", files) == f"sha256:{pinned}", name


def test_declaring_inputs_changes_the_fingerprint_and_their_content_does_too(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_x():\n    assert False\n")
    declared = {"command": ["{python}", "-m", "pytest", "tests"]}

    def fingerprint(**more: Any) -> str:
        config = Config.model_validate(
            {**_BASE, "checks": {"suite": {**declared, **more}}, "gates": {"g": {"check": "suite"}}}
        )
        return config.gate_fingerprint("g", definition_file_hashes(config, tmp_path))

    without, with_inputs = fingerprint(), fingerprint(inputs=["tests"])
    assert without != with_inputs
    (tmp_path / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    assert fingerprint() == without  # the hole inputs close
    assert fingerprint(inputs=["tests"]) != with_inputs


def test_the_docs_pytest_example_binds_its_test_code(tmp_path):
    """docs/checks.md's own example (a pytest run over `tests`, bound to `src`) declares what it runs."""
    text = (Path(__file__).parents[2] / "docs" / "checks.md").read_text()
    block = next(part for part in text.split("```yaml")[1:] if "unit-tests:" in part and "command:" in part)
    declared = yaml.safe_load(block.split("```")[0])["checks"]["unit-tests"]
    for folder in ("src", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.py").write_text("")
    assert unbound_inputs(CheckSpec.model_validate(declared), tmp_path) == ()


@pytest.mark.parametrize(
    "edit",
    [
        {"policy": {"id": "lax-v1", "pass_codes": [0, 1]}},
        {"command": ["{python}", "-c", "import sys; sys.exit(0)", "{target}"]},
        {"output_file": "answer.py"},
        {"inputs": ["tests"]},
    ],
    ids=["policy", "inline-checker", "output-file", "inputs"],
)
def test_a_gate_on_a_check_metric_binds_the_check_it_runs_per_example(tmp_path, edit):
    """Loosening the policy of the check a metric runs per example, or rewriting its inline checker, changes what
    the metric measures: the gate on it must not keep its approval."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    check = {"command": ["{python}", "-c", "import sys; sys.exit(1)", "{target}"]}

    def fingerprint(declared: dict[str, Any]) -> str:
        config = Config.model_validate(
            {
                **_BASE,
                "metrics": {"ok": {"type": "check", "check": "solution"}},
                "checks": {"solution": declared},
                "gates": {"g": {"metric": "ok"}},
            }
        )
        return config.gate_fingerprint("g", definition_file_hashes(config, tmp_path))

    assert fingerprint({**check, **edit}) != fingerprint(check)
    assert fingerprint({**check, "description": "prose"}) == fingerprint(check)


def test_an_input_holding_the_ledger_does_not_change_when_the_gate_is_approved(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    config = Config.model_validate(
        {**_BASE, "checks": {"suite": {"command": ["pytest"], "inputs": ["."]}}, "gates": {"g": {"check": "suite"}}}
    )
    before = config.gate_fingerprint("g", definition_file_hashes(config, tmp_path))
    (tmp_path / "authority.yaml").write_text(f"version: 1\ngates: {{g: {{active: true, fingerprint: '{before}'}}}}\n")
    assert config.gate_fingerprint("g", definition_file_hashes(config, tmp_path)) == before
    (tmp_path / "tests" / "test_x.py").write_text("x = 1\n")
    assert config.gate_fingerprint("g", definition_file_hashes(config, tmp_path)) != before


# --- host code a check runs by name (check_host_files) ----------------------------------------------------------


def bound(project: Path, command: list[str] | str, **fields: Any) -> list[str]:
    """What check_host_files binds, by path from the project's parent (the repository holding `evals/`)."""
    shell = {"shell": True} if isinstance(command, str) else {}
    spec = CheckSpec(command=command, **shell, **fields)
    return sorted(path.relative_to(project.parent.resolve()).as_posix() for path in check_host_files(spec, project))


def test_a_declared_pythonpath_is_looked_in_after_the_scripts_folder(project):
    """`PYTHONPATH: ../lib` (relative to the check's cwd, as the child resolves it) finds `lib/verdicts.py`; a module
    of the same name in the script's own folder comes first, as it does for `python check.py`."""
    lib = project.parent / "lib"
    lib.mkdir()
    (lib / "verdicts.py").write_text("import deep\n")
    (lib / "deep.py").write_text("")
    (project / "check.py").write_text("import verdicts\n")
    command = ["{python}", "check.py"]
    assert bound(project, command) == []  # without the declared path the child could not import it either
    assert bound(project, command, env={"PYTHONPATH": "../lib"}) == ["lib/deep.py", "lib/verdicts.py"]
    assert bound(project, command, env={"PYTHONPATH": f"/nonexistent{os.pathsep}../lib"}) == [
        "lib/deep.py",
        "lib/verdicts.py",
    ]
    (project / "verdicts.py").write_text("")
    assert bound(project, command, env={"PYTHONPATH": "../lib"}) == ["evals/verdicts.py"]
    assert find_module("deep", project, ((lib).as_posix(),)) is not None


def test_inline_code_a_shebang_script_and_site_hooks_are_bound(project):
    (project / "helpers.py").write_text("")
    assert bound(project, ["{python}", "-c", "import helpers; helpers"]) == ["evals/helpers.py"]
    assert bound(project, ["python3", "-chelpers = __import__('x')\nimport helpers"]) == ["evals/helpers.py"]
    tools = project.parent / "tools"
    tools.mkdir()
    (tools / "run").write_text("#!/usr/bin/env python3\nimport helpers\n")
    (tools / "helpers.py").write_text("")
    assert bound(project, ["../tools/run"]) == ["tools/helpers.py", "tools/run"]
    assert bound(project, [str(tools / "run")]) == []  # an absolute path is the machine's, as a program on PATH is
    venv = project.parent / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "pytest").write_text("#!/abs/path/of/this/machine/python\nimport helpers\n")
    assert bound(project, ["../.venv/bin/pytest"]) == []  # an environment's launcher: the machine's too
    (tools / "run").write_text("#!/bin/sh\nexit 0\n")
    (tools / "lib.sh").write_text("helpers() { :; }\n")
    # Outside the config folder, a file the command names by a relative path is bound by its bytes (a shell script
    # and what it sources alike: `sh ../tools/run ../tools/lib.sh`); not Python, so nothing is read as imports.
    assert bound(project, ["sh", "../tools/run", "../tools/lib.sh"]) == ["tools/lib.sh", "tools/run"]
    (tools / "sitecustomize.py").write_text("import helpers\n")
    (tools / "hook.py").write_text("def stop():\n    pass\n")
    env = {"PYTHONPATH": "../tools", "PYTHONBREAKPOINT": "hook.stop"}
    assert bound(project, ["{python}", "check.py"], env=env) == [
        "tools/helpers.py",
        "tools/hook.py",
        "tools/sitecustomize.py",
    ]
    assert bound(project, ["echo", "hi"], env=env) == []  # no Python runs: its start-up hooks do not either


def test_pytest_s_own_files_are_bound_up_to_the_repository_root(project):
    repo = project.parent
    (repo / "conftest.py").write_text("import fixturehelp\n")
    (repo / "fixturehelp.py").write_text("")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.pytest.ini_options]\naddopts = '-q'\n")
    (repo / "setup.cfg").write_text("[metadata]\nname = x\n")  # no [tool:pytest]: not pytest's to read
    (project / "pytest.ini").write_text("")
    (project / "myplugin.py").write_text("")
    command = ["{python}", "-m", "pytest", "-p", "myplugin", "-p", "no:cacheprovider", "tests"]
    # Without a repository root the walk stops at the config folder (what lies above may be the machine's).
    assert bound(project, command) == ["evals/myplugin.py", "evals/pytest.ini"]
    (repo / ".git").mkdir()
    expected = ["conftest.py", "evals/myplugin.py", "evals/pytest.ini", "fixturehelp.py", "pyproject.toml"]
    assert bound(project, command) == expected
    assert bound(project, "cd . && pytest -p myplugin tests") == expected
    assert bound(project, ["{python}", "-m", "unittest"]) == []  # another runner: its files are inputs: to declare


def test_binding_a_checks_host_code_imports_nothing(project, tmp_path):
    marker = tmp_path / "ran"
    (project / "noisy.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (project / "check.py").write_text("import noisy\n")
    assert bound(project, ["{python}", "check.py"]) == ["evals/noisy.py"]
    assert bound(project, ["{python}", "-m", "noisy"]) == ["evals/noisy.py"]
    assert not marker.exists() and "noisy" not in sys.modules


@pytest.mark.parametrize("variable", ["PYTHONHOME", "PYTHONPLATLIBDIR", "PYTHONSTARTUP", "PYTHONUSERBASE"])
def test_a_variable_that_changes_what_python_loads_is_refused_in_env(variable):
    with pytest.raises(ValueError, match=f"env {variable} changes which code Python loads"):
        CheckSpec(command=["{python}", "check.py"], env={variable: "x"})


def test_a_gate_binds_its_checks_host_code_and_keeps_its_fingerprint_without_any(tmp_path):
    (tmp_path / "check.py").write_text("import json\n")
    declared = {"command": ["{python}", "check.py"]}

    def fingerprint() -> str:
        config = Config.model_validate({**_BASE, "checks": {"suite": declared}, "gates": {"g": {"check": "suite"}}})
        files = definition_file_hashes(config, tmp_path)
        return config.gate_fingerprint("g", files)

    before = fingerprint()
    assert before == fingerprint()
    (tmp_path / "verdicts.py").write_text("OK = True\n")
    (tmp_path / "check.py").write_text("import json\nimport verdicts\n")
    with_helper = fingerprint()
    (tmp_path / "verdicts.py").write_text("OK = False\n")
    assert fingerprint() != with_helper


def test_a_pythonpath_the_command_assigns_is_looked_in_and_an_unbindable_variable_is_named(project):
    lib = project.parent / "lib"
    lib.mkdir()
    (lib / "verdicts.py").write_text("")
    (project / "check.py").write_text("import verdicts\n")
    assert bound(project, "PYTHONPATH=../lib python check.py") == ["lib/verdicts.py"]
    assert bound(project, ["env", "PYTHONPATH=../lib", "{python}", "check.py"]) == ["lib/verdicts.py"]
    assert bound(project, ["sh", "-c", "PYTHONPATH=$HOME/lib python check.py"]) == []  # not expanded: no folder
    assert found(project, "PYTHONUSERBASE=/tmp/u python check.py") == (
        "variable 'PYTHONUSERBASE' (set in the command)",
    )
    assert found(project, ["env", "PYTHONHOME=/x", "PYTHONHOME=/y", "{python}", "check.py"]) == (
        "variable 'PYTHONHOME' (set in the command)",
    )


def test_a_conftest_in_a_package_binds_the_packages_above_it_and_its_relative_imports(project):
    """pytest imports such a conftest.py as a module of its package: each `__init__.py` above it runs, and a relative
    import resolves against the package."""
    (project.parent / ".git").mkdir()
    suite = project / "suite"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "conftest.py").write_text("from .fixtures import strict\n")
    (suite / "fixtures.py").write_text("")
    assert bound(project, ["pytest", "-q"], cwd="suite") == [
        "evals/suite/__init__.py",
        "evals/suite/conftest.py",
        "evals/suite/fixtures.py",
    ]


def test_a_folder_outside_the_config_folder_is_named_unbound(project):
    """No input can bind a folder outside the config folder (inputs stay inside it): the runner that discovers code
    there is said to, whatever inputs are declared, so `require_binding` blocks on it."""
    (project.parent / "tests").mkdir()
    command = ["{python}", "-m", "pytest", "../tests"]
    assert found(project, command, inputs=["tests"]) == (
        "folder '../tests' (outside the config folder: no input binds it)",
    )
    absolute = ["pytest", str(project.parent / "tests")]
    assert found(project, absolute, inputs=["tests"]) == ()  # outside any repository: the machine's
    (project.parent / ".git").mkdir()  # inside the repository, an absolute path (a CI checkout's) is the project's
    assert found(project, absolute, inputs=["tests"]) == (
        "folder '../tests' (outside the config folder: no input binds it)",
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edges=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=8),
    in_lib=st.lists(st.booleans(), min_size=5, max_size=5),
    entry=st.sets(st.integers(0, 4), max_size=3),
)
def test_everything_the_child_imports_of_the_project_is_bound(tmp_path_factory, edges, in_lib, entry):
    """Whatever modules of the project a checker script imports (beside it, or through the `PYTHONPATH` the check
    declares, outside the config folder), the real child process imports none that the binding leaves out."""
    repo = tmp_path_factory.mktemp("repo")
    root, lib = repo / "evals", repo / "lib"
    root.mkdir()
    lib.mkdir()
    for index in range(5):
        imports = "".join(f"import m{target}\n" for source, target in edges if source == index and target > index)
        ((lib if in_lib[index] else root) / f"m{index}.py").write_text(imports)
    report = "import json, sys\nprint(json.dumps(sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))))\n"
    (root / "check.py").write_text("".join(f"import m{index}\n" for index in sorted(entry)) + report)
    spec = CheckSpec(command=["{python}", "check.py"], env={"PYTHONPATH": "../lib"})
    done = subprocess.run(
        [sys.executable, "check.py"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": "../lib"},
        capture_output=True,
        text=True,
        check=True,
    )
    ran = {
        Path(file).resolve() for file in json.loads(done.stdout) if file and Path(file).resolve().is_relative_to(repo)
    }
    assert ran - {(root / "check.py").resolve()} <= set(check_host_files(spec, root))


# --- what a run record alone shows of it (a reader's re-derivation) ----------------------------------------------

_WORDS = st.sampled_from(
    [
        "{python}",
        "-m",
        "unittest",
        "pytest",
        "pkg",
        "tests",
        "src",
        "make",
        "check.py",
        "-q",
        "npm",
        "test",
        "-c",
        "pass",
        "PYTHONUSERBASE=/tmp/u",
        "env",
        "tests/unit",
        "tests.unit",
        "go",
    ]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(_WORDS, min_size=1, max_size=7),
    inputs=st.sampled_from([[], ["tests"], [{"module": "pkg"}]]),
    target=st.sampled_from([None, "src", "."]),
    cwd=st.sampled_from([None, "src"]),
)
def test_what_the_record_alone_shows_is_always_part_of_what_the_files_show(project, words, inputs, target, cwd):
    """`declared_unbound` (no file system; the host code the run hashed for the check) never names what
    `unbound_inputs` in the folder does not: a reader refusing a record that claims less never refuses an honest
    one. And for a check with no inputs and no target, it names every runner, variable and non-project module."""
    from evalglass.lanes.checkinputs import declared_unbound, host_file_hashes

    fields: dict[str, Any] = {"inputs": inputs, "cwd": cwd} if cwd else {"inputs": inputs}
    if target is not None:
        fields["target"] = target
    (project / "src" / "pkg" / "__main__.py").write_text("print('ok')\n")
    spec = CheckSpec(command=words, **fields)
    full = unbound_inputs(spec, project)
    host_code = host_file_hashes(check_host_files(spec, project), project.resolve())
    alone = declared_unbound(spec, host_code)
    assert set(alone) <= set(full), (alone, full)
    if not inputs and target is None:
        assert set(alone) == {item for item in full if not item.startswith("folder ")}


def test_every_configuration_file_the_installed_pytest_reads_is_bound():
    """A name pytest looks for that the binding does not know is a file a pull request can add to change what a
    pytest check runs (pytest 9's `pytest.toml`: `addopts = ["--collect-only"]` passed a failing suite)."""
    from _pytest.config import findpaths

    assert set(findpaths.CONFIG_LOADERS_BY_NAME) <= set(PYTEST_IMPLICIT)
