"""docs/traces.md's worked example, run as written: its config, on spans the SDK made as the page describes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.e2e.project import run_cli
from tests.traces.otel import chat_span, recording, write_json
from tests.traces.test_export_cli import events
from tests.traces.test_traces_cli import approve

DOCS = Path(__file__).resolve().parents[2] / "docs" / "traces.md"


def blocks(kind: str) -> list[str]:
    """The page's fenced blocks of one kind (``""``: fences without a language), in order."""
    found = re.findall(r"^```(\w*)\n(.*?)^```$", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return [body for language, body in found if language == kind]


def test_the_worked_example_runs_as_documented(tmp_path: Path) -> None:
    config = next(block for block in blocks("yaml") if block.startswith("version: 1\ndataset:"))
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "evalglass.yaml").write_text(config)
    with recording() as (tracer, finished):
        for index in range(10):  # content captured: nine answers cite the policy
            chat_span(tracer, f"Can I return item {index}?", "Yes, within 30 days." if index else "Maybe.")
        for _ in range(2):  # capture switched off for a while
            chat_span(tracer, None, None)
        spans = finished()
    write_json(spans, evals / "traces.jsonl", per_line=4)
    approve(tmp_path, "policy", threshold=0.8)
    documented = yaml.safe_load(next(block for block in blocks("yaml") if block.startswith("version: 1\ngates:")))
    written = yaml.safe_load((evals / "authority.yaml").read_text())
    assert set(written["gates"]["policy"]) >= set(documented["gates"]["policy"])  # the page shows a real entry

    result = run_cli("run", "--no-history", cwd=tmp_path, env={"COLUMNS": "80"})  # one block per metric
    assert result.code == 0, result.out + result.err
    shown = next(block for block in blocks("") if "cites_policy" in block)
    for line in shown.strip().splitlines():
        assert line.strip() in result.out, line
    assert "verdict: pass" in result.out

    exported = tmp_path / "evaluations.jsonl"
    assert run_cli("export", "--format", "otlp", "--out", str(exported), cwd=tmp_path).code == 0
    found = events(exported.read_text())
    assert len(found) == 24 and all(event["span"] for event in found)
