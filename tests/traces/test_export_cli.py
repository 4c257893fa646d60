"""Results out: `evalglass export RUN --format otlp` writes gen_ai.evaluation.result events, decoded here by the
OpenTelemetry project's own OTLP/JSON codec (opentelemetry-proto-json)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.proto_json.collector.logs.v1.logs_service import ExportLogsServiceRequest

from tests.e2e.project import run_cli
from tests.traces.otel import chat_span, recording
from tests.traces.test_traces_cli import project


def events(text: str) -> list[dict[str, Any]]:
    """Every log record of the export, decoded by the OTLP JSON codec, as {event, trace, span, attributes}."""
    found = []
    for line in text.splitlines():
        request = ExportLogsServiceRequest.from_dict(orjson.loads(line))
        for resource in request.resource_logs:
            for scope in resource.scope_logs:
                for record in scope.log_records:
                    attributes = {}
                    for attribute in record.attributes:
                        value = attribute.value
                        attributes[attribute.key] = next(
                            v
                            for v in (value.string_value, value.double_value, value.int_value, value.bool_value)
                            if v is not None
                        )
                    found.append(
                        {
                            "event": record.event_name,
                            "trace": record.trace_id.hex() if record.trace_id else None,
                            "span": record.span_id.hex() if record.span_id else None,
                            "attributes": attributes,
                        }
                    )
    return found


def test_a_trace_run_exports_its_scores_onto_the_spans_they_measured(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "How long is the refund window?", "30 days")
        chat_span(tracer, "And for sale items?", "No idea.")
        chat_span(tracer, None, None)
        spans = finished()
    config = {
        "metrics": {
            "days": {"type": "contains", "field": "text", "value": "days"},
            "tokens": {"type": "numeric_bounds", "field": "usage.output_tokens", "max": 100},
        }
    }
    project(tmp_path, config, spans)
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    result = run_cli("export", "--format", "otlp", cwd=tmp_path)
    assert result.code == 0, result.err
    found = events(result.out)
    assert len(found) == 6 and {e["event"] for e in found} == {"gen_ai.evaluation.result"}
    by_span = {(format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")): s for s in spans}
    for event in found:
        span = by_span[(event["trace"], event["span"])]  # linked to the very span the example came from
        assert event["attributes"]["gen_ai.response.id"] == span.attributes["gen_ai.response.id"]
    days = [e["attributes"] for e in found if e["attributes"]["gen_ai.evaluation.name"] == "days"]
    assert [(a.get("gen_ai.evaluation.score.value"), a["gen_ai.evaluation.score.label"]) for a in days] == [
        (1.0, "pass"),
        (0.0, "fail"),
        (None, "non_evaluable"),
    ]
    assert "output.text was not captured" in days[2]["gen_ai.evaluation.explanation"]

    out = tmp_path / "evaluations.jsonl"
    written = run_cli("export", "--format", "otlp", "--out", str(out), cwd=tmp_path)
    assert written.code == 0 and "wrote 6 gen_ai.evaluation.result events" in written.err
    assert events(out.read_text()) == found


def test_without_the_trace_file_the_events_are_still_linked_but_carry_no_response_id(tmp_path: Path) -> None:
    with recording() as (tracer, finished):
        chat_span(tracer, "q", "a days")
        spans = finished()
    evals = project(tmp_path, {"metrics": {"days": {"type": "contains", "field": "text", "value": "days"}}}, spans)
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    (evals / "traces.jsonl").write_text((evals / "traces.jsonl").read_text().replace("chatcmpl", "other"))
    (event,) = events(run_cli("export", "--format", "otlp", cwd=tmp_path).out)
    assert event["trace"] == format(spans[0].context.trace_id, "032x")
    assert "gen_ai.response.id" not in event["attributes"]


def test_an_imported_tool_run_exports_each_sample_and_the_tools_failures_as_errors(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "inspect" / "capitals.eval"
    evals = tmp_path / "evals"
    evals.mkdir()
    shutil.copyfile(fixture, evals / fixture.name)
    config = {
        "version": 1,
        "dataset": {"name": "capitals", "path": fixture.name, "format": "inspect"},
        "metrics": {"match": {"type": "recorded_score", "scorer": "match"}},
    }
    (evals / "evalglass.yaml").write_text(json.dumps(config))
    (evals / "authority.yaml").write_text("version: 1\n")
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    found = events(run_cli("export", "--format", "otlp", cwd=tmp_path).out)
    assert len(found) == 24 and all(e["trace"] is None for e in found)
    assert {e["attributes"]["evalglass.sample"] for e in found} == {0, 1}
    failed = [e["attributes"] for e in found if e["attributes"]["evalglass.example.id"] == "cap-07"]
    assert [a["error.type"] for a in failed] == ["tool_sample_failed", "tool_sample_failed"]
    assert all(
        "gen_ai.evaluation.score.value" not in a and a["gen_ai.evaluation.score.label"] == "error" for a in failed
    )


def test_a_run_that_does_not_add_up_is_not_exported(tmp_path: Path) -> None:
    """Exported events flow into an observability tool as the run's results: an edited scorecard or scores file is
    refused in one line (exit 2), as every reader of a finished run refuses it."""
    with recording() as (tracer, finished):
        chat_span(tracer, "q", "no")
        spans = finished()
    project(tmp_path, {"metrics": {"days": {"type": "contains", "field": "text", "value": "days"}}}, spans)
    assert run_cli("run", "--no-history", cwd=tmp_path).code == 0
    (run,) = (path for path in (tmp_path / ".evalglass" / "runs").iterdir() if path.is_dir())
    assert run_cli("export", "--format", "otlp", str(run), cwd=tmp_path).code == 0
    scores = run / "scores.jsonl"
    original = scores.read_bytes()
    scores.write_bytes(original.replace(b'"days":[0.0]', b'"days":[1.0]'))
    assert scores.read_bytes() != original
    result = run_cli("export", "--format", "otlp", str(run), cwd=tmp_path)
    assert result.code == 2 and "does not add up" in result.err and "Traceback" not in result.err
    assert result.out == ""
    scores.write_bytes(original)
    card = run / "scorecard.json"
    edited = card.read_bytes().replace(b'"verdict": "informational"', b'"verdict": "pass"', 1)
    assert edited != card.read_bytes()
    card.write_bytes(edited)
    result = run_cli("export", "--format", "otlp", str(run), cwd=tmp_path)
    assert result.code == 2 and "scorecard.json is not the file digests.json lists" in result.err and result.out == ""


def test_a_run_with_variants_exports_each_variants_scores_naming_the_variant(tmp_path: Path) -> None:
    """Each variant's own scores file, every example once per variant, the variant named on each event; the same
    run's scores exactly (one event per variant per example, pass/fail as scored)."""
    from tests.e2e.test_variants_cli import ROWS, variant_project

    project = variant_project(tmp_path, variants={"good": {}, "bad": {"function": "app.py:bad"}})
    assert project.run("--out", "runs/r", "--no-history").code in (0, 1)
    result = run_cli("export", "runs/r", "--format", "otlp", cwd=project.root)
    assert result.code == 0, result.err
    found = [event["attributes"] for event in events(result.out)]
    assert len(found) == 2 * len(ROWS)
    by_variant: dict[str, dict[str, str]] = {}
    for attributes in found:
        assert attributes["gen_ai.evaluation.name"] == "exact"
        by_variant.setdefault(attributes["evalglass.variant"], {})[attributes["evalglass.example.id"]] = attributes[
            "gen_ai.evaluation.score.label"
        ]
    assert set(by_variant) == {"good", "bad"}
    assert set(by_variant["good"].values()) == {"pass"} and len(by_variant["good"]) == len(ROWS)
    # app.py:bad answers "no" on every third example: exactly those fail.
    assert {i for i, label in by_variant["bad"].items() if label == "fail"} == {
        row["id"] for row in ROWS if int(str(row["id"])[3:]) % 3 == 0
    }
