"""docs/other-tools.md's worked example, run as written on the committed real inspect_ai log."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.e2e.project import run_cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "other-tools.md"


def blocks(kind: str) -> list[str]:
    found = re.findall(r"^```(\w*)\n(.*?)^```$", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return [body for language, body in found if language == kind]


def test_the_worked_example_runs_as_documented(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    shutil.copyfile(ROOT / "tests" / "fixtures" / "inspect" / "capitals.eval", evals / "capitals.eval")
    (evals / "evalglass.yaml").write_text(next(b for b in blocks("yaml") if b.startswith("version: 1")))
    (evals / "authority.yaml").write_text("version: 1\n")
    result = run_cli("run", "--no-history", cwd=tmp_path, env={"COLUMNS": "80"})
    assert result.code == 0, result.out + result.err
    shown = next(block for block in blocks("") if "inspect_match" in block)
    for line in shown.strip().splitlines():
        assert line.strip() in result.out, line
