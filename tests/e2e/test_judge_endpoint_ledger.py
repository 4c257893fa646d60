"""A ledger's `judge_endpoint` that approves nothing, or that names no server, is refused at its line (exit 2)."""

from __future__ import annotations

from pathlib import Path

from .project import make_project


def test_a_judge_endpoint_on_a_gate_without_a_judge_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_ledger(
        "version: 1\ngates:\n  accuracy:\n    active: true\n    threshold: 0.7\n"
        '    judge_endpoint: "openai https://api.openai.com/v1"\n'
    )
    result = project.run()
    assert result.code == 2
    assert "authority.yaml:6" in result.err and "calls no LLM judge" in result.err
    assert "remove `judge_endpoint`" in result.err and "Traceback" not in result.err


def test_a_judge_endpoint_that_names_no_api_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    project.write_ledger(
        "version: 1\ngates:\n  accuracy:\n    active: true\n    threshold: 0.7\n"
        '    judge_endpoint: "https://api.openai.com/v1"\n'
    )
    result = project.run()
    assert result.code == 2
    assert "authority.yaml:6" in result.err and "openai https://api.openai.com/v1" in result.err
    assert "Traceback" not in result.err
