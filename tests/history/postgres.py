"""A throwaway PostgreSQL server on 127.0.0.1 for the history's tests (started once per test run, shared by its workers).

Debian's server binaries (``/usr/lib/postgresql/<version>/bin``) are used; ``initdb`` and ``pg_ctl`` refuse to run
as root, so as root they run as the ``postgres`` user. ``.ci/run`` installs the server when a machine lacks it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.shared_servers import Started


def server_binaries() -> Path | None:
    root = Path("/usr/lib/postgresql")
    if not root.is_dir():
        return None
    found = sorted(
        (path / "bin" for path in root.iterdir() if (path / "bin" / "pg_ctl").is_file()),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.parent.name.split(".")],
    )
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Server:
    port: int

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        user = "postgres" if password is None else f"postgres:{password}"
        return f"postgresql+psycopg://{user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def start_server(binaries: Path) -> Started:
    """A new cluster (``initdb``) served on a free port of 127.0.0.1, and how to stop it (``pg_ctl stop``)."""
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    root = Path(tempfile.mkdtemp(prefix="evalglass-pg-"))
    os.chmod(root, 0o755)
    data, run = root / "data", root / "run"
    for folder in (data, run):
        folder.mkdir(mode=0o700)
        if as_root:
            shutil.chown(folder, "postgres", "postgres")
    port = _free_port()
    ctl = str(binaries / "pg_ctl")
    stop = [*prefix, ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]
    try:
        subprocess.run(
            [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
             "--locale=C.UTF-8", "--no-sync"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        subprocess.run(
            [*prefix, ctl, "-D", str(data), "-l", str(run / "server.log"), "-w", "-t", "60", "-o",
             f"-c listen_addresses=127.0.0.1 -p {port} -k {run} -c fsync=off", "start"],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    except BaseException:
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)
        raise
    return Started(info={"port": port}, stop_commands=[stop], remove=[str(root)])
