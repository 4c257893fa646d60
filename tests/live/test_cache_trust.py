"""What the call cache trusts: only entries whose MAC verifies under this machine's cache key (docs/caching.md).

A pull request can commit a cache file; these tests forge its entries every way a file's author can (the right key
with a wrong MAC, no MAC, a MAC made under another key, an older EvalGlass's file without the column) and check that
none is ever served, that the call is made and its real answer replaces the entry, and that an honest cache still
hits. Real SQLite files and a real loopback server.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalglass.engine.produce.cache import CallCache, cache_key, entry_mac
from evalglass.engine.produce.cachekey import KEY_ENV, CacheSecret, cache_secret, key_file_path
from evalglass.errors import SetupError
from evalglass.lanes.ports import LaneOutput
from evalglass.testing.fake_openai import FakeOpenAI

from .test_cache import _lane_run

ATTACKER = CacheSecret(b"\x07" * 32, "attacker")


def forge(path: Path, how: str, content: str = "FORGED") -> int:
    """What a pull request can commit: every entry's answer rewritten to ``content``, its MAC as ``how`` says (none,
    random bytes, a valid MAC under the attacker's own key, a cut one); returns how many entries."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        rows = db.execute("SELECT key, value FROM calls").fetchall()
        for key, value in rows:
            forged = orjson.loads(value)
            forged["content"] = content
            payload = orjson.dumps(forged)
            mac = {
                "none": None,
                "wrong": os.urandom(32),
                "another key": entry_mac(ATTACKER.key, key, payload),
                "truncated": entry_mac(ATTACKER.key, key, payload)[:16],
            }[how]
            db.execute("UPDATE calls SET value = ?, mac = ? WHERE key = ?", (payload, mac, key))
    finally:
        db.close()
    return len(rows)


@pytest.mark.parametrize("how", ["none", "wrong", "another key", "truncated"])
def test_a_forged_entry_is_never_served_and_its_call_is_made(tmp_path: Path, how: str) -> None:
    path = tmp_path / ".evalglass-cache.sqlite"
    with FakeOpenAI(reply=lambda body: "REAL") as server:
        with CallCache(path) as cache:
            _lane_run(server, cache, ["a", "b", "c"], tmp_path)
        assert forge(path, how) == 3
        with CallCache(path) as cache:
            outcomes = _lane_run(server, cache, ["a", "b", "c"], tmp_path)
            assert cache.unvouched == 3 and cache.hits == 0
            (warning,) = cache.problems()
        assert server.request_count == 6  # every forged entry was asked again
        assert all(isinstance(o, LaneOutput) and o.value == "REAL" and not o.cached for o in outcomes)
        assert "3 cached answer(s) were not vouched for" in warning and str(path) in warning
        with CallCache(path) as cache:  # the real answers replaced the forged entries: the next run hits
            again = _lane_run(server, cache, ["a", "b", "c"], tmp_path)
            assert (cache.unvouched, cache.hits, cache.problems()) == (0, 3, [])
        assert server.request_count == 6 and all(isinstance(o, LaneOutput) and o.cached for o in again)


def test_an_honest_cache_hits_with_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with CallCache(path) as cache:
        cache.put("k", {"content": "v"}, kind="chat")
    with CallCache(path) as cache:
        assert cache.get("k") == {"content": "v"} and cache.unvouched == 0 and cache.problems() == []


def test_rotating_the_environment_key_makes_every_entry_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.sqlite"
    monkeypatch.setenv(KEY_ENV, "first secret")
    with CallCache(path) as cache:
        assert cache.secret is not None and cache.secret.source == KEY_ENV
        cache.put("k", {"content": "v"}, kind="chat")
    with CallCache(path) as cache:
        assert cache.get("k") == {"content": "v"}
    monkeypatch.setenv(KEY_ENV, "second secret")
    with CallCache(path) as cache:
        assert cache.get("k") is None and cache.unvouched == 1
        assert f"cache key ({KEY_ENV})" in cache.problems()[0]
    monkeypatch.delenv(KEY_ENV)  # the key file's key is another key again
    with CallCache(path) as cache:
        assert cache.get("k") is None and cache.unvouched == 1


def test_the_key_file_is_made_once_0600_in_a_0700_folder_outside_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    previous = os.umask(0o000)  # the most permissive umask must still give 0600 / 0700
    try:
        project = tmp_path / "project"
        project.mkdir()
        with CallCache(project / ".evalglass-cache.sqlite") as cache:
            cache.put("k", {"content": "v"}, kind="chat")
    finally:
        os.umask(previous)
    key_file = home / "evalglass" / "cache-key"
    assert cache.secret is not None and cache.secret.source == str(key_file)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert len(bytes.fromhex(key_file.read_text().strip())) == 32
    assert not [p for p in project.rglob("*") if "key" in p.name]  # nothing key-like in the project
    assert cache.secret.key.hex() not in repr(cache.secret)
    first = key_file.read_bytes()
    with CallCache(project / ".evalglass-cache.sqlite") as cache:
        assert cache.get("k") == {"content": "v"}  # the same key next time
    assert key_file.read_bytes() == first and not list(key_file.parent.glob(".*partial"))


def test_a_key_file_inside_the_project_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG_CACHE_HOME pointing into the checkout (a git work tree) would let a pull request commit the key."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "evals").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(repo / ".cache"))
    with pytest.raises(SetupError) as refused:
        CallCache(repo / "evals" / ".evalglass-cache.sqlite")
    line = refused.value.line()
    assert "inside the project" in line and str(repo) in line and "XDG_CACHE_HOME" in line and KEY_ENV in line
    assert not (repo / ".cache").exists() and not (repo / "evals" / ".evalglass-cache.sqlite").exists()
    monkeypatch.setenv(KEY_ENV, "ci secret")  # the fix the line names
    with CallCache(repo / "evals" / ".evalglass-cache.sqlite") as cache:
        assert cache.secret is not None and cache.secret.source == KEY_ENV
    CallCache(repo / "evals" / "never.sqlite", "off").close()  # --no-cache needs no key at all


def test_a_key_file_that_is_not_a_key_is_one_setup_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    key_file = key_file_path(os.environ)
    key_file.parent.mkdir(parents=True)
    key_file.write_text("not hex\n")
    with pytest.raises(SetupError) as refused:
        cache_secret(tmp_path / "project" / "c.sqlite")
    assert "is not an EvalGlass cache key" in refused.value.line() and "delete it" in refused.value.line()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the XDG rule says: ~/.cache then
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert key_file_path(os.environ) == tmp_path / "home" / ".cache" / "evalglass" / "cache-key"


def test_processes_making_the_key_at_once_agree_on_one(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from evalglass.engine.produce.cachekey import cache_secret
        print(cache_secret(Path(sys.argv[1])).key.hex())
        """
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / "project" / "c.sqlite")], stdout=subprocess.PIPE, env=env
        )
        for _ in range(4)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    assert keys == {(tmp_path / "xdg" / "evalglass" / "cache-key").read_text().strip().encode()}


def test_a_cache_from_before_macs_is_migrated_and_its_entries_are_misses(tmp_path: Path) -> None:
    """The schema an older EvalGlass wrote (no mac column): opened, the column added, every entry asked again once."""
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE calls (key TEXT PRIMARY KEY, kind TEXT NOT NULL, value BLOB NOT NULL, request BLOB,"
            " created REAL NOT NULL) WITHOUT ROWID"
        )
        db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', '1')")
        db.execute("INSERT INTO calls VALUES ('k', 'chat', ?, NULL, 0)", (b'{"content":"old"}',))
    with CallCache(path) as cache:
        assert cache.get("k") is None and cache.unvouched == 1
        cache.put("k", {"content": "new"}, kind="chat")
    with CallCache(path) as cache:
        assert cache.get("k") == {"content": "new"} and cache.unvouched == 0
    columns = [row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(calls)")]
    assert columns == ["key", "kind", "value", "request", "created", "mac"]


def test_a_resumed_run_counts_the_entries_its_interrupted_attempt_did_not_trust(tmp_path: Path) -> None:
    """Found unvouched, asked again and stored by the first attempt; read back by the resumed one as its own
    replay: counted once, as an uninterrupted run counts it. Another run reading it counts nothing."""
    path = tmp_path / "c.sqlite"
    key = cache_key("fp", {"q": 1}, 0)
    with CallCache(path, secret=ATTACKER) as forger:
        forger.put(key, {"content": "forged"}, kind="chat")
    with CallCache(path, run="run-a") as first:
        assert first.fetch(key) is None and first.unvouched == 1
        first.put(key, {"content": "real"}, kind="chat")
    with CallCache(path, run="run-a") as resumed:
        hit = resumed.fetch(key)
        assert hit is not None and hit.replayed and hit.value["content"] == "real"
        assert resumed.unvouched == 1 and "1 cached answer(s)" in resumed.problems()[0]
    with CallCache(path, run="run-b") as later:
        hit = later.fetch(key)
        assert hit is not None and not hit.replayed and later.unvouched == 0 and later.problems() == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.dictionaries(st.text(max_size=6), _JSON, min_size=1, max_size=4), flip=st.integers(0, 10_000))
@example(value={"content": "v"}, flip=0)
def test_any_change_to_a_stored_value_is_a_miss(tmp_path: Path, value: dict[str, Any], flip: int) -> None:
    """Flip one bit anywhere in a stored value (its MAC kept): never served, whatever the value."""
    path = tmp_path / f"{uuid.uuid4().hex}.sqlite"
    with CallCache(path) as cache:
        cache.put("k", value, kind="chat")
    with sqlite3.connect(path) as db:
        stored = bytearray(db.execute("SELECT value FROM calls").fetchone()[0])
        stored[flip % len(stored)] ^= 1 << (flip % 8)
        db.execute("UPDATE calls SET value = ?", (bytes(stored),))
    with CallCache(path) as cache:
        assert cache.get("k") is None and cache.unvouched == 1


def test_an_agent_s_forged_model_steps_are_asked_again(tmp_path: Path) -> None:
    """Every model step of an agent goes through the one cache read: steps whose entries do not verify are asked
    again, and the trajectory is the model's."""
    from .test_agent_lane import TOOLS, agent, call, produce

    (tmp_path / "tools.py").write_text(textwrap.dedent(TOOLS))
    turns = {"Plan": [{"tool_calls": [call("add_to_cart", {"item": "tea"})]}, "Done."]}
    path = tmp_path / "cache.sqlite"
    with FakeOpenAI(turns=turns) as server:
        with CallCache(path, run="one") as cache:
            (first,) = produce(agent(server), tmp_path, {"q": "Plan"}, cache=cache)
        assert server.request_count == 2
        assert forge(path, "another key") == 2
        with CallCache(path, run="two") as cache:
            (second,) = produce(agent(server), tmp_path, {"q": "Plan"}, cache=cache)
            assert cache.unvouched == 2
        assert server.request_count == 4
    assert isinstance(first, LaneOutput) and isinstance(second, LaneOutput)
    assert second.value == first.value and not second.cached
