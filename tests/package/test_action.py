"""The GitHub Action (action.yml): its steps run the way the runner runs them (tests/package/runner.py), in a
temporary workspace, for a pass, a fail and a run that cannot complete, and installing EvalGlass from the action's
own checkout and from a wheel into a fresh environment."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import evalglass
from tests.e2e.project import Project, make_project
from tests.e2e.test_ci_outputs import config_line
from tests.e2e.test_verdicts import approve
from tests.package.dist import NOT_SOURCE, ROOT, built, clean_env, fresh_venv
from tests.package.runner import ActionRun, base_env, run_action

pytestmark = pytest.mark.timeout(600)


def act(project: Project, action_path: Path = ROOT, **inputs: str) -> ActionRun:
    given = {"install": "none", "python": sys.executable, **inputs}
    return run_action(action_path, project.root, given, base_env(), project.root / "step-summary.md")


def approved(tmp_path: Path, threshold: float) -> Project:
    project = make_project(tmp_path)  # exact match 0.75 on 8 examples, gate `accuracy`
    project.write_ledger(approve(project, threshold=threshold))
    return project


def test_a_passing_suite_passes_the_step_keeps_the_run_folder_and_says_so(tmp_path):
    project = approved(tmp_path, 0.7)
    done = act(project, ledger="evals/authority.yaml", args="--junit evalglass-run/junit.xml")
    install, run, upload = done.steps["install"], done.steps["run"], done.steps["__2"]
    assert (install.code, install.outputs) == (0, {"version": evalglass.__version__}), install.stderr
    assert run.code == 0, run.stderr
    assert not done.failed
    assert done.outputs == {
        "exit-code": "0",
        "verdict": "pass",
        "run-folder": "evalglass-run",
        "version": evalglass.__version__,
    }
    assert "::error" not in run.stdout and "::warning" not in run.stdout
    assert "verdict: pass" in run.stdout
    assert "accuracy" in done.summary and "pass" in done.summary
    assert (project.root / "evalglass-run" / "scorecard.json").is_file()
    assert (project.root / "evalglass-run" / "junit.xml").is_file()
    assert upload.ran and upload.uses == "actions/upload-artifact@v4"
    assert upload.given == {"name": "evalglass-run", "path": "evalglass-run", "if-no-files-found": "warn"}


def test_a_failing_gate_fails_the_step_with_1_annotates_its_line_and_still_uploads(tmp_path):
    project = approved(tmp_path, 0.9)
    done = act(project, out="runs/pr", **{"artifact-name": "evals-pr"})
    run, upload = done.steps["run"], done.steps["__2"]
    assert run.code == 1, run.stderr
    assert done.failed
    assert done.outputs["exit-code"] == "1" and done.outputs["verdict"] == "fail"
    assert done.outputs["run-folder"] == "runs/pr"
    line = config_line(project, "accuracy")
    assert f"::error file=evals/evalglass.yaml,line={line},title=EvalGlass gate accuracy failed::" in run.stdout
    assert "accuracy" in done.summary and "fail" in done.summary
    assert upload.ran and upload.given["path"] == "runs/pr" and upload.given["name"] == "evals-pr"


def test_a_config_pointing_at_a_ledger_of_its_own_cannot_turn_the_step_green(tmp_path):
    """The config is the pull request's to edit, the ledger the host's: with the `ledger` input left empty, the
    step pins the `authority.yaml` beside the config, so a config naming a ledger the pull request wrote (approving
    a threshold its gate meets) is refused (exit 2), never decided by that ledger."""
    project = approved(tmp_path, 0.9)
    assert act(project, out="runs/base").outputs["verdict"] == "fail"
    friendly = yaml.safe_load((project.evals / "authority.yaml").read_text())
    friendly["gates"]["accuracy"]["threshold"] = 0.1
    (project.evals / "friendly.yaml").write_text(yaml.safe_dump(friendly))
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    project.write_config({**config, "ledger": "friendly.yaml"})
    done = act(project, out="runs/pr")
    run = done.steps["run"]
    assert run.code == 2 and done.failed and done.outputs["verdict"] == "", run.stdout + run.stderr
    assert "friendly.yaml" in run.stdout and "authority.yaml" in run.stdout, run.stdout
    # A host whose ledger is elsewhere says so in the workflow, where the pull request's config cannot.
    project.write_ledger(friendly)
    assert act(project, out="runs/host", ledger="evals/friendly.yaml").outputs["verdict"] == "pass"


@pytest.mark.parametrize(
    "args", ["--ledger evals/friendly.yaml", "--ledger=evals/friendly.yaml", "--example=quickstart"]
)
def test_args_cannot_replace_what_an_input_pins(tmp_path, args):
    """`args` came after the pinned `--ledger`, and an option given twice takes its last value: a workflow saying
    `ledger: evals/authority.yaml` turned green on a ledger named in `args` (and `--example` there ran another
    suite than the `config` input's). Such an option in `args` is a setup error naming the input."""
    project = approved(tmp_path, 0.9)
    friendly = yaml.safe_load((project.evals / "authority.yaml").read_text())
    friendly["gates"]["accuracy"]["threshold"] = 0.1
    (project.evals / "friendly.yaml").write_text(yaml.safe_dump(friendly))
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    project.write_config({**config, "ledger": "friendly.yaml"})
    done = act(project, ledger="evals/authority.yaml", args=args)
    run = done.steps["run"]
    assert run.code == 2 and done.outputs["exit-code"] == "2" and done.outputs["verdict"] == "", run.stdout
    assert "::error title=EvalGlass could not complete the run::args: --" in run.stdout
    assert not (project.root / "evalglass-run").exists()


def test_a_run_that_cannot_complete_fails_with_2_says_why_and_reports_no_stale_verdict(tmp_path):
    project = approved(tmp_path, 0.7)
    assert act(project).outputs["verdict"] == "pass"  # an earlier run left evalglass-run/ with a pass in it
    project.write_config(
        {
            "version": 1,
            "dataset": {"name": "suite", "path": "data.jsonl"},
            "task": {"type": "recorded", "field": "output"},
            "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
            "gates": {"accuracy": {"metric": "exactt", "proposed_threshold": 0.7}},
        }
    )
    (project.root / "step-summary.md").write_text("")
    done = act(project)
    run, upload = done.steps["run"], done.steps["__2"]
    assert run.code == 2, run.stdout + run.stderr
    assert done.failed
    assert done.outputs["exit-code"] == "2"
    assert done.outputs["verdict"] == "" and done.outputs["run-folder"] == ""
    assert not upload.ran
    annotations = [line for line in run.stdout.splitlines() if line.startswith("::error")]
    assert len(annotations) == 1, run.stdout
    line = config_line(project, "accuracy") + 1  # the gate's `metric:` line
    where = f"::error file=evals/evalglass.yaml,line={line},title=EvalGlass could not complete the run::"
    assert annotations[0].startswith(where), annotations[0]
    assert "exactt" in annotations[0]
    assert "### EvalGlass could not complete the run" in done.summary and "exactt" in done.summary
    assert "Traceback" not in run.stderr


def test_an_unbalanced_quote_in_args_is_a_setup_error_not_a_traceback(tmp_path):
    project = make_project(tmp_path)
    done = act(project, args="--junit 'unclosed")
    run = done.steps["run"]
    assert run.code == 2 and done.outputs["exit-code"] == "2"
    assert "::error title=EvalGlass could not complete the run::args: No closing quotation" in run.stdout
    assert "Traceback" not in run.stderr


def installed_where(venv: Path) -> Path:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import evalglass; print(evalglass.__file__)"],
        capture_output=True,
        text=True,
        env=clean_env(venv),
        check=True,
    )
    return Path(done.stdout.strip()).resolve()


def test_the_action_installs_evalglass_from_its_own_checkout_and_runs_with_it(tmp_path):
    checkout = tmp_path / "action"
    shutil.copytree(ROOT, checkout, ignore=NOT_SOURCE, symlinks=True)
    venv = fresh_venv(tmp_path / "venv")
    (tmp_path / "work").mkdir()
    project = make_project(tmp_path / "work")  # no approved gate: informational
    done = act(
        project,
        action_path=checkout,
        install="",
        python=str(venv / "bin" / "python"),
        **{"pip-args": "--no-deps --no-index --no-build-isolation"},
    )
    install, run = done.steps["install"], done.steps["run"]
    assert install.code == 0, install.stdout + install.stderr
    assert install.outputs == {"version": evalglass.__version__}
    assert installed_where(venv).is_relative_to(venv.resolve())
    assert run.code == 0, run.stderr
    assert done.outputs["verdict"] == "informational"
    assert "::warning title=EvalGlass%3A informational::" in run.stdout


def test_the_action_installs_a_given_wheel_with_its_extras(tmp_path):
    venv = fresh_venv(tmp_path / "venv")
    project = make_project(tmp_path)
    wheel = built().wheel
    done = act(
        project,
        install=str(wheel),
        extras="signing",
        python=str(venv / "bin" / "python"),
        **{"pip-args": "--no-deps --no-index"},
        upload="false",
    )
    install = done.steps["install"]
    assert install.code == 0, install.stdout + install.stderr
    assert f"{wheel}[signing]" in install.stdout
    assert installed_where(venv).is_relative_to(venv.resolve())
    assert done.steps["run"].code == 0 and not done.steps["__2"].ran


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        ({"install": "none"}, "cannot run evalglass"),
        ({"install": "dist/missing.whl"}, "dist/missing.whl: no such file"),
        ({"install": "", "extras": "live]; rm -rf ."}, "is not a comma-separated list of extra names"),
        ({"install": "none", "pip-args": "--index-url 'unclosed"}, "pip-args: No closing quotation"),
    ],
)
def test_an_install_that_cannot_work_fails_with_2_and_the_run_does_not_start(tmp_path, inputs, says):
    venv = fresh_venv(tmp_path / "venv")  # EvalGlass not installed
    project = make_project(tmp_path)
    done = act(project, python=str(venv / "bin" / "python"), **inputs)
    install = done.steps["install"]
    assert install.code == 2
    assert install.stdout.count("::error title=EvalGlass could not be installed::") == 1
    assert says in install.stdout, install.stdout
    assert "### EvalGlass could not be installed" in done.summary
    assert not done.steps["run"].ran and not done.steps["__2"].ran
    assert done.outputs["exit-code"] == ""


def action_script():
    """action/evalglass_action.py as a module, for the one rule that would need the network to run end to end."""
    spec = importlib.util.spec_from_file_location("evalglass_action", ROOT / "action" / "evalglass_action.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("given", ["0.2.0", "v0.2.0", "1.0.0rc1"])
def test_a_version_installs_that_release_tag_of_the_actions_own_repository(given):
    script = action_script()
    env = {"INPUT_INSTALL": given, "INPUT_EXTRAS": "live", "GITHUB_ACTION_REPOSITORY": "acme/evalglass"}
    tag = given if given.startswith("v") else f"v{given}"
    assert script.pip_target(env) == f"evalglass[live] @ git+https://github.com/acme/evalglass@{tag}"
    enterprise = {**env, "GITHUB_SERVER_URL": "https://git.acme.example"}
    assert script.pip_target(enterprise) == f"evalglass[live] @ git+https://git.acme.example/acme/evalglass@{tag}"
    with pytest.raises(script.StepError, match="GITHUB_ACTION_REPOSITORY"):
        script.pip_target({"INPUT_INSTALL": given})


# A pull request commits files to the workspace, and the action's steps run Python there. `python -m NAME` puts the
# working folder first on `sys.path`, so a top-level `evalglass/` (or `pip/`, or a module named like one of
# EvalGlass's dependencies) in the pull request would be what runs: a "run" that writes its own pass and exits 0.
FORGED_MAIN = """\
import json, pathlib, sys
if "--version" in sys.argv:
    print("evalglass, version 0.0.0")
    sys.exit(0)
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "scorecard.json").write_text(json.dumps({"decision": {"verdict": "pass"}}))
print("verdict: pass")
"""


@pytest.mark.parametrize(
    "shadow",
    [
        {"evalglass/__init__.py": "", "evalglass/__main__.py": FORGED_MAIN},  # EvalGlass itself
        {"yaml.py": "import runpy, sys\nsys.argv[0] = 'evalglass'\n" + FORGED_MAIN + "sys.exit(0)\n"},  # a dependency
    ],
    ids=["evalglass", "dependency"],
)
def test_a_package_the_pull_request_commits_at_the_workspace_root_never_runs_as_evalglass(tmp_path, shadow):
    project = approved(tmp_path, 0.9)  # the approved gate fails
    for name, text in shadow.items():
        (project.root / name).parent.mkdir(parents=True, exist_ok=True)
        (project.root / name).write_text(text)
    done = act(project)
    install, run = done.steps["install"], done.steps["run"]
    assert run.code == 1 and done.failed, run.stdout + run.stderr
    assert done.outputs["verdict"] == "fail"
    assert install.code == 0 and install.outputs == {"version": evalglass.__version__}, install.stdout


def test_a_pip_the_pull_request_commits_at_the_workspace_root_never_installs(tmp_path):
    venv = fresh_venv(tmp_path / "venv")
    project = make_project(tmp_path)
    (project.root / "pip").mkdir()
    (project.root / "pip" / "__init__.py").write_text("")
    (project.root / "pip" / "__main__.py").write_text("import pathlib\npathlib.Path('pwned').write_text('')\n")
    done = act(
        project,
        install=str(built().wheel),
        python=str(venv / "bin" / "python"),
        **{"pip-args": "--no-deps --no-index"},
        upload="false",
    )
    assert not (project.root / "pwned").exists()
    install = done.steps["install"]
    assert install.code == 0, install.stdout + install.stderr
    assert installed_where(venv).is_relative_to(venv.resolve())


#: A command lane that answers "yes" and, once, starts a process in a session of its own (which the lane's process
#: group kill does not reach): it outlives `evalglass run` and keeps rewriting the run folder's scorecard to a pass.
LEAVES_A_PROCESS = """\
import json, os, pathlib, subprocess, sys
json.load(sys.stdin)
root = pathlib.Path(os.environ["WORKSPACE"])
if not (root / "rewriter.pid").exists():
    child = subprocess.Popen(
        [sys.executable, str(root / "evals" / "rewriter.py"), str(root)],
        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    (root / "rewriter.pid").write_text(str(child.pid))
print("yes")
"""

REWRITER = """\
import json, os, pathlib, sys, time
root = pathlib.Path(sys.argv[1])
card = root / "evalglass-run" / "scorecard.json"
stop = time.monotonic() + 120
while time.monotonic() < stop and not (root / "stop").exists():
    try:
        data = json.loads(card.read_text())
        if data["decision"]["verdict"] != "pass":
            data["decision"]["verdict"] = "pass"
            (root / "forged.json").write_text(json.dumps(data))
            os.replace(root / "forged.json", card)
            (root / "forged").write_text("")
    except (OSError, ValueError, KeyError):
        pass
    time.sleep(0.002)
"""


def test_a_process_left_behind_that_rewrites_the_scorecard_cannot_change_the_verdict_output(tmp_path):
    """`verdict` is what a later step reads (`if: steps.evals.outputs.verdict == 'pass'`): it comes from how the run
    ended, so a process the run's host code left behind, rewriting scorecard.json to a pass, changes nothing."""
    import os
    import signal

    argv = [sys.executable, "leave.py"]
    project = make_project(tmp_path, task={"type": "command", "argv": argv, "output": "text", "env": {}})
    (project.evals / "leave.py").write_text(LEAVES_A_PROCESS)
    (project.evals / "rewriter.py").write_text(REWRITER)
    env = {**base_env(), "WORKSPACE": str(project.root)}
    if "PYTHONPATH" in os.environ:  # the EvalGlass under test (this checkout's), as the tests run it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    try:
        done = run_action(
            ROOT, project.root, {"install": "none", "python": sys.executable}, env, project.root / "summary.md"
        )
        assert (project.root / "forged").exists(), "the left-behind process did not rewrite the scorecard"
        card = json.loads((project.root / "evalglass-run" / "scorecard.json").read_text())
        assert card["decision"]["verdict"] == "pass"  # what the file says now
        run = done.steps["run"]
        # No gate is approved: the run decided nothing, exit 0, and the output says so.
        assert run.code == 0, run.stdout + run.stderr
        assert done.outputs["verdict"] == "informational" and done.outputs["exit-code"] == "0", done.outputs
    finally:
        (project.root / "stop").write_text("")
        pid = project.root / "rewriter.pid"
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid.read_text()), signal.SIGKILL)
