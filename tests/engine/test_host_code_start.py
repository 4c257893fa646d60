"""``run`` starts the host workers' fork server as soon as its config names host code (so the server's imports
overlap with reading the dataset), and only then (``_runs_host_code`` decides): a run without host code would pay
for an interpreter it never uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.jobs.pipeline import _runs_host_code
from evalglass.engine.spec.config import load_config

EXACT = {"exact": {"type": "exact_match", "reference": "expected"}}
CASES: list[tuple[str, dict[str, Any] | None, dict[str, Any], bool]] = [
    ("python lane", {"type": "python", "function": "app.py:answer"}, EXACT, True),
    ("python metric", None, {"mine": {"type": "python", "function": "grader.py:score"}}, True),
    ("command lane", {"type": "command", "argv": ["python", "app.py"]}, EXACT, False),
    ("recorded outputs", None, EXACT, False),
]


@pytest.mark.parametrize(("what", "task", "metrics", "starts"), CASES, ids=[case[0] for case in CASES])
def test_the_fork_server_is_started_early_only_for_host_code(
    tmp_path: Path, what: str, task: dict[str, Any] | None, metrics: dict[str, Any], starts: bool
) -> None:
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "output": "x", "expected": "x"}) + "\n")
    config: dict[str, Any] = {"dataset": {"name": "d", "path": "data.jsonl"}, "metrics": metrics}
    if task is not None:
        config["task"] = task
    (tmp_path / "evalglass.yaml").write_text(json.dumps(config))
    (tmp_path / "authority.yaml").write_text("")
    assert _runs_host_code(load_config(tmp_path / "evalglass.yaml").config) is starts, what
