"""Importing spans from OTLP/JSON: EvalGlass's trace reader beside a floor program, same file, same minute.

Issue 31 asks that importing 1,000,000 spans take at most 2× a floor that parses the same file with orjson and picks
the same attributes, and that memory stay flat in the number of examples. This measures both, at 100,000 and
1,000,000 spans.

The file: real OTLP/JSON lines written by the OpenTelemetry SDK's JSON file exporter for a batch of 100 chat spans
(current GenAI conventions, messages captured, usage with cache reads), repeated with fresh trace ids until it
holds ``--spans`` spans (one span per trace, one example per span: the most examples a span count can make).

* ``floor``: for each line ``orjson.loads``; for each span, its attributes as a dict (the AnyValue decoded) and the
  attributes the mapping reads picked, the message attributes parsed with ``orjson.loads``: the least work that
  reads what the reader reads.
* ``reader``: ``OtlpReader.batches()`` (hashing the file, grouping by trace, selection, the mapping to records,
  batches of 256 examples), as a run reads the dataset.

Each measurement is a fresh child process (wall time, CPU time of the process, peak RSS), in rotation (floor,
reader, floor, reader, …) so a busy phase of the shared machine hits both.

    .venv/bin/python benchmarks/bench_trace_import.py --spans 100000 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PER_LINE = 100


def generate(path: Path, spans: int) -> None:
    """``spans`` chat spans as OTLP/JSON lines, from one SDK-written line of PER_LINE spans."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.traces.otel import chat_span, recording, write_json

    with recording() as (tracer, finished):
        for index in range(PER_LINE):
            chat_span(
                tracer,
                f"Question {index}: how long is the refund window for order {index * 7}?",
                f"Order {index * 7} can be refunded within 30 days of delivery.",
                system="You are a support assistant. Answer briefly.",
                cache_read=index,
            )
        recorded = finished()
    with tempfile.TemporaryDirectory() as folder:
        template = write_json(recorded, Path(folder) / "t.jsonl", per_line=PER_LINE).read_text().strip()
    trace_ids = [format(span.context.trace_id, "032x") for span in recorded]
    with path.open("w") as handle:
        for line in range(spans // PER_LINE):
            text = template
            for index, trace_id in enumerate(trace_ids):
                text = text.replace(trace_id, f"{line + 1:016x}{index + 1:016x}")
            handle.write(text + "\n")


def floor(path: Path) -> int:
    import orjson

    def value(any_value: dict[str, Any]) -> Any:
        for kind, inner in any_value.items():
            if kind == "stringValue" or kind == "boolValue" or kind == "doubleValue":
                return inner
            if kind == "intValue":
                return int(inner)
            if kind == "arrayValue":
                return [value(item) for item in inner.get("values", ())]
        return None

    picked = 0
    with path.open("rb") as handle:
        for line in handle:
            document = orjson.loads(line)
            for resource_spans in document["resourceSpans"]:
                for scope_spans in resource_spans["scopeSpans"]:
                    for span in scope_spans["spans"]:
                        attributes = {item["key"]: value(item["value"]) for item in span.get("attributes", ())}
                        record = {
                            "id": span["traceId"] + ":" + span["spanId"],
                            "input": orjson.loads(attributes["gen_ai.input.messages"]),
                            "system": orjson.loads(attributes["gen_ai.system_instructions"]),
                            "output": orjson.loads(attributes["gen_ai.output.messages"]),
                            "model": attributes.get("gen_ai.request.model"),
                            "response_model": attributes.get("gen_ai.response.model"),
                            "response_id": attributes.get("gen_ai.response.id"),
                            "finish_reasons": attributes.get("gen_ai.response.finish_reasons"),
                            "input_tokens": attributes.get("gen_ai.usage.input_tokens"),
                            "output_tokens": attributes.get("gen_ai.usage.output_tokens"),
                            "cache_read": attributes.get("gen_ai.usage.cache_read.input_tokens"),
                            "latency": int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"]),
                        }
                        picked += len(record) > 0
    return picked


def reader(path: Path) -> int:
    from evalglass.engine.datasets.traces.otlpdataset import OtlpReader
    from evalglass.engine.spec.tracespec import TraceOptions

    examples = 0
    for batch in OtlpReader(path, options=TraceOptions()).batches():
        examples += len(batch)
    return examples


def measure(kind: str, path: Path) -> dict[str, float]:
    if kind == "reader":  # imports are outside the clock, for both
        from evalglass.engine.datasets.traces.otlpdataset import OtlpReader  # noqa: F401
        from evalglass.engine.spec.tracespec import TraceOptions

        TraceOptions()
    else:
        import orjson  # noqa: F401
    start, cpu = time.perf_counter(), time.process_time()
    count = (floor if kind == "floor" else reader)(path)
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"count": count, "wall": wall, "cpu": used, "peak_mb": peak}


def child(kind: str, path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--measure", kind, str(path)], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "evalglass-bench-traces")
    parser.add_argument("--measure", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]))))
        return 0
    args.folder.mkdir(parents=True, exist_ok=True)
    print(f"load before: {os.getloadavg()}")
    for spans in args.spans:
        path = args.folder / f"spans-{spans}.jsonl"
        if not path.exists() or path.stat().st_size == 0:
            generate(path, spans)
        results: dict[str, list[dict[str, float]]] = {"floor": [], "reader": []}
        for _ in range(args.rounds):
            for kind in ("floor", "reader"):
                results[kind].append(child(kind, path))
        size = path.stat().st_size / 1e6
        floor_wall = statistics.median(r["wall"] for r in results["floor"])
        floor_cpu = statistics.median(r["cpu"] for r in results["floor"])
        ours_wall = statistics.median(r["wall"] for r in results["reader"])
        ours_cpu = statistics.median(r["cpu"] for r in results["reader"])
        ratios_wall = [o["wall"] / f["wall"] for f, o in zip(results["floor"], results["reader"], strict=True)]
        ratios_cpu = [o["cpu"] / f["cpu"] for f, o in zip(results["floor"], results["reader"], strict=True)]
        print(
            f"{spans:>9,} spans ({size:,.0f} MB): floor wall {floor_wall:.2f}s cpu {floor_cpu:.2f}s "
            f"peak {max(r['peak_mb'] for r in results['floor']):.0f} MB | reader wall {ours_wall:.2f}s "
            f"cpu {ours_cpu:.2f}s peak {max(r['peak_mb'] for r in results['reader']):.0f} MB | ratio wall "
            f"{statistics.median(ratios_wall):.2f} ({', '.join(f'{r:.2f}' for r in ratios_wall)}) cpu "
            f"{statistics.median(ratios_cpu):.2f} ({', '.join(f'{r:.2f}' for r in ratios_cpu)}) | examples "
            f"{results['reader'][0]['count']:,}"
        )
    print(f"load after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
