"""What a dead python-lane worker's answer log holds is written by a process running code under test: the deciding
process reads it (``hostworker.decode_logged``) without ever raising, and keeps only answers in order."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalglass.lanes.hostworker import NOT_JSON_ANSWER, decode_logged
from evalglass.lanes.ports import LaneFailure, LaneOutput

lines = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from([b"1", b'"a"', b"null", b"![2]", b"![1]", b'![1, "c", "m", null]', b"!{}", b"[0, 1]"]),
    ),
    max_size=12,
)


@given(logged=lines, start=st.integers(0, 5), count=st.integers(0, 12))
def test_any_log_is_read_without_raising_and_never_past_the_run(logged: list[bytes], start: int, count: int) -> None:
    samples = list(range(count))
    values, failed, unkept = decode_logged(logged, start, samples)
    assert start + len(values) <= max(count, start)
    assert all(start <= index < start + len(values) for index in failed)
    assert isinstance(unkept, bool)


def test_a_log_gives_back_values_failures_and_answers_that_are_not_json_in_order() -> None:
    logged = [
        orjson.dumps({"a": [1, None]}),
        b"!" + orjson.dumps([1, "task_raised", "boom", "trace"]),
        b"!" + orjson.dumps([1, NOT_JSON_ANSWER, "a set", "{1}"]),
        b"7",
        b"![2]",
        b"8",
    ]
    values, failed, unkept = decode_logged(logged, 0, [0, 0, 1, 0, 0, 0])
    assert values == [{"a": [1, None]}, None, None, 7] and unkept
    assert failed[1] == LaneFailure("task_raised", "boom", 0, detail="trace")
    assert isinstance(failed[2], LaneOutput) and failed[2].value.text == "{1}" and failed[2].sample == 1
    # From the calls the worker had already sent on: the first lines are skipped.
    assert decode_logged(logged, 3, [0] * 6)[0] == [7]


_REOPEN = """
import mmap, os, sys
from evalglass.lanes.hostworker import AnswerLog, LogWriter
if os.geteuid() == 0:  # root opens any file whatever its mode: the rule is checked as a user, as CI runs it
    os.setgid(65534)
    os.setuid(65534)
log = AnswerLog()
fd = log.given().fd
writer = LogWriter(os.dup(fd))  # the worker's side still sizes, maps and writes it
writer.begin()
writer.add(b"1\\n")
try:
    os.close(os.open(f"/proc/self/fd/{fd}", os.O_RDWR))
except PermissionError:
    print("refused", log.read())
else:
    print("opened", log.read())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="memfd and /proc/PID/fd are Linux's")
def test_no_other_process_of_the_user_can_open_a_log_again_to_forge_answers() -> None:
    """Any process of the same user may open ``/proc/PID/fd/N`` of the deciding process (no ptrace needed, Yama or
    not): an ungated metric's module or a lane could write a gated metric's log, then kill its worker, and the
    deciding process would read the forged lines as the gated function's answers. The log is mode 0: the worker
    and the deciding process keep their open descriptors and maps, no one opens it again."""
    done = subprocess.run([sys.executable, "-c", _REOPEN], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["refused", "[1]"]
