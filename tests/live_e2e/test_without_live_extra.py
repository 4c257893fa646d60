"""Without the `live` extra (openai, httpx2, aiohttp), recorded runs work and live ones say what to install; without
Jinja2 (a core dependency: the HTML report and every template need it) the installation is broken, and says so."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import LiveProject, evalglass, questions


def _without(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment in which importing each package fails, as if it were not installed."""
    blocker = tmp_path / "blocked"
    for name in packages:
        (blocker / name).mkdir(parents=True, exist_ok=True)
        (blocker / name / "__init__.py").write_text(f'raise ImportError("No module named {name}", name={name!r})\n')
    return {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}


def test_recorded_runs_need_no_live_extra(tmp_path: Path) -> None:
    env = _without(tmp_path, "openai", "aiohttp", "jinja2")
    result = evalglass("run", "--example", "quickstart", "--no-progress", cwd=tmp_path, env=env)
    assert result.code == 0, result.err


def test_a_live_lane_without_the_extra_is_one_line(project: LiveProject, tmp_path: Path) -> None:
    project.write(questions(2), task=project.lane())
    for package in ("openai", "aiohttp"):
        result = project.run(env=_without(tmp_path, package))
        assert result.code == 2, result.err
        assert "pip install 'evalglass[live]'" in result.err and "Traceback" not in result.err
        assert result.err.count("\n") == 1, result.err


def test_missing_jinja2_says_the_installation_is_broken_not_install_the_live_extra(
    project: LiveProject, tmp_path: Path
) -> None:
    """Jinja2 is a core dependency: the live extra would not bring it back, so the old hint was false."""
    project.root.mkdir(parents=True)
    (project.root / "app.py").write_text("def answer(example):\n    return example['question']\n")
    project.write(questions(2), task={"type": "python", "function": "app.py:answer"})
    result = project.run(env=_without(tmp_path, "jinja2"))
    assert result.code == 2
    assert result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
    assert "jinja2 is a core dependency of evalglass" in result.err.lower(), result.err
    assert "pip install 'jinja2>=3.1'" in result.err and "evalglass[live]" not in result.err, result.err
    project.write(questions(2), task=project.lane())
    result = project.run(env=_without(tmp_path, "jinja2"))
    assert result.code == 2 and "core dependency" in result.err and "evalglass[live]" not in result.err, result.err
