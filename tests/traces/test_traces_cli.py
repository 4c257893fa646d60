"""Gating on traces through the real CLI: metrics, a judge and a per-example check on SDK-made spans."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from evalglass.testing.fake_openai import FakeOpenAI
from tests.e2e.project import loaded_by_a_run, run_cli
from tests.traces.otel import chat_span, recording, write_json, write_protobuf


def project(root: Path, config: dict[str, Any], spans: Any, *, protobuf: bool = False) -> Path:
    evals = root / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    name = "traces.binpb" if protobuf else "traces.jsonl"
    (write_protobuf if protobuf else write_json)(spans, evals / name)
    config = {"version": 1, "dataset": {"name": "prod", "path": name, "format": "otlp"}, **config}
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    if not (evals / "authority.yaml").exists():
        (evals / "authority.yaml").write_text("version: 1\n")
    return evals


def support_spans(*, uncaptured: int = 1) -> Any:
    with recording() as (tracer, finished):
        for index in range(8):
            chat_span(tracer, f"Q{index}: how long is the refund window?", "30 days" if index % 4 else "No idea.")
        for _ in range(uncaptured):
            chat_span(tracer, None, None)
        return finished()


def approve(root: Path, gate: str, **entry: Any) -> None:
    """What a host does: from an informational run, paste explain's entry into the ledger."""
    (root / "evals" / "authority.yaml").write_text("version: 1\n")
    assert run_cli("run", "--no-history", cwd=root).code == 0
    explained = run_cli("explain", gate, "--format", "json", cwd=root).out
    ledger = yaml.safe_load(json.loads(explained)[0]["ledger_entry"].replace("<your name>", "host"))
    ledger["gates"][gate].update(entry)
    (root / "evals" / "authority.yaml").write_text(yaml.safe_dump({"version": 1, **ledger}, sort_keys=False))


def scores_of(root: Path, metric: str) -> list[Any]:
    folder = Path((root / ".evalglass" / "last-run").read_text().strip())
    blocks = [json.loads(line) for line in (folder / "scores.jsonl").read_text().splitlines()]
    return [score for block in blocks for score in block["scores"][metric]]


CONTAINS = {"metrics": {"days": {"type": "contains", "field": "text", "value": "days"}}}


def test_a_gate_on_traces_measures_what_was_captured_and_blocks_on_what_was_not(tmp_path: Path) -> None:
    project(
        tmp_path, {**CONTAINS, "gates": {"answers": {"metric": "days", "proposed_threshold": 0.5}}}, support_spans()
    )
    approve(tmp_path, "answers", threshold=0.5)
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    card = result.json()
    assert result.code == 1
    (gate,) = card["decision"]["gates"]
    assert gate["outcome"] == "blocked" and [r["code"] for r in gate["reasons"]] == ["incomplete_measurement"]
    metric = card["metrics"][0]
    assert metric["estimate"]["point"] == 0.75 and metric["population"]["included"] == 8
    last = scores_of(tmp_path, "days")[-1]
    assert last["status"] == "non_evaluable" and last["diagnostics"][0]["code"] == "content_not_captured"
    assert last.get("value") is None  # never 0.0

    # The host tolerates examples whose content was not captured: the gate decides on the 8 it measured.
    config = yaml.safe_load((tmp_path / "evals" / "evalglass.yaml").read_text())
    config["gates"]["answers"]["tolerate"] = ["non_evaluable"]
    (tmp_path / "evals" / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    approve(tmp_path, "answers", threshold=0.5)
    tolerated = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert tolerated.code == 0, tolerated.out
    assert tolerated.json()["decision"]["gates"][0]["outcome"] == "pass"


def test_protobuf_traces_score_like_json_lines(tmp_path: Path) -> None:
    spans = support_spans()
    project(tmp_path / "json", CONTAINS, spans)
    project(tmp_path / "proto", CONTAINS, spans, protobuf=True)
    for root in (tmp_path / "json", tmp_path / "proto"):
        assert run_cli("run", "--no-history", cwd=root).code == 0
    assert scores_of(tmp_path / "json", "days") == scores_of(tmp_path / "proto", "days")


def test_a_per_example_check_runs_on_trace_outputs(tmp_path: Path) -> None:
    checker = tmp_path / "evals" / "mentions_days.py"
    checker.parent.mkdir(parents=True)
    checker.write_text("import sys\nsys.exit(0 if 'days' in open(sys.argv[1]).read() else 1)\n")
    config = {
        "checks": {
            "says-days": {
                "command": [sys.executable, "mentions_days.py", "{target}/answer.txt"],
                "output_file": "answer.txt",
                "policy": {"id": "days-v1", "pass_codes": [0], "fail_codes": [1]},
            }
        },
        "metrics": {"checked": {"type": "check", "check": "says-days", "field": "text"}},
    }
    project(tmp_path, config, support_spans())
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["estimate"]["point"] == 0.75
    assert metric["population"]["excluded_by_status"] == {"non_evaluable": 1}


def test_a_judge_reads_the_traced_conversation(tmp_path: Path) -> None:
    prompts: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        prompts.append(prompt)
        return json.dumps({"score": 5 if "30 days" in prompt else 1})

    with FakeOpenAI(reply=reply) as server:
        (tmp_path / "evals").mkdir()
        (tmp_path / "evals" / "rubric.md").write_text("5 when the answer is right.\n")
        judge = {
            "type": "llm_judge",
            "field": "text",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": server.base_url,
            "model": "judge",
            "api_key_env": "EVALGLASS_TRACES_KEY",
            "prompt": "Question: {{ example.input.messages[0].parts[0].content }}\nAnswer: {{ output }}\n{{ rubric }}",
            "retry": {"max_attempts": 1},
        }
        project(tmp_path, {"metrics": {"helpful": judge}}, support_spans())
        result = run_cli(
            "run", "--no-history", "--no-progress", "--format", "json", cwd=tmp_path, env={"EVALGLASS_TRACES_KEY": "k"}
        )
    assert result.code == 0, result.err
    assert len(prompts) == 8  # the uncaptured example was never sent
    assert any(prompt.startswith("Question: Q1: how long is the refund window?\nAnswer: 30 days") for prompt in prompts)
    last = scores_of(tmp_path, "helpful")[-1]
    assert last["status"] == "non_evaluable" and last["diagnostics"][0]["code"] == "content_not_captured"


def test_a_judge_needing_input_that_was_not_captured_does_not_judge(tmp_path: Path) -> None:
    calls: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        calls.append(body["messages"][-1]["content"])
        return json.dumps({"score": 5})

    with recording() as (tracer, finished):
        chat_span(tracer, None, "30 days")  # the answer was captured, the question was not
        spans = finished()
    with FakeOpenAI(reply=reply) as server:
        (tmp_path / "evals").mkdir()
        (tmp_path / "evals" / "rubric.md").write_text("rubric\n")
        judge = {
            "type": "llm_judge",
            "field": "text",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": server.base_url,
            "model": "judge",
            "api_key_env": "EVALGLASS_TRACES_KEY",
            "prompt": "Question: {{ example.input.messages[0].parts[0].content }}\nAnswer: {{ output }}",
        }
        project(tmp_path, {"metrics": {"helpful": judge}}, spans)
        result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path, env={"EVALGLASS_TRACES_KEY": "k"})
    assert result.code == 0, result.err
    assert calls == []
    (score,) = scores_of(tmp_path, "helpful")
    assert score["status"] == "non_evaluable" and score["diagnostics"][0]["code"] == "content_not_captured"


def test_the_gold_fingerprint_covers_the_inputs_and_not_the_outputs(tmp_path: Path) -> None:
    spans = support_spans(uncaptured=0)
    config = {
        "metrics": {"exact": {"type": "exact_match", "field": "text", "reference": "input.model"}},
        "gates": {"exact": {"metric": "exact"}},  # a gate on a reference metric: the run takes the gold fingerprint
    }
    evals = project(tmp_path, config, spans)

    def gold() -> str:
        assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
        card = run_cli("view", "--format", "json", cwd=tmp_path).json()
        return str(card["dataset"]["gold_fingerprint"])

    original = gold()
    assert original.startswith("sha256:")
    path = evals / "traces.jsonl"
    text = path.read_text()
    path.write_text(text.replace("No idea.", "Thirty days."))  # a new output: the gold stands
    assert gold() == original
    path.write_text(text.replace("Q3: how long", "Q3: how short"))  # an edited input: the gold is stale
    assert gold() != original


def test_the_same_traces_twice_are_refused_in_one_line(tmp_path: Path) -> None:
    spans = support_spans(uncaptured=0)
    evals = project(tmp_path, CONTAINS, spans)
    path = evals / "traces.jsonl"
    path.write_text(path.read_text() * 2)
    for window in (2, 100):  # the repeat found after its trace completed, and while it is still open
        config = yaml.safe_load((evals / "evalglass.yaml").read_text())
        config["dataset"]["traces"] = {"window": window}
        (evals / "evalglass.yaml").write_text(yaml.safe_dump(config))
        result = run_cli("run", "--no-history", cwd=tmp_path)
        assert result.code == 2
        (line,) = result.err.strip().splitlines()
        assert line.startswith(f"error: {Path('evals/traces.jsonl')}:9: span ") or "traces.jsonl:9: span" in line, line
        assert "was already read at line 1" in line and "Traceback" not in result.err


def test_the_examples_behind_the_numbers_show_the_traced_conversation(tmp_path: Path) -> None:
    project(tmp_path, CONTAINS, support_spans())
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    shown = run_cli("view", "--examples", "--format", "json", cwd=tmp_path).json()
    failing = [row for row in shown["examples"] if row["metric"] == "days" and row["state"] == "fail"]
    assert failing and all("No idea." in row["output"] for row in failing)
    report = tmp_path / "report.html"
    assert run_cli("report", "--out", str(report), cwd=tmp_path).code == 0
    page = report.read_text()
    assert "how long is the refund window?" in page and "resourceSpans" not in page


def test_a_run_over_otlp_json_loads_neither_protobuf_nor_the_message_models(tmp_path: Path) -> None:
    """OTLP/JSON lines are read as plain JSON: the protobuf runtime loads only for a protobuf file, and the message
    form's pydantic models (the record's declared schema) are not what a run builds."""
    evals = project(tmp_path, CONTAINS, support_spans())
    never = ["google.protobuf", "opentelemetry", "evalglass.core.conversation", "asyncio", "jinja2", "scipy"]
    loaded = loaded_by_a_run(evals, never)
    card = json.loads((evals / "out" / "scorecard.json").read_text())
    assert card["dataset"]["examples"] == 9, card["dataset"]
    assert loaded == [], f"a run over OTLP/JSON imported {loaded}"
