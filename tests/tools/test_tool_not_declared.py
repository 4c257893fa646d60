"""A score another tool never declared for a sample is not applicable to it, not the tool's failure.

promptfoo assertions are declared per test: an assertion on some tests only has no result on the others because it
was never asked for there. That is ``not_applicable`` (a gate may tolerate it), while an assertion a test declared
whose result the file does not hold stays an ``error`` (``recorded_score_missing``), which no ``tolerate`` clears.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.project import run_cli, validated_gold

PROMPTFOO = Path(__file__).resolve().parents[1] / "fixtures" / "promptfoo" / "capitals.json"


def project(tmp_path: Path, document: dict[str, Any] | None = None) -> Path:
    evals = tmp_path / "evals"
    evals.mkdir()
    if document is None:
        shutil.copyfile(PROMPTFOO, evals / "capitals.json")
    else:
        (evals / "capitals.json").write_text(json.dumps(document))
    config = {
        "version": 1,
        "dataset": {"name": "imported", "path": "capitals.json", "format": "promptfoo"},
        "metrics": {"on_topic": {"type": "recorded_score", "scorer": "on_topic"}},
        "gates": {"topic": {"metric": "on_topic", "tolerate": ["not_applicable"], "proposed_threshold": 0.5}},
    }
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (evals / "authority.yaml").write_text("version: 1\n")
    probe = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert probe.code == 0, probe.err
    fingerprint = probe.json()["decision"]["gates"][0]["fingerprint"]
    ledger = {
        "version": 1,
        "gates": {"topic": {"active": True, "fingerprint": fingerprint, "threshold": 0.5}},
        "datasets": validated_gold(evals),
    }
    (evals / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))
    return tmp_path


def decide(root: Path) -> tuple[int, dict[str, Any], dict[str, Any]]:
    result = run_cli("run", "--no-history", "--format", "json", cwd=root)
    assert result.code in (0, 1), result.err
    card = result.json()
    return result.code, card["decision"]["gates"][0], next(m for m in card["metrics"] if m["name"] == "on_topic")


def test_an_assertion_some_tests_never_declared_is_not_applicable_to_them(tmp_path: Path) -> None:
    # on_topic is declared on tests 0 and 1 only (tests/fixtures/promptfoo/promptfooconfig.yaml); both pass it.
    code, gate, measured = decide(project(tmp_path))
    assert code == 0 and gate["outcome"] == "pass", gate
    population = measured["population"]
    assert population["included"] == 2
    assert population["excluded_by_status"] == {"non_evaluable": 4}
    assert {d["code"] for d in population["top_diagnostics"]} == {"recorded_score_not_declared"}
    out = run_cli("run", "--no-history", "--out", "out", cwd=tmp_path)
    assert out.code == 0, out.err
    recorded = (tmp_path / "out" / "scores.jsonl").read_text()
    assert (
        "example 2 (sample 0): the test declares no 'on_topic' assertion (its scores: promptfoo, names_city, short)"
        in recorded
    )
    assert "when it declares `tolerate: [not_applicable]`" in recorded


def test_an_assertion_a_test_declared_but_the_file_lacks_is_still_an_error(tmp_path: Path) -> None:
    document = json.loads(PROMPTFOO.read_text())
    row = next(r for r in document["results"]["results"] if r["testIdx"] == 0)
    components = row["gradingResult"]["componentResults"]
    components[:] = [c for c in components if c["assertion"].get("metric") != "on_topic"]
    code, gate, measured = decide(project(tmp_path, document))
    assert code == 1 and gate["outcome"] == "blocked", gate
    assert [r["code"] for r in gate["reasons"]] == ["incomplete_measurement"]
    assert measured["population"]["excluded_by_status"] == {"error": 1, "non_evaluable": 4}
    codes = {d["code"] for d in measured["population"]["top_diagnostics"]}
    assert codes == {"recorded_score_missing", "recorded_score_not_declared"}


def test_without_the_tests_declarations_a_missing_score_cannot_be_told_apart(tmp_path: Path) -> None:
    """A file whose results do not hold each test's declarations (testCase.assert): what a missing score means cannot
    be told, and it stays an error rather than being guessed inapplicable."""
    document = json.loads(PROMPTFOO.read_text())
    for row in document["results"]["results"]:
        row["testCase"].pop("assert", None)
    code, gate, measured = decide(project(tmp_path, document))
    assert code == 1 and gate["outcome"] == "blocked", gate
    assert measured["population"]["excluded_by_status"] == {"error": 4}
