"""Host code cannot rewrite what the deciding process imports after it: a python lane (the system under test, which a
pull request edits freely) runs in worker processes as the same user, and the deciding process imports modules
lazily (the terminal renderer, the decision's rules) after the lane ran. A lane rewriting one of them made the
deciding process report exit 0 on a failing approved gate. Now a module whose file changed after host code could
start is refused (exit 2, naming it): hostwatch.freeze_engine_imports.

The CLI runs in a real process of its own on a copy of the package (the copy is what the lane rewrites)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.project import run_on_engine_copy

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
    copy, done = run_on_engine_copy(tmp_path, LANE)
    assert "FORGED" in (copy / "evalglass" / "report" / "terminal.py").read_text()  # the lane did rewrite it
    assert done.returncode == 2, done.stdout + done.stderr
    assert "report/terminal.py was changed while host code could run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
