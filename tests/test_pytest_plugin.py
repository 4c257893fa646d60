"""The pytest plugin: `evalglass_run(config).assert_passed()` carries the verdict into pytest's outcomes.

Each case runs pytest in a subprocess on a generated test file (pytester), so the plugin is loaded the way users
get it: through its `pytest11` entry point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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


def project_with(pytester: pytest.Pytester, ledger: Any = None) -> Project:
    """The e2e project (exact match 0.75 on 8 examples, gate `accuracy`) with a ledger built from its real run."""
    project = make_project(pytester.path)
    if ledger is not None:
        project.write_ledger(ledger(project))
    pytester.makepyfile(test_quality=TEST_FILE)
    return project


def outcome_of(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")


def test_the_plugin_is_registered_through_its_entry_point():
    from importlib.metadata import entry_points

    found = [entry for entry in entry_points(group="pytest11") if entry.name == "evalglass"]
    assert [entry.value for entry in found] == ["evalglass.pytest_plugin"], "reinstall: pip install -e '.[test]'"


def test_a_pass_verdict_passes(pytester: pytest.Pytester):
    project_with(pytester, lambda p: approve(p, threshold=0.7))
    result = outcome_of(pytester)
    result.assert_outcomes(passed=1)


def test_a_fail_verdict_fails_with_the_gates_value_and_threshold(pytester: pytest.Pytester):
    project_with(pytester, lambda p: approve(p, threshold=0.8))
    result = outcome_of(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*EvalGlass verdict: fail (exit code 1)*",
            "*accuracy: fail: 0.75 (n=8) does not meet the approved threshold ≥ 0.8*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_blocked_verdict_fails_with_every_reason_never_skips(pytester: pytest.Pytester):
    project_with(pytester, lambda p: approve(p, fingerprint="sha256:" + "1" * 64, gold=False))
    result = outcome_of(pytester)
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "EvalGlass verdict: blocked (exit code 1)" in text
    assert "approval_stale:" in text and "gold_not_validated:" in text


def test_an_informational_verdict_is_skipped_with_the_reason(pytester: pytest.Pytester):
    project_with(pytester)
    result = outcome_of(pytester)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*EvalGlass verdict: informational*No gate is active*"])


def test_a_run_that_cannot_complete_fails_with_one_line(pytester: pytest.Pytester):
    project = project_with(pytester)
    (project.evals / "data.jsonl").unlink()
    result = outcome_of(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*EvalGlass could not complete the run (no verdict):*data.jsonl*"])
    assert "Traceback" not in result.stdout.str()


def test_the_result_is_the_api_result(pytester: pytest.Pytester):
    project_with(pytester, lambda p: approve(p, threshold=0.8))
    pytester.makepyfile(
        test_quality="""
import evalglass

def test_quality(evalglass_run):
    result = evalglass_run("evals/evalglass.yaml", out="run")
    assert isinstance(result, evalglass.RunResult)
    assert result.scorecard == evalglass.load_run("run").scorecard
    assert (result.verdict, result.exit_code) == ("fail", 1)
"""
    )
    outcome_of(pytester).assert_outcomes(passed=1)


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


def test_a_relative_config_is_found_from_the_working_directory_when_the_rootdir_lacks_it(pytester: pytest.Pytester):
    """A rootdir other than the working directory (here `--rootdir=checks`): `evals/` in the latter is found."""
    project_with(pytester, lambda p: approve(p, threshold=0.8))
    (pytester.path / "test_quality.py").rename(pytester.mkdir("checks") / "test_quality.py")
    result = pytester.runpytest_subprocess("checks", "--rootdir=checks", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["rootdir: */checks", "*accuracy: fail: 0.75 (n=8)*"])


@pytest.mark.parametrize(
    ("body", "how"),
    [("os._exit(0)", "exited with code 0"), ("os.kill(os.getpid(), signal.SIGKILL)", "was killed by SIGKILL")],
)
def test_host_code_that_ends_its_process_fails_the_test_and_the_session_goes_on(
    pytester: pytest.Pytester, body: str, how: str
):
    """The run happens in a forked copy of the test process (evalglass.run's isolation): a metric that ends its
    process fails that test with the function's name, and pytest goes on to the next test instead of ending the
    session with exit 0."""
    project = make_project(pytester.path, metrics={"mine": {"type": "python", "function": "host.py:score"}}, gates={})
    (project.evals / "host.py").write_text(f"import os, signal\n\ndef score(output):\n    {body}\n")
    pytester.makepyfile(test_quality=TEST_FILE + "\n\ndef test_after():\n    pass\n")
    result = outcome_of(pytester)
    result.assert_outcomes(failed=1, passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"*EvalGlass could not complete the run (no verdict): nothing was decided: python metric 'mine' "
            f"(host.py:score) was running when the process {how}*"
        ]
    )
