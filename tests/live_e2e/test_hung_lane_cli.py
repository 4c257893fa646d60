"""A python lane function that never returns is abandoned at its timeout and never keeps the run from exiting:
not when the run finishes, not on Ctrl-C. (Python threads cannot be killed; the lane runs them as daemons.)"""

from __future__ import annotations

import signal
import textwrap
import time

from .conftest import LiveProject, kill, questions, start, wait_until

HANG = 120  # seconds the hung call sleeps: far beyond every bound below, so waiting for it would fail the test


def _hanging_project(project: LiveProject, timeout: float) -> None:
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text(
        textwrap.dedent(
            f"""
            import pathlib, time

            def answer(example):
                if example["question"].endswith(" 1"):
                    pathlib.Path("hung.marker").write_text("started")
                    time.sleep({HANG})
                return example["question"]
            """
        )
    )
    project.write(
        questions(3),
        task={"type": "python", "function": "app.py:answer", "timeout": timeout},
        metrics={"echoed": {"type": "contains", "reference": "question"}},
    )


def test_a_finished_run_exits_without_waiting_for_an_abandoned_call(project: LiveProject) -> None:
    _hanging_project(project, timeout=1)
    began = time.monotonic()
    result = project.run(timeout=60)
    assert result.code == 0, result.err
    assert time.monotonic() - began < 60
    scores = {row["id"]: row["scores"]["echoed"] for row in project.scores()}
    assert scores["q000"] == 1.0 and scores["q002"] == 1.0
    assert scores["q001"]["status"] == "error"
    assert scores["q001"]["diagnostics"][0]["code"] == "task_timeout"


def test_ctrl_c_exits_while_a_call_hangs(project: LiveProject) -> None:
    _hanging_project(project, timeout=HANG * 2)
    proc = start("run", "--no-progress", cwd=project.root)
    wait_until(lambda: (project.root / "hung.marker").exists(), what="the hung call to start")
    code, _out, err = kill(proc, signal.SIGINT)  # communicate() gives up after 60 s, well before the call returns
    assert code == 130, err
    assert "evalglass run --resume" in err
