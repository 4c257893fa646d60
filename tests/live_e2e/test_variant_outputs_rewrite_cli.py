"""Host code rewriting a variant's committed outputs before the judge of variants reads them (CLI end to end).

Variants are scored one after another, and a pairwise judge of variants (``compare_variants``) grades, once every
variant is scored, what each variant's lane answered as the run folder keeps it (``variants/NAME/outputs.jsonl``).
An ungated python metric scored during the second variant runs as the same user and can find that folder: it
rewrote the first variant's answers to winning ones, the judge graded those, and an approved, calibrated gate on
the judge passed a run whose lanes lost. What the run reads back from its own folder is now taken only from bytes
that hash to what it wrote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, cli_env
from .test_pairwise_variants_live_cli import approve_calibrated, judged, reply


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=reply) as fake:
        yield fake


#: An ungated python metric: once the `strong` variant's outputs file is final (the `weak` variant is being scored),
#: every answer of `strong` in it says q=9, which the judge prefers to any of `weak`'s.
REWRITE = r"""
import pathlib, re

def score(output):
    root = pathlib.Path(__file__).resolve().parent / ".evalglass" / "runs"
    for path in root.glob("*/variants/strong/outputs.jsonl"):
        text = path.read_text()
        forged = re.sub(r"q=\d+", "q=9", text)
        if forged != text:
            path.write_text(forged)
    return 1.0
"""


def test_a_metric_rewriting_a_variants_committed_outputs_decides_nothing(project: LiveProject) -> None:
    judged(project, gates={"strong-preferred": {"metric": "preferred", "proposed_threshold": 0.9}})
    config = (project.root / "evalglass.yaml").read_text()
    assert project.run().code == 0  # informational: nothing approved yet
    approval = approve_calibrated(project, "strong-preferred", 0.9)
    honest = project.run()
    assert honest.code == 1, honest.out + honest.err
    (gate,) = json.loads(honest.out)["decision"]["gates"]
    assert gate["outcome"] == "fail" and gate["value"] == pytest.approx(0.75)  # 8 wins, 2 ties in 12: short of 0.9

    # The pull request adds an ungated python metric (no ledger entry) beside the approved judge.
    (project.root / "tidy.py").write_text(REWRITE)
    (project.root / "evalglass.yaml").write_text(
        config.replace("metrics:\n", "metrics:\n  tidy:\n    type: python\n    function: tidy.py:score\n", 1)
    )
    assert project.gate_fingerprint("strong-preferred") == approval["fingerprint"]
    attacked = project.run()
    # Before: the judge graded the forged answers, 11.5 of 12, and the gate passed (exit 0).
    assert attacked.code == 2, attacked.out + attacked.err
    assert "variants/strong/outputs.jsonl" in attacked.err
    assert "changed while the run went on" in attacked.err and "Traceback" not in attacked.err


#: An ungated python metric that leaves a process behind (its own session, outliving the worker): once the run has
#: written `compared/graded.jsonl`, the file the judge of variants reads as its dataset, every answer of `strong` in
#: it says q=9.
LEAVE_BEHIND = r'''
import pathlib, subprocess, sys, time

WATCH = """
import pathlib, re, sys, time
runs, since = pathlib.Path(sys.argv[1]), float(sys.argv[2])
end = time.time() + 60
while time.time() < end:
    for path in runs.glob("*/compared/graded.jsonl"):
        if path.stat().st_mtime >= since:
            path.write_text(re.sub(r'"strong":"q=[0-9]+', '"strong":"q=9', path.read_text()))
            sys.exit(0)
    time.sleep(0.002)
"""
_started = []

def score(output):
    if not _started:
        _started.append(True)
        runs = pathlib.Path(__file__).resolve().parent / ".evalglass" / "runs"
        argv = [sys.executable, "-c", WATCH, str(runs), str(time.time())]
        subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return 1.0
'''


def test_a_process_left_behind_rewriting_what_the_judge_of_variants_reads_decides_nothing(
    project: LiveProject, server: FakeOpenAI
) -> None:
    judged(project, gates={"strong-preferred": {"metric": "preferred", "proposed_threshold": 0.9}})
    config = (project.root / "evalglass.yaml").read_text()
    assert project.run().code == 0
    approve_calibrated(project, "strong-preferred", 0.9)
    assert project.run().code == 1  # 0.75, short of 0.9
    (project.root / "tidy.py").write_text(LEAVE_BEHIND)
    (project.root / "evalglass.yaml").write_text(
        config.replace("metrics:\n", "metrics:\n  tidy:\n    type: python\n    function: tidy.py:score\n", 1)
    )
    # The process left behind polls for the file: the judge's answers take a while, so that on a loaded machine too it
    # rewrites the file while the run still holds it (one that came after the run's end would fail this test, exit 1).
    server.latency = 0.05
    attacked = project.run()
    # Before: the judge read the rewritten file whenever the rewrite came before its read (exit 0, pass) and the run
    # decided on it either way; now the file is held from the moment it is written, as the dataset is.
    assert attacked.code == 2, attacked.out + attacked.err
    assert "compared/graded.jsonl" in attacked.err and "the file changed while the run read it" in attacked.err


#: The CLI with a rewrite injected at the one instant no race test hits reliably: `compared/graded.jsonl` is
#: published (renamed into place) and rewritten, every answer of `strong` made q=9, before the run records its state
#: (once: the run's later look at the file is left alone).
REWRITE_AFTER_PUBLISH = r"""
import pathlib, re, runpy, sys
from evalglass.engine.jobs import pipeline

real, done = pipeline.file_state, []

def file_state(path):
    if path.name == "graded.jsonl" and path.parent.name == "compared" and not done:
        done.append(path)
        path.write_text(re.sub(r"q=\d+", "q=9", path.read_text()))
    return real(path)

pipeline.file_state = file_state
sys.argv = ["evalglass", *sys.argv[1:]]
runpy.run_module("evalglass", run_name="__main__", alter_sys=True)
"""


def test_what_the_judge_of_variants_reads_is_held_to_the_bytes_written_not_to_the_published_file(
    project: LiveProject,
) -> None:
    judged(project, gates={"strong-preferred": {"metric": "preferred", "proposed_threshold": 0.9}})
    assert project.run().code == 0
    approve_calibrated(project, "strong-preferred", 0.9)
    assert project.run().code == 1  # 0.75, short of 0.9
    argv = [sys.executable, "-c", REWRITE_AFTER_PUBLISH, "run", "--format", "json", "--no-progress"]
    attacked = subprocess.run(argv, cwd=project.root, env=cli_env(), capture_output=True, text=True, timeout=120)
    # Before: the state was taken of the rewritten file, its judges graded it and the run decided on it (exit 1).
    assert attacked.returncode == 2, attacked.stdout + attacked.stderr
    assert "compared/graded.jsonl" in attacked.stderr and "the file changed while the run read it" in attacked.stderr
    assert "Traceback" not in attacked.stderr
