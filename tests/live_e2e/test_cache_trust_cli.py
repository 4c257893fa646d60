"""A call cache committed by a pull request cannot turn a run green (docs/caching.md).

The scenario: an approved gate on an LLM judge that the honest judge fails. A pull request commits
`evals/.evalglass-cache.sqlite` whose entries, keyed exactly as the run will key its calls, answer "5" for every
example (or make the live lane, the system under test, answer what the metric wants). Each forgery a file's
author can make is tried: no MAC, a wrong MAC, a valid MAC under the attacker's own key. Every time the gate's
outcome comes from real calls to the loopback server, and the run says in one line how many entries it did not
trust. An honest cache still answers every call, across runs and `--resume`, and rotating `EVALGLASS_CACHE_KEY`
makes its entries misses.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI
from tests.live.test_cache_trust import forge

from .conftest import LiveProject, calibration_pin, evalglass, kill, questions, start, wait_until

CACHE = ".evalglass-cache.sqlite"
RECORDED = {"type": "recorded", "field": "output"}
#: The honest judge grades 1 and 2: the approved threshold 3.0 is not met.
ROWS = [
    {"id": "a", "question": "q a", "output": "answer a grade=1"},
    {"id": "b", "question": "q b", "output": "answer b grade=2"},
]
#: Human labels the honest judge agrees with (it grades by the `grade=N` marker): its calibration passes.
LABELS = [{"id": f"l{i}", "question": "q", "output": f"answer grade={g}", "label": g} for i, g in enumerate([1, 2] * 6)]


def _gate(out: str, name: str) -> dict[str, Any]:
    card = json.loads(out)
    return next(gate for gate in card["decision"]["gates"] if gate["name"] == name)


def _approve(project: LiveProject, gate: str, threshold: float, judge: str | None = None) -> None:
    """The host's ledger: what `evalglass explain` prints for ``gate`` after a first run (the gate, and the gold it
    needs), with ``threshold``; for a gate on a judge, the judge calibrated first against the honest server, and the
    calibration the ledger requires."""
    assert project.run().code == 0  # informational: nothing is approved yet
    ledger: dict[str, Any] = {}
    if judge is not None:
        (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in LABELS))
        calibrated = evalglass("calibrate", judge, "--labels", "labels.jsonl", cwd=project.root)
        assert calibrated.code == 0, calibrated.err
        ledger["judges"] = {judge: {"min_agreement": 0.5, "calibration": calibration_pin(calibrated.out)}}
    explained = evalglass("explain", gate, "--format", "json", cwd=project.root)
    assert explained.code == 0, explained.err
    ledger.update(yaml.safe_load(json.loads(explained.out)[0]["ledger_entry"]))
    ledger["gates"][gate]["threshold"] = threshold
    (project.root / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))


def _judged_project(project: LiveProject) -> None:
    project.write(ROWS, task=RECORDED, metrics={"quality": project.judge()}, gates={"judged": {"metric": "quality"}})
    _approve(project, "judged", 3.0, judge="quality")


@pytest.mark.parametrize("how", ["none", "wrong", "another key"])
def test_a_forged_judge_cache_never_turns_the_gate_green(project: LiveProject, server: FakeOpenAI, how: str) -> None:
    _judged_project(project)
    honest = project.run()
    assert honest.code == 1 and _gate(honest.out, "judged")["outcome"] == "fail"
    asked = server.request_count
    # The pull request: every judge answer in the committed cache says 5 (the run's two, the calibration's too).
    forged_entries = forge(project.root / CACHE, how, json.dumps({"score": 5, "rationale": "perfect"}))
    assert forged_entries >= 2
    forged = project.run()
    assert forged.code == 1, forged.err  # still red: the answers are the judge's, asked again
    gate = _gate(forged.out, "judged")
    assert gate["outcome"] == "fail" and gate["value"] == pytest.approx(1.5), gate
    assert server.request_count == asked + 2
    (warning,) = [line for line in forged.err.splitlines() if "not vouched for" in line]
    assert warning.startswith("warning: ") and "2 cached answer(s)" in warning and "EVALGLASS_CACHE_KEY" in warning
    assert "Traceback" not in forged.err
    # The real answers replaced the forged ones: the next run asks nothing and warns of nothing.
    again = project.run()
    assert again.code == 1 and server.request_count == asked + 2 and "not vouched for" not in again.err


def test_a_forged_lane_cache_does_not_stand_in_for_the_system_under_test(
    project: LiveProject, server: FakeOpenAI
) -> None:
    """The live lane's cached outputs are the system under test: a committed cache that makes every output
    contain the expected answer is not what the run measures."""
    rows = [{"id": f"q{i}", "question": f"question {i}", "expected": "the secret answer"} for i in range(3)]
    project.write(
        rows, metrics={"right": {"type": "contains", "reference": "expected"}}, gates={"answered": {"metric": "right"}}
    )
    _approve(project, "answered", 0.9)
    honest = project.run()
    assert honest.code == 1 and _gate(honest.out, "answered")["outcome"] == "fail"  # the lane echoes the question
    assert server.request_count == 3
    assert forge(project.root / CACHE, "another key", "the secret answer") == 3
    forged = project.run()
    assert forged.code == 1 and _gate(forged.out, "answered")["outcome"] == "fail", forged.out
    assert server.request_count == 6 and "3 cached answer(s)" in forged.err
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert record["untrusted_cache_entries"] == 3
    assert record["usage"][0]["calls"] == 3 and record["usage"][0]["cached_calls"] == 0  # all made now
    again = project.run()
    assert again.code == 1 and server.request_count == 6
    assert "untrusted_cache_entries" not in json.loads((project.last_run() / "runrecord.json").read_text())


def test_rotating_the_cache_key_makes_its_entries_misses(project: LiveProject, server: FakeOpenAI) -> None:
    project.write(questions(3))
    first = project.run(env={"EVALGLASS_CACHE_KEY": "ci secret, first"})
    assert first.code == 0 and server.request_count == 3
    same = project.run(env={"EVALGLASS_CACHE_KEY": "ci secret, first"})
    assert same.code == 0 and server.request_count == 3 and "not vouched for" not in same.err
    rotated = project.run(env={"EVALGLASS_CACHE_KEY": "ci secret, second"})
    assert rotated.code == 0 and server.request_count == 6 and "3 cached answer(s)" in rotated.err
    assert "(EVALGLASS_CACHE_KEY)" in rotated.err
    after = project.run(env={"EVALGLASS_CACHE_KEY": "ci secret, second"})
    assert after.code == 0 and server.request_count == 6 and "not vouched for" not in after.err


def test_the_key_file_is_private_and_outside_the_project(
    project: LiveProject, server: FakeOpenAI, tmp_path: Path
) -> None:
    home = tmp_path / "home-cache"
    project.write(questions(2))
    assert project.run(env={"XDG_CACHE_HOME": str(home)}).code == 0
    key_file = home / "evalglass" / "cache-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert not [path for path in project.root.rglob("*") if "key" in path.name]
    assert key_file.read_text().strip().encode() not in (project.root / CACHE).read_bytes()
    assert project.run(env={"XDG_CACHE_HOME": str(home)}).code == 0 and server.request_count == 2

    # A key file the project would hold (XDG_CACHE_HOME inside the checkout) is refused before any call.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    inside = project.run(env={"XDG_CACHE_HOME": str(project.root / ".cache")})
    assert inside.code == 2 and server.request_count == 2
    assert inside.err.count("\n") == 1 and "inside the project" in inside.err and "Traceback" not in inside.err
    assert not (project.root / ".cache").exists()


def test_an_honest_cache_answers_a_resumed_run_with_no_call_twice(project: LiveProject, server: FakeOpenAI) -> None:
    """Killed mid-way and resumed: the calls the first attempt completed come from the cache (their MACs verify),
    so the resumed run asks only the rest (and at most the answers a SIGKILL lost, never more than it had)."""
    total = 30
    server.latency = 0.03
    project.write(questions(total), concurrency={"max_in_flight": 4})
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= 12, what="12 requests")
    code, _, _ = kill(proc, signal.SIGKILL)
    assert code == -signal.SIGKILL
    asked_before = server.request_count
    with sqlite3.connect(project.root / CACHE) as db:
        stored = db.execute("SELECT count(*) FROM calls WHERE mac IS NOT NULL").fetchone()[0]
    assert stored >= 1
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    assert "not vouched for" not in resumed.err
    assert server.request_count - asked_before == total - stored  # every stored answer was served
    rerun = project.run()
    assert rerun.code == 0 and server.request_count - asked_before == total - stored  # and a new run asks none


def test_a_resumed_run_records_every_entry_it_did_not_trust(project: LiveProject, server: FakeOpenAI) -> None:
    """A forged cache, a run killed mid-way, then resumed: its record counts every forged entry once, as an
    uninterrupted run's does, though the first attempt already replaced some of them (their replays say so)."""
    total = 30
    code, _ = _forged_then_stopped(project, server, total, signal.SIGKILL, after=12)
    assert code == -signal.SIGKILL
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    assert f"{total} cached answer(s)" in resumed.err
    record = json.loads((project.last_run() / "runrecord.json").read_text())
    assert record["untrusted_cache_entries"] == total
    assert "forged" not in (project.last_run() / "outputs.jsonl").read_text()


def test_resume_takes_no_run_folder_on_its_word(project: LiveProject, server: FakeOpenAI, tmp_path: Path) -> None:
    """A run folder a pull request commits (with `.evalglass/last-started` naming it) would hand `--resume` a run id
    and a creation time, the day approvals' expiry is judged by. Only a manifest sealed with this machine's cache
    key is resumed: one from another key, or edited, is refused in one line before any call."""
    project.write(questions(2))
    assert project.run().code == 0 and server.request_count == 2
    folder = project.last_run()
    manifest_file = folder / "run.json"
    honest = manifest_file.read_text()

    elsewhere = project.run("--resume", env={"XDG_CACHE_HOME": str(tmp_path / "another-machine")})
    assert elsewhere.code == 2 and "was not sealed with this machine's cache key" in elsewhere.err
    assert elsewhere.err.count("\n") == 1 and "Traceback" not in elsewhere.err

    manifest = json.loads(honest)
    for forged in ({**manifest, "created_at": "2020-01-01T00:00:00Z"}, {**manifest, "seal": None}):
        manifest_file.write_text(json.dumps(forged))
        refused = project.run("--resume", str(folder))
        assert refused.code == 2 and "was not sealed" in refused.err, refused.err
    assert server.request_count == 2

    manifest_file.write_text(honest)
    resumed = project.run("--resume")
    assert resumed.code == 0, resumed.err
    assert server.request_count == 2 and json.loads(manifest_file.read_text())["created_at"] == manifest["created_at"]


def test_a_forged_cache_answers_for_no_jury_member(tmp_path: Path) -> None:
    """Every judge of a jury (and the lane before it) goes through the one cache read: forged answers of all three
    members are asked again, and the jury's verdicts are the real members' (the same as before the forgery)."""
    from .test_jury_cli import _jury, jury_reply

    with FakeOpenAI(reply=jury_reply) as jury_server:
        project = LiveProject(tmp_path / "jury", jury_server.base_url)
        rows = [{"id": "agree", "question": "a=2 b=2 c=2"}, {"id": "split", "question": "a=1 b=2 c=1"}]
        project.write(rows, metrics={"helpful": _jury(project)})
        assert project.run().code == 0
        honest = {row["id"]: row["scores"]["helpful"] for row in project.scores()}
        asked = jury_server.request_count
        assert asked == 2 + 2 * 3  # the lane's calls and each member's
        assert forge(project.root / CACHE, "another key", json.dumps({"score": 5, "rationale": "perfect"})) == asked
        forged = project.run()
        assert forged.code == 0 and f"{asked} cached answer(s)" in forged.err
        assert jury_server.request_count == 2 * asked
        assert {row["id"]: row["scores"]["helpful"] for row in project.scores()} == honest


def test_a_forged_cache_answers_for_no_variant_and_not_for_the_judge_of_variants(tmp_path: Path) -> None:
    """A run with variants and a pairwise judge of them (`compared/`): forged answers of both variants' lanes and
    of the judge's passes in both orders are asked again; the win rate is the real judge's, and the run record
    counts every forged entry once across the variants and the judge pass."""
    from .test_pairwise_variants_live_cli import judged, metric, reply

    with FakeOpenAI(reply=reply) as pairwise_server:
        project = LiveProject(tmp_path / "pairwise", pairwise_server.base_url)
        judged(project)
        first = project.run()
        assert first.code == 0, first.err
        honest = metric(json.loads(first.out), "preferred")["estimate"]["point"]
        asked = pairwise_server.request_count
        assert forge(project.root / CACHE, "another key", json.dumps({"winner": "B", "rationale": "forged"})) == asked
        forged = project.run()
        (line,) = [line for line in forged.err.splitlines() if "not vouched for" in line]  # one, for every cache
        assert forged.code == 0 and f"{asked} cached answer(s)" in line
        assert pairwise_server.request_count == 2 * asked
        assert metric(json.loads(forged.out), "preferred")["estimate"]["point"] == pytest.approx(honest)
        record = json.loads((project.last_run() / "runrecord.json").read_text())
        assert record["untrusted_cache_entries"] == asked


def test_a_run_stopped_early_says_which_entries_it_did_not_trust(project: LiveProject, server: FakeOpenAI) -> None:
    """Ctrl-C after some forged entries were met: the interrupted run says how many it did not trust (their calls
    made again), before the line that says how to resume."""
    total = 30
    code, err = _forged_then_stopped(project, server, total, signal.SIGINT, after=6)
    assert code == 130, err
    lines = err.splitlines()
    (warning,) = [line for line in lines if "not vouched for" in line]
    met = int(warning.split(": ")[2].split(" cached answer(s)")[0])
    assert 6 <= met <= total and warning.startswith("warning: ") and "EVALGLASS_CACHE_KEY" in warning
    assert lines.index(warning) < next(i for i, line in enumerate(lines) if line.startswith("interrupted"))
    assert "Traceback" not in err


@pytest.mark.parametrize("through", ["cli", "api"])
def test_a_run_that_fails_part_way_says_which_entries_it_did_not_trust(project: LiveProject, through: str) -> None:
    """A run that cannot complete (exit 2) after it met forged entries still says so, before its error: variant a's
    cached answers are forged, variant b's module no longer imports, so the run stops after scoring a. Through the
    API the run is in a supervised child: the error it reports back carries the warning."""
    rows = questions(3)
    (project.root).mkdir(parents=True)
    (project.root / "first.py").write_text("def answer(example):\n    return example['question']\n")
    # b breaks when a file outside the project appears: a change inside it would key a's answers anew (the project's
    # state is in a cached program answer's key: lanes/projectstate.py), and the forged entries would not be met.
    flag = project.root.parent / "broken"
    (project.root / "second.py").write_text(
        f"import pathlib\nif pathlib.Path({str(flag)!r}).exists():\n    raise RuntimeError('broken on purpose')\n"
        "def answer(example):\n    return example['question'] + '!'\n"
    )
    variants = {"a": {"function": "first.py:answer"}, "b": {"function": "second.py:answer"}}
    project.write(rows, task={"type": "python", "function": "first.py:answer", "cache": True}, variants=variants)
    assert project.run().code == 0
    assert forge(project.root / CACHE, "another key", "forged") == 6
    flag.write_text("")
    if through == "api":
        from evalglass import api
        from evalglass.errors import SetupError

        with pytest.raises(SetupError) as raised:
            api.run(project.root / "evalglass.yaml")
        (warning,) = raised.value.warnings
        assert "3 cached answer(s)" in warning and "second.py raised RuntimeError" in raised.value.what
        assert raised.value.stderr_lines()[0] == warning
        return
    failed = project.run()
    assert failed.code == 2, failed.out + failed.err
    lines = failed.err.splitlines()
    (warning,) = [line for line in lines if "not vouched for" in line]
    assert "3 cached answer(s)" in warning  # variant a's three, met before b stopped the run
    (error,) = [line for line in lines if line.startswith("error: ")]
    assert lines.index(warning) < lines.index(error) and "second.py raised RuntimeError" in error, failed.err
    assert "Traceback" not in failed.err


def _forged_then_stopped(
    project: LiveProject, server: FakeOpenAI, total: int, sig: int, *, after: int
) -> tuple[int, str]:
    """``total`` questions answered once, every cached answer then forged, and a new run stopped by ``sig`` once
    ``after`` of its calls reached the server: its exit code and stderr."""
    server.latency = 0.03
    project.write(questions(total), concurrency={"max_in_flight": 4})
    assert project.run().code == 0 and server.request_count == total
    assert forge(project.root / CACHE, "another key", "forged") == total
    proc = start("run", "--no-progress", "--format", "json", cwd=project.root)
    wait_until(lambda: server.request_count >= total + after, what=f"{after} requests")
    code, _, err = kill(proc, sig)
    return code, err
