"""The HTML report's example rows, read from a run folder's artifacts. Nothing is scored or decided here.

Two streaming passes keep memory bounded at any dataset size. The first pass over ``scores.jsonl`` picks which
examples the page embeds: every regressed pair of a comparative gate (passing in its baseline, failing now; the
flips its scorecard records), beyond the cap if need be, then every example that needs a look (a score that is
excluded, carries a diagnostic, or is 0) up to the cap, then an evenly spaced sample of the rest. The page lists
them in that order. The second pass joins the picked examples with what the other artifacts say about them: the
outputs a recorded run kept (``engine.runs.keptoutputs``, read whole and checked against their hash),
``outputs.jsonl`` (a live lane's outputs, the judges' rationales; in a run with variants, each variant's, through
``engine.explore.variantshown``), ``checks.jsonl`` (per-example check records) and the dataset record (input,
references). The dataset is not an artifact of the run, so it is read only when its bytes still hash to the
fingerprint the run recorded; otherwise the page says why inputs are not shown. Outputs come from the run folder
alone (a run made before runs kept their outputs shows its inline outputs from a dataset that still hashes to its
fingerprint, and no outputs from a file of their own).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.fieldpath import FieldPathError
from evalglass.core.fingerprint import PREFIX
from evalglass.core.outputparse import shown_output
from evalglass.core.runrecord import SCORES_FILE, RunRecord
from evalglass.engine.datasets.readback import (
    OWN_READER_FORMATS,
    examples_by_id,
    read_as_rows_by_reader,
    read_by_own_reader,
)
from evalglass.engine.datasets.recordparts import present, record_parts
from evalglass.engine.explore.failing import live_answer
from evalglass.engine.runs.artifacts import CHECKS_FILE, open_artifact, run_score_rows, variant_names_of
from evalglass.engine.runs.runfolder import OUTPUTS_FILE
from evalglass.errors import SetupError

#: Other tools' results: their epochs are always samples.
TOOL_FORMATS = OWN_READER_FORMATS - {"otlp"}
#: Examples embedded in the page at most. Measured in BENCHMARKS.md: the page stays a few MB at any dataset size.
ROW_CAP = 1000
#: Characters of one text field (input, output, reference) shown per example at first; a longer one expands to its
#: whole text up to EXPANDED_CHARS, beyond which it is cut and said (so a page of ROW_CAP examples stays bounded).
FIELD_CHARS = 1200
EXPANDED_CHARS = 10_000
TAIL_CHARS = 800
INCLUDED = "included"
#: Every state a cell can be in, in the order the page lists them.
STATES = ("included", "invalid", "error", "blocked", "non_evaluable", "skipped", "missing")


@dataclass(frozen=True)
class Diag:
    code: str
    message: str
    detail: str | None = None


@dataclass(frozen=True)
class Cell:
    """One metric on one example: its state per sample (one entry without samples), values and diagnostics."""

    metric: str
    states: tuple[str, ...]
    values: tuple[float | None, ...]
    diagnostics: tuple[Diag, ...] = ()

    @property
    def needs_look(self) -> bool:
        return bool(self.diagnostics) or any(
            state != INCLUDED or value == 0 for state, value in zip(self.states, self.values, strict=True)
        )


@dataclass(frozen=True)
class Judgement:
    metric: str
    sample: int
    label: str | None
    rationale: str | None


@dataclass(frozen=True)
class CheckTail:
    check: str
    outcome: str
    exit_code: int | None
    tail: str


@dataclass
class Row:
    id: str
    line: int
    cells: tuple[Cell, ...]
    needs_look: bool
    #: The comparative gates this example regressed in (passing in the baseline, failing now).
    regressed_in: tuple[str, ...] = ()
    input: str | None = None
    output: str | None = None
    reference: str | None = None
    error: str | None = None
    judgements: list[Judgement] = field(default_factory=list)
    checks: list[CheckTail] = field(default_factory=list)
    #: In a run with variants: each variant's output, by variant name (None: a variant of recorded outputs, which
    #: the run folder does not hold; empty without variants).
    outputs: dict[str, str | None] = field(default_factory=dict)


@dataclass
class Explorer:
    rows: list[Row]
    total: int = 0
    needs_look_total: int = 0
    sampled: int = 0
    cap: int = ROW_CAP
    metrics: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    states: tuple[str, ...] = STATES
    #: Regressed pairs of the run's comparative gates: every one is embedded, beyond the cap if need be.
    regressed_total: int = 0
    #: Characters of a value shown before it is expanded.
    field_chars: int = FIELD_CHARS

    @property
    def needs_look_shown(self) -> int:
        return sum(1 for row in self.rows if row.needs_look)


def clip(text: str, limit: int = EXPANDED_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters in the artifacts)"


def as_text(value: Any) -> str:
    """A value whole, as text (:func:`~evalglass.core.outputparse.shown_output`, indented)."""
    return shown_output(value, indent=True)


def cell_of(metric: str, entry: Any) -> Cell:
    """A recorded score entry (a bare number, a Score object, or a list of either for samples) as a cell."""
    if entry is None:
        return Cell(metric, ("missing",), (None,))
    entries = entry if isinstance(entry, list) else [entry]
    states: list[str] = []
    values: list[float | None] = []
    diagnostics: list[Diag] = []
    for item in entries:
        if isinstance(item, int | float) and not isinstance(item, bool):
            states.append(INCLUDED)
            values.append(float(item))
            continue
        if not isinstance(item, dict):
            states.append("unreadable")
            values.append(None)
            continue
        status, validity = item.get("status"), item.get("validity")
        value = item.get("value")
        states.append(
            INCLUDED if (status, validity) == ("scored", "valid") else "invalid" if status == "scored" else str(status)
        )
        values.append(float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None)
        for diag in item.get("diagnostics") or ():
            if isinstance(diag, dict):
                diagnostics.append(Diag(str(diag.get("code")), str(diag.get("message")), diag.get("detail")))
    return Cell(metric, tuple(states), tuple(values), tuple(dict.fromkeys(diagnostics)))


def _rows(folder: Path) -> Iterator[dict[str, Any]]:
    path = folder / SCORES_FILE
    try:
        yield from run_score_rows(folder)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SetupError(
            f"scores file is not a file of recorded blocks ({type(exc).__name__})",
            where=str(path),
            fix="the file was edited or corrupted; rerun `evalglass run` to regenerate it",
        ) from None


def _cells(row: dict[str, Any], metrics: tuple[str, ...]) -> tuple[Cell, ...]:
    scores = row["scores"] if isinstance(row.get("scores"), dict) else {}
    return tuple(cell_of(name, scores.get(name)) for name in metrics)


def _row_needs_look(row: dict[str, Any], metrics: tuple[str, ...]) -> bool:
    """Whether any cell of a row needs a look. Most rows are bare non-zero numbers: those build no cell."""
    scores = row.get("scores")
    if not isinstance(scores, dict):
        return True
    for name in metrics:
        entry = scores.get(name)
        if type(entry) is float or type(entry) is int:
            if entry == 0:
                return True
        elif cell_of(name, entry).needs_look:
            return True
    return False


def pick(
    folder: Path, metrics: tuple[str, ...], cap: int, regressed: frozenset[str] = frozenset()
) -> tuple[set[int], int, int]:
    """Which examples (by position) the page embeds; with the total and how many need a look. Every example whose
    id is in ``regressed`` is embedded and counts toward the cap; when they alone exceed it, all of them still are
    (and nothing else)."""
    flags = bytearray()  # one byte per example: 1 when it needs a look
    chosen: set[int] = set()
    for position, row in enumerate(_rows(folder)):
        flags.append(_row_needs_look(row, metrics))
        if regressed and row.get("id") in regressed:
            chosen.add(position)
    total, flagged = len(flags), flags.count(1)
    cap = max(cap, len(chosen))
    position = flags.find(1)
    while position >= 0 and len(chosen) < cap:
        chosen.add(position)
        position = flags.find(1, position + 1)
    room, rest = cap - len(chosen), total - flagged
    if room > 0 and rest > 0:
        # Evenly spaced among the examples that need no look: deterministic, so the same run gives the same page.
        step = max(1, rest // room)
        seen = 0
        position = flags.find(0)
        while position >= 0 and len(chosen) < cap:
            if seen % step == 0:
                chosen.add(position)
            seen += 1
            position = flags.find(0, position + 1)
    return chosen, total, flagged


def load_explorer(
    folder: Path,
    record: RunRecord | None,
    metrics: tuple[str, ...],
    cap: int = ROW_CAP,
    regressed: Mapping[str, tuple[str, ...]] | None = None,
) -> Explorer:
    """Every embedded example with what the artifacts say about it, and notes naming what could not be shown.

    ``regressed`` holds, per comparative gate, the ids of its regressed pairs: each is embedded and listed first."""
    if not (folder / SCORES_FILE).exists() and not variant_names_of(folder):
        return Explorer(rows=[], metrics=metrics, notes=[f"{SCORES_FILE} is not in this folder: no examples to show."])
    gates_of: dict[str, list[str]] = {}
    for gate, ids in (regressed or {}).items():
        for example_id in ids:
            gates_of.setdefault(example_id, []).append(gate)
    chosen, total, needs_look = pick(folder, metrics, cap, frozenset(gates_of))
    rows: list[Row] = []
    for position, raw in enumerate(_rows(folder)):
        if position in chosen:
            cells = _cells(raw, metrics)
            example_id = str(raw.get("id"))
            rows.append(
                Row(
                    example_id,
                    int(raw.get("line") or 0),
                    cells,
                    any(c.needs_look for c in cells),
                    regressed_in=tuple(gates_of.get(example_id, ())),
                )
            )
    # Stable: regressed pairs first, then those that need a look, then the rest, each in dataset order.
    rows.sort(key=lambda row: (not row.regressed_in, not row.needs_look))
    explorer = Explorer(
        rows=rows,
        total=total,
        needs_look_total=needs_look,
        sampled=sum(1 for row in rows if not row.needs_look and not row.regressed_in),
        cap=cap,
        metrics=metrics,
        regressed_total=sum(1 for row in rows if row.regressed_in),
    )
    by_line = {row.line: row for row in rows}
    by_id: dict[str, list[Row]] = {}
    for row in rows:
        by_id.setdefault(row.id, []).append(row)
    if record is not None and record.kept_outputs is not None:
        _join_kept(folder, record, by_id)
    _join_outputs(folder, by_line)
    names = variant_names_of(folder)
    if names:
        _join_variant_outputs(folder, names, by_id)
    _join_checks(folder, by_id)
    if record is not None:
        _join_dataset(folder, record, by_line, explorer.notes, by_id)
    else:
        explorer.notes.append("runrecord.json is not in this folder: inputs and references cannot be located.")
    return explorer


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with open_artifact(path, path.name) as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                try:
                    yield number, orjson.loads(raw)
                except orjson.JSONDecodeError:
                    raise SetupError("line is not JSON", where=f"{path}:{number}") from None


def _join_outputs(folder: Path, by_line: dict[int, Row]) -> None:
    path = folder / OUTPUTS_FILE
    if not path.exists():
        return
    for _number, entry in _jsonl(path):
        line = entry.get("line") if isinstance(entry, dict) else None
        row = by_line.get(line) if isinstance(line, int) else None
        if row is None:
            continue
        if isinstance(entry.get("error"), dict):
            row.error = f"{entry['error'].get('code')}: {entry['error'].get('message')}"
        samples = entry.get("samples")
        if isinstance(samples, list):
            shown = [
                as_text(live_answer(item)) if "output" in item else f"(no output: {as_text(item.get('error'))})"
                for item in samples
                if isinstance(item, dict)
            ]
            row.output = clip(shown[0] if len(shown) == 1 else _numbered(shown))
        judges = entry.get("judges")
        if isinstance(judges, dict):
            for metric, notes_per_sample in judges.items():
                for sample, note in enumerate(notes_per_sample if isinstance(notes_per_sample, list) else []):
                    if isinstance(note, dict):
                        label = note.get("label")
                        rationale = note.get("rationale")
                        row.judgements.append(
                            Judgement(
                                str(metric),
                                sample,
                                None if label is None else str(label),
                                None if rationale is None else clip(str(rationale), FIELD_CHARS),
                            )
                        )


def _join_variant_outputs(folder: Path, names: tuple[str, ...], by_id: dict[str, list[Row]]) -> None:
    """Each variant's output of every shown example (each sample's, in a run with samples), from the run folder."""
    from evalglass.engine.explore.variantshown import NO_OUTPUT, variant_samples, variants_with_outputs

    kept = variants_with_outputs(folder, names)
    if not kept:
        return
    for example_id, per_variant in variant_samples(folder, kept, set(by_id)).items():
        outputs: dict[str, str | None] = dict.fromkeys(names)
        for name in kept:
            shown = [
                as_text(live_answer(item)) if "output" in item else f"{NO_OUTPUT}: {as_text(item.get('error'))}"
                for item in per_variant.get(name, ())
            ]
            text = NO_OUTPUT if not shown else shown[0] if len(shown) == 1 else _numbered(shown)
            outputs[name] = clip(text)
        for row in by_id[example_id]:
            row.outputs = outputs


def _numbered(shown: list[str]) -> str:
    """Several samples' texts as one value, each under its number."""
    return "\n\n".join(f"[sample {i}] {t}" for i, t in enumerate(shown))


def _join_kept(folder: Path, record: RunRecord, by_id: dict[str, list[Row]]) -> None:
    """The outputs the run scored, from what it kept (each sample's, in a run with samples)."""
    from evalglass.engine.runs.keptoutputs import kept_outputs

    samples = _has_samples(record.config)
    for example_id, value in kept_outputs(folder, record, set(by_id)).items():
        if samples and isinstance(value, list):
            shown = [as_text(present(item)) for item in value]
            text = shown[0] if len(shown) == 1 else _numbered(shown)
        else:
            text = as_text(present(value))
        for row in by_id[example_id]:
            row.output = clip(text)


def _has_samples(config: Mapping[str, Any]) -> bool:
    """Whether the recorded config gives each example a list of samples (``task.samples``, or another tool's
    results, whose epochs are always samples)."""
    task, dataset = config.get("task"), config.get("dataset")
    tool = isinstance(dataset, dict) and dataset.get("format") in TOOL_FORMATS
    return tool or (isinstance(task, dict) and task.get("samples") is True)


def _join_checks(folder: Path, by_id: dict[str, list[Row]]) -> None:
    path = folder / CHECKS_FILE
    if not path.exists():
        return
    for _number, entry in _jsonl(path):
        if not isinstance(entry, dict):
            continue
        for row in by_id.get(str(entry.get("example_id")), []):
            tail = "\n".join(part for part in (entry.get("stdout_tail"), entry.get("stderr_tail")) if part)
            row.checks.append(
                CheckTail(
                    str(entry.get("check_id")),
                    str(entry.get("outcome")),
                    entry.get("exit_code") if isinstance(entry.get("exit_code"), int) else None,
                    tail[-TAIL_CHARS:],
                )
            )


def dataset_candidates(folder: Path, record: RunRecord) -> list[Path]:
    """Where the run's dataset may be: the config's ``dataset.path``, relative to the config file, whose path is
    relative to the directory the run started in. That is the working directory or, when the report is made from
    elsewhere, one of the run folder's parents (``.evalglass/runs/ID`` sits three levels below it)."""
    relative = Path(record.config_path).parent / record.dataset.path
    if relative.is_absolute():
        return [relative]
    return [relative, *(parent / relative for parent in folder.resolve().parents[:4])]


def file_sha256(path: Path) -> str:
    """A file's SHA-256, as a dataset's fingerprint is written."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return PREFIX + digest.hexdigest()


def _join_dataset(
    folder: Path, record: RunRecord, by_line: dict[int, Row], notes: list[str], by_id: dict[str, list[Row]]
) -> None:
    found = [path for path in dict.fromkeys(dataset_candidates(folder, record)) if path.is_file()]
    if not found:
        notes.append(
            f"The dataset ({record.dataset.path}) is not here: inputs, references and recorded outputs are not shown."
        )
        return
    path = next((path for path in found if file_sha256(path) == record.dataset.fingerprint), None)
    if path is None:
        notes.append(
            f"The dataset ({found[0]}) changed since the run (its fingerprint differs): inputs, references and "
            "recorded outputs are not shown, so that nothing on this page is from a different dataset."
        )
        return
    if read_by_own_reader(record):
        _join_read_back(record, path, by_id, notes)
        return
    try:
        parts = record_parts(record.config)
    except FieldPathError:
        notes.append("The run record names a malformed field path: inputs and references are not shown.")
        return
    # A run that kept nothing (made before runs kept their outputs) shows the outputs of a dataset that still hashes
    # to its fingerprint; never those of an outputs file of their own, which nothing ties to the run.
    task = record.config.get("task")
    inline_outputs = (
        record.kept_outputs is None
        and parts.output_field is not None
        and not (isinstance(task, dict) and task.get("path") is not None)
    )

    def fill(row: Row, data: dict[str, Any]) -> None:
        row.input = clip(as_text(parts.input(data)))
        if inline_outputs and row.output is None:
            row.output = clip(as_text(present(parts.output(data))))
        if parts.reference_fields:
            row.reference = clip(as_text(present(parts.reference(data))))

    if read_as_rows_by_reader(record):  # a CSV or Parquet row is no JSON line: its fields as the run's reader read them
        examples = examples_by_id(record, path, set(by_id))
        if examples is None:
            notes.append(f"The dataset ({path}) could not be read back: inputs and references are not shown.")
            return
        for example_id, example in examples.items():
            for shown in by_id[example_id]:
                fill(shown, dict(example.fields))
        return
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            row = by_line.get(number)
            if row is None:
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                row.input = clip(raw.decode("utf-8", "replace"))
                continue
            if not isinstance(data, dict):
                row.input = clip(as_text(data))
                continue
            fill(row, data)


def _join_read_back(record: RunRecord, path: Path, by_id: dict[str, list[Row]], notes: list[str]) -> None:
    """A trace file or another tool's results: each shown example read back through the run's reader, by id (one
    line of such a file can hold many examples)."""
    examples = examples_by_id(record, path, set(by_id))
    if examples is None:
        notes.append(f"The dataset ({path}) could not be read back: inputs and outputs are not shown.")
        return
    for example_id, example in examples.items():
        shown_input = clip(as_text({key: value for key, value in example.fields.items() if key != "output"}))
        for row in by_id[example_id]:
            row.input = shown_input
            if row.output is None:
                row.output = clip(as_text(example.output))


def html_report(folder: Path, cap: int = ROW_CAP) -> tuple[str, str]:
    """report.html for a run folder, and the line saying what loading the run did not check (the page shows it).

    The scorecard and run record are required and must add up (``engine.decide.consistency``); the scores, outputs and
    check records are rendered when they exist."""
    from evalglass.engine.decide.consistency import load_checked
    from evalglass.report.html import render_html

    checked = load_checked(folder)
    card, record = checked.scorecard, checked.record
    regressed = {
        gate.name: gate.comparison.metric.flips.regressed
        for gate in card.decision.gates
        if gate.comparison is not None and gate.comparison.metric is not None
    }
    explorer = load_explorer(folder, record, tuple(metric.name for metric in card.metrics), cap, regressed)
    return render_html(card, record, explorer, [checked.not_checked], str(folder)), checked.not_checked
