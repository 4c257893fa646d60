"""Case-insensitive matching is Unicode's canonical caseless match: the same text written precomposed (NFC, ``é``)
and decomposed (NFD, ``e`` + U+0301) is one text once case is ignored, so an answer right in either form is never
scored wrong and a gate never goes red for how a keyboard or a tokenizer composed an accent."""

from __future__ import annotations

import unicodedata

import pytest
import yaml

from tests.e2e.project import make_project
from tests.e2e.test_verdicts import approve

CITIES = ["Bogotá", "Zürich", "Québec", "São Paulo", "Malmö", "Kraków", "Reykjavík", "Córdoba"]


def rows() -> list[dict[str, str]]:
    """Gold in NFC, answers in NFD and another case: each answer is right."""
    return [
        {"id": f"c{i}", "expected": city, "output": unicodedata.normalize("NFD", city.upper())}
        for i, city in enumerate(CITIES)
    ]


@pytest.mark.parametrize(
    "metric",
    [
        {"type": "exact_match", "reference": "expected", "normalize": {"case": True}},
        {"type": "contains", "reference": "expected", "case_sensitive": False},
    ],
    ids=["exact_match-case", "contains-case_insensitive"],
)
def test_a_right_answer_in_another_normal_form_passes_a_case_insensitive_gate(tmp_path, metric) -> None:
    project = make_project(tmp_path, metrics={"exact": metric})
    project.write_rows(rows())
    project.write_ledger(approve(project, threshold=1.0))
    result = project.run("--format", "json")
    assert result.code == 0, result.out + result.err
    card = result.json()
    gate = card["decision"]["gates"][0]
    assert gate["outcome"] == "pass" and gate["value"] == 1.0, gate


def test_case_insensitive_contains_does_not_find_a_letter_inside_an_accented_one(tmp_path) -> None:
    """Composed, ``cafe`` is not found in ``café`` written decomposed (whose ``e`` is only part of a letter)."""
    project = make_project(tmp_path, metrics={"exact": {"type": "contains", "value": "cafe", "case_sensitive": False}})
    project.write_rows([{"id": "a", "output": "un cafe\u0301 noir"}, {"id": "b", "output": "CAFE au lait"}])
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    scores = {m["name"]: m for m in result.json()["metrics"]}["exact"]
    assert scores["estimate"]["point"] == 0.5


def test_a_right_answer_in_another_normal_form_matches_an_ignorecase_regex(tmp_path) -> None:
    """``regex@3``: the output is matched composed and fully case-folded; ``cafe`` stays unfound in ``café``."""
    metric = {"type": "regex", "pattern": r"^(bogotá|zürich|straße)$", "flags": ["ignorecase"]}
    project = make_project(tmp_path, metrics={"exact": metric})
    project.write_rows(
        [
            {"id": "a", "output": unicodedata.normalize("NFD", "BOGOTÁ")},
            {"id": "b", "output": unicodedata.normalize("NFD", "Zürich")},
            {"id": "c", "output": "STRASSE"},
            {"id": "d", "output": "Bogota"},
        ]
    )
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    scores = {m["name"]: m for m in result.json()["metrics"]}["exact"]
    assert scores["estimate"]["point"] == 0.75


def test_an_ignorecase_pattern_written_decomposed_is_refused_naming_the_position(tmp_path) -> None:
    """Normalising a pattern can change what it means, so a decomposed one is refused rather than rewritten."""
    metric = {"type": "regex", "pattern": "cafe\u0301", "flags": ["ignorecase"]}
    project = make_project(tmp_path, metrics={"exact": metric})
    project.write_rows([{"id": "a", "output": "café"}])
    result = project.run("--format", "json")
    assert result.code == 2, result.out + result.err
    assert "not in composed form (NFC) at position 4" in result.err
    assert "Traceback" not in result.err


def test_an_inline_ignorecase_flag_is_the_same_caseless_match(tmp_path) -> None:
    """``(?i)`` at the start is the ``ignorecase`` flag as Python reads it: the same rule, the same refusal."""
    project = make_project(tmp_path, metrics={"exact": {"type": "regex", "pattern": "(?i)^straße$"}})
    project.write_rows([{"id": "a", "output": "STRASSE"}, {"id": "b", "output": "Strasse!"}])
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    assert {m["name"]: m for m in result.json()["metrics"]}["exact"]["estimate"]["point"] == 0.5
    project.write_config(
        {
            **yaml.safe_load((project.evals / "evalglass.yaml").read_text()),
            "metrics": {"exact": {"type": "regex", "pattern": "(?i)cafe\u0301"}},
        }
    )
    refused = project.run()
    assert refused.code == 2 and "not in composed form (NFC) at position 8" in refused.err, refused.err
