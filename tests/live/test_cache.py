"""The call cache: content-addressed, SQLite/WAL, only successes, modes, crash safety, and no secrets in it."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.engine.produce.cache import CacheMode, CallCache, cache_key
from evalglass.engine.produce.cachewriter import LIMIT
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.judge import Judge
from evalglass.lanes.ports import LaneFailure, LaneOutcome, LaneOutput
from evalglass.lanes.registry import build_lane
from evalglass.metrics.base import BuildContext
from evalglass.metrics.llm_judge import LlmJudgeSpec
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, SECRET, fast_retrier, parse_task_spec, run


def test_keys_are_content_addresses() -> None:
    key = cache_key("fp", {"b": 1, "a": [1, 2]}, 0)
    assert key == cache_key("fp", {"a": [1, 2], "b": 1}, 0) and len(key) == 64
    assert key != cache_key("fp", {"a": [1, 2], "b": 1}, 1)
    assert key != cache_key("fp2", {"a": [1, 2], "b": 1}, 0)
    assert key != cache_key("fp", {"a": [2, 1], "b": 1}, 0)


def test_get_put_and_modes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        assert cache.get("k") is None
        assert cache.put("k", {"content": "v1"}, kind="chat", request={"model": "m"})
        assert cache.get("k") == {"content": "v1"} and len(cache) == 1
        assert (cache.hits, cache.misses, cache.writes) == (1, 1, 1)
    with CallCache(path, CacheMode.REFRESH) as cache:
        assert cache.get("k") is None  # reads ignored
        cache.put("k", {"content": "v2"}, kind="chat")
    with CallCache(path) as cache:
        assert cache.get("k") == {"content": "v2"}  # overwritten
    off_path = tmp_path / "never.sqlite"
    with CallCache(off_path, "off") as cache:
        assert cache.get("k") is None and cache.put("k", 1, kind="chat") is False
    assert not off_path.exists()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_replay_is_told_from_a_cached_answer(tmp_path: Path) -> None:
    """What a run put before it was interrupted is a replay for its resumption (once per key); what another run
    put, what this process put, and entries without a run are cached answers."""
    path = tmp_path / "c.sqlite"
    key, other = cache_key("fp", {"q": 1}, 0), cache_key("fp", {"q": 2}, 0)
    with CallCache(path, run="run-a") as first:
        first.put(key, {"content": "v"}, kind="chat")
        hit = first.fetch(key)
        assert hit is not None and not hit.replayed  # a repeat within the attempt that made it
    with CallCache(path) as anonymous:
        anonymous.put(other, {"content": "w"}, kind="chat")
    with CallCache(path, run="run-a") as resumed:
        replays = [resumed.fetch(key), resumed.fetch(key)]
        assert [hit.replayed for hit in replays if hit is not None] == [True, False]
        assert replays[0] is not None and replays[0].value["content"] == "v"
        assert resumed.get(key) == replays[0].value
        unstamped = resumed.fetch(other)
        assert unstamped is not None and not unstamped.replayed
    with CallCache(path, run="run-b") as later:
        hit = later.fetch(key)
        assert hit is not None and not hit.replayed


def test_a_write_that_fails_mid_run_stops_writing_and_is_reported_once(tmp_path: Path) -> None:
    """Another process holds the write lock past the busy timeout: the first group's commit fails (the put itself
    was accepted: commits happen on the writer thread, and no exception reaches the caller), later puts do not wait
    again (False at once), reads still work, and one warning line counts what was not stored."""
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        assert cache.put("kept", {"v": 1}, kind="chat")
    cache = CallCache(path, busy_timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        assert cache.put("a", {"v": 2}, kind="chat") is True
        cache.flush()  # the commit waited out the busy timeout and failed
        assert (cache.writes, cache.unstored) == (0, 1)
        holder.execute("ROLLBACK")  # the lock is gone, but writing stays off for the rest of this run
        assert cache.put("b", {"v": 3}, kind="chat") is False
        assert cache.get("kept") == {"v": 1}
        assert (cache.writes, cache.unstored) == (0, 2)
        (warning,) = cache.problems()
        assert warning.startswith(f"warning: {path}: the call cache could not be written (database is locked)")
        assert "2 result(s) of this run were not stored" in warning
    finally:
        holder.close()
        cache.close()
    with CallCache(path) as cache:
        assert cache.get("a") is None and cache.get("b") is None and len(cache) == 1
        assert cache.problems() == []


def test_a_cache_that_cannot_be_opened_is_one_setup_error(tmp_path: Path) -> None:
    from evalglass.engine.produce.cache import CacheUnavailable

    under_a_file = tmp_path / "file"
    under_a_file.write_text("x")
    for path, words in (
        (under_a_file / "c.sqlite", "is a file, or under one"),
        (tmp_path / "garbage.sqlite", "not an EvalGlass call cache"),
    ):
        if path.parent.is_dir():
            path.write_bytes(b"\x00garbage" * 100)
        try:
            CallCache(path)
        except CacheUnavailable as exc:
            assert words in exc.line() and "--no-cache" in exc.line(), exc.line()
        else:
            raise AssertionError(f"{path} opened")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', '99')")
    try:
        CallCache(other)
    except CacheUnavailable as exc:
        assert "cache schema 99" in exc.line() and "delete it" in exc.line()
    else:
        raise AssertionError("a cache of another schema opened")


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from("abcd"), st.integers(0, 9)),
        st.tuples(st.just("get"), st.sampled_from("abcd"), st.just(0)),
        st.tuples(st.sampled_from(["flush", "pause"]), st.just(""), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_group_commit_reads_like_a_commit_per_put(tmp_path: Path, ops: list[tuple[str, str, int]]) -> None:
    """Puts are committed in groups by a writer thread, yet every read sees the newest put of its key at once, as
    when each put was its own transaction (the pre-group behaviour); a key put again while its first value is being
    committed keeps the newer value; and what is in the file at close is the newest put of each key."""
    path = tmp_path / f"{uuid.uuid4().hex}.sqlite"
    model: dict[str, int] = {}
    with CallCache(path) as cache:
        for op, key, value in ops:
            if op == "put":
                assert cache.put(key, {"v": value}, kind="chat")
                model[key] = value
            elif op == "get":
                assert cache.get(key) == ({"v": model[key]} if key in model else None)
            elif op == "flush":
                cache.flush()
            else:
                time.sleep(0.003)  # the writer's linger runs out: a commit happens between the operations
    assert (cache.writes, cache.unstored) == (sum(op == "put" for op, _, _ in ops), 0)  # close committed them all
    with CallCache(path) as reopened:
        assert {key: reopened.get(key) for key in "abcd"} == {key: {"v": value} for key, value in model.items()} | {
            key: None for key in "abcd" if key not in model
        }
        assert len(reopened) == len(model)


def test_concurrent_writers_in_one_process_tasks_and_threads(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")

    async def writer(i: int) -> None:
        await asyncio.sleep(0)
        cache.put(f"task-{i}", {"i": i}, kind="chat")

    async def go() -> None:
        await asyncio.gather(*(writer(i) for i in range(200)))

    threads = [
        threading.Thread(target=lambda t=t: [cache.put(f"thread-{t}-{i}", i, kind="python") for i in range(100)])
        for t in range(4)
    ]
    for thread in threads:
        thread.start()
    run(go())
    for thread in threads:
        thread.join()
    assert len(cache) == 600 and cache.get("thread-3-99") == 99
    cache.close()


#: Puts ``count`` results and exits without closing the cache: what it was given is committed at exit all the same.
WRITER = textwrap.dedent(
    """
    import sys
    from evalglass.engine.produce.cache import CallCache
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cache = CallCache(path)
    for i in range(count):
        cache.put(f"{name}-{i}", {"i": i, "pad": "x" * 500}, kind="chat", request={"n": i})
    """
)


def test_writers_in_several_processes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{n}", "150"], stderr=subprocess.PIPE)
        for n in range(3)
    ]
    for process in processes:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err.decode()
    with CallCache(path) as cache:
        assert len(cache) == 450 and cache.get("p2-149") == {"i": 149, "pad": "x" * 500}


def test_a_sigkilled_writer_leaves_a_usable_database_and_loses_at_most_the_last_group(tmp_path: Path) -> None:
    """The durability rule (engine/produce/cachewriter.py): a SIGKILL loses no put that a flush returned after, and never
    more than LIMIT of the puts made; the file stays consistent and usable."""
    path = tmp_path / "c.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from evalglass.engine.produce.cache import CallCache
        cache = CallCache(sys.argv[1])
        i = 0
        while True:
            cache.put(f"victim-{i}", {"i": i, "pad": "x" * 500}, kind="chat", request={"n": i})
            i += 1
            if i % 50 == 0:
                cache.flush()
                print(i, "flushed", flush=True)
            else:
                print(i, "put", flush=True)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    flushed = put = 0
    for line in process.stdout:  # bounded: the writer never stops on its own, we stop reading at 1,000 puts
        count, what = line.split()
        put = int(count)
        if what == "flushed":
            flushed = put
        if put >= 1000:
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert process.returncode == -signal.SIGKILL
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    with CallCache(path) as cache:
        stored = len(cache)
        assert stored >= flushed >= 950  # every put a flush returned after is there
        assert stored >= put - LIMIT  # and of the rest, at most the last group is lost
        assert all(cache.get(f"victim-{i}") == {"i": i, "pad": "x" * 500} for i in range(flushed))
        cache.put("after-crash", {"ok": True}, kind="chat")
        assert cache.get("after-crash") == {"ok": True}


# ------------------------------------------------------------------ through the lanes
def _lane_run(
    server: FakeOpenAI, cache: CallCache, texts: list[str], tmp_path: Path, **fields: Any
) -> list[LaneOutcome]:
    spec = parse_task_spec(
        {
            "type": "chat",
            "base_url": server.base_url,
            "model": "m",
            "api_key_env": "EVALGLASS_TEST_KEY",
            "prompt": "{{ q }}",
            **fields,
        }
    )

    async def go() -> list[LaneOutcome]:
        executor = AsyncioExecutor(8)
        lane = build_lane(spec, base_dir=tmp_path, executor=executor, cache=cache, env=KEY_ENV, retrier=fast_retrier(2))
        try:
            jobs = [(f"e{i}", {"q": text}, s) for i, text in enumerate(texts) for s in lane.spec.samples()]
            return await executor.run(jobs, lambda job: lane.produce(*job))
        finally:
            await lane.aclose()

    return run(go())


def test_a_rerun_repeats_no_completed_call(server: FakeOpenAI, tmp_path: Path) -> None:
    path = tmp_path / ".evalglass-cache.sqlite"
    texts = ["alpha", "beta", "gamma"]
    with CallCache(path) as cache:
        first = _lane_run(server, cache, texts, tmp_path, epochs=2)
    assert server.request_count == 6 and not any(o.cached for o in first if isinstance(o, LaneOutput))
    with CallCache(path) as cache:
        second = _lane_run(server, cache, texts, tmp_path, epochs=2)
        assert cache.hits == 6
    assert server.request_count == 6  # nothing was asked again
    assert [o.value for o in second] == [o.value for o in first]
    assert all(isinstance(o, LaneOutput) and o.cached for o in second)
    with CallCache(path) as cache:
        _lane_run(server, cache, texts, tmp_path, epochs=2, temperature=0.5)  # a different request: new calls
    assert server.request_count == 12


def test_no_cache_and_refresh(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    answers = {"q": "old"}
    with FakeOpenAI(reply=lambda body: answers["q"]) as server:
        with CallCache(path) as cache:
            _lane_run(server, cache, ["q"], tmp_path)
        with CallCache(path, CacheMode.OFF) as cache:  # --no-cache: asks again, stores nothing
            answers["q"] = "bypassed"
            (outcome,) = _lane_run(server, cache, ["q"], tmp_path)
            assert isinstance(outcome, LaneOutput) and outcome.value == "bypassed" and not outcome.cached
        assert server.request_count == 2
        with CallCache(path) as cache:
            (outcome,) = _lane_run(server, cache, ["q"], tmp_path)
            assert isinstance(outcome, LaneOutput) and outcome.value == "old" and outcome.cached
        with CallCache(path, CacheMode.REFRESH) as cache:  # --refresh: asks again, overwrites
            answers["q"] = "new"
            (outcome,) = _lane_run(server, cache, ["q"], tmp_path)
            assert isinstance(outcome, LaneOutput) and outcome.value == "new" and not outcome.cached
        assert server.request_count == 3
        with CallCache(path) as cache:
            (outcome,) = _lane_run(server, cache, ["q"], tmp_path)
            assert isinstance(outcome, LaneOutput) and outcome.value == "new" and outcome.cached
        assert server.request_count == 3


def test_failed_calls_are_not_cached(server: FakeOpenAI, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        (outcome,) = _lane_run(server, cache, ["x [[behaviour:500,500,ok]]"], tmp_path)
        assert isinstance(outcome, LaneFailure) and len(cache) == 0
        (outcome,) = _lane_run(server, cache, ["x [[behaviour:500,500,ok]]"], tmp_path)  # third request: ok
        assert isinstance(outcome, LaneOutput) and len(cache) == 1
    assert server.request_count == 3


def test_judge_calls_are_cached_too(server: FakeOpenAI, tmp_path: Path) -> None:
    (tmp_path / "rubric.md").write_text("Be fair.")
    server.reply = lambda body: '{"score": 4, "rationale": "fine"}'
    spec = LlmJudgeSpec.model_validate(
        {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": server.base_url,
            "model": "j",
            "api_key_env": "EVALGLASS_TEST_KEY",
        }
    )

    def judge_once(path: Path) -> list[Any]:
        async def go() -> list[Any]:
            with CallCache(path) as cache:
                judge = Judge(
                    spec.judge_definition(BuildContext(tmp_path)), executor=AsyncioExecutor(4), cache=cache, env=KEY_ENV
                )
                try:
                    return [await judge.judge(Example(f"e{i}", i, {}, f"out {i}", sample=0)) for i in range(3)]
                finally:
                    await judge.aclose()

        return run(go())

    first = judge_once(tmp_path / "c.sqlite")
    second = judge_once(tmp_path / "c.sqlite")
    assert server.request_count == 3
    assert [r.score for r in first] == [r.score for r in second] and all(r.cached for r in second)


def test_the_api_key_never_reaches_the_cache_file_or_attempt_records(server: FakeOpenAI, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        outcomes = _lane_run(
            server, cache, ["hello", "bad key [[behaviour:401]]", "flaky [[behaviour:500,ok]]"], tmp_path
        )
        assert len(cache) == 2
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)  # it was used...
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("c.sqlite"))
    assert b"hello" in stored  # the request bodies are there (readable) ...
    assert SECRET.encode() not in stored  # ... the key is not
    for outcome in outcomes:
        assert SECRET not in repr(outcome)  # attempts, messages, details
    failure = outcomes[1]
    assert isinstance(failure, LaneFailure) and "Incorrect API key provided: <redacted>" in failure.message
