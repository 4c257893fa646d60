"""The one error boundary: every command maps errors to the documented exit codes; --debug only adds a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalglass.cli import main
from evalglass.core.exitcodes import ExitCode
from tests.e2e.project import make_project, run_cli

#: For every command, arguments that make it fail before it can do its job (bad input, not a quality verdict).
#: Keyed by command name so that a new command without a case fails the completeness test below.
SETUP_FAILURES: dict[str, tuple[str, ...]] = {
    "run": ("run", "--config", "nope.yaml"),
    "calibrate": ("calibrate", "judge", "--labels", "labels.jsonl", "--config", "nope.yaml"),
    "view": ("view", "no-such-run"),
    "explain": ("explain", "--run", "no-such-run"),
    "verify": ("verify", "no-such-run"),
    "report": ("report", "no-such-run"),
    "check": ("check", "--config", "nope.yaml"),
    "init": ("init", "--dir", "evals"),  # evals/ already holds a config: refused without --force
    "schema": ("schema", "no-such-schema"),
    "history": ("history", "export", "no-such-run", "out"),  # no run history here
    "compare": ("compare", "no-such-run", "no-such-run-either"),
    "preflight": ("preflight", "--config", "nope.yaml"),  # main's approvals merge added the command without a case
    "export": ("export", "no-such-run", "--format", "otlp"),
}


def test_every_command_has_a_setup_failure_case():
    assert set(SETUP_FAILURES) == set(main.commands)


@pytest.mark.parametrize("command", sorted(SETUP_FAILURES))
def test_a_setup_error_exits_2_with_or_without_debug(tmp_path, command):
    make_project(tmp_path)
    plain = run_cli(*SETUP_FAILURES[command], cwd=tmp_path)
    debug = run_cli("--debug", *SETUP_FAILURES[command], cwd=tmp_path)
    assert plain.code == ExitCode.SETUP, plain
    assert "Traceback" not in plain.err
    lines = [line for line in plain.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), plain.err
    assert debug.code == ExitCode.SETUP, debug
    assert "Traceback" in debug.err
    assert debug.err.rstrip().splitlines()[-1] == lines[0]


def test_debug_keeps_the_verdict_exit_code(tmp_path):
    project = make_project(tmp_path)
    assert project.run().code == project.cli("--debug", "run").code == ExitCode.OK


def test_a_usage_error_is_one_line_naming_the_option(tmp_path):
    result = run_cli("run", "--format", "yaml", cwd=tmp_path)
    assert result.code == ExitCode.SETUP
    (line,) = result.err.strip().splitlines()
    assert line.startswith("error: Invalid value for '--format': 'yaml' is not one of 'text', 'json'. — see `")
    assert line.endswith(" run --help`")


def test_a_host_metric_printing_to_stdout_leaves_json_output_intact(tmp_path):
    project = make_project(tmp_path, metrics={"mine": {"type": "python", "function": "chatty.py:score"}}, gates={})
    (project.evals / "chatty.py").write_text(
        "import os, sys\n"
        "def score(output):\n"
        "    print('hello from the host')\n"
        "    sys.stdout.flush()\n"
        "    os.write(1, b'raw bytes on fd 1\\n')\n"
        "    return 1.0\n"
    )
    result = project.run("--format", "json")
    assert result.code == ExitCode.OK, result.err
    card = json.loads(result.out)  # the whole of stdout is one JSON document
    assert card["metrics"][0]["name"] == "mine"
    assert "hello from the host" in result.err and "raw bytes on fd 1" in result.err


def test_a_failed_last_run_pointer_is_a_warning_and_the_verdict_stands(tmp_path):
    project = make_project(tmp_path)
    first = project.run("--format", "json")
    assert first.code == ExitCode.OK
    pointer = tmp_path / ".evalglass" / "last-run"
    pointer.unlink()
    pointer.mkdir()  # the pointer cannot be replaced by a file now
    (pointer / "keep").write_text("x")
    second = project.run("--format", "json")
    assert second.code == ExitCode.OK  # the run completed; its verdict is the exit code
    assert second.json()["folder"] != first.json()["folder"]
    warning = [line for line in second.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "last-run" in warning[0] and Path(second.json()["folder"]).name in warning[0], (
        second.err
    )
