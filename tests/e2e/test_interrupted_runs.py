"""A run stopped from outside (SIGKILL, SIGTERM, Ctrl-C) while its python lane and python metric run, then
`run --resume`: the folder it finishes is the uninterrupted run's, byte for byte (but for the run's id and time), and
`verify` passes it; a run that could not write its folder (a file-size limit) and removed it is refused by `--resume`
in one line. Real processes and real signals, each loop bounded."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.project import make_project, run_cli
from tests.e2e.test_bad_input import run_limited

ROWS = [{"id": f"ex-{i:03d}", "question": f"q{i}", "expected": f"Q{i}" if i % 6 else "no"} for i in range(120)]
APP = "import time\n\ndef answer(record):\n    time.sleep(0.02)\n    return record['question'].upper()\n"
GRADER = "import time\n\ndef score(output, reference):\n    time.sleep(0.005)\n    return 1.0 if output == reference else 0.0\n"
#: run.json is left out: it records the dataset file's mtime, another project's here.
COMPARED = ("scores.jsonl", "outputs.jsonl", "scorecard.json", "runrecord.json", "report.md")


def _project(root: Path) -> Path:
    project = make_project(
        root,
        task={"type": "python", "function": "app.py:answer", "concurrency": 2},
        metrics={
            "exact": {"type": "exact_match", "reference": "expected"},
            "graded": {"type": "python", "function": "grader.py:score", "reference": "expected"},
        },
    )
    project.write_rows(ROWS)
    (project.evals / "app.py").write_text(APP)
    (project.evals / "grader.py").write_text(GRADER)
    return root


def _normalised(folder: Path, name: str) -> str:
    """An artifact's text with the two values that name the run (its id, its creation time) replaced."""
    record = json.loads((folder / "runrecord.json").read_text())
    text = (folder / name).read_text()
    text = text.replace(record["run_id"], "RUN").replace(record["created_at"], "AT")
    return text


def _folder(root: Path) -> Path:
    (folder,) = (root / ".evalglass" / "runs").iterdir()
    return folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _project(tmp_path_factory.mktemp("reference"))
    result = run_cli("run", "--no-progress", cwd=root)
    assert result.code == 0, result.err
    return _folder(root)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("after", [0.0, 1.0])
def test_a_run_stopped_while_host_code_runs_resumes_to_the_uninterrupted_run(
    tmp_path: Path, reference: Path, sig: signal.Signals, after: float
) -> None:
    root = _project(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalglass", "run", "--no-progress"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = root / ".evalglass" / "runs"
    deadline = time.monotonic() + 60  # bounded: the manifest is written before any host code runs
    while proc.poll() is None and not any(runs.glob("*/run.json")) and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(after)  # at once (the lane starting) or further into the lane's and the metric's work
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal (a loaded machine)")
    assert proc.returncode in (-signal.SIGKILL, 130), (proc.returncode, err)
    folder = _folder(root)
    assert not (folder / "scorecard.json").exists()

    resumed = run_cli("run", "--resume", "--no-progress", cwd=root)
    assert resumed.code == 0, resumed.err
    assert _folder(root) == folder
    assert sorted(path.name for path in folder.iterdir()) == sorted(path.name for path in reference.iterdir())
    for name in COMPARED:
        assert _normalised(folder, name) == _normalised(reference, name), name
    verified = run_cli("verify", str(folder), cwd=root)
    assert verified.code == 0, (verified.out, verified.err)


def test_resume_of_a_run_that_removed_its_folder_is_one_line(tmp_path: Path) -> None:
    """A file-size limit stops the run and it removes its folder; `.evalglass/last-started` still names it, and
    `--resume` says that folder is gone and what to do, not that it holds no manifest."""
    project = make_project(tmp_path)
    project.write_rows([{"id": f"ex-{i}", "expected": "yes", "output": "yes" * 50} for i in range(200)])
    stopped = run_limited(tmp_path, "run", file_size=2000)
    assert stopped.returncode == 2 and "file-size limit" in stopped.stderr, stopped.stderr
    named = Path((tmp_path / ".evalglass" / "last-started").read_text().strip())
    assert not named.exists()
    resumed = project.run("--resume")
    lines = resumed.err.strip().splitlines()
    assert resumed.code == 2 and len(lines) == 1 and "Traceback" not in resumed.err, resumed.err
    assert "this run folder does not exist" in lines[0] and "start a new run with `evalglass run`" in lines[0]
    shutil.rmtree(tmp_path / ".evalglass")


@pytest.mark.parametrize("killed", ["after its run record", "before its scorecard"])
def test_every_reader_of_a_run_killed_as_it_published_says_to_resume_it(tmp_path: Path, killed: str) -> None:
    """A run renames its run record, then its report, digest list and, last, its scorecard: killed between two
    renames, its folder is one that did not finish. Each command that reads a run says so, with the command that
    finishes it (not "name a run folder written by `evalglass run`", which it is); the resume finishes it."""
    project = make_project(tmp_path)
    assert project.run("--no-progress", "--no-history", "--out", "run").code == 0  # no gate active: evidence only
    folder = project.root / "run"
    scores = (folder / "scores.jsonl").read_bytes()
    for name in ["scorecard.json", *(["report.md", "digests.json"] if killed == "after its run record" else [])]:
        (folder / name).unlink()
    for command in (("view", "run"), ("verify", "run"), ("compare", "run", "run"), ("report", "run")):
        said = project.cli(*command)
        assert said.code == 2, (command, said)
        assert "this run did not finish" in said.err and "evalglass run --resume run" in said.err, (command, said.err)
    assert project.run("--no-progress", "--no-history", "--resume", "run").code == 0
    assert (folder / "scores.jsonl").read_bytes() == scores
    assert project.cli("verify", "run").code == 0
