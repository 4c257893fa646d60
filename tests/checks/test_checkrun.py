"""Running standalone checks with real subprocesses: outcomes, binding, faults, output handling, redaction."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.core.checks import BindingStatus, CheckOutcome, CheckReason, CheckResult, Repair
from evalglass.lanes.checkrun import (
    REDACTED,
    CheckConfigError,
    CheckSpec,
    path_problems,
    redact_env,
    run_check,
    run_checks,
)
from evalglass.lanes.targetstate import fingerprint_target

from .helpers import PY, exits, process_gone, py, spec, wait_for_file


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "work").mkdir(parents=True)
    (root / "work" / "notes.md").write_text("all good\n")
    return root


def _roundtrip(result: CheckResult) -> CheckResult:
    again = CheckResult.model_validate_json(result.model_dump_json())
    assert again == result
    return again


# --- outcomes ---------------------------------------------------------------------------------------------------


def test_exit_codes_map_through_the_declared_policy(base: Path) -> None:
    policy = {"id": "prose-v1", "inconclusive_codes": [2]}
    by_code = {
        code: run_check(exits(code, target="work", policy=policy), base, check_id=f"c{code}") for code in (0, 1, 2)
    }
    assert by_code[0].outcome is CheckOutcome.PASS and by_code[0].repair is Repair.ACCEPT_WORK
    assert by_code[1].outcome is CheckOutcome.FAIL and by_code[1].repair is Repair.INVESTIGATE_WORK
    assert by_code[2].outcome is CheckOutcome.INCONCLUSIVE and by_code[2].repair is Repair.GATHER_EVIDENCE
    assert by_code[2].reason is CheckReason.DECLARED_INCONCLUSIVE
    for code, result in by_code.items():
        _roundtrip(result)
        assert result.exit_code == code and result.command_started
        assert result.policy.id == "prose-v1" and result.policy_fingerprint == result.policy.fingerprint
        assert result.binding is BindingStatus.UNBOUND and result.requested_fingerprint is None
        assert result.observed_fingerprint == result.observed_after_fingerprint is not None
        assert result.target == "work" and result.duration_s >= 0
        assert result.started_at.endswith("+00:00")


def test_any_undeclared_code_fails_under_the_default_policy(base: Path) -> None:
    result = run_check(exits(37), base, check_id="c")
    assert result.outcome is CheckOutcome.FAIL and result.exit_code == 37
    assert result.target is None and result.observed_fingerprint is None


def test_a_total_policy_turns_an_unmapped_code_into_error_not_fail(base: Path) -> None:
    policy = {"id": "pytest-v1", "fail_codes": [1], "inconclusive_codes": [5]}
    assert run_check(exits(1, policy=policy), base, check_id="c").outcome is CheckOutcome.FAIL
    result = run_check(exits(3, policy=policy), base, check_id="c")
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.UNMAPPED_EXIT_CODE
    assert result.exit_code == 3 and result.repair is Repair.REPAIR_MEASUREMENT
    assert "pytest-v1" in (result.detail or "")


def test_the_last_line_of_output_explains_fail_and_inconclusive(base: Path) -> None:
    result = run_check(
        spec(
            "import sys; print('progress'); sys.stderr.write('noise\\nbinary content: cannot read\\n'); sys.exit(2)",
            policy={"id": "p", "inconclusive_codes": [2]},
        ),
        base,
        check_id="c",
    )
    assert result.detail == "exit code 2 is declared inconclusive by p: binary content: cannot read"
    assert result.stdout_tail == "progress\n"


# --- binding ----------------------------------------------------------------------------------------------------


def _marker_spec(base: Path, **fields: Any) -> CheckSpec:
    """A check that leaves a marker file behind, to prove whether it ran at all."""
    marker = base / "ran.marker"
    return spec(f"open({str(marker)!r}, 'w').write('ran')", **fields)


def test_bound_when_the_requested_state_is_observed(base: Path) -> None:
    expected = fingerprint_target(base / "work").fingerprint
    result = run_check(_marker_spec(base, target="work"), base, check_id="c", expected_fingerprint=expected)
    assert result.binding is BindingStatus.BOUND and result.outcome is CheckOutcome.PASS
    assert result.requested_fingerprint == result.observed_fingerprint == expected
    assert (base / "ran.marker").exists()


def test_mismatch_never_starts_the_command(base: Path) -> None:
    expected = fingerprint_target(base / "work").fingerprint
    (base / "work" / "notes.md").write_text("moved on\n")
    result = _roundtrip(run_check(_marker_spec(base, target="work"), base, check_id="c", expected_fingerprint=expected))
    assert result.outcome is CheckOutcome.ERROR and result.binding is BindingStatus.MISMATCH
    assert result.reason is CheckReason.BINDING_MISMATCH and not result.command_started
    assert result.exit_code is None and result.observed_after_fingerprint is None
    assert result.requested_fingerprint == expected != result.observed_fingerprint
    assert not (base / "ran.marker").exists()


def test_an_unreadable_target_is_unavailable_and_never_starts_the_command(base: Path) -> None:
    result = _roundtrip(run_check(_marker_spec(base, target="missing"), base, check_id="c"))
    assert result.outcome is CheckOutcome.ERROR and result.binding is BindingStatus.UNAVAILABLE
    assert result.reason is CheckReason.TARGET_UNAVAILABLE and not result.command_started
    assert result.observed_fingerprint is None and "missing" in (result.detail or "")
    assert not (base / "ran.marker").exists()


def test_a_file_can_be_the_target(base: Path) -> None:
    expected = fingerprint_target(base / "work" / "notes.md").fingerprint
    result = run_check(exits(0, target="work/notes.md"), base, check_id="c", expected_fingerprint=expected)
    assert result.binding is BindingStatus.BOUND


def test_a_check_that_changes_its_own_target_is_an_error_unless_declared(base: Path) -> None:
    touch = "import os; open(os.path.join(os.environ['EVALGLASS_TARGET'], 'new.txt'), 'w').write('x')"
    result = run_check(spec(touch, target="work"), base, check_id="c")
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.TARGET_MODIFIED
    assert result.exit_code == 0 and result.observed_after_fingerprint != result.observed_fingerprint
    (base / "work" / "new.txt").unlink()
    allowed = run_check(spec(touch, target="work", writes_target=True), base, check_id="c")
    assert allowed.outcome is CheckOutcome.PASS
    assert allowed.observed_after_fingerprint != allowed.observed_fingerprint


def test_excluded_paths_may_change(base: Path) -> None:
    touch = "import os; os.makedirs('work/cache', exist_ok=True); open('work/cache/x', 'w').write('x')"
    result = run_check(spec(touch, target={"path": "work", "exclude": ["cache"]}), base, check_id="c")
    assert result.outcome is CheckOutcome.PASS


def test_the_target_placeholder_and_variable_name_the_target(base: Path) -> None:
    show = "import os, sys; print(sys.argv[1] == os.environ['EVALGLASS_TARGET'] == os.path.abspath('work'))"
    argv = [*py(show), "{target}"]
    result = run_check(CheckSpec(command=argv, target="work"), base, check_id="c")
    assert result.stdout_tail == "True\n"
    assert result.command[-1] == "{target}" and result.env["EVALGLASS_TARGET"] == "{target}"


def test_a_bad_fingerprint_request_is_a_configuration_error(base: Path) -> None:
    with pytest.raises(CheckConfigError, match="sha256"):
        run_check(exits(0, target="work"), base, check_id="c", expected_fingerprint="abc")
    with pytest.raises(CheckConfigError, match="no target"):
        run_check(exits(0), base, check_id="c", expected_fingerprint="sha256:" + "0" * 64)


# --- faults are ERROR, never FAIL -------------------------------------------------------------------------------


def test_timeout_kills_the_whole_process_group_grandchildren_included(base: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """
    started = time.monotonic()
    result = run_check(spec(code, timeout=1.0), base, check_id="slow")
    assert time.monotonic() - started < 10
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.TIMEOUT
    assert result.command_started and result.exit_code is None
    grandchild = int(wait_for_file(pid_file))
    assert process_gone(grandchild), "the grandchild outlived the timeout"


def test_leftovers_in_the_group_are_killed_when_the_command_exits(base: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "leftover.pid"
    code = f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
    """
    started = time.monotonic()
    result = run_check(spec(code, timeout=30), base, check_id="c")
    # The leftover holds our stdout pipe; without the group kill we would wait for it.
    assert time.monotonic() - started < 10
    assert result.outcome is CheckOutcome.PASS
    assert process_gone(int(wait_for_file(pid_file)))


def test_a_command_that_does_not_exist_is_an_error(base: Path) -> None:
    result = _roundtrip(run_check(CheckSpec(command=["no-such-program-evalglass"]), base, check_id="c"))
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.COMMAND_NOT_FOUND
    assert not result.command_started and result.exit_code is None


def test_a_file_without_execute_permission_is_an_error(base: Path) -> None:
    script = base / "check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o644)
    result = run_check(CheckSpec(command=["./check.sh"]), base, check_id="c")
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.PERMISSION_DENIED
    assert not result.command_started


POLICIES = [
    None,  # the default: pass on 0, fail otherwise
    {"id": "total-v1", "pass_codes": [0], "fail_codes": [1]},  # total: anything else is ERROR unmapped_exit_code
    {"id": "sh-v1", "pass_codes": [0], "inconclusive_codes": [126], "fail_codes": [127]},
]


@pytest.mark.parametrize("policy", POLICIES, ids=["default", "total", "declared"])
@pytest.mark.parametrize("code", [0, 1, 2, 126, 127])
def test_the_policy_alone_reads_an_exit_code_whether_a_shell_ran_the_command_or_not(
    base: Path, code: int, policy: dict[str, Any] | None
) -> None:
    """`shell: true` has no rule of its own: a shell's 127 ("not found") is an exit code like any other, read by the
    declared policy, exactly as the same code from `[sh, -c, ...]`; the recorded policy is all there is to it."""
    declared = {} if policy is None else {"policy": policy}
    through_shell = run_check(CheckSpec(command=f"exit {code}", shell=True, **declared), base, check_id="c")
    in_argv = run_check(CheckSpec(command=["sh", "-c", f"exit {code}"], **declared), base, check_id="c")
    for result in (through_shell, in_argv):
        assert result.command_started and result.exit_code == code
        expected = result.policy.outcome_for(code)
        assert result.outcome is (CheckOutcome.ERROR if expected is None else expected)
    assert (through_shell.outcome, through_shell.reason) == (in_argv.outcome, in_argv.reason)
    assert through_shell.policy == in_argv.policy and through_shell.policy_fingerprint == in_argv.policy_fingerprint


def test_a_shell_that_cannot_find_the_program_exits_127_and_the_policy_reads_it(base: Path) -> None:
    default = run_check(CheckSpec(command="no-such-program-evalglass --x", shell=True), base, check_id="c")
    assert default.outcome is CheckOutcome.FAIL and default.exit_code == 127
    assert "not found" in (default.detail or "")  # the shell's own line says why
    total = {"id": "sh-total-v1", "pass_codes": [0], "fail_codes": [1]}
    strict = run_check(CheckSpec(command="no-such-program-evalglass", shell=True, policy=total), base, check_id="c")
    assert strict.outcome is CheckOutcome.ERROR and strict.reason is CheckReason.UNMAPPED_EXIT_CODE


def test_a_command_killed_by_a_signal_is_an_error(base: Path) -> None:
    result = run_check(spec("import os, signal; os.kill(os.getpid(), signal.SIGTERM)"), base, check_id="c")
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.KILLED_BY_SIGNAL
    assert result.signal == 15 and result.exit_code is None and "SIGTERM" in (result.detail or "")


def test_a_missing_working_folder_is_an_error(base: Path) -> None:
    result = run_check(exits(0, cwd="not-there"), base, check_id="c")
    assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.CWD_UNAVAILABLE


# --- output -----------------------------------------------------------------------------------------------------


def test_an_output_flood_is_drained_and_only_its_tail_kept(base: Path) -> None:
    code = """
        import sys
        block = b"x" * (1 << 20)
        for _ in range(50):
            sys.stdout.buffer.write(block)
            sys.stderr.buffer.write(b"e" * 1024)
        sys.stdout.buffer.write(b"THE END")
        sys.exit(1)
    """
    result = run_check(spec(code, timeout=20, output_cap_bytes=4096), base, check_id="flood")
    assert result.outcome is CheckOutcome.FAIL and result.exit_code == 1
    assert result.stdout_total_bytes == 50 * (1 << 20) + 7
    assert result.stderr_total_bytes == 50 * 1024
    assert len(result.stdout_tail) == 4096 and result.stdout_tail.endswith("xxTHE END")
    assert result.stdout_truncated and result.stderr_truncated
    assert len(result.model_dump_json()) < 20_000


def test_binary_output_is_recorded_without_crashing(base: Path) -> None:
    result = run_check(
        spec("import sys; sys.stdout.buffer.write(bytes(range(256)) * 4 + b'\\xc3'); sys.exit(1)"),
        base,
        check_id="c",
    )
    assert result.outcome is CheckOutcome.FAIL and result.stdout_total_bytes == 1025
    assert "\ufffd" in result.stdout_tail
    _roundtrip(result)


# --- environment --------------------------------------------------------------------------------------------------


def test_declared_variables_reach_the_command_and_secrets_never_reach_the_record(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALGLASS_TEST_GITHUB_TOKEN", "ghp-inherited-token-value")
    monkeypatch.setenv("DATABASE_URL", "postgres://app:pa55word-xyz@db:5432/x")
    monkeypatch.setenv("EVALGLASS_TEST_INHERITED_PLAIN", "machine-specific-value")
    env = {
        "MY_API_KEY": "s3cr3t-api-key",
        "PLAIN_SETTING": "visible",
        "AUTH_HEADER": "Bearer qwerty123",
        "UPSTREAM": "https://bot:pa55-decl@h/x",
    }
    code = """
        import os
        print(os.environ["PLAIN_SETTING"], os.environ["MY_API_KEY"], os.environ["EVALGLASS_TEST_GITHUB_TOKEN"])
        print(os.environ["DATABASE_URL"])
    """
    result = run_check(spec(code, env=env), base, check_id="c")
    assert result.outcome is CheckOutcome.PASS
    assert result.env["PLAIN_SETTING"] == "visible"
    assert result.env["MY_API_KEY"] == REDACTED
    assert result.env["AUTH_HEADER"] == REDACTED
    assert result.env["UPSTREAM"] == f"https://bot:{REDACTED}@h/x"
    # The record holds what the check declares, never the inherited environment (any name may hold a secret).
    assert set(result.env) == {"MY_API_KEY", "PLAIN_SETTING", "AUTH_HEADER", "UPSTREAM"}
    record = result.model_dump_json()
    for secret in ("s3cr3t-api-key", "ghp-inherited-token-value", "pa55word-xyz", "qwerty123", "machine-specific"):
        assert secret not in record
    assert result.stdout_tail == f"visible {REDACTED} {REDACTED}\npostgres://app:{REDACTED}@db:5432/x\n"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("GH_TOKEN", True),
        ("DB_PASSWORD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("AUTHORIZATION", True),
        ("SSH_PRIVATE", True),
        ("HOME", False),
        ("PATH", False),
        ("PYTHONPATH", False),
        ("LANG", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert (redact_env({name: "value-123456"})[name] == REDACTED) is secret


def test_token_shaped_values_are_redacted_whatever_their_name() -> None:
    assert redact_env({"X": "sk-" + "a1" * 20})["X"] == REDACTED
    assert redact_env({"X": "just text"})["X"] == "just text"


# --- declaration --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"command": "python check.py"}, "shell: true"),
        ({"command": ["python"], "shell": True}, "one non-empty shell string"),
        ({"command": "cat {target}/x", "shell": True}, "EVALGLASS_TARGET"),
        ({"command": []}, "name a program"),
        ({"command": [""]}, "name a program"),
        ({"command": ["x"], "cwd": "../elsewhere"}, "'..'"),
        ({"command": ["x"], "cwd": "/abs"}, "not absolute"),
        ({"command": ["x"], "target": "a/../../b"}, "'..'"),
        ({"command": ["x"], "target": {"path": "a", "exclude": ["../x"]}}, "'..'"),
        ({"command": ["x"], "env": {"BAD-NAME": "1"}}, "not a valid variable name"),
        ({"command": ["x"], "env": {"EVALGLASS_TARGET": "1"}}, "cannot be declared"),
        ({"command": ["x"], "timeout": 0}, "greater than 0"),
        ({"command": ["x"], "output_file": "../evil.py"}, "'..'"),
        ({"command": ["x"], "policy": {"id": "p", "pass_codes": [0], "fail_codes": [0]}}, "appear in both"),
        ({"command": ["x"], "surprise": True}, "Extra inputs"),
    ],
)
def test_malformed_declarations_are_refused_at_load(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CheckSpec.model_validate(fields)


def test_links_that_escape_the_config_folder_are_refused_at_load_and_at_run(base: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (base / "sneaky").symlink_to(outside)
    (base / "inside").symlink_to(base / "work")
    for field in ("cwd", "target"):
        raw = {"command": [PY, "-c", "pass"], field: "sneaky"}
        with pytest.raises(ValidationError, match="outside the config folder"):
            CheckSpec.model_validate(raw, context={"base_dir": base})
        loose = CheckSpec.model_validate(raw)  # validated without a base folder: caught at run time instead
        assert path_problems(loose, base)
        result = run_check(loose, base, check_id="c")
        assert result.outcome is CheckOutcome.ERROR and result.reason is CheckReason.PATH_ESCAPES_BASE
        assert not result.command_started
    ok = CheckSpec.model_validate({"command": ["x"], "cwd": "inside", "target": "inside"}, context={"base_dir": base})
    assert path_problems(ok, base) == []


def test_the_base_folder_is_the_default_working_folder(base: Path) -> None:
    result = run_check(spec("import os; print(os.getcwd())"), base, check_id="c")
    assert result.stdout_tail.strip() == str(base.resolve()) and result.cwd == "."
    sub = run_check(spec("import os; print(os.getcwd())", cwd="work"), base, check_id="c")
    assert sub.stdout_tail.strip() == str((base / "work").resolve()) and sub.cwd == "work"


def test_a_per_example_declaration_cannot_run_standalone(base: Path) -> None:
    with pytest.raises(CheckConfigError, match="per-example"):
        run_check(exits(0, target={"exclude": ["x"]}), base, check_id="c")


def test_several_standalone_checks_run_concurrently_in_declaration_order(base: Path) -> None:
    expected = fingerprint_target(base / "work").fingerprint
    specs = {"b": exits(1), "a": exits(0, target="work"), "c": exits(0)}
    results = run_checks(specs, base, expected={"a": expected}, max_workers=3)
    assert list(results) == ["b", "a", "c"]
    assert [r.outcome for r in results.values()] == [CheckOutcome.FAIL, CheckOutcome.PASS, CheckOutcome.PASS]
    assert results["a"].binding is BindingStatus.BOUND
    with pytest.raises(CheckConfigError, match="undeclared"):
        run_checks(specs, base, expected={"zzz": expected})


def test_stdin_is_closed(base: Path) -> None:
    result = run_check(spec("import sys; print(repr(sys.stdin.read()))", timeout=2), base, check_id="c")
    assert result.outcome is CheckOutcome.PASS and result.stdout_tail == "''\n"


def test_the_declaration_has_a_json_schema_for_editors() -> None:
    schema = CheckSpec.model_json_schema()
    assert {"command", "shell", "cwd", "env", "timeout", "target", "writes_target", "policy"} <= set(
        schema["properties"]
    )
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["command"]


def test_a_result_summarises_itself_in_one_line(base: Path) -> None:
    line = run_check(exits(1), base, check_id="lint").summary()
    assert line == "lint: FAIL binding=unbound -> investigate the work (exit 1)"


# --- the check's own code is the code the run hashed ---------------------------------------------------------------


def _bound(base: Path, checker: str, **fields: Any) -> CheckSpec:
    from evalglass.lanes.checkinputs import code_state

    (base / "check.py").write_text(checker)
    declared = CheckSpec.model_validate({"command": ["{python}", "check.py"], **fields})
    return declared.bound_to(code_state(declared, base))


def test_a_checker_rewritten_after_it_was_hashed_is_never_started(base):
    bound = _bound(base, "import sys\nsys.exit(1)\n")
    (base / "check.py").write_text("import sys\nsys.exit(0)\n")  # what a lane would do, between load and the check
    result = _roundtrip(run_check(bound, base, check_id="c"))
    assert (result.outcome, result.reason, result.command_started) == (
        CheckOutcome.ERROR,
        CheckReason.CODE_MODIFIED,
        False,
    )
    assert "'check.py' was rewritten" in (result.detail or "")
    unbound = run_check(CheckSpec.model_validate({"command": ["{python}", "check.py"]}), base, check_id="c")
    assert unbound.outcome is CheckOutcome.PASS  # without a binding (a check run on its own) nothing is compared


def test_a_checker_rewritten_while_it_runs_is_error_whatever_it_exits_with(base):
    rewrites = "import pathlib, sys\npathlib.Path(sys.argv[0]).write_text('# gone\\n')\nsys.exit(0)\n"
    result = _roundtrip(run_check(_bound(base, rewrites), base, check_id="c"))
    assert (result.outcome, result.reason, result.command_started) == (
        CheckOutcome.ERROR,
        CheckReason.CODE_MODIFIED,
        True,
    )
    assert "while the command ran" in (result.detail or "")


def test_a_helper_put_on_the_checkers_path_after_load_counts_as_a_change(base):
    bound = _bound(base, "import sys\ntry:\n    import helper\nexcept ImportError:\n    pass\nsys.exit(1)\n")
    (base / "helper.py").write_text("import sys\nsys.exit(0)\n")  # a new import target: code no approval covers
    result = run_check(bound, base, check_id="c")
    assert (result.reason, result.command_started) == (CheckReason.CODE_MODIFIED, False)
    assert "'helper.py' appeared" in (result.detail or "")


def test_an_unchanged_bound_checker_runs_as_ever(base):
    result = run_check(_bound(base, "import sys\nsys.exit(1)\n"), base, check_id="c")
    assert (result.outcome, result.reason) == (CheckOutcome.FAIL, None)
