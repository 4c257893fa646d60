"""docs/pull-requests.md, followed as printed: outputs apart from gold, approve once, new outputs gate without a
human, an edited reference blocks, the failing examples are listed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
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


def documented_block(containing: str) -> dict:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    return next(yaml.safe_load(block) for block in blocks if containing in block)


@pytest.mark.timeout(600)  # six CLI processes on a shared machine
def test_the_documented_comparison_with_main(tmp_path):
    """Section 5 as printed: the comparative gate, main's runs signed by CI's key and recorded in the history, the
    baseline entry `explain` prints (the documented keys), and a merge that moves the baseline with no ledger edit."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = (
        Ed25519PrivateKey.generate()
        .private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
        .hex()
    )
    evals = tmp_path / "evals"
    evals.mkdir()
    config = documented_config()
    config["gates"].update(documented_block("no-regression:")["gates"])
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config))
    (evals / "authority.yaml").write_text("version: 1\n")
    gold = [{"id": f"t-{i}", "question": f"q{i}", "intent": "refund" if i % 2 else "cancel"} for i in range(10)]
    write_jsonl(evals / "gold.jsonl", gold)
    write_jsonl(evals / "outputs.jsonl", outputs([row["intent"] for row in gold]))
    history = {"EVALGLASS_DB": f"sqlite:///{tmp_path / 'team.sqlite'}", "GITLAB_CI": "true"}
    main = {**history, "CI_COMMIT_REF_NAME": "main", "EVALGLASS_SIGNING_KEY": key}
    feature = {**history, "CI_COMMIT_REF_NAME": "feature"}

    first = run_cli("run", "--format", "json", cwd=tmp_path, env=main)
    assert first.code == 0, first.err
    explained = run_cli("explain", "no-regression", "--format", "json", cwd=tmp_path, env=feature).json()[0]
    entries = yaml.safe_load(explained["ledger_entry"])
    documented = documented_block("signed_by:")["baselines"]["main"]
    assert set(entries["baselines"]["main"]) == set(documented)
    (evals / "authority.yaml").write_text(yaml.safe_dump({"version": 1, **entries}))
    gate = run_cli("run", "--format", "json", cwd=tmp_path, env=feature).json()["decision"]["gates"]
    assert [g["outcome"] for g in gate if g["name"] == "no-regression"] == ["pass"], gate

    # A merge that gets two intents wrong: the next pull request (still all right) compares with it, ledger as it was.
    intents = [row["intent"] for row in gold]
    write_jsonl(evals / "outputs.jsonl", outputs(["other", "other", *intents[2:]]))
    second = run_cli("run", "--format", "json", cwd=tmp_path, env=main)
    assert second.code in (0, 1), second.err
    write_jsonl(evals / "outputs.jsonl", outputs(intents))
    card = run_cli("run", "--format", "json", cwd=tmp_path, env=feature).json()
    [gate] = [g for g in card["decision"]["gates"] if g["name"] == "no-regression"]
    assert gate["comparison"]["baseline_run_id"] == second.json()["run_id"] and abs(gate["value"] - 0.2) < 1e-9, gate
