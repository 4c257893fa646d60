"""A host worker that ends on an exception prints no traceback on the run's stderr (``multiprocessing`` would print
"Process evalglass-host:" and one): a pipe the deciding process closed first says nothing, anything else one line.
Real processes through the fork server, driven by a script in its own interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TARGETS = """
def target(conn, alive, kind):
    if kind == "eof":
        raise EOFError
    if kind == "broken":
        conn.close()
        raise BrokenPipeError(32, "Broken pipe")
    raise ValueError("a fault of ours")
"""

DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
import worker_targets
from evalglass.lanes.hostworker import spawn_worker

if __name__ == "__main__":
    worker = spawn_worker(worker_targets.target, (sys.argv[2],))
    worker.process.join(60)
    print(worker.process.exitcode)
"""


@pytest.mark.parametrize(("kind", "said"), [("eof", ""), ("broken", ""), ("value", "ValueError: a fault of ours")])
def test_a_worker_ending_on_an_exception_prints_no_traceback(tmp_path: Path, kind: str, said: str) -> None:
    (tmp_path / "worker_targets.py").write_text(TARGETS)
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(DRIVER))
    done = subprocess.run(
        [sys.executable, str(driver), str(tmp_path), kind], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "Traceback" not in done.stderr and "Process evalglass-host" not in done.stderr, done.stderr
    if said:
        assert done.stderr.strip().splitlines() == [f"evalglass: a host worker ended: {said}"]
    else:
        assert done.stderr.strip() == ""
