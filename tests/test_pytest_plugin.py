"""The pytest plugin: `evalglass_run(config).assert_passed()` carries the verdict into pytest's outcomes.

Each case runs pytest in a subprocess on a generated test file, so the plugin is loaded the way users get it:
through its `pytest11` entry point. The cases that need no pytest options of their own share one such session
(`session`): each has its project in a folder of its own and its test in one generated file, and each asserts on
its own test's outcome and report; the session's exit code and every test's report show that a run whose host code
ends its process fails that test and the session goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass.core.authority import BlockReason
from evalglass.core.gates import Outcome
from evalglass.pytest_plugin import PytestRun
from tests.e2e.project import Project, make_project
from tests.e2e.test_verdicts import approve
from tests.report.cards import card, gate

pytestmark = pytest.mark.timeout(300)

TEST_FILE = """
def test_quality(evalglass_run):
    evalglass_run("evals/evalglass.yaml", out="run").assert_passed()
"""


def project_with(folder: Path, ledger: Callable[[Project], Any] | None = None, **config: Any) -> Project:
    """The e2e project (exact match 0.75 on 8 examples, gate `accuracy`) with a ledger built from its real run."""
    folder.mkdir(parents=True)
    project = make_project(folder, **config)
    if ledger is not None:
        project.write_ledger(ledger(project))
    return project


def _quality(name: str) -> str:
    return f"""
def test_{name}(evalglass_run):
    evalglass_run("{name}/evals/evalglass.yaml", out="{name}/run").assert_passed()
"""


@dataclass(frozen=True)
class Report:
    outcome: str  # passed, failed, skipped
    text: str  # the failure's or skip's report, as pytest prints it

    def fnmatch_lines(self, lines: list[str]) -> None:
        pytest.LineMatcher(self.text.splitlines()).fnmatch_lines(lines)


@dataclass(frozen=True)
class Session:
    ret: int
    stdout: str
    reports: dict[str, Report]
    root: Path


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pytest ARGS` in a new interpreter in ``folder``, in the environment pytester gives one."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    env.update(PY_COLORS="0", HOME=str(folder), USERPROFILE=str(folder))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--basetemp={folder / '.basetemp'}", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    root = tmp_path_factory.mktemp("plugin-session")
    project_with(root / "passing", lambda p: approve(p, threshold=0.7))
    project_with(root / "failing", lambda p: approve(p, threshold=0.8))
    project_with(root / "blocked", lambda p: approve(p, fingerprint="sha256:" + "1" * 64, gold=False))
    project_with(root / "informational")
    (project_with(root / "incomplete").evals / "data.jsonl").unlink()
    project_with(root / "api", lambda p: approve(p, threshold=0.8))
    tests = [_quality(name) for name in ("passing", "failing", "blocked", "informational", "incomplete")]
    tests.append("""
import evalglass

def test_api(evalglass_run):
    result = evalglass_run("api/evals/evalglass.yaml", out="api/run")
    assert isinstance(result, evalglass.RunResult)
    assert result.scorecard == evalglass.load_run("api/run").scorecard
    assert (result.verdict, result.exit_code) == ("fail", 1)
""")
    for name, body in HOST_ENDS.items():
        project = project_with(
            root / name,
            metrics={"mine": {"type": "python", "function": "host.py:score"}},
            gates={"accuracy": {"metric": "mine", "proposed_threshold": 0.5}},
        )
        (project.evals / "host.py").write_text(f"import os, signal\n\ndef score(output):\n    {body}\n")
        project.write_ledger(approve(project, threshold=0.5))
        tests.append(_quality(name) + f"\n\ndef test_after_{name}():\n    pass\n")
    (root / "test_quality.py").write_text("\n".join(tests))
    done = run_pytest(root, "-rs", "--junitxml=report.xml")
    reports: dict[str, Report] = {}
    for case in ET.parse(root / "report.xml").getroot().iter("testcase"):
        ended = [child for child in case if child.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[ended[0].tag] if ended else "passed"
        text = "\n".join(f"{item.get('message', '')}\n{item.text or ''}" for item in ended)
        reports[case.get("name", "")] = Report(outcome, text)
    return Session(done.returncode, done.stdout, reports, root)


#: The body of a python metric that ends the process it runs in, by the test that has it.
HOST_ENDS = {"exits": "os._exit(0)", "killed": "os.kill(os.getpid(), signal.SIGKILL)"}


def test_the_plugin_is_registered_through_its_entry_point():
    from importlib.metadata import entry_points

    found = [entry for entry in entry_points(group="pytest11") if entry.name == "evalglass"]
    assert [entry.value for entry in found] == ["evalglass.pytest_plugin"], "reinstall: pip install -e '.[test]'"


def test_the_session_reports_every_test_and_no_traceback(session: Session):
    expected = {"passing", "failing", "blocked", "informational", "incomplete", "api"}
    expected |= {name for host in HOST_ENDS for name in (host, f"after_{host}")}
    assert set(session.reports) == {f"test_{name}" for name in expected}, session.stdout
    assert session.ret == pytest.ExitCode.TESTS_FAILED
    assert "Traceback" not in session.stdout


def test_a_pass_verdict_passes(session: Session):
    assert session.reports["test_passing"].outcome == "passed"


def test_a_fail_verdict_fails_with_the_gates_value_and_threshold(session: Session):
    report = session.reports["test_failing"]
    assert report.outcome == "failed"
    report.fnmatch_lines(
        [
            "*EvalGlass verdict: fail (exit code 1)*",
            "*accuracy: fail: 0.75 (n=8) does not meet the approved threshold ≥ 0.8*",
        ]
    )
    assert "Traceback" not in report.text


def test_a_blocked_verdict_fails_with_every_reason_never_skips(session: Session):
    report = session.reports["test_blocked"]
    assert report.outcome == "failed"
    assert "EvalGlass verdict: blocked (exit code 1)" in report.text
    assert "approval_stale:" in report.text and "gold_not_validated:" in report.text


def test_an_informational_verdict_is_skipped_with_the_reason(session: Session):
    report = session.reports["test_informational"]
    assert report.outcome == "skipped"
    report.fnmatch_lines(["*EvalGlass verdict: informational*No gate is active*"])
    pytest.LineMatcher(session.stdout.splitlines()).fnmatch_lines(
        ["*SKIPPED*EvalGlass verdict: informational*No gate is active*"]
    )


def test_a_run_that_cannot_complete_fails_with_one_line(session: Session):
    report = session.reports["test_incomplete"]
    assert report.outcome == "failed"
    report.fnmatch_lines(["*EvalGlass could not complete the run (no verdict):*data.jsonl*"])
    assert "Traceback" not in report.text
    # Said once: not first as the SetupError pytest would show above a failure raised while handling it.
    assert "During handling of the above exception" not in report.text, report.text


def test_the_result_is_the_api_result(session: Session):
    assert session.reports["test_api"].outcome == "passed", session.reports["test_api"].text


@settings(max_examples=100, deadline=None)
@given(outcomes=st.lists(st.sampled_from(list(Outcome)), max_size=5), text=st.text(max_size=30))
def test_assert_passed_maps_every_verdict_and_names_every_reason(outcomes, text):
    """In process, over any mix of gates: pass returns, informational skips, fail and blocked fail the test with
    each failing gate's sentence and each reason of each blocked gate."""
    gates = [
        gate(f"g{index}", outcome, reasons=[(BlockReason.NO_MEASURED_VALUE, f"{text}#{index}")])
        for index, outcome in enumerate(outcomes)
    ]
    run = PytestRun(folder=Path("run"), scorecard=card(gates))
    if run.verdict is Outcome.PASS:
        assert run.assert_passed() is None
        return
    if run.verdict is Outcome.INFORMATIONAL:
        with pytest.raises(pytest.skip.Exception, match="No gate is active"):
            run.assert_passed()
        return
    with pytest.raises(pytest.fail.Exception) as failed:
        run.assert_passed()
    shown = str(failed.value)
    for item in gates:
        if item.outcome is Outcome.BLOCKED:
            assert f"no_measured_value: {item.reasons[0].message}" in shown
        if item.outcome is Outcome.FAIL:
            assert f"{item.name}: fail: 0.75 (n=8) does not meet the approved threshold ≥ 0.8" in shown


def test_a_relative_config_is_found_from_the_working_directory_when_the_rootdir_lacks_it(tmp_path: Path):
    """A rootdir other than the working directory (here `--rootdir=checks`): `evals/` in the latter is found."""
    project_with(tmp_path / "project", lambda p: approve(p, threshold=0.8))
    (tmp_path / "project" / "checks").mkdir()
    (tmp_path / "project" / "checks" / "test_quality.py").write_text(TEST_FILE)
    result = run_pytest(tmp_path / "project", "checks", "--rootdir=checks")
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert "1 failed" in result.stdout.splitlines()[-1]
    pytest.LineMatcher(result.stdout.splitlines()).fnmatch_lines(["rootdir: */checks", "*accuracy: fail: 0.75 (n=8)*"])


@pytest.mark.parametrize(("host", "how"), [("exits", "ended with exit code 0"), ("killed", "was killed by SIGKILL")])
def test_host_code_that_ends_its_process_fails_the_test_and_the_session_goes_on(session: Session, host: str, how: str):
    """A python metric runs in a worker process (metrics/hostscoring.py): one that ends its process ends only that
    worker, every example it was scoring is an error saying how, and the gate on it is blocked, which fails that
    test; pytest goes on to the next test."""
    report = session.reports[f"test_{host}"]
    assert report.outcome == "failed", report
    assert session.reports[f"test_after_{host}"].outcome == "passed"
    report.fnmatch_lines(["*accuracy*blocked*"])
    scores = (session.root / host / "run" / "scores.jsonl").read_text()
    assert scores.count('"code":"host_worker_lost"') == 8 and how in scores, scores


SWALLOWED = """
import pytest
import yaml

@pytest.mark.xfail(reason="known")
def test_xfailed(evalglass_run):
    evalglass_run("evals/evalglass.yaml", out="run-xfail").assert_passed()

def test_caught(evalglass_run):
    with pytest.raises(pytest.fail.Exception):
        evalglass_run("evals/evalglass.yaml", out="run-caught").assert_passed()

def test_caught_incomplete(evalglass_run):
    try:
        evalglass_run("missing/evalglass.yaml")
    except BaseException:
        pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_failing_verdict_the_test_swallows_still_fails_the_session(tmp_path: Path, workers: list[str]):
    """An `xfail` marker or a test that catches the failure made the session green on a failing gate (exit 0,
    "2 passed, 1 xfailed"); the verdict, not the test's handling of it, decides the exit status, under pytest-xdist
    too (a worker's exit status is not its controller's)."""
    project_with(tmp_path / "project", lambda p: approve(p, threshold=0.8))
    (tmp_path / "project" / "test_swallow.py").write_text(SWALLOWED)
    result = run_pytest(tmp_path / "project", "-rs", *workers)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    pytest.LineMatcher(result.stdout.splitlines()).fnmatch_lines(
        [
            "*EvalGlass: runs that fail CI*",
        ]
    )
    for test, line in (
        ("test_xfailed", "EvalGlass verdict: fail (exit code 1)"),
        ("test_caught", "EvalGlass verdict: fail (exit code 1)"),
        ("test_caught_incomplete", "EvalGlass could not complete the run"),
    ):
        assert f"test_swallow.py::{test}: {line}" in result.stdout, result.stdout


def test_the_pinned_ledger_is_the_only_other_ledger_a_run_may_read(tmp_path: Path):
    """A config naming a ledger other than the default is refused unless `--evalglass-ledger` pins that very file
    (as `evalglass run --ledger`); a pin naming another file refuses the run too."""
    project = project_with(tmp_path / "project", lambda p: approve(p, threshold=0.8))
    mine = yaml.safe_load((project.evals / "authority.yaml").read_text())
    mine["gates"]["accuracy"]["threshold"] = 0.7
    (project.evals / "mine.yaml").write_text(yaml.safe_dump(mine, sort_keys=False))
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    project.write_config({**config, "ledger": "mine.yaml"})
    (project.root / "test_quality.py").write_text(TEST_FILE)
    for pin in ([], ["--evalglass-ledger", "evals/authority.yaml"]):
        refused = run_pytest(project.root, *pin)
        assert refused.returncode == pytest.ExitCode.TESTS_FAILED, refused.stdout
        pytest.LineMatcher(refused.stdout.splitlines()).fnmatch_lines(["*could not complete the run*ledger*"])
    pinned = run_pytest(project.root, "--evalglass-ledger", "evals/mine.yaml")
    assert pinned.returncode == pytest.ExitCode.OK, pinned.stdout


@pytest.mark.parametrize("deselect", [["-k", "not quality"], ["--co"]])
def test_a_pinned_session_that_makes_no_run_fails(tmp_path: Path, deselect: list[str]):
    """`addopts = -k "not quality"` (pytest's configuration is the pull request's) made a session green without
    running the eval; with `--evalglass-ledger` on CI's command line a session that made no run fails, saying so."""
    project = project_with(tmp_path / "project", lambda p: approve(p, threshold=0.7))
    (project.root / "test_quality.py").write_text(TEST_FILE)
    (project.root / "test_other.py").write_text("def test_other():\n    pass\n")
    assert run_pytest(project.root, *deselect).returncode == pytest.ExitCode.OK
    result = run_pytest(project.root, "--evalglass-ledger", "evals/authority.yaml", *deselect)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert "no test ran evalglass_run, though --evalglass-ledger asked" in result.stdout
    assert run_pytest(project.root, "--evalglass-ledger", "evals/authority.yaml").returncode == pytest.ExitCode.OK
