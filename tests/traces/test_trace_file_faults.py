"""A trace file as other tools and editors save it: text in UTF-16 or UTF-32, a bare OTLP/HTTP protobuf body, JSON
attributes written by JavaScript with half an emoji. Each is read as what it is, or refused in one line naming the
file and the fix; never a misleading message or a malformed example for what JSON lines are read through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.e2e.project import run_cli
from tests.e2e.test_wide_encodings import assert_refused
from tests.traces.otel import chat_span, recording, write_json
from tests.traces.test_otlp_reader import read
from tests.traces.test_traces_cli import CONTAINS, project, scores_of, support_spans


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-16-be", "utf-16-le", "utf-32-be", "utf-32-le"])
def test_a_trace_file_saved_as_utf16_or_utf32_stops_the_run_with_the_jsonl_readers_line(
    tmp_path: Path, encoding: str
) -> None:
    """With a byte order mark the file was taken for protobuf and refused with a length "over the limit"."""
    evals = project(tmp_path, CONTAINS, support_spans())
    path = evals / "traces.jsonl"
    path.write_bytes(path.read_text(encoding="utf-8").encode(encoding))

    assert_refused(run_cli("run", "--no-history", cwd=tmp_path), "traces.jsonl", encoding)


def test_a_bare_otlp_http_protobuf_body_scores_like_json_lines(tmp_path: Path) -> None:
    """A bare ExportTraceServiceRequest starts with 0x0a, a line feed: it was read as JSON lines, every line of it
    a malformed example."""
    spans = support_spans()
    project(tmp_path / "json", CONTAINS, spans)
    evals = project(tmp_path / "bare", CONTAINS, spans)
    (evals / "traces.jsonl").write_bytes(encode_spans(spans).SerializeToString())
    for root in (tmp_path / "json", tmp_path / "bare"):
        result = run_cli("run", "--no-history", "--format", "json", cwd=root)
        assert result.code == 0, result.err
        assert result.json()["metrics"][0]["population"]["included"] == 8, result.out
    assert scores_of(tmp_path / "json", "days") == scores_of(tmp_path / "bare", "days")


def test_json_lines_after_blank_lines_are_still_json(tmp_path: Path) -> None:
    evals = project(tmp_path, CONTAINS, support_spans())
    path = evals / "traces.jsonl"
    path.write_bytes(b"\n\r\n" + path.read_bytes())
    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.json()["metrics"][0]["population"]["included"] == 8, result.out


def test_a_framed_protobuf_message_that_starts_like_a_utf32_byte_order_mark_is_protobuf() -> None:
    """A first message of 65,279 bytes is framed as 00 00 FE FF, UTF-32BE's byte order mark."""
    from evalglass.engine.datasets.traces.otlpspans import HEAD, MAX_MESSAGE, file_kind

    pad = 0xFEFF
    for _ in range(8):  # the varint lengths grow with the padding: settle on the size
        with recording() as (tracer, finished):
            chat_span(tracer, "Q", "30 days", extra={"pad": "x" * pad})
            data = encode_spans(finished()).SerializeToString()
        if len(data) == 0xFEFF:
            break
        pad -= len(data) - 0xFEFF
    assert len(data) == 0xFEFF, len(data)
    framed = len(data).to_bytes(4, "big") + data
    assert framed[:4] == b"\x00\x00\xfe\xff"
    assert file_kind(framed[:HEAD], MAX_MESSAGE) == "protobuf"
    assert file_kind("\ufeff{}".encode("utf-32-be"), MAX_MESSAGE) == "wide"


ANSWER = "30 days \\ud83d"  # as JSON.stringify writes a string cut in the middle of an emoji
CUT = '[{"role":"assistant","parts":[{"type":"text","content":"' + ANSWER + '"}],"finish_reason":"stop"}]'


def test_a_lone_surrogate_in_attribute_json_is_read_as_ufffd_with_a_warning_naming_the_span(tmp_path: Path) -> None:
    """The span's example was malformed ("not valid JSON"); JSON lines holding one are read with U+FFFD and a
    warning at file:line, and so is the JSON text of an attribute, the warning naming the span and attribute."""
    with recording() as (tracer, finished):
        for index in range(4):
            chat_span(tracer, f"Q{index}", "30 days")
        chat_span(tracer, "Q4", None, extra={"gen_ai.output.messages": CUT})
        spans = finished()
    project(tmp_path, CONTAINS, spans)

    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)

    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["population"]["included"] == 5 and metric["estimate"]["point"] == 1.0, metric
    warning = [line for line in result.err.splitlines() if "lone surrogate" in line]
    assert len(warning) == 1, result.err
    assert "traces.jsonl:5 " in warning[0] and "'chat gpt-test'" in warning[0], warning
    assert "attribute gen_ai.output.messages" in warning[0] and "U+FFFD" in warning[0], warning


def test_tool_arguments_with_a_lone_surrogate_are_read_as_the_object_they_are(tmp_path: Path) -> None:
    """Tool-call arguments whose JSON text holds a lone surrogate stayed text, so a check of an argument found
    none (a wrong value, silently)."""
    with recording() as (tracer, finished):
        with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
            chat_span(tracer, "Weather?", "Sunny.")
            tool = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.arguments": '{"city": "Paris \\ud83d"}',
                "gen_ai.tool.call.result": json.dumps({"sky": "clear"}),
            }
            with tracer.start_as_current_span("execute_tool weather", attributes=tool):
                pass
        spans = finished()
    examples, bad, reader = read(write_json(spans, tmp_path / "t.jsonl"))
    assert not bad, bad
    (call,) = dict(examples[0].fields)["output"]["tool_calls"]
    assert call["arguments"] == {"city": "Paris \ufffd"}, call
    (note,) = reader.mended.notes
    assert "attribute gen_ai.tool.call.arguments" in note and "'invoke_agent'" in note, note


def test_a_trace_file_of_blank_lines_is_read_as_json_lines_as_before(tmp_path: Path) -> None:
    """A file starting with a line feed may be a bare protobuf request: one of blank lines only is not."""
    evals = project(tmp_path, CONTAINS, support_spans())
    empty = project(tmp_path / "empty", CONTAINS, support_spans())
    (empty / "traces.jsonl").write_bytes(b"\n\n\r\n")
    blank = run_cli("run", "--no-history", cwd=tmp_path / "empty")
    (evals / "traces.jsonl").write_bytes(b"")
    nothing = run_cli("run", "--no-history", cwd=tmp_path)
    assert (blank.code, blank.err.replace("empty/", "")) == (nothing.code, nothing.err), (blank.err, nothing.err)
    assert "protobuf" not in blank.err, blank.err


@pytest.mark.parametrize("count", ["1_000", " 12", "12 ", "+12", "\u0661\u0662"])
def test_a_token_count_no_exporter_writes_is_a_malformed_span_not_a_measurement(tmp_path: Path, count: str) -> None:
    """OTLP/JSON writes an intValue as decimal text. Python's int() also read underscores, spaces, a plus sign and
    other scripts' digits: a budget measured a count the file does not spell."""
    budget = {"metrics": {"budget": {"type": "numeric_bounds", "field": "usage.input_tokens", "max": 4500}}}
    evals = project(tmp_path, budget, support_spans(uncaptured=0))
    path = evals / "traces.jsonl"
    lines = path.read_text().splitlines()
    assert '"intValue":"12"' in lines[0]
    lines[0] = lines[0].replace('"intValue":"12"', '"intValue":' + json.dumps(count), 1)
    path.write_text("\n".join(lines) + "\n")

    result = run_cli("run", "--no-history", "--format", "json", cwd=tmp_path)

    assert result.code == 0, result.err
    (found,) = result.json()["metrics"]
    assert found["population"]["included"] == 7 and found["population"]["excluded_by_status"] == {"error": 1}
    (diagnostic,) = found["population"]["top_diagnostics"]
    assert diagnostic["code"] == "malformed_span" and "gen_ai.usage.input_tokens" in diagnostic["example"]


@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
def test_a_nan_attribute_copied_into_metadata_is_bound_as_a_nan_never_as_null(tmp_path: Path, protobuf: bool) -> None:
    """A ``doubleValue`` NaN (OTLP/JSON's ``"NaN"``, a protobuf NaN double) was read as null: the gold approved with
    it stayed valid when the attribute was removed. It is kept as the float it is, as a Parquet cell's NaN is."""
    from tests.traces.test_traces_cli import project as traces_project

    with recording() as (tracer, finished):
        for index in range(4):
            chat_span(tracer, f"Q{index}", "30 days", extra={"quality": float("nan") if index == 1 else 0.5})
        spans = finished()

    def gold(root: Path) -> str:
        config = {
            **CONTAINS,
            "gates": {"answers": {"metric": "days", "proposed_threshold": 0.5}},
            "dataset": {"name": "prod", "format": "otlp", "traces": {"mapping": {"metadata": ["quality"]}}},
        }
        evals = traces_project(root, config, spans, protobuf=protobuf)
        config["dataset"]["path"] = next(evals.glob("traces.*")).name
        (evals / "evalglass.yaml").write_text(yaml.safe_dump({"version": 1, **config}, sort_keys=False))
        result = run_cli("run", "--no-history", "--format", "json", cwd=root)
        assert result.code == 0, result.err
        return str(result.json()["dataset"]["gold_fingerprint"])

    with_nan = gold(tmp_path / "nan")
    # The same span without the attribute (its metadata value then null), written by the same encoders.
    spans[1]._attributes = {key: value for key, value in spans[1].attributes.items() if key != "quality"}
    assert "quality" not in spans[1].attributes
    assert with_nan != gold(tmp_path / "absent")
