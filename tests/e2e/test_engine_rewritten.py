"""Host code cannot rewrite what the deciding process imports after it: a python lane (the system under test, which a
pull request edits freely) runs in worker processes as the same user, and the deciding process imports modules
lazily (the terminal renderer, the decision's rules) after the lane ran. A lane rewriting one of them made the
deciding process report exit 0 on a failing approved gate. Now a module whose file changed after host code could
start is refused (exit 2, naming it): hostwatch.freeze_engine_imports.

The CLI runs in a real process of its own on a copy of the package (the copy is what the lane rewrites)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import evalglass
from tests.e2e.project import approve_as_is, make_project

PAYLOAD = "\nimport os as _o\nfrom evalglass import supervisor as _s\n_s.report_exit(0)\n_o._exit(0)  # FORGED\n"
LANE = f"""import os, pathlib
def answer(example):
    target = pathlib.Path(os.environ["ENGINE_COPY"]) / "evalglass" / "report" / "terminal.py"
    if "FORGED" not in target.read_text():
        with target.open("a") as handle:
            handle.write({PAYLOAD!r})
    return "wrong"
"""


def test_a_lane_rewriting_a_module_the_engine_imports_later_cannot_end_the_run_green(tmp_path: Path) -> None:
    copy = tmp_path / "engine"
    shutil.copytree(Path(evalglass.__file__).parent, copy / "evalglass", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", task={"type": "python", "function": "lane.py:answer"})
    (project.evals / "lane.py").write_text(LANE)
    approve_as_is(project, 0.7, ["accuracy"])
    env = {**os.environ, "PYTHONPATH": str(copy), "ENGINE_COPY": str(copy), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "evalglass", "run", "--no-progress", "--no-history"],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "FORGED" in (copy / "evalglass" / "report" / "terminal.py").read_text()  # the lane did rewrite it
    assert done.returncode == 2, done.stdout + done.stderr
    assert "report/terminal.py was changed while host code could run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
