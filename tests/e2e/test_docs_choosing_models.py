"""docs/choosing-models.md's worked example runs as printed, and prints what the page shows."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.project import run_cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "choosing-models.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)


def words(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_the_worked_example_runs_as_printed(tmp_path: Path) -> None:
    models, make_data = blocks("python")
    config = next(block for block in blocks("yaml") if "dataset" in yaml.safe_load(block))
    (tmp_path / "models.py").write_text(models)
    (tmp_path / "make_data.py").write_text(make_data)
    (tmp_path / "evalglass.yaml").write_text(config)
    (tmp_path / "authority.yaml").write_text("version: 1\n")
    subprocess.run([sys.executable, "make_data.py"], cwd=tmp_path, check=True)
    result = run_cli("run", "--no-history", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    shown = " ".join(" ".join(line) for line in words(re.sub(r"[│┃┏┓┗┛┡┩└┘━─┳┻╇╈┼]", " ", result.out)))
    (printed,) = blocks("text")
    for line in words(printed):
        assert " ".join(line) in shown, f"the page shows {' '.join(line)!r}; the run printed:\n{result.out}"
