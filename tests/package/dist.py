"""The built package and fresh virtual environments to install it into, for the package's and the action's tests.

The sdist and wheel are built once per test run (``python -m build`` from a copy of the repository, without build
isolation: no network) and shared by the xdist workers through the registry of tests/shared_servers.py. A fresh
environment is ``python -m venv --without-pip``; installing EvalGlass's dependencies into it from an index would take
minutes and the network, so a ``.pth`` line makes the running environment's packages visible in it instead: a folder
of links to everything in this environment's site-packages except EvalGlass itself (its editable install and its
metadata), so that the only EvalGlass the new environment can import is the one installed into it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.shared_servers import Started, shared_server

ROOT = Path(__file__).resolve().parents[2]

#: What a checkout holds that is no source of the package (caches, environments, generated data, earlier builds).
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv*", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", ".import_linter_cache",
    ".evalglass", ".data", "build", "dist", "*.egg-info", "*.so",
)  # fmt: skip


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path


def built() -> Dist:
    """This run's sdist and wheel, built by the first test that asks."""
    info = shared_server("package-dist", _build)
    return Dist(Path(info["sdist"]), Path(info["wheel"]))


def _build() -> Started:
    folder = Path(tempfile.mkdtemp(prefix="eg-test-dist-"))
    source = folder / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    # Bytecode a test or benchmark run leaves beside an example's module must not end up in the package.
    stray = source / "src" / "evalglass" / "examples" / "bound-checks" / "__pycache__"
    stray.mkdir(exist_ok=True)
    (stray / "check_marker.cpython-311.pyc").write_bytes(b"not package data")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(folder / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    (sdist,) = (folder / "dist").glob("*.tar.gz")
    (wheel,) = (folder / "dist").glob("*.whl")
    return Started({"sdist": str(sdist), "wheel": str(wheel)}, remove=[str(folder)])


def clean_env(venv: Path | None = None) -> dict[str, str]:
    """The environment without anything that points Python at this checkout or this environment; with ``venv``,
    that environment's scripts first on PATH, as after activating it."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "EVALGLASS_PURE")
    }
    env["PYTHONNOUSERSITE"] = "1"
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def fresh_venv(folder: Path) -> Path:
    """A new environment at ``folder`` without EvalGlass, seeing this environment's other packages (pip included)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    links = folder / "dependencies"
    links.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(("evalglass", "__editable__")) or name.endswith(".pth"):
            continue
        (links / entry.name).symlink_to(entry)
    purelib = subprocess.run(
        [str(folder / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        env=clean_env(),
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(f"{links}\n")
    return folder


def installed_wheel_venv() -> Path:
    """One fresh environment per test run with the built wheel installed (``pip install --no-deps``)."""
    info = shared_server("package-venv", _install_wheel)
    return Path(info["venv"])


def _install_wheel() -> Started:
    folder = Path(tempfile.mkdtemp(prefix="eg-test-venv-"))
    venv = fresh_venv(folder / "venv")
    pip_install(venv, str(built().wheel))
    return Started({"venv": str(venv)}, remove=[str(folder)])


def pip_install(venv: Path, *requirement: str) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", *requirement],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(venv),
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
