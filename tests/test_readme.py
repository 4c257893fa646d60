"""The README's two set-up commands stay the ones CI actually runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bash_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_has_the_install_and_the_test_command_and_ci_runs_the_test_command():
    blocks = bash_blocks((ROOT / "README.md").read_text())
    install, test = blocks[0], blocks[1]
    assert install == "pip install . && evalglass run --example quickstart"
    assert "pytest" in test and "[test]" in test
    ci = (ROOT / ".ci" / "run").read_text()
    assert test in ci.splitlines(), "the README's test command must be the one .ci/run runs"
