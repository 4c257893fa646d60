"""A run's artifacts travel (a CI download, a copy beside a pull request), so any of them can arrive truncated, with a
byte flipped, swapped for the same file of another run, or not at all. Every command that reads a run folder checks
the set first, by the check ``verify`` makes of it (``engine.runs.integrity``), whether or not it shows the file at
fault: here every reader x every artifact of the folder x each kind of damage exits 2 with one line naming the file,
writes nothing, and the undamaged folder is read with exit 0.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from tests.e2e.project import CliResult, Project, make_project, run_cli
from tests.e2e.test_variants_cli import variant_project

OTHER = "other"  # the other run, beside the damaged one (a folder of the same project, run on other data)
WRITTEN = ("junit.xml", "summary.md", "page.html", "compared.html", "events.jsonl")


@dataclass(frozen=True)
class Runs:
    """A project with a pristine run of it (``pristine``) and another run on other data (``other``)."""

    root: Path
    pristine: Path
    other: Path

    def artifacts(self) -> list[str]:
        """Every file the run wrote: what its digest list names, and the list itself."""
        listed = json.loads((self.pristine / "digests.json").read_text())["files"]
        return ["digests.json", *sorted(listed)]


def _two_runs(project: Project, other_rows: list[dict[str, object]]) -> Runs:
    assert project.run("--out", "runs/pristine", "--no-history").code in (0, 1)
    project.write_rows(other_rows)
    assert project.run("--out", f"runs/{OTHER}", "--no-history").code in (0, 1)
    return Runs(project.root, project.root / "runs/pristine", project.root / f"runs/{OTHER}")


def recorded_runs(root: Path) -> Runs:
    """Recorded outputs (kept in ``blobs/``), an approved gate and a standalone check (``checks.jsonl``)."""
    project = make_project(
        root,
        checks={"smoke": {"command": ["{python}", "-c", "pass"], "policy": {"id": "v1", "pass_codes": [0]}}},
    )
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes" if i % 3 else "no"} for i in range(12)]
    return _two_runs(project, rows)


def variant_runs(root: Path) -> Runs:
    """A live python lane with two variants: each variant's ``scores.jsonl`` and ``outputs.jsonl``."""
    project = variant_project(
        root,
        variants={"good": {}, "bad": {"function": "app.py:bad"}},
        gates={"bad-accuracy": {"metric": "exact", "variant": "bad", "proposed_threshold": 0.9}},
    )
    rows = [{"id": f"ex-{i}", "expected": "yes" if i % 3 else "maybe"} for i in range(45)]
    return _two_runs(project, rows)


KINDS: dict[str, Callable[[Path], Runs]] = {"recorded": recorded_runs, "variants": variant_runs}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Runs]:
    return {kind: make(tmp_path_factory.mktemp(kind)) for kind, make in KINDS.items()}


def _counterpart(runs: Runs, name: str) -> bytes:
    """The same artifact of the other run (its kept outputs have a name of their own: their hash)."""
    path = runs.other / name
    if not path.exists() and name.startswith("blobs/"):
        (path,) = (runs.other / "blobs").iterdir()
    data = path.read_bytes()
    assert data != (runs.pristine / name).read_bytes(), f"the other run's {name} must differ for this to test anything"
    return data


def truncated(runs: Runs, path: Path, name: str) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flipped(runs: Runs, path: Path, name: str) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def swapped(runs: Runs, path: Path, name: str) -> None:
    path.write_bytes(_counterpart(runs, name))


def deleted(runs: Runs, path: Path, name: str) -> None:
    path.unlink()


def linked_outside(runs: Runs, path: Path, name: str) -> None:
    """The same bytes, but behind a symbolic link to a file outside the run folder: whoever controls that file
    controls the run, so it is refused as the file it is, whatever it holds (a reader that hashed what it read
    through the link once took it as the run's)."""
    outside = path.parents[len(PurePosixPath(name).parts) + 1] / "outside" / name.replace("/", "_")
    outside.parent.mkdir(exist_ok=True)
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


DAMAGE: dict[str, Callable[[Runs, Path, str], None]] = {
    "truncated": truncated,
    "one byte flipped": flipped,
    "another run's": swapped,
    "deleted": deleted,
    "linked outside": linked_outside,
}

#: Every command that reads a run folder, given the folder (relative to the project), as a user types it.
READERS: dict[str, tuple[str, ...]] = {
    "view": ("view", "{run}"),
    "view --format json --junit --github": ("view", "{run}", "--format", "json", "--junit", "junit.xml", "--github"),
    "view --examples": ("view", "{run}", "--examples", "--state", "all"),
    "explain": ("explain", "--run", "{run}"),
    "report": ("report", "{run}", "--out", "page.html"),
    "compare (as the base)": ("compare", "{run}", f"runs/{OTHER}"),
    "compare --html (as the candidate)": ("compare", f"runs/{OTHER}", "{run}", "--html", "compared.html"),
    "export --format otlp": ("export", "{run}", "--format", "otlp", "--out", "events.jsonl"),
    "history import": ("history", "import", "{run}", "--db", "history.sqlite"),
}


def read(root: Path, reader: str, run: str = "runs/run") -> CliResult:
    env = {"GITHUB_STEP_SUMMARY": str(root / "summary.md"), "GITHUB_ACTIONS": "true"}
    return run_cli(*(arg.format(run=run) for arg in READERS[reader]), cwd=root, env=env)


def _project_copy(runs: Runs, at: Path) -> Path:
    """The project with its two runs, copied so that each damage starts from the run as written."""
    root = at / "project"
    shutil.copytree(runs.root, root, ignore=shutil.ignore_patterns(".evalglass"))
    return root


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_reader_refuses_every_damaged_artifact_naming_it(
    made: dict[str, Runs], tmp_path: Path, kind: str, damage: str, reader: str
) -> None:
    runs = made[kind]
    root = _project_copy(runs, tmp_path)
    run = root / "runs/run"
    for name in runs.artifacts():
        if run.exists():
            shutil.rmtree(run)
        shutil.copytree(runs.pristine, run)
        DAMAGE[damage](runs, run / name, name)
        result = read(root, reader)
        said = (name, result.code, result.out[-300:], result.err)
        assert result.code == 2, said
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.err, said
        assert name in lines[0], said  # which file ...
        assert " — " in lines[0], said  # ... and how to fix it
        for written in WRITTEN:
            assert not (root / written).exists(), (name, written)
        assert _recorded_runs(root / "history.sqlite") == 0, name


def _recorded_runs(database: Path) -> int:
    """How many runs the history ``history import`` wrote holds (0 when it was never created)."""
    if not database.exists():
        return 0
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return int(connection.execute("SELECT count(*) FROM runs").fetchone()[0])


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_the_undamaged_run_is_read_by_every_reader(
    made: dict[str, Runs], tmp_path: Path, kind: str, reader: str
) -> None:
    runs = made[kind]
    root = _project_copy(runs, tmp_path)
    result = read(root, reader, "runs/pristine")
    assert result.code == 0, (result.out[-500:], result.err)
    assert "does not add up" not in result.err


@pytest.mark.parametrize("damage", ["one byte flipped", "linked outside"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_verify_names_the_same_damage_as_a_finding(
    made: dict[str, Runs], tmp_path: Path, kind: str, damage: str
) -> None:
    """The readers refuse by the check verify makes: the same damage is a finding there (exit 1) or, in a file
    verify must parse, a line naming it (exit 2); never exit 0."""
    runs = made[kind]
    root = _project_copy(runs, tmp_path)
    for name in runs.artifacts():
        if name == "digests.json":
            continue  # unreadable as a list: verify stops at it (exit 2), as the readers do
        run = root / "runs/run"
        if run.exists():
            shutil.rmtree(run)
        shutil.copytree(runs.pristine, run)
        DAMAGE[damage](runs, run / name, name)
        verified = run_cli("verify", "runs/run", "--format", "json", cwd=root)
        if verified.code == 2:  # a file verify must parse and cannot (a scores line): one line naming it
            assert name in verified.err and verified.err.count("\n") == 1, (name, verified.err)
            continue
        assert verified.code == 1, (name, verified.out, verified.err)
        assert f"file {name}" in {item["field"] for item in verified.json()["findings"]}, name


def test_explain_proposes_no_damaged_run_as_a_baseline(tmp_path: Path) -> None:
    """`explain --baseline RUN` reads RUN's folder to fill the ledger entry with its fingerprint: a damaged one is
    refused as every reader refuses it, so no ledger approves a baseline that is not the run it names."""
    from tests.e2e.test_comparative_gates import NO_CHANGE, setup

    project, _ = setup(tmp_path, NO_CHANGE)
    args = ("explain", "no-regression", "--run", "runs/probe", "--baseline", "runs/base")
    proposed = project.cli(*args)
    assert proposed.code == 0 and "fingerprint" in proposed.out, proposed.err
    flipped(Runs(tmp_path, tmp_path / "runs/base", tmp_path), tmp_path / "runs/base/scores.jsonl", "scores.jsonl")
    refused = project.cli(*args)
    assert refused.code == 2 and refused.err.count("\n") == 1, refused.err
    assert "scores.jsonl is not the file digests.json lists" in refused.err and "fingerprint" not in refused.out


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_run_goes_through_the_history_and_back_whole(made: dict[str, Runs], tmp_path: Path, kind: str) -> None:
    """``history import`` then ``history export``: the folder written back is the run, byte for byte (each variant's
    files included), and every reader reads it as the run it was."""
    runs = made[kind]
    root = _project_copy(runs, tmp_path)
    imported = run_cli("history", "import", "runs/pristine", "--db", "history.sqlite", cwd=root)
    assert imported.code == 0, imported.err
    run_id = json.loads((runs.pristine / "runrecord.json").read_text())["run_id"]
    exported = run_cli("history", "export", run_id, "runs/back", "--db", "history.sqlite", cwd=root)
    assert exported.code == 0, exported.err
    for name in runs.artifacts():
        assert (root / "runs/back" / name).read_bytes() == (runs.pristine / name).read_bytes(), name
    assert run_cli("verify", "runs/back", cwd=root).code == 0
    for reader in ("view --examples", "export --format otlp", "compare (as the base)"):
        result = read(root, reader, "runs/back")
        assert result.code == 0, (reader, result.err)
