"""docs/python-api.md is the public API: its table names exactly what ``evalglass.__all__`` exports, and every
Python session it shows (a ```python block of ``>>>`` lines) runs as written, in order, in a project as
``evalglass init`` writes it. A session that needs other host code (a metric ending its process) is a ```text
block: shown, not run."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import evalglass
import evalglass.api

DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def documented_names(text: str) -> list[str]:
    """The first column of the table under "Every public name"."""
    section = text.split("## Every public name", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Za-z_]+)` \|", section, flags=re.MULTILINE)


def sessions(text: str) -> list[str]:
    """Every fenced Python block that is an interactive session (``>>>``), in the page's order."""
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [block for block in blocks if block.lstrip().startswith(">>>")]


def test_the_documented_names_are_the_public_names() -> None:
    names = documented_names(DOC.read_text())
    assert len(names) == len(set(names)), "a name documented twice"
    assert sorted(names) == sorted(evalglass.__all__) == sorted([*evalglass._HOMES, "__version__"])
    # What the API module exports is what the package re-exports from it, and nothing else of it is public.
    assert sorted(evalglass.api.__all__) == sorted(
        name for name in evalglass.__all__ if evalglass._HOMES.get(name) == "evalglass.api"
    )


def test_no_public_name_is_shadowed_by_a_subpackage() -> None:
    """Importing ``evalglass.report.terminal`` binds ``evalglass.report`` to the subpackage: a public function of
    that name would turn into a module as soon as anything rendered."""
    import evalglass.history.named
    import evalglass.report.terminal

    assert [name for name in evalglass.__all__ if type(getattr(evalglass, name)).__name__ == "module"] == []


def test_a_name_left_out_of_the_docs_is_found() -> None:
    text = DOC.read_text().replace("| `compare` |", "| compare |", 1)
    assert "compare" not in documented_names(text)


def test_every_documented_session_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's sessions in order, sharing their names (a later one reads the run an earlier one made)."""
    monkeypatch.chdir(tmp_path)
    evalglass.init("evals")
    blocks = sessions(DOC.read_text())
    assert len(blocks) >= 5
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    names: dict[str, object] = {"evalglass": evalglass}
    for number, block in enumerate(blocks, 1):
        test = parser.get_doctest(block, names, f"python-api.md session {number}", str(DOC), 0)
        runner.run(test, clear_globs=False)
        names = test.globs  # the test ran on a copy
    assert runner.summarize(verbose=False).failed == 0
