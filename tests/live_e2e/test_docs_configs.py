"""Every complete config in docs/lanes.md runs as printed against the fake server (only the port differs)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import evalglass

DOCS = Path(__file__).resolve().parents[2] / "docs" / "lanes.md"
DOCUMENTED_URL = "http://127.0.0.1:8000/v1"


def complete_configs() -> list[str]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [block for block in blocks if isinstance(yaml.safe_load(block), dict) and "dataset" in yaml.safe_load(block)]


def test_the_page_has_a_complete_config_per_lane() -> None:
    kinds = {yaml.safe_load(block)["task"]["type"] for block in complete_configs()}
    assert kinds == {"python", "command", "chat", "recorded"}


@pytest.mark.parametrize("block", complete_configs(), ids=lambda block: yaml.safe_load(block)["task"]["type"])
def test_documented_config_runs(block: str, tmp_path: Path, server: FakeOpenAI) -> None:
    config = yaml.safe_load(block.replace(DOCUMENTED_URL, server.base_url))
    task = config["task"]
    if task["type"] == "command":
        task["argv"] = [sys.executable, *task["argv"][1:]]
    (tmp_path / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp_path / "authority.yaml").write_text("")
    (tmp_path / "rubric.md").write_text("Grade the answer from 1 to 5.\n")
    (tmp_path / "app.py").write_text("def answer(example):\n    return 'an answer to ' + example['question']\n")
    rows = [
        {"id": str(i), "question": f"question {i}", "output": json.dumps({"score": 4, "rationale": "ok"})}
        for i in range(3)
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = evalglass("run", "--config", "evalglass.yaml", "--format", "json", "--no-progress", cwd=tmp_path)
    assert result.code == 0, result.err
    card = json.loads(result.out)
    for metric in card["metrics"]:
        population = metric["population"]
        assert population["included"] == 3 and metric["estimate"]["point"] > 0, metric
