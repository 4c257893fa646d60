"""A number YAML 1.1 reads as text (``7e-1``, ``1e3``: an exponent without a dot and a sign; a quoted ``"0.7"``) is
refused in one line that says so and how to write it, at its line, in the ledger and the config alike; not
"Input should be a valid number" about what the user wrote as one."""

from __future__ import annotations

import pytest

from tests.e2e.project import make_project
from tests.e2e.test_hostile_inputs import one_line_error
from tests.e2e.test_verdicts import approve


@pytest.mark.parametrize(
    ("written", "spelled"),
    [("7e-1", "0.7"), ("1e-3", "0.001"), ('"0.7"', "0.7"), ("5E-1", "0.5"), ("1e-20", "1.0e-20")],
)
def test_a_ledger_threshold_yaml_reads_as_text_names_the_number_to_write(tmp_path, written, spelled):
    project = make_project(tmp_path)
    ledger = approve(project, threshold=0.123)
    project.write_ledger(ledger)
    text = (project.evals / "authority.yaml").read_text()
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if "threshold: 0.123" in row)
    (project.evals / "authority.yaml").write_text(text.replace("threshold: 0.123", f"threshold: {written}"))
    message = one_line_error(project.run(), f"authority.yaml:{line}:", "gates.accuracy.threshold", "is text to YAML")
    assert message.endswith(f"write {spelled} unquoted in the authority ledger"), message


def test_a_config_number_yaml_reads_as_text_names_its_line_and_spelling(tmp_path):
    project = make_project(tmp_path)
    config = (project.evals / "evalglass.yaml").read_text()
    assert "proposed_threshold: 0.7\n" in config
    (project.evals / "evalglass.yaml").write_text(
        config.replace("proposed_threshold: 0.7\n", "proposed_threshold: 0.7\n    min_n: 1e1\n")
    )
    line = (project.evals / "evalglass.yaml").read_text().splitlines().index("    min_n: 1e1") + 1
    message = one_line_error(project.run(), f"evalglass.yaml:{line}:", "gates.accuracy.min_n: '1e1' is text to YAML")
    assert message.endswith("write 10 unquoted in the config"), message


def test_text_that_is_no_number_keeps_the_plain_message(tmp_path):
    project = make_project(tmp_path)
    ledger = approve(project, threshold=0.123)
    project.write_ledger(ledger)
    text = (project.evals / "authority.yaml").read_text()
    (project.evals / "authority.yaml").write_text(text.replace("threshold: 0.123", "threshold: high"))
    message = one_line_error(project.run(), "gates.accuracy.threshold")
    assert "is text to YAML" not in message


@pytest.mark.parametrize(
    ("written", "key", "spelled"),
    [
        ('proposed_threshold: "0.8"', "gates.accuracy.proposed_threshold: '0.8'", "0.8"),
        ("min_n: '5'", "gates.accuracy.min_n: '5'", "5"),
        ('level: "0.9"', "gates.accuracy.level: '0.9'", "0.9"),
    ],
)
def test_a_quoted_config_number_is_refused_as_the_ledger_refuses_one(tmp_path, written, key, spelled):
    """The ledger reads `threshold: "0.8"` as the text it is; the config used to turn the same text into 0.8
    silently (pydantic's lax mode). Both now say it at its line, and how to write it."""
    project = make_project(tmp_path)
    config = (project.evals / "evalglass.yaml").read_text()
    edited = config.replace("proposed_threshold: 0.7\n", f"proposed_threshold: 0.7\n    {written}\n")
    if written.startswith("proposed_threshold"):
        edited = config.replace("proposed_threshold: 0.7\n", f"{written}\n")
    (project.evals / "evalglass.yaml").write_text(edited)
    line = next(n for n, row in enumerate(edited.splitlines(), start=1) if row.strip() == written)
    message = one_line_error(project.run(), f"evalglass.yaml:{line}:", key, "is text to YAML")
    assert message.endswith(f"write {spelled} unquoted in the config"), message
    (project.evals / "evalglass.yaml").write_text(edited.replace(written, written.replace('"', "").replace("'", "")))
    assert project.run().code == 0  # unquoted, the same config runs


def test_text_a_field_reads_on_purpose_is_not_taken_for_a_quoted_number(tmp_path):
    """A quoted literal a metric compares as text (`expected: "1"` for exact_match) is text in the model too: no
    refusal, and the answer "1" matches it."""
    project = make_project(tmp_path, metrics={"exact": {"type": "exact_match", "expected": "1"}})
    project.write_rows([{"id": f"ex-{index}", "output": "1"} for index in range(3)])
    assert "expected: '1'" in (project.evals / "evalglass.yaml").read_text()
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    assert result.json()["metrics"][0]["estimate"]["point"] == 1.0
