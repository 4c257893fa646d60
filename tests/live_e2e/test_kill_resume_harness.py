"""Kill and resume, at seeded moments, as an outside test suite does it: a live run (a chat lane, an agent lane with
host tools, a cached python lane; each with concurrency and an LLM judge) is started as `python -m evalglass run` in a
process group of its own, and the whole group (the run, its fork server, its workers) is SIGKILLed at moments a
seeded generator picks, from before the first request to after the last one (while the final artifacts are
written); `evalglass run --resume` then starts it again, and is killed too, until a resume finishes. What must hold:

- the finished run's scores, outputs and scorecard are an uninterrupted run's (bytes; the scorecard but for its id
  and time), and `evalglass verify` passes on it;
- a call whose answer was in the cache when a process was killed is never asked again (the fake server counts the
  requests per prompt; a python lane's function counts its own calls in a file outside the project);
- every call is asked at most once more than the kills could have cut short;
- after each kill, the folder never looks complete when it is not: either it has no scorecard, or the scorecard it
  has is a finished run's and `verify` passes on it; a folder without one is refused by `verify` and `view`.

The default variant kills each lane's run twice on few examples (a few seconds each); `EVALGLASS_KILL_SEEDS=N` runs
N seeds per lane, 30 examples and 4 kills each.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.produce.cache import stored_request
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import LiveProject, cli_env, evalglass, fake_reply

CACHE = ".evalglass-cache.sqlite"

TOOLS = '''
def weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "celsius": len(city)}
'''

APP = """
import os


def answer(example: dict) -> str:
    with open(os.environ["KILL_HARNESS_CALLS"], "a") as log:
        log.write(example["question"] + "\\n")
    return example["question"].upper()
"""


def scripted(body: dict[str, Any]) -> Any:
    """The agent's model: look up the weather of city N, then answer (the lane and the judge are answered by
    :func:`fake_reply`)."""
    if body.get("model") != "agent-model":
        return None
    messages = body.get("messages", [])
    first = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    if not isinstance(first, str) or not first.startswith("task "):
        return None
    number = int(first.split()[1])
    if not any(m.get("role") == "assistant" for m in messages):
        return {"tool_calls": [{"name": "weather", "arguments": {"city": f"city{number}"}}]}
    return f"Done with {number}: grade={1 + number % 5} given."


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(reply=fake_reply, turns=scripted) as fake:
        yield fake


def _text(content: Any) -> str:
    """A message's text, as the wire carries it or as the cache stores an agent step (``parts``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("content") or part.get("text") or "") for part in content if isinstance(part, dict))
    return ""


def identity(request: dict[str, Any]) -> str:
    """What one model call is, the same for the request the server saw and the one the cache stored: its model,
    its first user message, how many assistant turns came before it, and its last user message."""
    messages = request.get("messages") or []
    users = [_text(m.get("content", m.get("parts"))) for m in messages if m.get("role") == "user"]
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    return json.dumps([request.get("model"), users[:1], turns, users[-1:]])


def cached_identities(cache: Path) -> set[str]:
    """The model calls whose answers the cache holds (committed): none when there is no table yet."""
    if not cache.exists():
        return set()
    with sqlite3.connect(cache) as db:
        try:
            keys = [row[0] for row in db.execute("SELECT key FROM calls WHERE kind != 'python'")]
            found = set()
            for key in keys:
                raw = stored_request(db, key)
                if raw is not None:
                    found.add(identity(json.loads(raw)))
            return found
        except sqlite3.OperationalError:
            return set()


def cached_python_answers(cache: Path) -> int:
    if not cache.exists():
        return 0
    with sqlite3.connect(cache) as db:
        try:
            return int(db.execute("SELECT count(*) FROM calls WHERE kind = 'python'").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def asked(server: FakeOpenAI) -> Counter[str]:
    return Counter(identity(request.body) for request in server.requests if isinstance(request.body, dict))


def write(project: LiveProject, lane: str, count: int) -> None:
    project.root.mkdir(parents=True, exist_ok=True)
    judge = project.judge()
    if lane == "chat":
        rows = [{"id": f"q{i:02d}", "question": f"question {i} grade={1 + i % 5}"} for i in range(count)]
        task = project.lane()
        metrics = {"echoed": {"type": "contains", "reference": "question"}, "judged": judge}
    elif lane == "agent":
        (project.root / "tools.py").write_text(TOOLS)
        rows = [{"id": f"t{i:02d}", "request": f"task {i}"} for i in range(count)]
        task = project.agent({"weather": "tools.py:weather"}, timeout=5, max_steps=3)
        metrics = {"steps": {"type": "steps", "count": "model_turns", "max": 3}, "judged": judge}
    else:
        (project.root / "app.py").write_text(APP)
        rows = [{"id": f"p{i:02d}", "question": f"question {i} grade={1 + i % 5}"} for i in range(count)]
        task = {"type": "python", "function": "app.py:answer", "cache": True, "concurrency": 3}
        metrics = {"answered": {"type": "regex", "pattern": "QUESTION"}, "judged": judge}
    # Priced, so the scorecard's cost per source is compared too (a count lost to a kill would show there).
    price = {"prompt_per_million": 1.0, "completion_per_million": 2.0}
    prices = {model: price for model in ("app-model", "agent-model", "judge-model")}
    project.write(rows, task=task, metrics=metrics, concurrency={"max_in_flight": 3}, prices=prices)


def start(root: Path, *args: str, calls: Path) -> subprocess.Popen[bytes]:
    """`evalglass run` in a process group of its own (the kill reaches its fork server and workers too)."""
    return subprocess.Popen(
        [sys.executable, "-m", "evalglass", "run", "--no-progress", "--format", "json", *args],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env({"KILL_HARNESS_CALLS": str(calls)}),
        start_new_session=True,
    )


def kill_group_when(proc: subprocess.Popen[bytes], server: FakeOpenAI, requests: int | None, delay: float) -> bool:
    """SIGKILL the run's process group once the server has seen ``requests`` requests (None: at once), ``delay``
    seconds later; False when the run had finished before."""
    deadline = time.monotonic() + 30
    while requests is not None and server.request_count < requests and proc.poll() is None:
        assert time.monotonic() < deadline, "the run stopped making progress"
        time.sleep(0.002)
    time.sleep(delay)
    finished = proc.poll() is not None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    return finished and proc.returncode == 0


def resumable(runs: Path) -> bool:
    """Whether a run was started there (its manifest written): else there is nothing to resume, and a run starts
    afresh (a kill before the manifest leaves a folder without one, which verify and view refuse)."""
    return runs.is_dir() and any((folder / "run.json").is_file() for folder in runs.iterdir())


def normalised_card(folder: Path) -> Any:
    data = json.loads((folder / "scorecard.json").read_text())
    data.pop("run_id")
    data.pop("created_at")
    return data


def check_folder_after_kill(folder: Path, root: Path) -> None:
    """A killed run's folder looks complete only when it is: no scorecard, and verify and view refuse it; or a
    scorecard that verify accepts."""
    verified = evalglass("verify", str(folder), cwd=root)
    if (folder / "scorecard.json").exists():
        assert verified.code == 0, f"a killed run left a scorecard verify refuses: {verified.out}{verified.err}"
        return
    assert verified.code != 0, "verify accepted a killed run's folder without a scorecard"
    viewed = evalglass("view", str(folder), cwd=root)
    assert viewed.code != 0, "view accepted a killed run's folder without a scorecard"
    if (folder / "run.json").exists():  # a started run: both say it did not finish and how to finish it
        for said in (verified, viewed):
            assert said.code == 2 and "this run did not finish" in said.err and "--resume" in said.err, said.err


def run_with_kills(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path, lane: str, seed: int, count: int, kills: int
) -> int:
    """How many kills landed before their run finished."""
    write(project, lane, count)
    calls = tmp_path / f"calls-{lane}-{seed}.log"
    reference = tmp_path / "reference" / "evals"
    shutil.copytree(project.root, reference)
    other = LiveProject(reference, project.base_url)
    done = evalglass("run", "--format", "json", "--no-progress", cwd=reference, env={"KILL_HARNESS_CALLS": str(calls)})
    assert done.code == 0, done.err
    reference_folder = other.last_run()
    total = server.request_count
    reference_asks = asked(server)
    assert all(n == 1 for n in reference_asks.values()), reference_asks
    server.reset()
    calls.unlink(missing_ok=True)

    rng = random.Random(seed)
    server.latency = 0.01  # slow enough for a kill to land mid-run
    runs = project.root / ".evalglass" / "runs"
    kills_done = 0
    for attempt in range(kills):
        before_cache = cached_identities(project.root / CACHE)
        before_python = cached_python_answers(project.root / CACHE)
        before_asks = asked(server)
        before_made = len(calls.read_text().splitlines()) if calls.exists() else 0
        proc = start(project.root, *(("--resume",) if resumable(runs) else ()), calls=calls)
        moment = rng.random() * 1.1  # past 1.0: after the last request, while the artifacts are written
        requests = None if moment < 0.05 else min(total, server.request_count + int(moment * total))
        finished = kill_group_when(proc, server, requests, rng.uniform(0.0, 0.2) if moment >= 1.0 else 0.0)
        kills_done += not finished
        now = asked(server)
        # A call whose answer the cache held when this process started is never asked again by it.
        again = {key for key in before_cache if now[key] > before_asks[key]}
        assert not again, f"seed {seed}, attempt {attempt}: cached calls asked again: {sorted(again)[:3]}"
        if lane == "python":
            made = len(calls.read_text().splitlines()) if calls.exists() else 0
            assert made - before_made <= count - before_python, (seed, attempt, made, before_made, before_python)
        for folder in runs.iterdir() if runs.exists() else ():
            check_folder_after_kill(folder, project.root)

    server.latency = 0.0
    before_cache = cached_identities(project.root / CACHE)
    before_asks = asked(server)
    resumed = project.run(*(("--resume",) if resumable(runs) else ()), env={"KILL_HARNESS_CALLS": str(calls)})
    assert resumed.code == 0, resumed.err
    now = asked(server)
    assert not {key for key in before_cache if now[key] > before_asks[key]}, "the last resume asked cached calls"
    # Every call at least once; more than once only for a call some kill cut short (in flight, or its answer not
    # committed yet): at most once per kill that landed before its run finished.
    assert set(now) == set(reference_asks), [key[-200:] for key in set(now) ^ set(reference_asks)]
    assert all(n <= 1 + kills_done for n in now.values()), now.most_common(3)
    folder = project.last_run()
    for name in ("scores.jsonl", "outputs.jsonl"):
        assert (folder / name).read_bytes() == (reference_folder / name).read_bytes(), (seed, name)
    card = normalised_card(folder)
    assert card == normalised_card(reference_folder), seed
    assert card["usage"] and all(entry["cost"] for entry in card["usage"]), card["usage"]  # counted and priced
    verified = evalglass("verify", str(folder), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
    if lane == "python":
        made = calls.read_text().splitlines()
        assert Counter(made).most_common(1)[0][1] <= 1 + kills_done and set(made) == {
            f"question {i} grade={1 + i % 5}" for i in range(count)
        }
    return kills_done


LANES = ("chat", "agent", "python")
#: The default variant's seed per lane: each one's first kill lands mid-run whatever the machine's speed (92.9 %, 14.8 %
#: and 24.9 % of the requests), and the python lane's second one after its last request, while the artifacts are
#: written or just after (seed 2, the python lane's before, had only that kill: on a fast machine, none at all).
DEFAULT_SEEDS = {"chat": 0, "agent": 1, "python": 8}
#: The slower variants run only when ``EVALGLASS_KILL_SEEDS`` is set (to the number of seeds per lane).
SLOW = pytest.mark.skipif("EVALGLASS_KILL_SEEDS" not in os.environ, reason="slow: set EVALGLASS_KILL_SEEDS=N")


@pytest.mark.parametrize("lane", LANES)
def test_killed_and_resumed_runs_end_as_an_uninterrupted_one(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path, lane: str
) -> None:
    kills_done = run_with_kills(project, server, tmp_path, lane, seed=DEFAULT_SEEDS[lane], count=12, kills=2)
    assert kills_done >= 1, "no kill landed before its run finished: nothing here tested a resume"


@SLOW
@pytest.mark.parametrize("seed", range(int(os.environ.get("EVALGLASS_KILL_SEEDS") or 0)))
@pytest.mark.parametrize("lane", LANES)
def test_many_seeded_kills(project: LiveProject, server: FakeOpenAI, tmp_path: Path, lane: str, seed: int) -> None:
    run_with_kills(project, server, tmp_path, lane, seed=100 + seed, count=30, kills=4)


#: `evalglass` with the rename of the run's file ``KILL_BEFORE`` into its folder preceded by a signal (``KILL_WITH``)
#: to the process that makes the run: a kill at an exact moment of the final writes.
KILL_AT_PUBLISH = """
import os, signal, sys
from evalglass.engine.runs import runfolder
publish = runfolder.PartialFile.publish
def killing(self):
    if self.final.parent.parent.name == "runs" and self.final.name == os.environ["KILL_BEFORE"]:
        open(os.environ["KILL_FIRED"], "w").close()  # so the test knows the signal was sent, not that it never came
        os.kill(os.getpid(), getattr(signal, os.environ["KILL_WITH"]))
    publish(self)
runfolder.PartialFile.publish = killing
sys.argv = ["evalglass", *sys.argv[1:]]
from evalglass.entry import main
main()
"""
#: The files a live run renames into its folder, in the order it does.
PUBLISHED = (
    "run.json",
    "outputs.jsonl",
    "scores.jsonl",
    "runrecord.json",
    "report.md",
    "digests.json",
    "scorecard.json",
)
#: The default suite's moments (the rest: with ``EVALGLASS_KILL_SEEDS`` set).
QUICK = (("SIGKILL", "report.md"), ("SIGKILL", "scorecard.json"), ("SIGTERM", "digests.json"))
MOMENTS = [
    pytest.param(sig, name, marks=() if (sig, name) in QUICK else (SLOW,))
    for sig in ("SIGKILL", "SIGTERM")
    for name in PUBLISHED
]


@pytest.mark.parametrize(("sig", "before"), MOMENTS)
def test_a_kill_at_any_rename_of_the_final_writes_never_leaves_a_finished_looking_folder(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path, sig: str, before: str
) -> None:
    """Killed just before each rename of a run's files in turn: a folder with a scorecard verifies; one without is
    refused by verify and view and resumes to a run that verifies. (The scorecard was published with the run
    record, before the report and the digest list: a kill between them left a scorecard beside neither.)"""
    write(project, "chat", 3)
    fired = tmp_path / "signal-sent"
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT_PUBLISH, "run", "--no-progress", "--format", "json"],
        cwd=project.root,
        env=cli_env({"KILL_BEFORE": before, "KILL_WITH": sig, "KILL_FIRED": str(fired)}),
        capture_output=True,
        timeout=60,
    )
    # Else the run never renamed that file through PartialFile.publish and nothing below tests a kill.
    assert fired.exists(), f"no signal was sent before {before} was renamed: {done.stderr!r}"
    runs = project.root / ".evalglass" / "runs"
    (folder,) = runs.iterdir()
    if sig == "SIGKILL":
        # The run is made in a supervised child (supervisor.py): the parent says the child was killed, exit 2.
        assert done.returncode == 2 and b"killed by SIGKILL" in done.stderr, done.stderr
    else:
        # Stopped: interrupted (130), or finished when the signal came after its last file.
        assert done.returncode in (0, 130), done.stderr
    check_folder_after_kill(folder, project.root)
    # Killed before its manifest was renamed into place, the run has nothing to resume: it is started again.
    started = (folder / "run.json").exists()
    resumed = project.run(*(("--resume", str(folder)) if started else ()))
    assert resumed.code == 0, resumed.err
    folder = project.last_run()
    verified = evalglass("verify", str(folder), cwd=project.root)
    assert verified.code == 0, verified.out + verified.err
