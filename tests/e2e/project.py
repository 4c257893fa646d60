"""A throwaway EvalGlass project on disk, and the real CLI run against it in a process of its own (forked from a
server that has imported the command line: tests/cli_server.py says what that keeps and what it changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests import cli_server


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> CliResult:
    done = cli_server.run(list(args), cwd=cwd, env={**os.environ, "COLUMNS": "200", **(env or {})}, timeout=120)
    return CliResult(done.returncode, done.stdout, done.stderr)


DEFAULT_ROWS = [
    {"id": f"ex-{i}", "expected": "yes" if i % 4 else "no", "output": "yes"} for i in range(1, 9)
]  # exact match rate: 6/8 = 0.75


@dataclass
class Project:
    root: Path

    @property
    def evals(self) -> Path:
        return self.root / "evals"

    def write_config(self, config: dict[str, Any]) -> None:
        (self.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    def write_ledger(self, ledger: dict[str, Any] | str) -> None:
        text = ledger if isinstance(ledger, str) else yaml.safe_dump(ledger, sort_keys=False)
        (self.evals / "authority.yaml").write_text(text)

    def write_rows(self, rows: list[dict[str, Any]] | None = None, extra_lines: list[str] = ()) -> None:
        lines = [json.dumps(row) for row in (rows if rows is not None else DEFAULT_ROWS)]
        (self.evals / "data.jsonl").write_text("\n".join([*lines, *extra_lines]) + "\n")

    def run(self, *args: str) -> CliResult:
        return run_cli("run", *args, cwd=self.root)

    def cli(self, *args: str) -> CliResult:
        return run_cli(*args, cwd=self.root)

    def last_run(self) -> Path:
        """The folder of the run that finished last, by the ``last-run`` pointer. Not the greatest folder name:
        two runs in the same second are ordered by their random suffix."""
        return Path((self.root / ".evalglass" / "last-run").read_text().strip())

    def gate_fingerprint(self, gate: str) -> str:
        """The fingerprint as the tool reports it to the host, through `explain --format json`."""
        entries = self.cli("explain", gate, "--format", "json").json()
        entry = entries[0]["ledger_entry"]
        return yaml.safe_load(entry)["gates"][gate]["fingerprint"]

    def dataset_fingerprint(self) -> str:
        """The gold fingerprint `validated_gold` binds, as the last run recorded it."""
        card = self.cli("view", "--format", "json").json()
        return str(card["dataset"]["gold_fingerprint"])


def validated_gold(evals: Path) -> dict[str, Any]:
    """The ledger's ``datasets:`` section validating the gold of the config in ``evals`` as it is now, as a host
    writes it after review: every metric gate stands on it (the examples it measures, and any reference)."""
    from evalglass.engine.datasets.datasetfile import gold_fingerprint_of
    from evalglass.engine.spec.config import load_config

    loaded = load_config(evals / "evalglass.yaml")
    return {loaded.config.dataset.name: {"validated_gold": True, "fingerprint": gold_fingerprint_of(loaded)}}


def approve_as_is(project: Project, threshold: float, gates: Sequence[str]) -> None:
    """Write the ledger a host writes after review: ``gates`` active at ``threshold`` on their definitions as they
    are now, on validated gold."""
    from evalglass.engine.spec.config import load_config

    loaded = load_config(project.evals / "evalglass.yaml")
    approved = {
        gate: {
            "active": True,
            "threshold": threshold,
            "fingerprint": loaded.config.gate_fingerprint(gate, loaded.definition_files),
        }
        for gate in gates
    }
    project.write_ledger({"version": 1, "gates": approved, "datasets": validated_gold(project.evals)})


def loaded_by_a_run(folder: Path, names: list[str]) -> list[str]:
    """Which of ``names`` are in ``sys.modules`` after `evalglass run --out out --no-history` in ``folder``, run in
    a fresh interpreter (not forked from the CLI server, whose imports would hide what the run itself loads)."""
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from evalglass.cli import main\n"
        "try:\n"
        "    main(['run', '--out', 'out', '--no-history'])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        f"Path('loaded.txt').write_text(' '.join(n for n in {names!r} if n in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=folder, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return (folder / "loaded.txt").read_text().split()


def base_config(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "recorded", "field": "output"},
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
        "gates": {"accuracy": {"metric": "exact", "proposed_threshold": 0.7}},
    }
    config.update(overrides)
    return config


def make_project(tmp_path: Path, **config_overrides: Any) -> Project:
    project = Project(tmp_path)
    project.evals.mkdir()
    project.write_config(base_config(**config_overrides))
    project.write_rows()
    project.write_ledger({"version": 1})
    return project


def run_on_engine_copy(tmp_path: Path, lane: str, *args: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``evalglass run`` in a real process on a copy of the package (returned), for a project whose approved gate is
    answered by the python lane ``lane`` (``ENGINE_COPY`` in its environment names the copy it may rewrite)."""
    import shutil

    import evalglass

    copy = tmp_path / "engine"
    shutil.copytree(Path(evalglass.__file__).parent, copy / "evalglass", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", task={"type": "python", "function": "lane.py:answer"})
    (project.evals / "lane.py").write_text(lane)
    approve_as_is(project, 0.7, ["accuracy"])
    env = {**os.environ, "PYTHONPATH": str(copy), "ENGINE_COPY": str(copy), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "evalglass", "run", "--no-progress", "--no-history", *args],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return copy, done
