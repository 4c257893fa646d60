"""The steps of EvalGlass's GitHub Action (``action.yml`` at the repository root): ``install`` and ``run``.

action.yml runs each step as ``"$EVALGLASS_PYTHON" "$GITHUB_ACTION_PATH/action/evalglass_action.py" STEP`` with the
action's inputs in ``INPUT_*`` variables (passed through ``env:``, never pasted into the script, so no input can
inject a command), and the step leaves its results where the runner reads them: ``$GITHUB_OUTPUT`` (step outputs),
stdout (workflow commands: annotations) and ``$GITHUB_STEP_SUMMARY``. Exit codes are EvalGlass's: 0 informational or
pass, 1 fail or blocked, 2 could not run (an install that fails is 2 as well).

The ``verdict`` output comes from the run's own exit status (``run --verdict-exit-codes``: one code per verdict),
never from ``scorecard.json``: a process the run's host code left behind runs as the same user and can rewrite any
file of the run folder after EvalGlass wrote it, but not how EvalGlass's process ended.

Standard library only, and no import of EvalGlass: ``install`` runs before EvalGlass is installed, and ``run`` must
still say what went wrong when it is not. That is why the two escaping rules of workflow commands are written here
again (evalglass/report/github.py has them for the annotations EvalGlass writes itself).
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import subprocess
import sys
from collections import deque
from collections.abc import Mapping
from pathlib import Path

SETUP_ERROR = 2
#: Extras are names of pyproject's optional dependencies: nothing else may reach pip's requirement syntax.
EXTRAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(,[A-Za-z0-9][A-Za-z0-9._-]*)*$")
#: `install: 0.2.0` (or `v0.2.0`): that release's tag of the repository the action comes from.
VERSION = re.compile(r"^v?(?P<version>\d+(\.\d+)*([.-]?(a|b|rc|post|dev)\d*)*)$")


#: How every step starts Python on a module: ``-P`` (Python 3.11+, which EvalGlass needs) keeps the working folder
#: off ``sys.path``. The working folder is the pull request's checkout, and ``python -m NAME`` would otherwise look
#: there first: a top-level ``evalglass/``, ``pip/`` or module named like a dependency (``yaml.py``) committed in
#: the pull request would run in EvalGlass's place and could write its own pass. With ``-P`` the module and
#: everything it imports come from the interpreter's installation, as with the ``evalglass`` console script.
PYTHON_M = ("-P", "-m")


class StepError(Exception):
    """A step that cannot do its job: annotated, summarised, exit 2."""


# --------------------------------------------------------------------------------------------- runner protocol
def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotate_error(title: str, message: str, site: tuple[str, str] | None = None) -> None:
    where = f"file={escape_property(site[0])},line={escape_property(site[1])}," if site else ""
    print(f"::error {where}title={escape_property(title)}::{escape_data(message)}", flush=True)


def error_site(lines: list[str], env: Mapping[str, str]) -> tuple[str, str] | None:
    """The file and line EvalGlass's first ``error: FILE:LINE: ...`` names, as a path in the repository (GitHub
    places an annotation by it); None when the error names none, or a file outside the workspace."""
    for line in lines:
        found = re.match(r"error: (?P<file>[^:\n]+):(?P<line>\d+): ", line)
        if found is None:
            continue
        workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd()).resolve()
        path = Path(found["file"]).resolve()
        return (path.relative_to(workspace).as_posix(), found["line"]) if path.is_relative_to(workspace) else None
    return None


def set_outputs(env: Mapping[str, str], outputs: Mapping[str, str]) -> None:
    """Append to ``$GITHUB_OUTPUT`` in the runner's multi-line form, under a delimiter no value can contain."""
    target = env.get("GITHUB_OUTPUT")
    if not target:
        print("note: GITHUB_OUTPUT is not set, so the step's outputs were not written", file=sys.stderr)
        return
    with open(target, "a", encoding="utf-8") as handle:
        for name, value in outputs.items():
            delimiter = f"EVALGLASS_{secrets.token_hex(8)}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def add_to_summary(env: Mapping[str, str], markdown: str) -> None:
    target = env.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown)


def fenced(lines: list[str]) -> str:
    """``lines`` as a Markdown code block whose fence no line can close."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n" + "\n".join(lines) + f"\n{fence}\n"


def fail_step(env: Mapping[str, str], title: str, lines: list[str]) -> int:
    annotate_error(title, "\n".join(lines), error_site(lines, env))
    add_to_summary(env, f"### {title}\n\n{fenced(lines)}\n")
    return SETUP_ERROR


# --------------------------------------------------------------------------------------------- install
def pip_target(env: Mapping[str, str]) -> str | None:
    """What ``pip install`` is given: the action's checkout, a wheel or a release of the action's repository (with
    the extras), a requirement as written, or nothing for ``install: none``."""
    what = env.get("INPUT_INSTALL", "").strip()
    extras = env.get("INPUT_EXTRAS", "").strip().replace(" ", "")
    if extras and not EXTRAS.match(extras):
        raise StepError(f"extras: {extras!r} is not a comma-separated list of extra names (e.g. live,postgres)")
    if what == "none":
        if extras:
            raise StepError("extras: given with install: none; install EvalGlass with its extras in your own step")
        return None
    suffix = f"[{extras}]" if extras else ""
    if not what:
        home = env.get("GITHUB_ACTION_PATH", "")
        if not home or not (Path(home) / "pyproject.toml").is_file():
            raise StepError(f"the action's checkout has no pyproject.toml (GITHUB_ACTION_PATH={home!r})")
        return str(Path(home).resolve()) + suffix
    version = VERSION.match(what)
    if version is not None:
        repository = env.get("GITHUB_ACTION_REPOSITORY", "")
        if not repository:
            raise StepError(f"install: {what}: GITHUB_ACTION_REPOSITORY is not set, so there is no repository to tag")
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        return f"evalglass{suffix} @ git+{server}/{repository}@v{version['version']}"
    if what.endswith(".whl") or Path(what).exists():
        if not Path(what).exists():
            raise StepError(f"install: {what}: no such file (paths are relative to the workspace)")
        return str(Path(what).resolve()) + suffix
    if extras:
        raise StepError(f"extras: put them in the requirement itself (e.g. 'evalglass[{extras}] @ git+https://...')")
    return what


def install(env: Mapping[str, str]) -> int:
    try:
        target = pip_target(env)
        pip_args = shlex.split(env.get("INPUT_PIP_ARGS", ""))
    except StepError as exc:
        return fail_step(env, "EvalGlass could not be installed", [str(exc)])
    except ValueError as exc:  # shlex: an unbalanced quote in `pip-args`
        return fail_step(env, "EvalGlass could not be installed", [f"pip-args: {exc}"])
    if target is not None:
        argv = [sys.executable, *PYTHON_M, "pip", "install", *pip_args, target]
        print(f"$ {shlex.join(argv)}", flush=True)
        if subprocess.run(argv, check=False).returncode != 0:
            return fail_step(env, "EvalGlass could not be installed", [f"pip install {target} failed (see the log)"])
    found = subprocess.run(
        [sys.executable, *PYTHON_M, "evalglass", "--version"], capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        lines = [f"{sys.executable} cannot run evalglass:", *found.stderr.strip().splitlines()[-5:]]
        return fail_step(env, "EvalGlass could not be installed", lines)
    version = found.stdout.strip().rsplit(" ", 1)[-1]
    print(f"EvalGlass {version} ({sys.executable})", flush=True)
    set_outputs(env, {"version": version})
    return 0


# --------------------------------------------------------------------------------------------- run
#: The ledger a config names when it names none (``Config.ledger``'s default), beside the config.
DEFAULT_LEDGER = "authority.yaml"


#: ``run --verdict-exit-codes``: the verdict each exit status means (2, 130 and anything else: no verdict).
VERDICT_OF_CODE = {0: "pass", 1: "fail", 10: "informational", 11: "blocked"}
#: The step's own exit code for a verdict: EvalGlass's usual one (0 informational or pass, 1 fail or blocked).
STEP_CODE = {"pass": 0, "informational": 0, "fail": 1, "blocked": 1}

#: Options of `evalglass run` an input of the action sets; `args` may not set them again.
INPUT_OWNED = {
    "--config": "set the config with the action's `config` input",
    "--ledger": "set the host's ledger with the action's `ledger` input (it is always passed as --ledger)",
    "--out": "set the run folder with the action's `out` input",
    "--example": "the action runs the suite its `config` input names",
    "--verdict-exit-codes": "the action asks for it itself, to read the verdict from the exit status",
}


def run_argv(env: Mapping[str, str]) -> tuple[list[str], Path]:
    config = env.get("INPUT_CONFIG", "").strip() or "evals/evalglass.yaml"
    out = env.get("INPUT_OUT", "").strip() or "evalglass-run"
    argv = [sys.executable, *PYTHON_M, "evalglass", "run", "--verdict-exit-codes", "--config", config, "--out", out]
    # Always pinned: the config is a pull request's to edit and the ledger the host's, so the config never chooses
    # the ledger. Without the input, the one a config names by default (``authority.yaml`` beside it); a config
    # naming any other file is then refused (exit 2), and a host keeping its ledger elsewhere names it in the
    # workflow.
    ledger = env.get("INPUT_LEDGER", "").strip() or str(Path(config).parent / DEFAULT_LEDGER)
    argv += ["--ledger", ledger]
    more = shlex.split(env.get("INPUT_ARGS", ""))
    # An option given twice takes its last value, so `args: --ledger evals/mine.yaml` would silently replace the
    # pinned ledger a reviewer reads in the `ledger` input (and `--example` would run another suite): what an input
    # says is said there only.
    for token in more:
        owner = next((option for option in INPUT_OWNED if token == option or token.startswith(option + "=")), None)
        if owner is not None:
            raise StepError(f"args: {token}: {INPUT_OWNED[owner]}")
    return argv + more, Path(out)


def file_identity(path: Path) -> tuple[int, int] | None:
    """Artifacts are replaced by rename: a new inode or mtime means this run wrote the file."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns


def scorecard_written(scorecard: Path, before: tuple[int, int] | None) -> bool:
    """Whether this run wrote a scorecard (a stale one from an earlier run in the same workspace does not count).
    Only whether: what it says is not read (the verdict is the exit status's)."""
    after = file_identity(scorecard)
    return after is not None and after != before


def run(env: Mapping[str, str]) -> int:
    try:
        argv, out = run_argv(env)
    except (StepError, ValueError) as exc:  # an option an input owns; shlex: an unbalanced quote in `args`
        set_outputs(env, {"exit-code": str(SETUP_ERROR), "verdict": "", "run-folder": ""})
        message = str(exc) if isinstance(exc, StepError) else f"args: {exc}"
        return fail_step(env, "EvalGlass could not complete the run", [message])
    existed = out.exists()
    before = file_identity(out / "scorecard.json")
    print(f"$ {shlex.join(argv)}", flush=True)
    # stdout (the terminal report and EvalGlass's own annotations) goes straight to the log; stderr is passed on
    # line by line and its end kept, to say why when the run could not complete.
    child = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace")
    assert child.stderr is not None
    tail: deque[str] = deque(maxlen=40)
    for line in child.stderr:
        sys.stderr.write(line)
        tail.append(line.rstrip("\n"))
    code = child.wait()
    sys.stderr.flush()
    wrote = scorecard_written(out / "scorecard.json", before)
    # A verdict needs both: the exit status that names it, and a scorecard this run wrote (an exit without one, as
    # an EvalGlass too old to know --verdict-exit-codes would not make, decided nothing the run folder shows).
    verdict = VERDICT_OF_CODE.get(code, "") if wrote else ""
    # The folder is this run's when it wrote a scorecard there, or created the folder (a run stopped half-way).
    folder = str(out) if out.is_dir() and (wrote or not existed) else ""
    if verdict:
        step = STEP_CODE[verdict]
        set_outputs(env, {"exit-code": str(step), "verdict": verdict, "run-folder": folder})
        return step
    shown = code if code not in VERDICT_OF_CODE else SETUP_ERROR
    set_outputs(env, {"exit-code": str(shown), "verdict": "", "run-folder": folder})
    errors = [line for line in tail if line.startswith("error")] or [line for line in tail if line.strip()][-5:]
    lines = [f"`evalglass run` exited {code} without a verdict:", *(errors or ["(it printed nothing on stderr)"])]
    fail_step(env, "EvalGlass could not complete the run", lines)
    return shown


STEPS = {"install": install, "run": run}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in STEPS:
        print(f"usage: evalglass_action.py {{{','.join(STEPS)}}}", file=sys.stderr)
        return SETUP_ERROR
    return STEPS[argv[0]](os.environ)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
