"""A real local Ray cluster for the test run: a head and one extra worker node, separate processes on 127.0.0.1.

Started once per test run, shared by every xdist worker (tests/shared_servers.py), and stopped by the process groups
of the two ``ray start`` processes started here: never ``ray stop``, which would end every Ray process on the
machine. Each cluster has its own ``RAY_TMPDIR`` (a stale ``ray_current_cluster`` file in a shared one makes a later
connection hang), usage statistics off, and token authentication disabled on every side (a client connecting by
address would otherwise need the token a local ``ray.init()`` writes to ~/.ray). Tests that kill a head start their
own cluster (:func:`local_cluster`).

Without ``ray`` installed the tests skip, saying why, except under CI=true where they fail: CI installs it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.shared_servers import Started, kill_group, shared_server

_START_S = 120.0


def ray_environment(tmpdir: str) -> dict[str, str]:
    return {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "RAY_TMPDIR": tmpdir,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def require_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        reason = "ray is not installed (pip install -e '.[test]' installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run the Ray tests")
        pytest.skip(reason)


@dataclass
class Node:
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """SIGKILL to the node's process group (the ``ray start`` process and what it started), reaped at once.

        Not SIGTERM first: ``ray start --block`` does not end on it (its group was still there 30 s after one,
        measured on Ray 2.60), so a grace period only waited itself out, 5 s a node. A test cluster has nothing to
        save (its folder is removed), and to a driver a killed head is a lost one, whichever signal ended it."""
        kill_group(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10.0)


@dataclass
class LocalCluster:
    address: str
    env: dict[str, str]
    tmpdir: str
    nodes: list[Node] = field(default_factory=list)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
        self.nodes.clear()


def start_node(args: list[str], env: dict[str, str], log: Path) -> Node:
    ray = str(Path(sys.executable).with_name("ray"))
    handle = log.open("wb")
    process = subprocess.Popen(
        [ray, "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats", *args],
        stdin=subprocess.DEVNULL,
        stdout=handle,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    handle.close()
    node = Node(process, log)
    deadline = time.monotonic() + _START_S
    while b"Ray runtime started" not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            node.stop()
            raise RuntimeError(
                f"ray start {' '.join(args)} did not come up:\n{log.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.2)
    return node


def start_head(cluster: LocalCluster, port: int, name: str, cpus: int = 1) -> None:
    cluster.nodes.append(
        start_node(
            [f"--port={port}", "--head", f"--num-cpus={cpus}", "--include-dashboard=false"],
            cluster.env,
            Path(cluster.tmpdir) / f"{name}.log",
        )
    )


def start_worker(cluster: LocalCluster, name: str, cpus: int = 1) -> None:
    cluster.nodes.append(
        start_node([f"--address={cluster.address}", f"--num-cpus={cpus}"], cluster.env, Path(cluster.tmpdir) / name)
    )


@contextlib.contextmanager
def local_cluster(workers: int = 1, head_cpus: int = 1, port: int | None = None) -> Iterator[LocalCluster]:
    # A short folder under /tmp: Ray's socket paths inside it must stay under the 107-byte limit of AF_UNIX.
    tmpdir = tempfile.mkdtemp(prefix="eg-ray-", dir="/tmp")
    port = port or free_port()
    cluster = LocalCluster(address=f"127.0.0.1:{port}", env=ray_environment(tmpdir), tmpdir=tmpdir)
    try:
        start_head(cluster, port, "head", cpus=head_cpus)
        for index in range(workers):
            start_worker(cluster, f"worker-{index}.log")
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(tmpdir, ignore_errors=True)


def _start_shared_cluster() -> Started:
    # A short folder under /tmp: Ray's socket paths inside it must stay under the 107-byte limit of AF_UNIX.
    tmpdir = tempfile.mkdtemp(prefix="eg-ray-", dir="/tmp")
    port = free_port()
    cluster = LocalCluster(address=f"127.0.0.1:{port}", env=ray_environment(tmpdir), tmpdir=tmpdir)
    try:
        start_head(cluster, port, "head")
        start_worker(cluster, "worker-0.log")
    except BaseException:
        cluster.stop()
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    return Started(
        info={"address": cluster.address, "tmpdir": tmpdir},
        process_groups=[node.process.pid for node in cluster.nodes],  # each `ray start` leads its own session
        grace_s=0.0,  # `ray start --block` does not end on SIGTERM (Node.stop)
        remove=[tmpdir],
    )


@pytest.fixture(scope="session")
def ray_cluster() -> LocalCluster:
    """The run's shared cluster (one head, one worker node), started by the first worker that needs it."""
    require_ray()
    info = shared_server("ray", _start_shared_cluster)
    return LocalCluster(address=info["address"], env=ray_environment(info["tmpdir"]), tmpdir=info["tmpdir"])
