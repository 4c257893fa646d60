"""The call cache on a folder that cannot be written, or a disk that fills up mid-run, through the real CLI.

Decided (docs/caching.md): a cache that cannot be opened for writing stops the run before its first call (exit 2,
one line: why and how to fix, `--no-cache` among the fixes); a cache write that fails once the run is under way is
one warning line, and the run completes with every result. Real read-only mounts and a real full tmpfs, since the
tests run as root (tests/mountns.py).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from evalglass.engine.runs.manifest import MANIFEST_FILE
from evalglass.testing.fake_openai import FakeOpenAI
from tests.mountns import evalglass_in_namespace, need_mounts, read_only, small_disk

from .conftest import LiveProject, cli_env, questions, wait_until

CACHE = ".evalglass-cache.sqlite"


def lines_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def run_in(project: LiveProject, setup: list[str], *args: str):
    return evalglass_in_namespace(
        setup, "run", "--format", "json", "--no-progress", *args, cwd=project.root, env=cli_env()
    )


def test_a_read_only_working_folder_stops_before_any_call(project: LiveProject, server: FakeOpenAI, tmp_path) -> None:
    project.write(questions(4))
    result = run_in(project, [read_only(project.root)], "--out", str(tmp_path / "out"))
    assert result.code == 2, result.err
    (line,) = lines_of(result.err)
    assert line.startswith(f"error: {CACHE}: the call cache cannot be written: the file system is read-only"), line
    assert f"make {project.root} " in line and "--no-cache" in line, line
    assert "OperationalError" not in line and "Traceback" not in result.err
    assert server.request_count == 0  # stopped before paying for a call
    assert not (tmp_path / "out").exists()


def test_with_no_cache_the_same_run_completes_and_names_what_it_could_not_record(
    project: LiveProject, server: FakeOpenAI, tmp_path
) -> None:
    project.write(questions(4))
    out = tmp_path / "out"
    result = run_in(project, [read_only(project.root)], "--no-cache", "--out", str(out))
    assert result.code == 0, result.err
    assert server.request_count == 4
    warnings = [line for line in lines_of(result.err) if line.startswith("warning: ")]
    assert [w.split(":")[1].strip() for w in warnings[:2]] == [".evalglass/last-started", ".evalglass/last-run"], (
        warnings
    )
    assert all("Read-only file system" in w for w in warnings)
    assert len(warnings) == 3 and "run history" in warnings[2]  # the history lives in the same read-only folder
    assert len(project.scores(out)) == 4


def test_an_existing_cache_made_read_only_is_refused_by_name(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(questions(3))
    assert project.run().code == 0
    calls = server.request_count
    result = run_in(project, [read_only(project.root / CACHE)])
    assert result.code == 2, result.err
    (line,) = lines_of(result.err)
    assert f"{CACHE}: the call cache cannot be written: the file system is read-only" in line, line
    assert server.request_count == calls


def test_a_file_that_is_not_a_cache_is_refused_with_the_fix(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(questions(2))
    (project.root / CACHE).write_bytes(b"not sqlite at all, just some bytes\n" * 200)
    result = project.run()
    assert result.code == 2, result.err
    (line,) = lines_of(result.err)
    assert f"{CACHE}: this file is not an EvalGlass call cache" in line and "delete it" in line, line
    assert server.request_count == 0


def test_a_disk_that_fills_up_mid_run_is_one_warning_and_every_result(
    project: LiveProject, server: FakeOpenAI, tmp_path
) -> None:
    """The project on a 300 KiB tmpfs: the cache's first writes fit, later ones fail with SQLITE_FULL. The results
    in hand are real, so the run completes (exit 0) with all 200, and one line says how many were not stored."""
    rows = [{"id": f"q{i:03d}", "question": f"question {i} " + "x" * 1000} for i in range(200)]
    project.write(rows)
    out = tmp_path / "out"
    result = run_in(project, [small_disk(project.root, "300k")], "--out", str(out))
    assert result.code == 0, result.err
    assert "Traceback" not in result.err and "never retrieved" not in result.err, result.err
    cache_lines = [line for line in lines_of(result.err) if CACHE in line]
    assert len(cache_lines) == 1, result.err
    line = cache_lines[0]
    assert line.startswith(f"warning: {CACHE}: the call cache could not be written (database or disk is full)")
    unstored = int(line.split("; ")[1].split(" ")[0])
    assert 0 < unstored <= 200 and "makes those calls again" in line, line
    scores = project.scores(out)
    assert len(scores) == 200
    assert all(row["scores"]["echoed"] == 1.0 for row in scores), scores[:3]
    assert server.request_count == 200


def test_an_interrupted_run_prints_its_warnings_before_the_resume_line(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """`.evalglass/` read-only: the last-started pointer cannot move, so Ctrl-C's resume line is preceded by the
    warning that `--resume` without a folder may pick an older run."""
    need_mounts()
    project.write(questions(2))
    assert project.run().code == 0  # creates .evalglass/ with both pointers
    server.latency = 0.05
    project.write(questions(80, prefix="other"), concurrency={"max_in_flight": 2})
    out = project.root.parent / "out"
    state = project.root / ".evalglass"
    script = " && ".join(
        [
            read_only(state),
            f"cd {project.root}",
            f"exec {sys.executable} -m evalglass run --no-progress --out {out}",
        ]
    )
    proc = subprocess.Popen(
        ["unshare", "--mount", "sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        wait_until(lambda: server.request_count >= 8, what="8 requests")
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = lines_of(err)
    assert "Traceback" not in err
    assert lines[-2].startswith("warning: .evalglass/last-started: could not record"), err
    assert lines[-1].startswith("interrupted after ") and lines[-1].endswith(f"evalglass run --resume {out}"), err
    assert (out / MANIFEST_FILE).is_file()  # resumable by name, as the line says
