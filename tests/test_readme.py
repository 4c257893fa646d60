"""The README's two set-up commands stay the ones CI actually runs, and no doc installs EvalGlass from a registry."""

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


def test_no_doc_installs_evalglass_by_name_from_a_registry_it_is_not_published_to():
    """EvalGlass is installed from a checkout, a wheel or the repository (README, "Install it elsewhere"). Adding an
    extra by name (`pip install 'evalglass[postgres]'`) is right only where EvalGlass is installed already, which a
    workflow's install step never is."""
    # `evalglass @ git+https://...` (a direct reference) is how it is installed from the repository
    by_name = re.compile(r"pip install\s+['\"]?evalglass(\[[^\]]*\])?(?!\s*@)['\"]?(?=[\s`]|$)")
    bare = re.compile(r"pip install\s+['\"]?evalglass(?!\s*@)['\"]?(?=[\s`]|$)")
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        found += [f"{doc.name}: {m.group(0)}" for m in bare.finditer(text)]
        for block in re.findall(r"```ya?ml\n(.*?)```", text, flags=re.S):
            found += [f"{doc.name} (workflow): {m.group(0)}" for m in by_name.finditer(block)]
    assert not found, found
