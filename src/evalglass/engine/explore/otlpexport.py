"""``evalglass export RUN --format otlp``: a run's per-example scores as OpenTelemetry ``gen_ai.evaluation.result``
events, so they flow back into the observability tool the traces came from.

Each score of each example (each sample, for runs with several) becomes one OTLP log record whose event name is
``gen_ai.evaluation.result``, with the GenAI conventions' attributes: ``gen_ai.evaluation.name`` (the metric),
``gen_ai.evaluation.score.value`` (a measured value only: a score that was not measured has none, never 0.0),
``gen_ai.evaluation.score.label`` (``pass``/``fail`` for a pass/fail metric, the status for a score that was not
measured, ``invalid`` for an untrusted value), ``gen_ai.evaluation.explanation`` (the diagnostic), ``error.type``
(the diagnostic code of an ``error``), and ``gen_ai.response.id``. A run read from traces (``dataset.format: otlp``)
links each event to the span its example is rooted at (the record's trace and span ids), which is how a trace UI
shows it on that span; the response id comes from the trace file when it is still the file the run read (same
SHA-256), else it is left out.

The file is OTLP/JSON lines (one ``LogsData`` object per line, at most :data:`PER_LINE` records each), the
encoding of the OpenTelemetry file exporters, which a collector's ``otlpjsonfile`` receiver reads. Streamed: one
block of ``scores.jsonl`` at a time. A run with variants is exported variant by variant (each event names its
variant: ``evalglass.variant``), from each variant's own scores file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from evalglass.core.runrecord import COMPARED_DIR, SCORES_FILE, VARIANTS_DIR, RunRecord
from evalglass.core.scorecard import Scorecard
from evalglass.core.variantnames import SEPARATOR
from evalglass.engine.decide.consistency import load_checked
from evalglass.engine.runs.artifacts import score_rows
from evalglass.version import __version__

EVENT = "gen_ai.evaluation.result"
PER_LINE = 512


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True)
class Exported:
    events: int
    linked: bool
    response_ids: bool


def export_otlp(folder: Path, out: Sink) -> Exported:
    """Write the run's evaluation events to ``out``; what was written (how many, linked to spans or not)."""
    # A run that does not add up (every artifact, each variant's scores included, against digests.json and the run
    # record: engine.runs.integrity) is not sent on as evaluation results.
    checked = load_checked(folder)
    card, record = checked.scorecard, checked.record
    binary = _binary_metrics(card)
    dataset = record.config.get("dataset") if isinstance(record.config, dict) else None
    traced = isinstance(dataset, dict) and dataset.get("format") == "otlp"
    time = str(_created_ns(card))
    resource = {"attributes": [_attribute("service.name", "evalglass"), _attribute("evalglass.run.id", card.run_id)]}
    scope = {"name": "evalglass", "version": __version__}
    pending: list[dict[str, Any]] = []
    count = 0
    linked_responses = False
    for path, variant in _scores_files(folder, record):
        responses = _response_ids(folder, record) if traced else None
        linked_responses = linked_responses or responses is not None
        for row in score_rows(path):
            example_id = row["id"]
            found = next(responses, None) if responses is not None else None
            response_id = found.get(example_id) if found is not None else None
            for metric, entry in row["scores"].items():
                samples = entry if isinstance(entry, list) else [entry]
                for index, score in enumerate(samples):
                    pending.append(
                        _event(
                            metric,
                            variant,
                            score,
                            example_id,
                            index if isinstance(entry, list) else None,
                            metric in binary,
                            traced,
                            response_id,
                            time,
                        )
                    )
                    if len(pending) == PER_LINE:
                        count += _write(out, resource, scope, pending)
                        pending = []
    if pending:
        count += _write(out, resource, scope, pending)
    return Exported(events=count, linked=traced, response_ids=linked_responses)


def _scores_files(folder: Path, record: RunRecord) -> list[tuple[Path, str | None]]:
    """Each scores file of the run with the variant it scored: ``scores.jsonl`` (no variant), or in a run with
    variants each variant's ``variants/NAME/scores.jsonl`` then ``compared/scores.jsonl`` (the judges of variants
    side by side, whose metrics are named as the config names them, no variant). The per-example differences between
    two variants a gate decides on are not exported: they are no evaluation of one response."""
    if not record.variant_scores:
        return [(folder / record.scores_file, None)]
    files: list[tuple[Path, str | None]] = [
        (folder / file, file.split("/")[1]) for file in record.variant_scores if file.startswith(f"{VARIANTS_DIR}/")
    ]
    if record.compared_scores is not None:
        files.append((folder / COMPARED_DIR / SCORES_FILE, None))
    return files


def _write(out: Sink, resource: dict[str, Any], scope: dict[str, Any], records: list[dict[str, Any]]) -> int:
    document = {"resourceLogs": [{"resource": resource, "scopeLogs": [{"scope": scope, "logRecords": records}]}]}
    out.write(orjson.dumps(document, option=orjson.OPT_APPEND_NEWLINE))
    return len(records)


def _event(
    metric: str,
    variant: str | None,
    score: Any,
    example_id: str,
    sample: int | None,
    binary: bool,
    traced: bool,
    response_id: str | None,
    time: str,
) -> dict[str, Any]:
    attributes = [_attribute("gen_ai.evaluation.name", metric), _attribute("evalglass.example.id", example_id)]
    if variant is not None:
        attributes.append(_attribute("evalglass.variant", variant))
    if sample is not None:
        attributes.append(_attribute("evalglass.sample", sample))
    if type(score) is float or type(score) is int:
        attributes.append(_attribute("gen_ai.evaluation.score.value", float(score)))
        if binary:
            attributes.append(_attribute("gen_ai.evaluation.score.label", "pass" if score == 1 else "fail"))
    elif isinstance(score, dict):
        status = str(score.get("status"))
        value = score.get("value")
        diagnostics = score.get("diagnostics") or []
        first = diagnostics[0] if diagnostics and isinstance(diagnostics[0], dict) else {}
        if status == "scored" and value is not None:
            attributes.append(_attribute("gen_ai.evaluation.score.value", float(value)))
            valid = score.get("validity") == "valid"
            label = ("pass" if value == 1 else "fail") if binary and valid else None if valid else "invalid"
        else:
            label = status
        if label is not None:
            attributes.append(_attribute("gen_ai.evaluation.score.label", label))
        if first.get("message"):
            attributes.append(_attribute("gen_ai.evaluation.explanation", str(first["message"])))
        if status == "error" and first.get("code"):
            attributes.append(_attribute("error.type", str(first["code"])))
    if response_id:
        attributes.append(_attribute("gen_ai.response.id", response_id))
    event: dict[str, Any] = {"timeUnixNano": time, "eventName": EVENT, "attributes": attributes}
    if traced:
        trace_id, _, span_id = example_id.partition(":")
        if len(trace_id) == 32 and len(span_id) == 16:
            event["traceId"] = trace_id
            event["spanId"] = span_id
    return event


def _attribute(key: str, value: str | float | int) -> dict[str, Any]:
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"doubleValue": value}}


def _binary_metrics(card: Scorecard) -> set[str]:
    from evalglass.metrics.registry import TYPE_HOMES, spec_class

    # A run with variants names its scorecard's metrics ``metric@variant``; its scores files name them ``metric``.
    return {
        name
        for m in card.metrics
        if m.type in TYPE_HOMES and spec_class(m.type).binary
        for name in (m.name, m.name.split(SEPARATOR, 1)[0])
    }


def _created_ns(card: Scorecard) -> int:
    from datetime import datetime

    moment = datetime.fromisoformat(str(card.created_at).replace("Z", "+00:00"))
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1_000


def _response_ids(folder: Path, record: RunRecord) -> Iterator[dict[str, str]] | None:
    """Per example, in the run's order, ``{id: response id}`` read back from the trace file, when it is still the
    file the run read; None when it is not here or changed."""
    from evalglass.engine.datasets.traces.otlpdataset import OtlpReader
    from evalglass.engine.explore.explorer import dataset_candidates, file_sha256
    from evalglass.engine.spec.config import RECORDED_CONTEXT, Config

    path = next(
        (
            p
            for p in dict.fromkeys(dataset_candidates(folder, record))
            if p.is_file() and file_sha256(p) == record.dataset.fingerprint
        ),
        None,
    )
    if path is None:
        return None
    config = Config.model_validate(record.config, context=RECORDED_CONTEXT)
    reader = OtlpReader(path, options=config.dataset.trace_options, id_field=config.dataset.id_field, hash_bytes=False)

    def ids() -> Iterator[dict[str, str]]:
        for item in reader:
            fields = getattr(item, "fields", None)
            response = fields.get("output", {}).get("response_id") if isinstance(fields, dict) else None
            yield {item.id: response} if isinstance(response, str) else {}

    return ids()
