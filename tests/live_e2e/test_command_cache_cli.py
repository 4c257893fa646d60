"""A cached ``command`` lane answers again when the program it runs changes: never the old program's answers.

A command lane with ``cache: true`` was keyed by its argv and ``argv[0]``'s bytes only. The usual command names an
interpreter first (``[python, answer.py]``), so the program itself, what it imports and any other file its argv
names were in no key: a pull request that broke ``answer.py`` was scored on main's answers from a CI cache it
restores (the documented way to share one) and its failing gate passed, exit 0, with none of its answers
measured. The key now holds the bytes of every file the argv names and of the host code the command runs by name
(a script's imports, a ``-m`` module), found as a check's gate finds them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import LiveProject

RIGHT = "import json, sys\nprint(json.dumps({'intent': json.load(sys.stdin)['intent']}))\n"
WRONG = "import json, sys\nprint(json.dumps({'intent': 'other'}))\n"
ROWS = [{"id": f"q{i}", "intent": "refund" if i % 2 else "cancel"} for i in range(4)]


def _project(tmp_path: Path, argv: list[str]) -> LiveProject:
    project = LiveProject(tmp_path / "evals", "http://127.0.0.1:9")  # no server: the lane is a command
    project.root.mkdir(parents=True)
    metrics = {"right": {"type": "exact_match", "field": "intent", "reference": "intent"}}
    gates = {"accuracy": {"metric": "right", "proposed_threshold": 1.0}}
    task: dict[str, Any] = {"type": "command", "argv": argv, "output": "json", "cache": True}
    project.write(ROWS, task=task, metrics=metrics, gates=gates)
    return project


def _approve(project: LiveProject) -> None:
    fingerprint = project.gate_fingerprint("accuracy")
    project.write_ledger({"gates": {"accuracy": {"active": True, "threshold": 1.0, "fingerprint": fingerprint}}})


def _verdict(project: LiveProject) -> tuple[int, str]:
    result = project.run()
    assert result.code in (0, 1), result.out + result.err
    return result.code, json.loads(result.out)["decision"]["verdict"]


@pytest.mark.parametrize(
    ("argv", "changed"),
    [
        ([sys.executable, "answer.py"], "answer.py"),  # the script an interpreter runs
        ([sys.executable, "answer.py"], "helper.py"),  # a module the script imports
        ([sys.executable, "-m", "helper"], "helper.py"),  # a module run with -m
        (["sh", "run.sh"], "run.sh"),  # a file a program is given by name
    ],
)
def test_a_changed_program_is_asked_again_and_its_gate_fails(tmp_path: Path, argv: list[str], changed: str) -> None:
    project = _project(tmp_path, argv)
    (project.root / "answer.py").write_text("import helper\nhelper.main()\n")
    (project.root / "helper.py").write_text(
        f"def main():\n{_indented(RIGHT)}\nif __name__ == '__main__':\n    main()\n"
    )
    (project.root / "run.sh").write_text(f'exec "{sys.executable}" answer.py\n')
    _approve(project)
    assert _verdict(project) == (0, "pass")  # every answer right: the cache now holds them

    wrong = f"def main():\n{_indented(WRONG)}\nif __name__ == '__main__':\n    main()\n"
    broken = {"answer.py": WRONG, "helper.py": wrong, "run.sh": f'exec "{sys.executable}" -c "print(1)"\n'}
    (project.root / changed).write_text(broken[changed])
    # The pull request's program answers wrong: its answers are measured, never main's replayed from the cache.
    assert _verdict(project) == (1, "fail")


def test_a_console_script_on_path_is_keyed_by_the_project_code_it_imports(tmp_path: Path) -> None:
    """``argv: [my-app]``, a console script an install of the project put on ``PATH``: the module it runs is the
    project's, so changing it is a miss too."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "my-app").write_text(f"#!{sys.executable}\nfrom myapp import main\nmain()\n")
    (bin_folder / "my-app").chmod(0o755)
    (bin_folder / "myapp.py").write_text(f"def main():\n{_indented(RIGHT)}\n")
    project = _project(tmp_path, ["my-app"])
    config = project.root / "evalglass.yaml"
    path = f"{bin_folder}{os.pathsep}{os.environ['PATH']}"
    config.write_text(config.read_text().replace("cache: true", f"cache: true\n  env: {{PATH: '{path}'}}"))
    _approve(project)
    assert _verdict(project) == (0, "pass")
    (bin_folder / "myapp.py").write_text(f"def main():\n{_indented(WRONG)}\n")
    assert _verdict(project) == (1, "fail")


def test_an_unchanged_program_is_answered_from_the_cache(tmp_path: Path) -> None:
    """The key is stable: the same files answer from the cache (the program is not run again)."""
    project = _project(tmp_path, [sys.executable, "answer.py"])
    counter = project.root / "calls.txt"
    (project.root / "answer.py").write_text(f"open({str(counter)!r}, 'a').write('x')\n{RIGHT}")
    _approve(project)
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * len(ROWS)
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * len(ROWS)  # no call made again


def _indented(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())
