"""docs/pull-requests.md, followed as printed: outputs apart from gold, approve once, new outputs gate without a
human, an edited reference blocks, the failing examples are listed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.e2e.project import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "pull-requests.md"


def documented_config() -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    return next(yaml.safe_load(block) for block in blocks if "dataset:" in block)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def outputs(intents: list[str]) -> list[dict]:
    return [{"id": f"t-{i}", "output": json.dumps({"intent": intent})} for i, intent in enumerate(intents)]


def test_the_documented_loop(tmp_path):
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(documented_config()))
    (evals / "authority.yaml").write_text("version: 1\n")
    gold = [{"id": f"t-{i}", "question": f"q{i}", "intent": "refund" if i % 2 else "cancel"} for i in range(10)]
    write_jsonl(evals / "gold.jsonl", gold)
    write_jsonl(evals / "outputs.jsonl", outputs([row["intent"] for row in gold]))

    assert run_cli("run", cwd=tmp_path).code == 0  # informational
    entry = run_cli("explain", "intent_accuracy", "--format", "json", cwd=tmp_path).json()[0]["ledger_entry"]
    assert "definition:" in entry and "validated_gold: true" in entry
    (evals / "authority.yaml").write_text(yaml.safe_dump({"version": 1, **yaml.safe_load(entry)}))
    assert json.loads(run_cli("run", "--format", "json", cwd=tmp_path).out)["decision"]["verdict"] == "pass"

    # The next pull request: new outputs, two of them wrong. The gate decides on the number alone.
    intents = [row["intent"] for row in gold]
    intents[3], intents[4] = "other", "other"
    write_jsonl(evals / "outputs.jsonl", outputs(intents))
    result = run_cli("run", "--format", "json", cwd=tmp_path)
    card = json.loads(result.out)
    assert (
        result.code == 1
        and card["decision"]["verdict"] == "fail"
        and [reason["code"] for reason in card["decision"]["gates"][0]["reasons"]] == ["below_threshold"]
    )
    failing = run_cli("view", "--examples", "--metric", "intent", "--format", "json", cwd=tmp_path).json()
    assert [row["id"] for row in failing["examples"]] == ["t-3", "t-4"]

    # An output for an unknown id stops the run (strict), naming it.
    write_jsonl(evals / "outputs.jsonl", [*outputs(intents), {"id": "t-99", "output": "{}"}])
    refused = run_cli("run", cwd=tmp_path)
    assert refused.code == 2 and "'t-99'" in refused.err

    # An edited reference makes the gold stale.
    write_jsonl(evals / "outputs.jsonl", outputs([row["intent"] for row in gold]))
    write_jsonl(evals / "gold.jsonl", [{**gold[0], "intent": "refund"}, *gold[1:]])
    card = json.loads(run_cli("run", "--format", "json", cwd=tmp_path).out)
    assert [reason["code"] for reason in card["decision"]["gates"][0]["reasons"]] == ["gold_stale"]
