"""A check gate binds the test code it runs (`inputs:`), or says that it does not; and the exit-code policy alone
reads an exit code, whether a shell ran the command or not. Through the real CLI.

The scenario is a pull request's: a check gate over a test suite is approved while a test fails; the pull request
replaces the test's body with `pass`. With `inputs: [tests]` the approval goes stale; without, the gate would pass,
so the gate is blocked (`check_inputs_unbound`) unless the ledger accepts unbound code (`require_binding: false`),
and the run, `explain` and `preflight` say that it does not bind its test code.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.e2e.project import Project, make_project, run_cli

pytestmark = pytest.mark.timeout(300)

FAILING = """\
import unittest


class Sample(unittest.TestCase):
    def test_sum(self):
        self.assertEqual(1 + 1, 3)
"""
HOLLOWED = FAILING.replace("self.assertEqual(1 + 1, 3)", "pass")

COMMANDS = {
    "unittest": ["{python}", "-m", "unittest", "discover", "-s", "tests"],
    "pytest": ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
}


def suite_project(tmp_path: Any, runner: str, **check: Any) -> Project:
    project = make_project(
        tmp_path,
        # Bytecode written as a developer's machine writes it (whatever this test process's environment says).
        checks={
            "suite": {"command": COMMANDS[runner], "timeout": 120, "env": {"PYTHONDONTWRITEBYTECODE": ""}, **check}
        },
        gates={"suite-ok": {"check": "suite"}},
    )
    (project.evals / "tests").mkdir()
    (project.evals / "tests" / "test_sample.py").write_text(FAILING)
    return project


def approve_suite(project: Project, **entry: Any) -> None:
    """The host approves the gate as it stands (its test failing), with the fingerprint `explain` prints."""
    assert project.run("--no-history").code == 0  # informational: nothing active yet
    fingerprint = project.gate_fingerprint("suite-ok")
    project.write_ledger({"version": 1, "gates": {"suite-ok": {"active": True, "fingerprint": fingerprint, **entry}}})


def gate(project: Project) -> tuple[int, dict[str, Any]]:
    result = project.run("--no-history", "--format", "json")
    assert result.code in (0, 1), result.err
    return result.code, next(g for g in result.json()["decision"]["gates"] if g["name"] == "suite-ok")


def codes(found: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in found["reasons"]]


def hollow(project: Project) -> None:
    (project.evals / "tests" / "test_sample.py").write_text(HOLLOWED)


@pytest.mark.parametrize("runner", list(COMMANDS))
def test_a_hollowed_test_makes_the_approval_stale_when_the_check_declares_its_inputs(tmp_path, runner):
    project = suite_project(tmp_path, runner, inputs=["tests"])
    approve_suite(project)
    code, found = gate(project)
    assert (code, found["outcome"], codes(found)) == (1, "fail", ["below_threshold"])
    # Running the suite wrote bytecode caches beside it; they are not what was approved, and not a change.
    assert (project.evals / "tests" / "__pycache__").is_dir()
    code, found = gate(project)
    assert (code, found["outcome"]) == (1, "fail")
    assert not any("does not bind" in note for note in found["notes"])

    hollow(project)
    code, found = gate(project)
    assert (code, found["outcome"], codes(found)) == (1, "blocked", ["approval_stale"])


@pytest.mark.parametrize("runner", list(COMMANDS))
def test_without_inputs_a_hollowed_test_cannot_turn_the_gate_green(tmp_path, runner):
    """The pull request hollows the failing test; the approval does not bind it (no `inputs:`), so the gate is
    blocked (`check_inputs_unbound`): a check whose code is not bound cannot earn green. The run, `explain` and
    `preflight` all say which code is unbound."""
    project = suite_project(tmp_path, runner)
    approve_suite(project)
    hollow(project)
    code, found = gate(project)
    assert (code, found["outcome"], codes(found)) == (1, "blocked", ["check_inputs_unbound"])
    (message,) = [reason["message"] for reason in found["reasons"]]
    assert "folder 'tests'" in message and "inputs:" in message and "require_binding: false" in message
    text = project.run("--no-history").out
    assert "does not bind its test code" in " ".join(text.split())

    explained = project.cli("explain", "suite-ok", "--format", "json").json()[0]
    assert any("does not bind its test code" in line for line in explained["details"])
    preview = next(g for g in project.cli("preflight", "--format", "json").json()["gates"] if g["name"] == "suite-ok")
    assert (preview["standing"], codes(preview)) == ("blocked", ["check_inputs_unbound"])


@pytest.mark.parametrize("runner", list(COMMANDS))
def test_a_ledger_that_accepts_unbound_test_code_decides_with_a_note(tmp_path, runner):
    """`require_binding: false` is the host's word that unbound test code is accepted: the gate decides, and says
    what it does not bind."""
    project = suite_project(tmp_path, runner)
    approve_suite(project, require_binding=False)
    hollow(project)
    code, found = gate(project)
    assert (code, found["outcome"]) == (0, "pass")
    said = [note for note in found["notes"] if "does not bind its test code" in note]
    assert len(said) == 1 and "folder 'tests'" in said[0] and "inputs:" in said[0]
    preview = next(g for g in project.cli("preflight", "--format", "json").json()["gates"] if g["name"] == "suite-ok")
    assert preview["standing"] == "would_decide"
    assert any("folder 'tests'" in note for note in preview["notes"])
    assert project.cli("verify", str(project.last_run())).code == 0


def bind_target(project: Project) -> None:
    """Give the check a target (the code under test) and its gate the state `evalglass check` observes, so the
    target is bound and only the test code is left to bind."""
    (project.evals / "src").mkdir()
    (project.evals / "src" / "lib.py").write_text("ANSWER = 2\n")
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["checks"]["suite"]["target"] = "src"
    project.write_config(config)
    state = project.cli("check", "suite", "--format", "json").json()["suite"]["observed_fingerprint"]
    config["gates"]["suite-ok"]["expect_state"] = state
    project.write_config(config)


@pytest.mark.parametrize("runner", list(COMMANDS))
def test_require_binding_blocks_a_check_whose_test_code_is_unbound(tmp_path, runner):
    project = suite_project(tmp_path, runner)
    bind_target(project)
    approve_suite(project, require_binding=True)
    hollow(project)
    preview = next(g for g in project.cli("preflight", "--format", "json").json()["gates"] if g["name"] == "suite-ok")
    assert (preview["standing"], codes(preview)) == ("blocked", ["check_inputs_unbound"])
    code, found = gate(project)
    assert (code, found["outcome"], codes(found)) == (1, "blocked", ["check_inputs_unbound"])
    assert "inputs:" in found["reasons"][0]["message"]
    shown = project.cli("view")  # the renderers accept the honest block: it is what the record implies
    assert shown.code == 0 and "check_inputs_unbound" in shown.out, shown.err

    # Declaring the inputs (and approving the new fingerprint) is the repair: the gate decides again.
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["checks"]["suite"]["inputs"] = ["tests"]
    project.write_config(config)
    project.run("--no-history")
    fingerprint = project.gate_fingerprint("suite-ok")
    project.write_ledger(
        {"version": 1, "gates": {"suite-ok": {"active": True, "fingerprint": fingerprint, "require_binding": True}}}
    )
    code, found = gate(project)
    assert (code, found["outcome"]) == (0, "pass") and found["reasons"] == []
    assert not any("does not bind" in note for note in found["notes"])


def test_a_runner_in_a_shell_string_and_a_folder_it_runs_are_both_named(tmp_path):
    project = make_project(
        tmp_path,
        checks={"lint": {"command": "cd tests && make check", "shell": True}},
        gates={"lint-ok": {"check": "lint"}},
    )
    (project.evals / "tests").mkdir()
    preview = project.cli("preflight", "--format", "json").json()["gates"][0]
    (note,) = preview["notes"]
    assert "folder 'tests'" in note and "runner 'make'" in note
    # `evalglass check` says it too, and its record lists them.
    text = project.cli("check", "lint")
    assert "does not bind its test code" in " ".join(text.out.split()), text.err
    record = project.cli("check", "lint", "--format", "json").json()["lint"]
    assert record["unbound_inputs"] == ["folder 'tests'", "runner 'make'"]


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (["tests/missing"], "no such file or folder"),
        (["tests/**/*.rs"], "matches no file"),
        ([{"module": "no_such_module_evalglass"}], "no module"),
        (["big"], "MiB to hash"),
    ],
)
def test_an_input_that_cannot_be_bound_is_one_line_at_its_entry_and_exit_2(tmp_path, inputs, says):
    project = suite_project(tmp_path, "unittest", inputs=inputs)
    (project.evals / "big").mkdir()
    (project.evals / "big" / "blob.bin").write_bytes(b"\0" * ((64 << 20) + 1))
    for command in (("run", "--no-history"), ("preflight",), ("check", "suite")):
        result = project.cli(*command)
        assert result.code == 2, (command, result.err)
        (line,) = result.err.strip().splitlines()
        assert "evalglass.yaml:" in line and says in line and "Traceback" not in line
        assert "check 'suite'" in line


def test_a_module_input_is_found_without_importing_it(tmp_path):
    project = suite_project(tmp_path, "unittest", inputs=["tests", {"module": "helpers.tools"}])
    package = project.evals / "helpers"
    package.mkdir()
    marker = project.evals / "imported"
    # Importing the package would run this; fingerprinting must not.
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (package / "tools.py").write_text("VALUE = 1\n")
    assert project.cli("preflight").code == 0
    assert not marker.exists()
    approve_suite(project)
    assert gate(project)[1]["outcome"] == "fail"
    (package / "tools.py").write_text("VALUE = 2\n")
    assert codes(gate(project)[1]) == ["approval_stale"]
    assert not marker.exists()


def test_under_one_policy_a_shell_and_an_argv_command_exiting_127_end_alike(tmp_path):
    """`shell: true` has no exit-code rule of its own: 127 is read by the declared policy (the default: FAIL),
    exactly as the same code from `[sh, -c, ...]`; a total policy makes it ERROR for both. A program that cannot be
    started at all (argv form) has no exit code and stays ERROR."""
    total = {"id": "total-v1", "pass_codes": [0], "fail_codes": [1]}
    project = make_project(
        tmp_path,
        gates={},
        checks={
            "shell": {"command": "exit 127", "shell": True},
            "argv": {"command": ["sh", "-c", "exit 127"]},
            "shell-total": {"command": "no-such-program-evalglass", "shell": True, "policy": total},
            "argv-total": {"command": ["sh", "-c", "exit 127"], "policy": total},
            "missing": {"command": ["no-such-program-evalglass"]},
        },
    )
    result = run_cli("check", "--format", "json", cwd=project.root)
    assert result.code == 4, result.err  # the worst outcome: ERROR
    found = result.json()
    ended = {name: (record["outcome"], record["reason"], record["exit_code"]) for name, record in found.items()}
    assert ended["shell"] == ended["argv"] == ("FAIL", None, 127)
    assert ended["shell-total"] == ended["argv-total"] == ("ERROR", "unmapped_exit_code", 127)
    assert ended["missing"] == ("ERROR", "command_not_found", None)
    assert found["shell"]["policy"] == found["argv"]["policy"]
    assert found["shell-total"]["policy"] == found["argv-total"]["policy"] == {**total, "inconclusive_codes": []}


def test_view_shows_an_honest_block_of_a_check_that_could_not_start_under_require_binding(tmp_path):
    """A check gate requiring a binding whose check ended ERROR blocks as check_not_passed only (an outcome that
    measured nothing is not judged on its binding); the renderers' consistency check must imply the same, or
    `view` refuses a run nobody edited."""
    project = make_project(
        tmp_path, checks={"broken": {"command": ["no-such-program-evalglass"]}}, gates={"ok": {"check": "broken"}}
    )
    assert project.run("--no-history").code == 0
    fingerprint = project.gate_fingerprint("ok")
    project.write_ledger(
        {"version": 1, "gates": {"ok": {"active": True, "fingerprint": fingerprint, "require_binding": True}}}
    )
    result = project.run("--no-history", "--format", "json")
    (found,) = result.json()["decision"]["gates"]
    assert (result.code, found["outcome"], codes(found)) == (1, "blocked", ["check_not_passed"])
    shown = project.cli("view")
    assert shown.code == 0 and "check_not_passed" in shown.out, shown.err


def test_a_checker_scripts_own_imports_are_bound_without_declaring_them(tmp_path):
    """The checker script is hashed as a named file; the project's module it imports is code it runs too, bound by
    its bytes (the check's `code`), so `require_binding` has nothing left to block on, and a pull request that makes
    the helper accept everything makes the approval stale instead of green (tests/e2e/test_check_host_code.py has
    the helpers outside the config folder)."""
    project = make_project(
        tmp_path,
        checks={"suite": {"command": ["{python}", "check.py"], "timeout": 60}},
        gates={"suite-ok": {"check": "suite"}},
    )
    (project.evals / "check.py").write_text("import sys\n\nfrom verdicts import ok\n\nsys.exit(0 if ok() else 1)\n")
    helper = project.evals / "verdicts.py"
    helper.write_text("def ok():\n    return True\n")
    bind_target(project)  # the code under test bound by its state: only the checker's own code is left

    def decided() -> tuple[int, dict[str, Any]]:
        result = project.run("--no-history", "--format", "json")
        assert result.code in (0, 1), result.err
        return result.code, next(g for g in result.json()["decision"]["gates"] if g["name"] == "suite-ok")

    assert project.run("--no-history").code in (0, 1)
    fingerprint = project.gate_fingerprint("suite-ok")
    entry = {"active": True, "fingerprint": fingerprint, "require_binding": True}
    project.write_ledger({"version": 1, "gates": {"suite-ok": entry}})
    code, found = decided()
    assert (code, found["outcome"]) == (0, "pass"), found

    helper.write_text("def ok():\n    return True  # and now without looking\n")
    code, found = decided()
    assert (code, found["outcome"], codes(found)) == (1, "blocked", ["approval_stale"])
    assert "changed verdicts.py" in found["reasons"][0]["message"]
