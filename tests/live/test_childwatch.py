"""The command lane's child watcher (lanes/childwatch.py): pidfds on Python 3.11 while a lane is open, the
process's own watcher back after, and subprocesses on other loops unaffected."""

from __future__ import annotations

import asyncio
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalglass.lanes.childwatch import pidfd_usable, pidfd_watcher
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.ports import LaneFailure, LaneOutput
from evalglass.lanes.registry import build_lane

from .conftest import parse_task_spec, run

needs_311_pidfd = pytest.mark.skipif(
    sys.version_info >= (3, 12) or not pidfd_usable(), reason="only Python 3.11 with pidfds swaps the watcher"
)


def _watcher() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return asyncio.get_event_loop_policy().get_child_watcher()


@pytest.fixture(autouse=True)
def _default_watcher() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        policy = asyncio.get_event_loop_policy()
        before = policy.get_child_watcher()
        yield
        policy.set_child_watcher(before)


async def _exit_code(code: int) -> int:
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", f"raise SystemExit({code})")
    return await process.wait()


@needs_311_pidfd
def test_while_a_command_lane_is_open_exits_come_through_pidfds_and_the_old_watcher_comes_back(
    tmp_path: Path,
) -> None:
    before = _watcher()
    spec = parse_task_spec({"type": "command", "argv": [sys.executable, "-c", "import sys; sys.exit(3)"]})

    async def go() -> None:
        lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(4), cache=None)
        assert type(_watcher()).__name__ == "_PidfdWatcher"
        outcomes = await asyncio.gather(*(lane.produce(f"e{i}", {"i": i}, 0) for i in range(6)))
        assert all(isinstance(o, LaneFailure) and o.message.endswith("exited with code 3") for o in outcomes)
        # another loop in another thread starts its own subprocess meanwhile: served by the same watcher
        codes: list[int] = []
        thread = threading.Thread(target=lambda: codes.append(asyncio.run(_exit_code(5))))
        thread.start()
        await asyncio.to_thread(thread.join, 60)
        assert codes == [5]
        await lane.aclose()
        await lane.aclose()  # idempotent

    run(go())
    assert _watcher() is before
    assert run(_exit_code(7)) == 7  # the old watcher works as before


@needs_311_pidfd
def test_nested_uses_restore_once_and_a_chosen_watcher_is_kept() -> None:
    before = _watcher()
    first, second = pidfd_watcher(), pidfd_watcher()
    first()
    assert type(_watcher()).__name__ == "_PidfdWatcher"  # still one user
    second()
    assert _watcher() is before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        chosen = asyncio.PidfdChildWatcher()
        asyncio.get_event_loop_policy().set_child_watcher(chosen)
    release = pidfd_watcher()
    assert _watcher() is chosen
    release()
    assert _watcher() is chosen


def test_a_command_lane_answers_the_same_with_or_without_the_swap(tmp_path: Path) -> None:
    """Output, exit codes and the timeout kill: what the existing lane tests pin, through whichever watcher."""
    spec = parse_task_spec({"type": "command", "argv": ["cat"], "output": "json"})
    slow = parse_task_spec({"type": "command", "argv": ["sleep", "5"], "timeout": 0.3})

    async def go() -> tuple[Any, Any]:
        lane = build_lane(spec, base_dir=tmp_path, executor=AsyncioExecutor(4), cache=None)
        waits = build_lane(slow, base_dir=tmp_path, executor=AsyncioExecutor(4), cache=None)
        try:
            return await lane.produce("a", {"n": 1}, 0), await waits.produce("b", {}, 0)
        finally:
            await lane.aclose()
            await waits.aclose()

    answered, timed_out = run(go())
    assert isinstance(answered, LaneOutput) and answered.value == {"n": 1}
    assert isinstance(timed_out, LaneFailure) and timed_out.code == "task_timeout"
