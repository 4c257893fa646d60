"""engine/background.py: a value computed in a forked child, or here when the child cannot give it.

Each case runs in a fresh interpreter (a real subprocess): a pytest-xdist worker has threads of its own, so in this
process ``computed_aside`` never forks, by design. The script prints what it saw as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

PRELUDE = """\
import json, os, sys, threading, time
from evalglass.engine.background import computed_aside
parent = os.getpid()
out = {}
"""


def run_script(body: str) -> dict[str, Any]:
    script = PRELUDE + textwrap.dedent(body) + "print(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_value_is_computed_in_a_child_while_the_caller_goes_on():
    out = run_script(
        """
        with computed_aside(lambda: f"{os.getpid()}:{os.getppid()}") as value:
            out["meanwhile"] = os.getpid()
            out["value"] = value()
            out["again"] = value()
        """
    )
    child, its_parent = (int(part) for part in out["value"].split(":"))
    assert child != out["meanwhile"] and its_parent == out["meanwhile"]
    assert out["again"] == out["value"]  # collected once


def test_a_failing_child_leaves_the_value_to_the_caller_and_its_error_to_the_caller_too():
    out = run_script(
        """
        calls = []
        def compute():
            calls.append(os.getpid())
            if os.getpid() != parent:
                raise RuntimeError("only in the child")
            return "computed here"
        with computed_aside(compute) as value:
            out["value"] = value()
        out["calls_here"] = len(calls)

        def broken():
            raise ValueError("the same error, raised here")
        try:
            with computed_aside(broken) as value:
                value()
        except ValueError as exc:
            out["error"] = str(exc)
        """
    )
    assert out == {"value": "computed here", "calls_here": 1, "error": "the same error, raised here"}


def test_a_caller_that_stops_early_kills_the_child(tmp_path):
    out = run_script(
        """
        def slow():
            with open(os.environ["PIDFILE"], "w") as handle:
                handle.write(str(os.getpid()))
            time.sleep(60)
            return "never"
        try:
            with computed_aside(slow) as value:
                deadline = time.monotonic() + 30
                while not os.path.exists(os.environ["PIDFILE"]) and time.monotonic() < deadline:
                    time.sleep(0.01)
                raise KeyError("the caller's own error")
        except KeyError:
            out["child"] = int(open(os.environ["PIDFILE"]).read())
        """.replace('os.environ["PIDFILE"]', repr(str(tmp_path / "child.pid")))
    )
    assert not alive(out["child"])  # killed and reaped, not left running for a minute


@pytest.mark.parametrize("why", ["no compute", "threads"])
def test_no_child_when_there_is_nothing_to_compute_or_other_threads_run(why):
    body = (
        """
        with computed_aside(None) as value:
            out["value"] = value()
        """
        if why == "no compute"
        else """
        stop = threading.Event()
        threading.Thread(target=stop.wait, daemon=True).start()
        with computed_aside(lambda: str(os.getpid())) as value:
            out["value"] = value()
        out["here"] = str(parent)
        stop.set()
        """
    )
    out = run_script(body)
    if why == "no compute":
        assert out == {"value": None}
    else:
        assert out["value"] == out["here"]  # computed in this process: no fork beside another thread
