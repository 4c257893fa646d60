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
