"""The python lane's chunked path (``produce_many``, what a live run hands whole chunks of examples to) gives
exactly what ``produce`` gives call by call: the same outputs, the same failures with the same messages and
details, for functions that return, raise (``SystemExit`` too), return what is not JSON, or overrun their timeout."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.lanes.daemonpool import CallTimedOut, DaemonThreadPool, call_each_in_thread
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneColumn, LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.python_lane import PythonLane
from evalglass.lanes.registry import build_lane

from .conftest import parse_task_spec

#: What one example asks the host function to do.
BEHAVIOURS = ["value", "raise", "exit", "not_json", "none", "slow"]

APP = textwrap.dedent(
    """
    import asyncio, time

    def _answer(example):
        kind = example["kind"]
        if kind == "raise":
            raise ValueError(f"bad {example['n']}")
        if kind == "exit":
            raise SystemExit(3)
        if kind == "not_json":
            return {example["n"]}
        if kind == "none":
            return None
        return {"n": example["n"], "text": f"answer {example['n']}"}

    def sync_answer(example, sample):
        if example["kind"] == "slow":
            time.sleep(0.4)
        return _answer(example)

    async def async_answer(example, sample):
        if example["kind"] == "slow":
            await asyncio.sleep(0.4)
        await asyncio.sleep(0)
        return _answer(example)
    """
)


def _lane(base: Path, function: str, timeout: float | None) -> PythonLane:
    spec = parse_task_spec({"type": "python", "function": f"app.py:{function}", "timeout": timeout, "epochs": 2})
    lane = build_lane(spec, base_dir=base, executor=AsyncioExecutor(8))
    assert isinstance(lane, PythonLane)
    return lane


def _comparable(outcome: LaneOutcome) -> tuple[Any, ...]:
    if isinstance(outcome, LaneOutput):
        return ("output", outcome.value, outcome.sample, outcome.cached, outcome.tries)
    return ("failure", outcome.code, outcome.message, outcome.sample, outcome.detail)


def _both(base: Path, function: str, kinds: list[str], timeout: float | None, warm: bool) -> tuple[list, list]:  # type: ignore[type-arg]
    jobs = [(f"ex{n}", {"n": n, "kind": kind}, sample) for n, kind in enumerate(kinds) for sample in range(2)]

    async def go() -> tuple[list[LaneOutcome], list[LaneOutcome]]:
        one_by_one, chunked = _lane(base, function, timeout), _lane(base, function, timeout)
        try:
            # An async function's calls go in runs too, each awaited in turn on the worker's own loop.
            assert chunked.chunked
            if warm:  # a measured call time: runs of many calls per hand-off, not one
                chunked._per_call = 1e-6
            alone = [await one_by_one.produce(*job) for job in jobs]
            together = await chunked.produce_many(jobs)
        finally:
            await one_by_one.aclose()
            await chunked.aclose()
        return alone, together

    return asyncio.run(go())


kinds_strategy = st.lists(st.sampled_from(BEHAVIOURS[:-1]), max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=kinds_strategy, warm=st.booleans(), function=st.sampled_from(["sync_answer", "async_answer"]))
def test_chunked_outcomes_equal_one_by_one(tmp_path: Path, kinds: list[str], warm: bool, function: str) -> None:
    (tmp_path / "app.py").write_text(APP)
    alone, together = _both(tmp_path, function, kinds, None, warm)
    assert [_comparable(outcome) for outcome in together] == [_comparable(outcome) for outcome in alone]
    assert len(together) == 2 * len(kinds)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.lists(st.sampled_from(BEHAVIOURS[:-1]), max_size=4),
    after=st.lists(st.sampled_from(BEHAVIOURS[:-1]), max_size=4),
    function=st.sampled_from(["sync_answer", "async_answer"]),
)
def test_a_timed_out_call_inside_a_chunk_fails_alone(
    tmp_path: Path, before: list[str], after: list[str], function: str
) -> None:
    """A call that overruns its timeout in the middle of a run of calls on one worker is ``task_timeout`` (the
    worker's watchdog says so and ends the worker); the calls before and after it get their own outcomes, exactly as
    one by one."""
    (tmp_path / "app.py").write_text(APP)
    kinds = [*before, "slow", *after]
    alone, together = _both(tmp_path, function, kinds, 0.15, warm=True)
    assert [_comparable(outcome) for outcome in together] == [_comparable(outcome) for outcome in alone]
    slow = [outcome for outcome in together if isinstance(outcome, LaneFailure) and outcome.code == "task_timeout"]
    assert len(slow) == 2  # both samples of the slow example, nothing else


def test_each_call_gets_its_own_timeout_from_when_it_starts() -> None:
    """Ten calls of 50 ms each on one thread, timeout 0.2 s: the run takes 0.5 s, yet none timed out (the clock is
    per call, not per run)."""
    pool = DaemonThreadPool(1, name="t")

    def nap() -> str:
        threading.Event().wait(0.05)
        return "ok"

    results, elapsed = asyncio.run(call_each_in_thread(pool, [nap] * 10, 0.2))
    assert results == ["ok"] * 10
    assert elapsed >= 0.45


def test_a_hung_call_is_abandoned_and_the_rest_go_on_another_thread() -> None:
    pool = DaemonThreadPool(1, name="t")
    release = threading.Event()
    try:
        calls = [lambda: "a", lambda: release.wait(30) and "late", lambda: "b", lambda: "c"]
        results, _ = asyncio.run(call_each_in_thread(pool, calls, 0.2))
        assert results[0] == "a" and results[2:] == ["b", "c"]
        assert isinstance(results[1], CallTimedOut) and not results[1].queued
        assert pool.abandoned == 1
    finally:
        release.set()
        pool.shutdown(wait=True)


def test_a_run_that_turns_slow_gives_back_the_calls_it_did_not_make() -> None:
    """With a budget, a run stops taking calls once they took longer than planned: the caller gets the rest back
    (and spreads them over more threads) instead of one thread making them all in turn."""
    pool = DaemonThreadPool(1, name="t")

    def nap() -> str:
        threading.Event().wait(0.03)
        return "slow"

    for timeout in (None, 5.0):  # unwatched and watched runs alike
        results, _ = asyncio.run(call_each_in_thread(pool, [lambda: "quick", nap, nap, nap], timeout, budget=0.01))
        assert results == ["quick", "slow"]


def _produced_as_cheap(
    spec: Any, base_dir: Path, jobs: list[tuple[str, dict[str, Any], int]], *, workers: int, chunked: bool = False
) -> list[LaneOutcome]:
    """Every job's outcome from a python lane whose calls are planned as cheap (one long run of calls), closed after."""

    async def go() -> list[LaneOutcome]:
        lane = build_lane(spec, base_dir=base_dir, executor=AsyncioExecutor(workers))
        assert isinstance(lane, PythonLane) and (lane.chunked or not chunked)
        lane._per_call = 1e-6
        try:
            return await lane.produce_many(jobs)
        finally:
            await lane.aclose()

    return asyncio.run(go())


def test_a_lane_whose_function_turns_slow_still_answers_every_call_in_order(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "import time\n\ndef answer(example):\n    if example['n'] >= 5:\n        time.sleep(0.03)\n"
        "    return example['n']\n"
    )
    spec = parse_task_spec({"type": "python", "function": "app.py:answer"})

    # planned as cheap: one run for all twenty
    outcomes = _produced_as_cheap(spec, tmp_path, [(f"ex{n}", {"n": n}, 0) for n in range(20)], workers=8)
    assert [outcome.value for outcome in outcomes if isinstance(outcome, LaneOutput)] == list(range(20))


def test_a_lane_column_keeps_every_outcome_and_refuses_what_it_cannot_hold() -> None:
    failure = LaneFailure("task_raised", "boom", 1, detail="trace")
    outcomes: list[LaneOutcome] = [LaneOutput(float("nan"), 0), failure, LaneOutput({"a": [1]}, 0), LaneOutput(None, 1)]
    column = LaneColumn.of(outcomes)
    assert column.failures == {1: failure} and column.values[1] is None
    again = column.outcomes([0, 1, 0, 1])
    assert again[1] is failure and again[2:] == outcomes[2:]
    assert isinstance(again[0], LaneOutput) and again[0].value != again[0].value  # the same NaN, kept
    carrying = (
        LaneOutput("x", 0, cached=True),
        LaneOutput("x", 0, tries=2),
        LaneOutput("x", 0, call_id="k"),
        LaneOutput("x", 0, truncated="length"),  # a cut-off answer's mark, which scores must carry
    )
    for carries_more in carrying:
        with pytest.raises(ValueError, match="carries more than its value"):
            LaneColumn.of([carries_more])


def test_a_module_lanes_cache_key_holds_its_source_though_this_process_never_imports_it(tmp_path: Path) -> None:
    """The function is imported only in its workers: the file a module reference resolves to comes from there, so
    the call cache's key still changes with the module's bytes (a stale answer is never replayed)."""

    def fingerprint(body: str) -> str:
        (tmp_path / "modlane.py").write_text(f"def answer(example):\n    return {body!r}\n")
        spec = parse_task_spec({"type": "python", "function": "modlane:answer", "cache": True})
        lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(2))
        assert isinstance(lane, PythonLane)
        asyncio.run(lane.aclose())
        return lane.fingerprint

    assert fingerprint("one") != fingerprint("two")
    assert "modlane" not in sys.modules


ENDING = textwrap.dedent(
    """
    import os, pathlib

    def answer(example):
        with pathlib.Path(__file__).with_name("made.txt").open("a") as made:
            made.write(f"{example['n']}\\n")
        if example["n"] == 5:
            os._exit(0)
        return example["n"]
    """
)


def _the_sixth_ends_its_worker(tmp_path: Path, source: str, workers: int) -> list[int]:
    """Forty calls planned as cheap (runs of every call left), the sixth of which ends its worker: it fails alone
    (`task_worker_lost`) and every other call is answered, in order. Which calls were made, in order."""
    (tmp_path / "app.py").write_text(source)
    spec = parse_task_spec({"type": "python", "function": "app.py:answer", "timeout": 30})
    jobs = [(f"ex{n}", {"n": n}, 0) for n in range(40)]

    outcomes = _produced_as_cheap(spec, tmp_path, jobs, workers=workers, chunked=True)
    failed = {n: outcome for n, outcome in enumerate(outcomes) if isinstance(outcome, LaneFailure)}
    assert list(failed) == [5] and failed[5].code == "task_worker_lost", failed
    assert [outcome.value for outcome in outcomes if isinstance(outcome, LaneOutput)] == [*range(5), *range(6, 40)]
    return [int(line) for line in (tmp_path / "made.txt").read_text().split()]


def test_a_call_that_ends_its_worker_mid_run_fails_alone_and_every_call_is_made_once(tmp_path: Path) -> None:
    """The worker logs each answer as its call returns (``hostworker.AnswerLog``): once it has ended, the calls it
    finished are kept, the sixth (the one it was making) fails alone, and the calls after it go to a fresh worker.
    No call is made twice (the five before it were, in the runs that were alone, until this release)."""
    made = _the_sixth_ends_its_worker(tmp_path, ENDING, workers=4)
    assert sorted(made) == list(range(40)), made


def test_a_call_whose_answer_was_sent_before_its_worker_ended_is_never_made_again(tmp_path: Path) -> None:
    """One run of forty calls: the fifth takes 5 ms (longer than ``hostworker.STREAM_S``, so the answers so far go
    back as soon as it returns), the sixth ends the worker. The first five answers are kept and never made again,
    and the sixth is made once: the log says it was the call in flight (it was made twice, in the dead run and
    then alone, until this release)."""
    slow_fifth = '    if example["n"] == 4:\n        import time; time.sleep(0.005)\n    if example["n"] == 5:'
    made = _the_sixth_ends_its_worker(tmp_path, ENDING.replace('    if example["n"] == 5:', slow_fifth), workers=1)
    assert made[:6] == [0, 1, 2, 3, 4, 5] and sorted(made) == list(range(40)), made


def test_a_worker_that_ends_after_a_burst_of_fast_calls_has_every_finished_call_kept(tmp_path: Path) -> None:
    """A run of two hundred fast calls (well inside one ``hostworker.STREAM_S`` group: none of their answers was sent
    over the pipe) whose worker ends at the hundred-and-first: the hundred answers before it come from its log, none
    is made again, and the calls after it are made once on a fresh worker."""
    (tmp_path / "app.py").write_text(ENDING.replace('example["n"] == 5', 'example["n"] == 100'))
    spec = parse_task_spec({"type": "python", "function": "app.py:answer", "timeout": 30})
    jobs = [(f"ex{n}", {"n": n}, 0) for n in range(200)]
    outcomes = _produced_as_cheap(spec, tmp_path, jobs, workers=1, chunked=True)
    failed = [n for n, outcome in enumerate(outcomes) if isinstance(outcome, LaneFailure)]
    assert failed == [100]
    made = [int(line) for line in (tmp_path / "made.txt").read_text().split()]
    assert sorted(made) == list(range(200)), made


def test_columns_in_flight_at_the_start_share_one_timing_call_and_fast_runs_use_a_worker_per_cpu_at_most(
    tmp_path: Path,
) -> None:
    """Eight columns of a fast function handed over at once, before any call was timed: one column times it and
    the others wait for that, and the fast runs go at most one per CPU, so no more workers are started than CPUs
    (each column sending its own lone first call would start a worker for each)."""
    (tmp_path / "app.py").write_text("import os\n\ndef answer(example):\n    return os.getpid()\n")
    spec = parse_task_spec({"type": "python", "function": "app.py:answer"})

    async def go() -> list[list[LaneOutcome]]:
        lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(16))
        assert isinstance(lane, PythonLane) and lane.chunked and lane._per_call is None
        try:
            columns = [[(f"ex{c}-{n}", {"n": n}, 0) for n in range(50)] for c in range(8)]
            return list(await asyncio.gather(*(lane.produce_many(jobs) for jobs in columns)))
        finally:
            await lane.aclose()

    columns = asyncio.run(go())
    pids = {outcome.value for column in columns for outcome in column if isinstance(outcome, LaneOutput)}
    assert sum(map(len, columns)) == 400 and all(isinstance(o, LaneOutput) for c in columns for o in c)
    assert 1 <= len(pids) <= (os.cpu_count() or 1), pids


def test_a_run_with_an_argument_too_deep_to_go_in_a_list_goes_line_by_line_and_is_answered_whole(
    tmp_path: Path,
) -> None:
    """A run's arguments go as one JSON list; one nested so deep that it fits alone but not inside a list makes
    the run go one line per argument, and every call is still answered, in order."""
    from evalglass.lanes.hostworker import run_request

    deep: Any = 0
    for _ in range(253):
        deep = [deep]
    (tmp_path / "app.py").write_text("def answer(example):\n    return example['n']\n")
    spec = parse_task_spec({"type": "python", "function": "app.py:answer"})
    jobs = [(f"ex{n}", {"n": n, "deep": deep if n == 3 else None}, 0) for n in range(10)]
    head = run_request([[dict(fields), {}, 0] for _, fields, _ in jobs], None, None).partition(b"\n")[0]
    assert head.endswith(b",false]")  # the line-by-line form

    outcomes = _produced_as_cheap(spec, tmp_path, jobs, workers=4)  # one run for all ten
    assert [outcome.value for outcome in outcomes if isinstance(outcome, LaneOutput)] == list(range(10)), outcomes


MIXED = textwrap.dedent(
    """
    import os, pathlib

    def answer(example):
        n = example["n"]
        with pathlib.Path(__file__).with_name("made.txt").open("a") as made:
            made.write(f"{n}\\n")
        if n == ENDS:
            os._exit(0)
        if n % 4 == 0:
            return {n}
        if n % 4 == 1:
            return [float("nan"), None, n]
        if n % 4 == 2:
            raise ValueError(f"bad {n}")
        return {"n": n, "none": None}
    """
)


def test_answers_taken_from_a_dead_workers_log_are_what_the_run_would_have_sent(tmp_path: Path) -> None:
    """Before the call that ends its worker, the calls return answers that are not JSON, hold a NaN, raise or hold
    a null: each read back from the dead worker's log is the outcome the same call gives in a run whose worker
    lives (values, failures, messages, details), and each call is made once."""
    spec = parse_task_spec({"type": "python", "function": "app.py:answer", "timeout": 30})
    jobs = [(f"ex{n}", {"n": n}, 0) for n in range(40)]
    (tmp_path / "app.py").write_text(MIXED.replace("ENDS", "-1"))
    lives = _produced_as_cheap(spec, tmp_path, jobs, workers=1, chunked=True)
    (tmp_path / "made.txt").unlink()
    (tmp_path / "app.py").write_text(MIXED.replace("ENDS", "30"))
    dies = _produced_as_cheap(spec, tmp_path, jobs, workers=1, chunked=True)
    assert isinstance(dies[30], LaneFailure) and dies[30].code == "task_worker_lost"
    assert [_comparable(o) for n, o in enumerate(dies) if n != 30] == [
        _comparable(o) for n, o in enumerate(lives) if n != 30
    ]
    made = [int(line) for line in (tmp_path / "made.txt").read_text().split()]
    assert sorted(made) == list(range(40)), made
