"""The call cache, `--no-cache`, `--refresh`, resume after SIGKILL and Ctrl-C, through the real CLI."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.produce.cachewriter import LIMIT
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, kill, questions, start, wait_until

CACHE = ".evalglass-cache.sqlite"


def test_rerun_hits_the_cache(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(
        questions(12), metrics={"echoed": {"type": "contains", "reference": "question"}, "j": project.judge()}
    )
    assert project.run().code == 0
    first = server.request_count
    assert first == 24
    first_scores = (project.last_run() / "scores.jsonl").read_bytes()
    assert project.run().code == 0
    assert server.request_count == first  # nothing repeated
    assert (project.last_run() / "scores.jsonl").read_bytes() == first_scores

    assert project.run("--refresh").code == 0
    assert server.request_count == 2 * first
    assert project.run("--no-cache").code == 0
    assert server.request_count == 3 * first


def test_no_cache_never_creates_the_file(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(questions(3))
    assert project.run("--no-cache").code == 0
    assert not (project.root / CACHE).exists()
    assert server.request_count == 3


def test_failed_calls_are_not_cached(project: LiveProject, server: FakeOpenAI) -> None:
    project.write([{"id": "a", "question": "[[behaviour:400]] q"}, {"id": "b", "question": "fine"}])
    assert project.run().code == 0
    assert server.request_count == 2
    assert project.run().code == 0
    assert server.request_count == 3  # the failed call was tried again, the good one came from the cache


def test_flags_that_exclude_each_other(project: LiveProject) -> None:
    project.write(questions(2))
    for flags in (("--no-cache", "--refresh"), ("--resume", "--no-cache"), ("--refresh", "--resume")):
        result = project.run(*flags)
        assert result.code == 2, flags
        assert "Traceback" not in result.err and result.err.count("\n") == 1, result.err


# ---------------------------------------------------------------------- resume
def _normalised(folder: Path, name: str) -> Any:
    """An artifact with the two fields that name the run (id, creation time) removed."""
    if name == "report.md":
        record = json.loads((folder / "runrecord.json").read_text())
        return (folder / name).read_text().replace(record["run_id"], "RUN").replace(record["created_at"], "AT")
    data = json.loads((folder / name).read_text())
    data.pop("run_id")
    data.pop("created_at")
    return data


def _cached_prompts(cache: Path) -> set[str]:
    """Prompts of the chat calls in the cache (none when the kill came before the cache's table was created)."""
    if not cache.exists():
        return set()
    with sqlite3.connect(cache) as db:
        try:
            rows = db.execute("SELECT request FROM calls WHERE kind = 'chat'").fetchall()
        except sqlite3.OperationalError:
            return set()
    return {json.loads(row[0])["messages"][-1]["content"] for row in rows}


def _reference_run(project: LiveProject, server: FakeOpenAI, tmp_path: Path) -> tuple[Path, int]:
    """The same project, copied before any run, run once without interruption (its own cache)."""
    reference = tmp_path / "reference" / "evals"
    shutil.copytree(project.root, reference)
    before = server.request_count
    other = LiveProject(reference, project.base_url)
    result = other.run()
    assert result.code == 0, result.err
    return other.last_run(), server.request_count - before


@pytest.mark.parametrize("kill_after", ["manifest", "some_requests", "near_the_end"])
def test_resume_after_sigkill_matches_an_uninterrupted_run(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path, kill_after: str
) -> None:
    total = 60
    server.latency = 0.03
    project.write(questions(total), concurrency={"max_in_flight": 4})
    reference, reference_requests = _reference_run(project, server, tmp_path)
    assert reference_requests == total
    server.reset()

    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    runs = project.root / ".evalglass" / "runs"
    if kill_after == "manifest":
        wait_until(lambda: any(runs.glob("*/run.json")) if runs.exists() else False, what="the run manifest")
    elif kill_after == "some_requests":
        wait_until(lambda: server.request_count >= 20, what="20 requests")
    else:
        wait_until(lambda: server.request_count >= total - 3, what="nearly every request")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    killed_requests = server.request_count
    (folder,) = runs.iterdir()
    assert (folder / "run.json").exists()
    assert not (folder / "scorecard.json").exists()
    cached = _cached_prompts(project.root / CACHE)

    server.reset()
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    assert project.last_run().resolve() == folder.resolve()
    resumed_prompts = [request.last_user_message for request in server.requests]
    # no completed (cached) call is repeated, and every other call is made exactly once
    assert not set(resumed_prompts) & cached
    assert len(resumed_prompts) == len(set(resumed_prompts)) == total - len(cached)
    # Made twice: at most the calls in flight at the kill and the answers not yet committed (engine/produce/cachewriter.py)
    assert killed_requests + len(resumed_prompts) <= reference_requests + 4 + LIMIT

    assert (folder / "scores.jsonl").read_bytes() == (reference / "scores.jsonl").read_bytes()
    assert (folder / "outputs.jsonl").read_bytes() == (reference / "outputs.jsonl").read_bytes()
    for name in ("scorecard.json", "runrecord.json", "report.md"):
        assert _normalised(folder, name) == _normalised(reference, name), name
    # Calls this run made before the kill count as its own (at their recorded usage), not as cached.
    (task,) = json.loads((folder / "scorecard.json").read_text())["usage"]
    assert (task["calls"], task["cached_calls"]) == (total, 0) and task["prompt_tokens"] > 0
    manifest = json.loads((folder / "run.json").read_text())
    assert json.loads((folder / "scorecard.json").read_text())["run_id"] == manifest["run_id"]


def test_a_sigkill_loses_at_most_the_last_group_of_answers_and_resume_makes_only_those_again(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    """The cache commits answers in groups (engine/produce/cachewriter.py): a SIGKILL may lose the answers of the last few
    milliseconds, never more than LIMIT of them. Killed after hundreds of answers, the cache holds all but at most
    LIMIT (plus the answers still on their way to the client); the resumed run asks again for exactly the calls that
    are not cached, each once, and writes the bytes of an uninterrupted run."""
    total, concurrency = 1200, 16
    server.latency = 0.002
    project.write(questions(total), concurrency={"max_in_flight": concurrency})
    reference, _ = _reference_run(project, server, tmp_path)
    server.reset()

    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= 2 * LIMIT + 200, what="hundreds of answers")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    answered = {request.last_user_message for request in server.requests if request.status == 200}
    asked = server.request_count
    assert 2 * LIMIT + 200 - concurrency <= len(answered) < total  # killed mid-run, with many answers in hand
    cached = _cached_prompts(project.root / CACHE)
    assert cached <= answered
    assert len(answered - cached) <= LIMIT + concurrency  # lost: the last group, and answers not yet received

    server.reset()
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    again = [request.last_user_message for request in server.requests]
    assert len(again) == len(set(again)) == total - len(cached) and not set(again) & cached
    assert asked + len(again) <= total + concurrency + LIMIT
    folder = project.last_run()
    assert (folder / "scores.jsonl").read_bytes() == (reference / "scores.jsonl").read_bytes()
    assert (folder / "outputs.jsonl").read_bytes() == (reference / "outputs.jsonl").read_bytes()
    for name in ("scorecard.json", "runrecord.json", "report.md"):
        assert _normalised(folder, name) == _normalised(reference, name), name
    rows = [row["id"] for row in project.scores(folder)]
    assert len(rows) == len(set(rows)) == total  # no example lost or written twice


def test_resume_of_a_resumed_run_is_byte_identical(project: LiveProject, server: FakeOpenAI) -> None:
    """Resuming a finished run re-derives the same bytes: same run id, same created_at, same scores."""
    project.write(questions(10))
    assert project.run().code == 0
    folder = project.last_run()
    before = {
        name: (folder / name).read_bytes() for name in ("scorecard.json", "scores.jsonl", "runrecord.json", "report.md")
    }
    requests = server.request_count
    result = project.run("--resume", str(folder))
    assert result.code == 0, result.err
    assert server.request_count == requests
    for name, data in before.items():
        assert (folder / name).read_bytes() == data, name


def test_resume_refuses_a_changed_config_or_dataset(project: LiveProject) -> None:
    project.write(questions(4))
    assert project.run().code == 0
    folder = project.last_run()
    config = project.root / "evalglass.yaml"
    config.write_text(config.read_text().replace("app-model", "other-model"))
    result = project.run("--resume", str(folder))
    assert result.code == 2 and "the config changed" in result.err, result.err
    assert result.err.count("\n") == 1
    config.write_text(config.read_text().replace("other-model", "app-model"))
    with (project.root / "data.jsonl").open("a") as handle:
        handle.write('{"id": "new", "question": "new"}\n')
    result = project.run("--resume", str(folder))
    assert result.code == 2 and "the dataset changed" in result.err, result.err
    lines = (project.root / "data.jsonl").read_text().splitlines()[:-1]
    (project.root / "data.jsonl").write_text("\n".join(lines) + "\n")
    (project.root / "authority.yaml").write_text("judges: {}\n")
    result = project.run("--resume", str(folder))
    assert result.code == 2 and "the authority ledger changed" in result.err, result.err
    missing = project.run("--resume", str(project.root / "no-such-run"))
    assert missing.code == 2 and "no such run folder" in missing.err and missing.err.count("\n") == 1


def test_a_recorded_run_resumes_too(project: LiveProject) -> None:
    rows = [{"id": f"r{i}", "question": f"q{i}", "output": f"q{i} answered"} for i in range(5)]
    project.write(rows, task={"type": "recorded"})
    assert project.run().code == 0
    folder = project.last_run()
    before = (folder / "scorecard.json").read_bytes()
    result = project.run("--resume")
    assert result.code == 0, result.err
    assert (folder / "scorecard.json").read_bytes() == before
    assert not (folder / "outputs.jsonl").exists()  # nothing was produced: the outputs are in the dataset


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(project: LiveProject, server: FakeOpenAI) -> None:
    server.latency = 0.05
    project.write(questions(80), concurrency={"max_in_flight": 2})
    proc = start("run", "--no-progress", cwd=project.root)
    wait_until(lambda: server.request_count >= 6, what="6 requests")
    code, _out, err = kill(proc, signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in err
    (folder,) = (project.root / ".evalglass" / "runs").iterdir()
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1 and lines[0].endswith(f"evalglass run --resume {folder.relative_to(project.root)}"), err
    assert lines[0].startswith("interrupted after ") and " of 80 examples" in lines[0], err
    assert not (folder / "scorecard.json").exists()
    made = server.request_count
    assert made < 80
    resumed = project.run("--resume", str(folder))
    assert resumed.code == 0, resumed.err
    assert server.request_count < made + 80  # the calls done before Ctrl-C came from the cache
    assert len(project.scores(folder)) == 80


def test_resume_after_repeated_sigkills_sweeps_the_killed_writers_partial_files(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """Each SIGKILLed process leaves the partial files it was writing (`.scores.jsonl.PID.*.partial`...); every
    resume removes those, and only those, before it writes: the finished folder holds exactly the run's artifacts,
    beside what else was there."""
    server.latency = 0.01
    project.write(questions(300), concurrency={"max_in_flight": 4})
    runs = project.root / ".evalglass" / "runs"
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    for attempt in range(5):
        if attempt:
            proc = start("run", "--resume", "--no-progress", "--format", "json", cwd=project.root)
        target = server.request_count + 10
        wait_until(lambda target=target: server.request_count >= target, what=f"10 more requests ({attempt})")
        code, _, _ = kill(proc, signal.SIGKILL)
        assert code == -signal.SIGKILL
    (folder,) = runs.iterdir()
    debris = sorted(path.name for path in folder.iterdir() if path.name.endswith(".partial"))
    # The last killed process's files are there; each resume swept those of the processes killed before it.
    assert len(debris) >= 2 and len({name.split(".")[3] for name in debris}) == 1, debris
    assert not (folder / "scorecard.json").exists()
    # Not theirs: a file of another name, and an entry of their name that is no regular file.
    (folder / ".notes.partial").write_text("kept")
    (folder / ".scores.jsonl.1.0123abcd.partial").mkdir()

    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    assert sorted(path.name for path in folder.iterdir()) == [
        ".notes.partial",
        ".scores.jsonl.1.0123abcd.partial",
        "digests.json",
        "outputs.jsonl",
        "report.md",
        "run.json",
        "runrecord.json",
        "scorecard.json",
        "scores.jsonl",
    ]
    assert len(project.scores(folder)) == 300
