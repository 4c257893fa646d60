"""A wrong answer is a measurement of the system, not a failure of the metric (issue 27), through the real CLI.

The suite a new user tried: a support-ticket triage bot, 2,000 tickets, JSON answers in their own outputs file
(``task.path``, ``parse: json``), 28 of them cut off or wrapped in a code fence. ``exact_match`` on the parsed
``intent``, a ``json_schema`` metric and a continuous python metric, each gated. The malformed answers are the
system's mistakes: every gate decides (none is blocked by them), the schema metric reads 1972/2000, and the
population view counts the 28 ``output_not_json`` in every report. ``on_invalid_output: exclude`` brings back the
old behaviour: the 28 are left out and every gate blocks.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import yaml

from tests.e2e.project import Project, make_project

EXAMPLES = 2000
MALFORMED = 28
INTENTS = ["refund", "cancel", "billing", "shipping", "technical"]
SCHEMA = {
    "type": "object",
    "required": ["intent", "priority", "confidence"],
    "properties": {
        "intent": {"enum": INTENTS},
        "priority": {"enum": ["low", "medium", "high"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
GRADER = '''
def calibrated(output, reference):
    """1 minus the Brier score of the stated confidence that the intent is right: continuous in [0, 1]."""
    right = 1.0 if output.get("intent") == reference else 0.0
    return 1.0 - (float(output["confidence"]) - right) ** 2
'''
GATES = {
    "intent_accuracy": {"metric": "intent", "proposed_threshold": 0.85},
    "schema_valid": {"metric": "shape", "proposed_threshold": 0.97},
    "confidence_quality": {"metric": "confidence", "proposed_threshold": 0.7},
}


def metrics(on_invalid_output: str | None = None) -> dict[str, Any]:
    declared: dict[str, dict[str, Any]] = {
        "intent": {"type": "exact_match", "field": "intent", "reference": "intent"},
        "shape": {"type": "json_schema", "schema": SCHEMA},
        "confidence": {
            "type": "python",
            "function": "graders.py:calibrated",
            "reference": "intent",
            "scale": {"min": 0, "max": 1},
        },
    }
    if on_invalid_output is not None:
        for spec in declared.values():
            spec["on_invalid_output"] = on_invalid_output
    return declared


def write_suite(project: Project, seed: int = 27) -> tuple[int, int]:
    """Tickets with their gold intent, and the bot's answers in their own file: half the malformed ones cut off
    mid-answer, half wrapped in a Markdown code fence. Returns (answers right among the well-formed, malformed)."""
    rng = random.Random(seed)
    malformed = set(rng.sample(range(EXAMPLES), MALFORMED))
    tickets, answers, right = [], [], 0
    for index in range(EXAMPLES):
        intent = rng.choice(INTENTS)
        said = intent if rng.random() < 0.93 else rng.choice(INTENTS)
        text = json.dumps(
            {"intent": said, "priority": rng.choice(["low", "medium", "high"]), "confidence": rng.randint(50, 99) / 100}
        )
        if index in malformed:
            text = text[: len(text) // 2] if len(malformed) % 2 else f"```json\n{text}\n```"
            malformed.discard(index)
        else:
            right += said == intent
        tickets.append({"id": f"t-{index:04d}", "ticket": f"ticket {index}", "intent": intent})
        answers.append({"id": f"t-{index:04d}", "answer": text})
    (project.evals / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in tickets))
    (project.evals / "answers.jsonl").write_text("".join(json.dumps(row) + "\n" for row in answers))
    (project.evals / "graders.py").write_text(GRADER)
    return right, MALFORMED


def triage_project(tmp_path, on_invalid_output: str | None = None) -> tuple[Project, int]:
    project = make_project(
        tmp_path,
        task={"type": "recorded", "path": "answers.jsonl", "field": "answer", "parse": "json"},
        metrics=metrics(on_invalid_output),
        gates=GATES,
    )
    right, _ = write_suite(project)
    return project, right


def approve_every_gate(project: Project) -> None:
    """What the host writes after reading `explain`: each gate active at its proposed threshold, the gold
    validated."""
    project.run()
    ledger: dict[str, Any] = {"version": 1, "gates": {}}
    for name, gate in GATES.items():
        ledger["gates"][name] = {
            "active": True,
            "threshold": gate["proposed_threshold"],
            "fingerprint": project.gate_fingerprint(name),
        }
    ledger["datasets"] = {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}}
    project.write_ledger(ledger)


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def test_malformed_answers_are_measured_and_every_gate_decides(tmp_path):
    project, right = triage_project(tmp_path)
    approve_every_gate(project)
    result = project.run("--out", "out", "--format", "json", "--html", "report.html")
    card = result.json()
    gates = by_name(card["decision"]["gates"])
    assert {name: gate["outcome"] for name, gate in gates.items()} == dict.fromkeys(GATES, "pass"), gates
    assert result.code == 0 and card["decision"]["verdict"] == "pass"
    found = by_name(card["metrics"])
    # The schema metric catches exactly the malformed answers: 1972 of 2000 conform.
    assert found["shape"]["estimate"]["point"] == pytest.approx(0.986, abs=1e-12)
    assert found["shape"]["estimate"]["point"] == (EXAMPLES - MALFORMED) / EXAMPLES
    assert found["intent"]["estimate"]["point"] == right / EXAMPLES  # a malformed answer is a wrong intent
    for metric in found.values():
        population = metric["population"]
        assert population["included"] == EXAMPLES and population["excluded_total"] == 0
        counted = {item["code"]: item for item in population["top_diagnostics"]}["output_not_json"]
        assert (counted["count"], counted["included"]) == (MALFORMED, MALFORMED)
    # Every report shows the 28 as in the value: the terminal, report.md and the HTML report.
    text = project.cli("view", "out").out
    report = (tmp_path / "out" / "report.md").read_text()
    page = (tmp_path / "report.html").read_text()
    for shown in (text, report, page):
        assert "output_not_json" in shown and "×28 (in value)" in shown


def test_with_exclude_the_malformed_answers_are_left_out_and_every_gate_blocks(tmp_path):
    project, _ = triage_project(tmp_path, on_invalid_output="exclude")
    approve_every_gate(project)
    result = project.run("--out", "out", "--format", "json")
    card = result.json()
    assert result.code == 1 and card["decision"]["verdict"] == "blocked"
    for gate in card["decision"]["gates"]:
        assert gate["outcome"] == "blocked"
        assert "incomplete_measurement" in {reason["code"] for reason in gate["reasons"]}
    found = by_name(card["metrics"])
    assert found["shape"]["estimate"]["point"] == 1.0  # the answers it exists to catch were left out
    for metric in found.values():
        assert metric["population"]["excluded_by_status"] == {"error": MALFORMED}


def test_the_option_is_part_of_what_an_approval_covers(tmp_path):
    """Approved under `worst`, switched to `exclude` in the config: the approval no longer decides."""
    project, _ = triage_project(tmp_path)
    approve_every_gate(project)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"] = metrics("exclude")
    (project.evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    card = project.run("--format", "json").json()
    for gate in card["decision"]["gates"]:
        assert "approval_stale" in {reason["code"] for reason in gate["reasons"]}


def test_gates_that_disagree_on_the_direction_leave_a_wrong_answer_out_and_say_why(tmp_path):
    """A band (at least one value, at most another) has no single worst end: the answer is left out, the gates
    cannot pass on it, and the diagnostic says what to change."""
    project = make_project(
        tmp_path,
        task={"type": "recorded", "parse": "json"},
        metrics={"intent": {"type": "exact_match", "expected": "refund", "field": "intent"}},
        gates={
            "at_least": {"metric": "intent", "proposed_threshold": 0.1},
            "at_most": {"metric": "intent", "direction": "lower_is_better", "proposed_threshold": 0.9},
        },
    )
    project.write_rows([{"id": "a", "output": '{"intent": "refund"}'}, {"id": "b", "output": '{"intent": "ref'}])
    card = project.run("--format", "json").json()
    (metric,) = card["metrics"]
    assert metric["population"]["excluded_by_status"] == {"error": 1}
    assert "disagree on which way it improves" in metric["population"]["top_diagnostics"][0]["example"]
