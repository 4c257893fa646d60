"""A label another tool recorded is worth what the format that wrote it says, never inspect's C/I/P/N everywhere:
an OpenAI Evals model-graded ``choice`` is worth the eval's own ``choice_scores`` (the ``score`` beside it), an
unknown label is an error naming how to map it, the grader's failure to choose is no wrong answer, and the label map
in effect is bound by the metric's fingerprint. Logs are the committed real ``oaieval`` log, turned model-graded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalglass.engine.spec.config import Config
from tests.tools.test_tool_results import INSPECT, OPENAI_EVALS, metric, run


def diagnostics(found: dict[str, Any]) -> dict[str, int]:
    return {d["code"]: d["count"] for d in found["population"]["top_diagnostics"]}


def model_graded(tmp_path: Path, choices: list[str], scores: list[float | None] | None) -> Path:
    """The real log with each sample's ``match`` event replaced by what ``ModelBasedClassify`` records per sample:
    a ``metrics`` event of its ``choice`` and ``score`` (null when the eval declares no ``choice_scores``)."""
    lines = [json.loads(line) for line in OPENAI_EVALS.read_text().splitlines()]
    lines[0]["spec"]["run_config"]["eval_spec"]["cls"] = "evals.elsuite.modelgraded.classify:ModelBasedClassify"
    events = [line for line in lines if line.get("type") == "match"]
    assert len(events) == len(choices)
    graded = [
        {**event, "type": "metrics", "data": {"choice": choice, "score": None if scores is None else scores[n]}}
        for n, (event, choice) in enumerate(zip(events, choices, strict=True))
    ]
    # The answer's sampling event, then the grader's (a second sampling of the same sample), as the eval records them.
    sampling = [
        {**event, "type": "sampling", "data": {"prompt": prompt, "sampled": [sampled]}}
        for event in events
        for prompt, sampled in (("a question", event["data"]["sampled"]), ("Right? Y or N.", "Y"))
    ]
    path = tmp_path / "graded.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [*lines[:2], *sampling, *graded]) + "\n")
    return path


CHOICES = ["Y", "N", "Y", "N", "N", "Y", "N", "N"]
CHOICE = {"choice": {"type": "recorded_score", "scorer": "choice"}}


def test_a_model_graded_choice_is_worth_the_score_the_log_records_beside_it(tmp_path: Path) -> None:
    """Before: "Y" was an error (a false red) and "N" a silent 0.0 by inspect's NOANSWER."""
    path = model_graded(tmp_path, CHOICES, [1.0 if c == "Y" else 0.0 for c in CHOICES])
    result = run(tmp_path, path, "openai-evals", {**CHOICE, "score": {"type": "recorded_score", "scorer": "score"}})
    assert result.code == 0, result.err
    card = result.json()
    for name in ("choice", "score"):
        found = metric(card, name)
        assert found["population"]["included"] == 8, found["population"]
        assert found["estimate"]["point"] == pytest.approx(3 / 8)


def test_a_choice_the_log_gives_no_worth_is_an_error_naming_how_to_map_it_never_a_number(tmp_path: Path) -> None:
    path = model_graded(tmp_path, CHOICES, None)
    result = run(tmp_path, path, "openai-evals", CHOICE)
    assert result.code == 0, result.err
    found = metric(result.json(), "choice")
    assert found["population"]["included"] == 0
    assert diagnostics(found) == {"recorded_score_unmapped": 8}
    message = found["population"]["top_diagnostics"][0]["example"]
    assert "values:" in message and ("'Y'" in message or "'N'" in message)
    declared = {"choice": {**CHOICE["choice"], "values": {"Y": 1, "N": 0}}}
    again = run(tmp_path, path, "openai-evals", declared)
    assert again.code == 0, again.err
    assert metric(again.json(), "choice")["estimate"]["point"] == pytest.approx(3 / 8)


def test_the_graders_failure_to_choose_is_an_error_not_the_lowest_score(tmp_path: Path) -> None:
    choices = ["__invalid__", *CHOICES[1:]]
    path = model_graded(tmp_path, choices, [0.0 if c != "Y" else 1.0 for c in choices])
    result = run(tmp_path, path, "openai-evals", {**CHOICE, "score": {"type": "recorded_score", "scorer": "score"}})
    assert result.code == 0, result.err
    for name in ("choice", "score"):
        found = metric(result.json(), name)
        assert diagnostics(found) == {"recorded_score_error": 1}
        assert "__invalid__" in found["population"]["top_diagnostics"][0]["example"]
        assert found["estimate"]["point"] == pytest.approx(2 / 7)


def test_one_choice_worth_two_scores_in_one_log_stops_the_run_naming_both_lines(tmp_path: Path) -> None:
    scores: list[float | None] = [1.0 if c == "Y" else 0.0 for c in CHOICES]
    scores[5] = 0.0  # the third "Y", at line 24 (the spec, the report, 16 sampling events, then the metrics)
    path = model_graded(tmp_path, CHOICES, scores)
    result = run(tmp_path, path, "openai-evals", CHOICE)
    assert result.code == 2
    (line,) = result.err.strip().splitlines()
    assert "graded.jsonl" in line and "'Y'" in line and "line 19" in line and "line 24" in line


def test_inspect_labels_are_inspects_and_a_file_of_our_own_maps_none(tmp_path: Path) -> None:
    inspect = run(tmp_path / "i", INSPECT, "inspect", {"match": {"type": "recorded_score", "scorer": "match"}})
    assert inspect.code == 0, inspect.err
    assert metric(inspect.json(), "match")["population"]["included"] > 0
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"id": "a", "output": {"scores": {"m": {"value": "C"}}}}) + "\n")
    result = run(tmp_path / "j", own, "jsonl", {"m": {"type": "recorded_score", "scorer": "m"}})
    assert result.code == 0, result.err
    assert diagnostics(metric(result.json(), "m")) == {"recorded_score_unmapped": 1}


def fingerprint(fmt: str, values: dict[str, float] | None = None) -> str:
    spec: dict[str, Any] = {"type": "recorded_score", "scorer": "m"}
    if values is not None:
        spec["values"] = values
    config = Config.model_validate(
        {
            "dataset": {"name": "d", "path": "d", "format": fmt},
            "metrics": {"m": spec},
            "gates": {"g": {"metric": "m", "proposed_threshold": 0.5}},
        }
    )
    return config.gate_fingerprint("g")


def test_the_label_map_in_effect_is_bound_by_the_fingerprint() -> None:
    assert fingerprint("inspect") == fingerprint("inspect", {"C": 1, "I": 0, "P": 0.5, "N": 0})
    assert fingerprint("openai-evals") == fingerprint("openai-evals", {})
    assert fingerprint("inspect") != fingerprint("openai-evals")
    assert fingerprint("openai-evals", {"Y": 1}) != fingerprint("openai-evals", {"Y": 0})
