"""The package ships: ``python -m build`` makes an sdist and a wheel that pass ``twine check``, the wheel carries the
schemas, templates and examples and nothing else of the repository, and installed into a fresh environment (not
this checkout) it runs the quickstart, ``--version`` and the pytest plugin."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import evalglass
from evalglass.engine.runs.schemas import SCHEMA_NAMES
from tests.package.dist import NOT_SOURCE, ROOT, built, clean_env, installed_wheel_venv

pytestmark = pytest.mark.timeout(600)

PACKAGE = ROOT / "src" / "evalglass"


def in_venv(venv: Path, *argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / argv[0]), *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean_env(venv), "COLUMNS": "200", **(env or {})},
    )


def shipped_data() -> set[str]:
    """Every data file of the package in the source tree, as the wheel names it (no bytecode)."""
    found = set()
    for folder in ("schemas", "templates", "examples"):
        for path in (PACKAGE / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                found.add("evalglass/" + path.relative_to(PACKAGE).as_posix())
    return found


def test_the_version_is_written_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "evalglass.version.__version__"}
    written = [
        str(path.relative_to(ROOT))
        for path in [*PACKAGE.rglob("*.py"), ROOT / "action.yml"]
        if path.exists() and re.search(r"^\s*(__version__|version)\s*[:=]\s*[\"']\d", path.read_text(), re.M)
    ]
    assert written == ["src/evalglass/version.py"]


def test_the_sdist_and_the_wheel_pass_twine_check():
    dist = built()
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_carries_the_schemas_templates_and_examples_and_nothing_from_tests():
    dist = built()
    names = zipfile.ZipFile(dist.wheel).namelist()
    version = evalglass.__version__
    # The C extension (evalglass/_native) compiles here (a compiler and Python's headers): a wheel for this Python and
    # platform, holding it; `EVALGLASS_PURE=1 python -m build` makes the py3-none-any wheel without it.
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert dist.wheel.name.startswith(f"evalglass-{version}-{tag}-{tag}-"), dist.wheel.name
    for extension in ("_calls", "_scan"):
        assert [name for name in names if name.startswith(f"evalglass/_native/{extension}.") and name.endswith(".so")]
    assert {name.split("/")[0] for name in names} == {"evalglass", f"evalglass-{version}.dist-info"}
    data = shipped_data()
    assert {f"evalglass/schemas/{n}.schema.json" for n in ("config", "ledger", "scorecard")} <= data
    assert data <= set(names), f"missing from the wheel: {sorted(data - set(names))}"
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert not [name for name in names if name.startswith("tests/") or "/tests/" in name]
    sources = {"evalglass/" + p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
    sources = {name for name in sources if "__pycache__" not in name}
    assert sources <= set(names), f"modules missing from the wheel: {sorted(sources - set(names))}"
    with zipfile.ZipFile(dist.wheel) as wheel:
        metadata = wheel.read(f"evalglass-{version}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"evalglass-{version}.dist-info/entry_points.txt").decode()
    assert f"\nVersion: {version}\n" in metadata
    assert "evalglass = evalglass.entry:main" in entry_points  # the supervised program (evalglass/entry.py)
    assert "evalglass = evalglass.pytest_plugin" in entry_points


def test_the_sdist_builds_the_package_and_holds_no_tests():
    dist = built()
    with tarfile.open(dist.sdist) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert {
        "pyproject.toml",
        "setup.py",
        "README.md",
        "src/evalglass/cli.py",
        "src/evalglass/schemas/config.schema.json",
        "src/evalglass/_native/_calls.c",  # the extensions' sources: an install from the sdist compiles them
        "src/evalglass/_native/_scan.c",
    } <= set(names)
    assert not [name for name in names if name.endswith(".so")]
    assert not [name for name in names if name.startswith("tests/")]
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_the_installed_wheel_is_the_evalglass_a_fresh_environment_imports(tmp_path):
    venv = installed_wheel_venv()
    probe = "import evalglass, importlib.metadata as m; print(evalglass.__file__); print(m.version('evalglass'))"
    done = in_venv(venv, "python", "-c", probe, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    where, metadata_version = done.stdout.split()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where
    assert not Path(where).resolve().is_relative_to(ROOT), where
    version = in_venv(venv, "evalglass", "--version", cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"evalglass, version {evalglass.__version__}"
    assert metadata_version == evalglass.__version__


def test_the_installed_wheel_runs_the_quickstart_and_records_its_version(tmp_path):
    venv = installed_wheel_venv()
    done = in_venv(venv, "evalglass", "run", "--example", "quickstart", "--out", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "verdict: informational" in done.stdout
    record = json.loads((tmp_path / "run" / "runrecord.json").read_text())
    assert record["tool_version"] == evalglass.__version__
    verified = in_venv(venv, "evalglass", "verify", "run", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_installed_wheel_loads_its_c_extension_and_evalglass_pure_turns_it_off(tmp_path):
    venv = installed_wheel_venv()
    for extension in ("calls", "scan"):
        probe = f"from evalglass._native import {extension} as e; print(e is not None, e and e.__file__)"
        done = in_venv(venv, "python", "-c", probe, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        loaded, where = done.stdout.split()
        assert loaded == "True" and Path(where).resolve().is_relative_to(venv.resolve()), done.stdout
        forced = in_venv(venv, "python", "-c", probe, cwd=tmp_path, env={"EVALGLASS_PURE": "1"})
        assert forced.returncode == 0 and forced.stdout.split() == ["False", "None"], forced.stdout + forced.stderr


def test_without_a_c_compiler_the_package_still_builds_without_its_extension(tmp_path):
    """The extension is optional: a machine that cannot compile it (here the compiler is `false`) still gets a
    wheel, whose EvalGlass runs the pure path."""
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "out"),
         str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean_env(), "CC": "false"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (tmp_path / "out").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalglass/_native/__init__.py" in names
    assert not [name for name in names if name.endswith(".so")]


def test_the_installed_schemas_are_what_the_installed_evalglass_prints(tmp_path):
    venv = installed_wheel_venv()
    # `evalglass schema NAME` prints schema_of(NAME): one process asks for every name, the CLI is run for one.
    probe = (
        "import evalglass, json, os; from evalglass.engine.runs.schemas import SCHEMA_NAMES, schema_of; "
        "print(json.dumps([os.path.dirname(evalglass.__file__), {n: schema_of(n) for n in SCHEMA_NAMES}]))"
    )
    done = in_venv(venv, "python", "-c", probe, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    where, printed = json.loads(done.stdout)
    shipped = Path(where) / "schemas"
    assert sorted(path.name for path in shipped.glob("*.schema.json")) == sorted(f"{n}.schema.json" for n in printed)
    # The installed package lists what the source tree lists: no schema left out of the wheel.
    assert set(printed) == set(SCHEMA_NAMES)
    for name, schema in printed.items():
        assert json.loads((shipped / f"{name}.schema.json").read_text()) == schema, name
    cli = in_venv(venv, "evalglass", "schema", "scorecard", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == printed["scorecard"]


PLUGIN_TESTS = """
import evalglass.pytest_plugin


def test_the_plugin_is_the_installed_one():
    assert evalglass.pytest_plugin.__file__.startswith({venv!r})


def test_an_approved_gate_passes(evalglass_run):
    evalglass_run("evals/evalglass.yaml", out="passing").assert_passed()


def test_a_gate_short_of_its_threshold_fails(evalglass_run):
    evalglass_run("strict/evalglass.yaml", out="failing").assert_passed()
"""


def plugin_projects(venv: Path, root: Path, thresholds: dict[str, float]) -> None:
    """One suite (exact match is 0.75 on 8 examples) in a folder per entry of ``thresholds``, its gate `accuracy`
    approved at that threshold in a ledger written from the installed `evalglass explain`, as a host would."""
    rows = [{"id": f"ex-{i}", "expected": "yes" if i % 4 else "no", "output": "yes"} for i in range(1, 9)]
    config = (
        "version: 1\n"
        "dataset: {name: suite, path: data.jsonl}\n"
        "task: {type: recorded, field: output}\n"
        "metrics:\n  exact: {type: exact_match, reference: expected}\n"
        "gates:\n  accuracy: {metric: exact, proposed_threshold: 0.5}\n"
    )
    for folder in thresholds:
        (root / folder).mkdir()
        (root / folder / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (root / folder / "evalglass.yaml").write_text(config)
        (root / folder / "authority.yaml").write_text("version: 1\n")
    first = root / next(iter(thresholds)) / "evalglass.yaml"
    assert in_venv(venv, "evalglass", "run", "--config", str(first), "--out", "probe", cwd=root).returncode == 0
    explained = in_venv(venv, "evalglass", "explain", "accuracy", "--run", "probe", "--format", "json", cwd=root)
    assert explained.returncode == 0, explained.stderr
    entry = json.loads(explained.stdout)[0]["ledger_entry"]
    assert "threshold: 0.5" in entry, entry
    for folder, threshold in thresholds.items():
        approved = entry.replace("threshold: 0.5", f"threshold: {threshold}")
        (root / folder / "authority.yaml").write_text("version: 1\n" + approved + "\n")


def test_the_installed_pytest_plugin_carries_the_verdict_into_pytest(tmp_path):
    venv = installed_wheel_venv()
    plugin_projects(venv, tmp_path, {"evals": 0.7, "strict": 0.9})
    (tmp_path / "test_quality.py").write_text(PLUGIN_TESTS.format(venv=str(venv)))
    done = in_venv(venv, "python", "-m", "pytest", "-p", "no:cacheprovider", "-rA", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 2 passed" in done.stdout, done.stdout
    assert "PASSED test_quality.py::test_an_approved_gate_passes" in done.stdout
    assert "FAILED test_quality.py::test_a_gate_short_of_its_threshold_fails" in done.stdout
    assert "EvalGlass verdict: fail" in done.stdout
