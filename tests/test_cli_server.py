"""A command forked from tests/cli_server.py's server behaves as `python -m evalglass` does: same exit code, same
output, the test's environment and working directory, and a real process whose end the test sees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import cli_server
from tests.e2e.project import make_project


def both(args: list[str], cwd: Path, code: str | None = None, **env: str) -> tuple[cli_server.Done, cli_server.Done]:
    full = {**os.environ, **env}
    forked = cli_server.run(args, cwd=cwd, env=full, timeout=120, code=code)
    new = cli_server.run(args, cwd=cwd, env={**full, cli_server.ALWAYS_NEW: "1"}, timeout=120, code=code)
    return forked, new


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    make_project(tmp_path)
    return tmp_path


def test_exit_codes_and_output_are_those_of_a_new_interpreter(project_dir: Path, monkeypatch) -> None:
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    forked, new = both(["run", "--bogus"], project_dir)
    assert forked == new and forked.returncode == 2 and "python -m evalglass run --help" in forked.stderr
    assert cli_server.run(["run"], cwd=project_dir, env=dict(os.environ), timeout=120).returncode == 0
    for args in (["view", "--format", "json"], ["explain", "accuracy"], ["--version"]):
        forked, new = both(args, project_dir, COLUMNS="200")
        assert forked == new and forked.returncode == 0, args


def test_each_command_gets_the_environment_and_folder_it_is_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    narrow, wide = tmp_path / "narrow", tmp_path / "wide"
    for folder in (narrow, wide):
        folder.mkdir()
        make_project(folder)
    narrow_run = cli_server.run(["run"], cwd=narrow, env={**os.environ, "COLUMNS": "60"}, timeout=120)
    wide_run = cli_server.run(["run"], cwd=wide, env={**os.environ, "COLUMNS": "200"}, timeout=120)
    assert max(map(len, narrow_run.stdout.splitlines())) <= 60 < max(map(len, wide_run.stdout.splitlines()))
    assert len(list((narrow / ".evalglass" / "runs").iterdir())) == 1
    assert len(list((wide / ".evalglass" / "runs").iterdir())) == 1


def test_a_changed_startup_variable_gets_a_new_interpreter(project_dir: Path) -> None:
    """PYTHONPATH is read when Python starts: a forked command would not see a module it adds."""
    (project_dir / "extra").mkdir()
    (project_dir / "extra" / "sitecustomize.py").write_text("import sys; sys.stderr.write('sitecustomize ran\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(project_dir / "extra")}
    done = cli_server.run(["--version"], cwd=project_dir, env=env, timeout=120)
    assert "sitecustomize ran" in done.stderr


def test_code_run_as_python_c_is_a_new_interpreters(project_dir: Path, monkeypatch) -> None:
    """`python -c CODE ARGS` forked: argv, sys.path[0], `__main__`, the exit code and what the code rebinds in a
    module the server had imported before any command reads it (tests/e2e/test_evaluator_versions.py's `bumped`)."""
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    shown = "import sys; print(sys.argv, repr(sys.path[0]), __name__); sys.exit(int(sys.argv[1]))"
    forked, new = both(["3", "x"], project_dir, code=shown)
    assert forked == new and forked.returncode == 3 and forked.stdout == "['-c', '3', 'x'] '' __main__\n"
    failing = both([], project_dir, code="raise ValueError('no')")
    assert failing[0] == failing[1] and failing[0].returncode == 1 and "ValueError: no" in failing[0].stderr
    bumped = (
        "import sys; import evalglass.metrics.versions as v; "
        "v.METRIC_VERSIONS = {**v.METRIC_VERSIONS, 'exact_match': 99}; "
        "from evalglass.cli import main; sys.argv = ['evalglass', *sys.argv[1:]]; main()"
    )
    cli_server.run(["run", "--out", "out"], cwd=project_dir, env=dict(os.environ), timeout=120)
    forked, new = both(["verify", "out", "--format", "json"], project_dir, code=bumped)
    assert forked == new and forked.returncode == 1
    assert '"field": "runrecord.gate_evaluators.accuracy.metric:exact_match"' in forked.stdout
    assert '"derived": 99' in forked.stdout


def test_a_forked_command_ends_as_the_interpreter_does(project_dir: Path, monkeypatch) -> None:
    """A forked command skips the interpreter's teardown (cli_server._exit_before_teardown) but not what comes
    before it: host code's non-daemon thread joined, its `atexit` run and its buffered output flushed, the exit code."""
    monkeypatch.delenv(cli_server.ALWAYS_NEW, raising=False)
    (project_dir / "evals" / "host.py").write_text(
        "import atexit, pathlib, sys, threading, time\n"
        "def _late():\n"
        "    time.sleep(1)\n"
        "    pathlib.Path('thread.txt').write_text('joined')\n"
        "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
        "_late_writer = threading.Thread(target=_late)\n"
        "def score(output):\n"
        "    if not _late_writer.is_alive() and not _late_writer.ident:\n"
        "        _late_writer.start()  # outlives the run: the exit waits for it\n"
        "    return 1.0\n"
    )
    config = (project_dir / "evals" / "evalglass.yaml").read_text()
    config = config.replace("type: exact_match\n    reference: expected", "type: python\n    function: host.py:score")
    (project_dir / "evals" / "evalglass.yaml").write_text(config)
    forked = cli_server.run(["run"], cwd=project_dir, env=dict(os.environ), timeout=120)
    assert (project_dir / "thread.txt").read_text() == "joined"
    (project_dir / "thread.txt").unlink()
    new = cli_server.run(["run"], cwd=project_dir, env={**os.environ, cli_server.ALWAYS_NEW: "1"}, timeout=120)
    assert (project_dir / "thread.txt").read_text() == "joined"
    assert forked.returncode == new.returncode == 0, forked.stderr
    assert forked.stderr.count("atexit ran") == new.stderr.count("atexit ran") == 1
