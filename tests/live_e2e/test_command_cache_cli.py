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
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import LiveProject

RIGHT = "import json, sys\nprint(json.dumps({'intent': json.load(sys.stdin)['intent']}))\n"
WRONG = "import json, sys\nprint(json.dumps({'intent': 'other'}))\n"
ROWS = [{"id": f"q{i}", "intent": "refund" if i % 2 else "cancel"} for i in range(4)]


def _project(tmp_path: Path, argv: list[str], lane: str = "command") -> LiveProject:
    project = LiveProject(tmp_path / "evals", "http://127.0.0.1:9")  # no server: the lane is a command
    project.root.mkdir(parents=True)
    metrics = {"right": {"type": "exact_match", "field": "intent", "reference": "intent"}}
    gates = {"accuracy": {"metric": "right", "proposed_threshold": 1.0}}
    task: dict[str, Any] = {"type": "command", "argv": argv, "output": "json", "cache": True}
    if lane == "python":
        task = {"type": "python", "function": "app.py:answer", "cache": True}
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
    counter = tmp_path / "calls.txt"  # outside the project: a file the program writes into it changes its state
    (project.root / "answer.py").write_text(f"open({str(counter)!r}, 'a').write('x')\n{RIGHT}")
    _approve(project)
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * len(ROWS)
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * len(ROWS)  # no call made again


READS_DATA = (
    "import json, pathlib, sys\n"
    "table = json.loads(pathlib.Path('answers.json').read_text())\n"
    "print(json.dumps({'intent': table[json.load(sys.stdin)['intent']]}))\n"
)
RIGHT_TABLE = json.dumps({"refund": "refund", "cancel": "cancel"})
WRONG_TABLE = json.dumps({"refund": "other", "cancel": "other"})


def _git(folder: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    subprocess.run(
        ["git", *args], cwd=folder, check=True, capture_output=True, env={**env, "GIT_COMMITTER_EMAIL": "t@t"}
    )


@pytest.mark.parametrize("where", ["folder", "git"])
@pytest.mark.parametrize("lane", ["command", "python"])
def test_a_data_file_the_program_opens_changed_is_asked_again_and_its_gate_fails(
    tmp_path: Path, where: str, lane: str
) -> None:
    """The program reads ``answers.json`` at run time, which no scan of its code names: main's run caches right
    answers, a pull request rewrites only the data file, and its answers are measured (the gate fails), never main's
    replayed. The key binds the project's state (lanes/projectstate.py), in a git work tree and outside one."""
    project = _project(tmp_path, [sys.executable, "answer.py"], lane)
    (project.root / "answer.py").write_text(READS_DATA)
    (project.root / "app.py").write_text(
        "import json, pathlib\n"
        "def answer(example):\n"
        "    table = json.loads((pathlib.Path(__file__).parent / 'answers.json').read_text())\n"
        "    return {'intent': table[example['intent']]}\n"
    )
    (project.root / "answers.json").write_text(RIGHT_TABLE)
    if where == "git":
        (project.root / ".gitignore").write_text(".evalglass/\n.evalglass-cache.sqlite*\n")
        _git(project.root, "init", "-q")
        _git(project.root, "add", ".")
        _git(project.root, "commit", "-q", "-m", "main")
    _approve(project)
    assert _verdict(project) == (0, "pass")  # main's run: the cache holds right answers
    assert _verdict(project) == (0, "pass")  # and an unchanged project answers from it (the key is stable)
    (project.root / "answers.json").write_text(WRONG_TABLE)
    if where == "git":
        _git(project.root, "commit", "-q", "-am", "pull request")
    assert _verdict(project) == (1, "fail")


def test_a_file_git_ignores_is_not_bound_and_an_untracked_one_is(tmp_path: Path) -> None:
    """In a git work tree, an ignored file (a local build's output) changing keeps the cached answers; a new file git
    would track (a pull request's, not yet committed) is bound, so the program is asked again."""
    project = _project(tmp_path, [sys.executable, "answer.py"])
    counter = tmp_path / "calls.txt"
    (project.root / "answer.py").write_text(f"open({str(counter)!r}, 'a').write('x')\n{RIGHT}")
    (project.root / ".gitignore").write_text(".evalglass/\n.evalglass-cache.sqlite*\nbuild/\n")
    _git(project.root, "init", "-q")
    _git(project.root, "add", ".")
    _git(project.root, "commit", "-q", "-m", "main")
    _approve(project)
    assert _verdict(project) == (0, "pass")
    (project.root / "build").mkdir()
    (project.root / "build" / "out.txt").write_text("local")
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * len(ROWS)  # answered from the cache
    (project.root / "notes.txt").write_text("new")
    assert _verdict(project) == (0, "pass")
    assert counter.read_text() == "x" * 2 * len(ROWS)  # asked again


def _indented(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())
