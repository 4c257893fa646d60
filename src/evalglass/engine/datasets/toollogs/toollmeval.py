"""lm-evaluation-harness ``--log_samples`` files (``dataset.format: lm-eval``).

``dataset.path`` names one task's ``samples_<task>_<time>.jsonl``; the ``results_<time>.json`` written beside it
says which lm-eval made it (``lm_eval_version``), and a file without it is refused: the samples lines do not carry a
version. One example per ``doc_id``: the prompt (``arguments``' first context) and the ``doc`` as its input, the
``target``, the answer (``filtered_resps[0]`` of a generation task; none for a loglikelihood task, whose response
is scores), and one score per metric the line lists (``exact_match``, ``acc``...). A task with several filters
writes one line per filter: their metrics are named ``<metric>,<filter>`` as in lm-eval's own results (a filter
``none``, also what a line without the key is read as, keeps the bare name; a ``filter`` that is not a name, not
text or empty, is a malformed sample, never the default), and each line holds that filter's answer: which one is
the output is declared (``dataset.answer_filter``), and a file with several filters read without it is refused (the
order of its lines would decide what the metrics measure). lm-eval's ``repeats`` are reduced by its own filters
into one score per doc, so an lm-eval sample has one epoch. The results file's ``n-samples`` says how many
documents the task ran (``effective``, documents ``0`` to ``effective - 1``): a document the samples file does not
hold is a failed sample, never left out.

Pinned to lm-eval 0.4.x (0.4.13 made the committed fixture).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from evalglass.engine.datasets.toollogs.toolresults import (
    ToolProblem,
    ToolReader,
    ToolSample,
    UnknownVersion,
    absent_sample,
    answer_text,
    check_absent,
    load_json,
    score_entry,
)
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import MendedLines, not_json, text_start

#: lm-eval versions read: a ``major.minor`` prefix of ``lm_eval_version``.
VERSIONS = ("0.4",)
TESTED_WITH = ("lm-eval 0.4.13",)
MAX_BYTES = 1 << 30


class LmEvalReader(ToolReader):
    tool = "lm-eval"
    file_name = "samples file"

    def __init__(self, path: Path, *, answer_filter: str | None = None, **options: Any) -> None:
        super().__init__(path, **options)
        self.answer_filter = answer_filter

    def files(self) -> tuple[Path, ...]:
        """The samples file and the results file beside it, which decides which documents ran (``n-samples``)."""
        results = results_path(self.path)
        return (self.path,) if results is None else (self.path, results)

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        version, document = _version(self.path)
        task = _task(self.path)
        self.source = {"tool": "lm-eval", "version": version, "task": task}
        data = self._read_bytes(MAX_BYTES)
        merged: dict[str, ToolSample] = {}
        answers: dict[str, str | float | None] = {}  # per document, the declared filter's answer
        filters: dict[str, None] = {}
        unreadable: set[int] = set()  # documents whose line is a malformed sample: counted there, not as absent
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = load_json(raw, self.mended, number)
            except orjson.JSONDecodeError as exc:
                yield ToolProblem(f"line {number}", number, not_json(raw, exc))
                continue
            sample = self._parse(f"line {number}", number, _sample, line, number)
            if isinstance(sample, ToolProblem):
                if isinstance(line, dict) and type(line.get("doc_id")) is int:
                    unreadable.add(line["doc_id"])
                yield sample
                continue
            named = _filter_of(line)
            assert named is not None  # _sample refused a line whose filter is not a name
            filters[named] = None
            if named == self.answer_filter:
                answers[sample.id] = sample.text
            known = merged.get(sample.id)
            if known is None:
                merged[sample.id] = sample
                continue
            clash = set(known.scores) & set(sample.scores)
            if clash:
                raise SetupError(
                    f"doc_id {sample.id} has a second line with the same metrics ({', '.join(sorted(clash))}) at "
                    f"line {number} (first at {known.place})",
                    where=str(self.path),
                    fix="keep one lm-eval run per samples file",
                )
            known.scores.update(sample.scores)
        self._check_filters(list(filters))
        if self.answer_filter is not None:
            self.source["answer_filter"] = self.answer_filter
            # A document without the declared filter's line has no answer here (not captured), never another's.
            merged = {key: replace(sample, text=answers.get(key)) for key, sample in merged.items()}
        yield from merged.values()
        yield from self._absent(document, task, {int(key) for key in merged} | unreadable, data.count(b"\n") + 1)

    def _check_filters(self, filters: list[str]) -> None:
        """Which filter's answer is the output is declared when the file holds several, and must be one it holds."""
        shown = ", ".join(repr(name) for name in filters)
        if self.answer_filter is None and len(filters) > 1:
            raise SetupError(
                f"the samples file holds the answers of {len(filters)} filters ({shown}): which one the metrics "
                "measure is not the order of its lines",
                where=str(self.path),
                fix=f"declare it in the config: dataset.answer_filter: {filters[0]!r} (one of {shown})",
            )
        if self.answer_filter is not None and filters and self.answer_filter not in filters:
            raise SetupError(
                f"dataset.answer_filter {self.answer_filter!r} is not a filter of this samples file ({shown})",
                where=str(self.path),
                fix=f"name one of {shown}",
            )

    def _absent(self, document: dict[str, Any], task: str, held: set[int], lines: int) -> Iterator[ToolSample]:
        """The documents lm-eval ran (``n-samples``' ``effective`` for the task: documents 0 to effective - 1, as
        ``--limit`` takes them) that the samples file does not hold."""
        counts = document.get("n-samples")
        effective = counts.get(task, {}).get("effective") if isinstance(counts, dict) else None
        if type(effective) is not int or effective <= 0:
            return
        if len(held) >= effective:
            return  # every document counted is here (a --samples selection numbers them its own way)
        counted = f"lm-eval's results file counts {effective} documents for task {task!r} (n-samples)"
        if any(not 0 <= index < effective for index in held):
            # Documents picked by --samples: which of them are missing cannot be told, only that some are.
            raise SetupError(
                f"the samples file holds {len(held)} documents and {counted}; which are missing cannot be told",
                where=str(self.path),
                fix="use the samples file lm-eval wrote with this results file, from a run that completed",
            )
        check_absent(effective - len(held), len(held), self.path, self.tool)
        for index in range(effective):
            if index not in held:
                lines += 1
                yield absent_sample(str(index), 1, lines, counted)


def _version(path: Path) -> tuple[str, dict[str, Any]]:
    """The lm-eval version that wrote ``path`` and its results file (read beside it)."""
    results = results_path(path)
    if results is None:
        raise SetupError(
            "an lm-eval samples file is named samples_<task>_<time>.jsonl",
            where=str(path),
            fix="point dataset.path at the file lm-eval --log_samples wrote",
        )
    try:
        if not results.is_file():
            raise FileNotFoundError(results)
        # Written by Python's json, as the samples are: a NaN (a metric's stderr over one sample) is read as the
        # float it is, not a file "missing or unreadable"; one in UTF-16 is refused naming its encoding (text_start).
        text = text_start(results.read_bytes(), what="lm-eval results file", where=str(results))
        document = load_json(text, MendedLines(str(results)))
    except (OSError, ValueError):  # orjson.JSONDecodeError is a ValueError
        raise SetupError(
            f"cannot tell which lm-eval wrote this file: {results.name} (beside it, with its version) is missing or "
            "unreadable",
            where=str(path),
            fix="keep the results_<time>.json lm-eval wrote next to the samples file",
        ) from None
    version = document.get("lm_eval_version") if isinstance(document, dict) else None
    if not isinstance(version, str) or not any(version == v or version.startswith(v + ".") for v in VERSIONS):
        raise UnknownVersion(path, "lm-eval", "version", version, VERSIONS)
    return version, document


def results_path(path: Path) -> Path | None:
    """The results file lm-eval wrote beside samples file ``path`` (None: ``path`` is not named as one)."""
    stem = path.name
    if not (stem.startswith("samples_") and stem.endswith(".jsonl")):
        return None
    moment = stem[:-6].rsplit("_", 1)[-1]
    return path.with_name(f"results_{moment}.json")


def _task(path: Path) -> str:
    return path.name[len("samples_") : -len(".jsonl")].rsplit("_", 1)[0]


#: lm-eval's filter when a line names none (``--log_samples`` always writes one; a line without the key predates it).
DEFAULT_FILTER = "none"


def _filter_of(line: dict[str, Any]) -> str | None:
    """The line's filter: its name, lm-eval's default when the key is absent, None when it is not a name (not text,
    or empty: a falsy ``0``, ``false`` or ``""`` is not the default)."""
    named = line.get("filter", DEFAULT_FILTER)
    return named if type(named) is str and named else None


def _sample(line: Any, number: int) -> ToolSample | ToolProblem:
    place = f"line {number}"
    if not isinstance(line, dict) or type(line.get("doc_id")) is not int:
        return ToolProblem(place, number, "is not an lm-eval sample (no integer doc_id)")
    metrics = line.get("metrics")
    if not isinstance(metrics, list) or not all(isinstance(name, str) for name in metrics):
        return ToolProblem(place, number, "has no list of metrics")
    named = _filter_of(line)
    if named is None:
        # Read as lm-eval's default, its scores would land under the default filter's names (or another line's).
        return ToolProblem(place, number, f"has a filter that is not a filter's name ({line['filter']!r})")
    suffix = "" if named == "none" else f",{named}"
    scores: dict[str, dict[str, Any]] = {}
    for name in metrics:
        value = line.get(name)
        scores[name + suffix] = score_entry(value)  # as recorded: recorded_score says what is not a number
    arguments = line.get("arguments")
    prompt = None
    if isinstance(arguments, dict) and arguments:
        first = next(iter(arguments.values()))
        prompt = first.get("arg_0") if isinstance(first, dict) else None
    filtered = line.get("filtered_resps")
    first = filtered[0] if isinstance(filtered, list) and filtered else None
    text = answer_text(first)
    if text is None and not isinstance(first, list):
        # A generation's answer is text, a loglikelihood's response a [log-probability, is-greedy] pair (no answer:
        # not captured). Anything else was edited or damaged: read as not captured, it would be non_evaluable,
        # which a gate may tolerate.
        return ToolProblem(place, number, "has no filtered_resps answer: not a sample as lm-eval writes it")
    return ToolSample(
        id=str(line["doc_id"]),
        epoch=1,
        place=place,
        line=number,
        input={"prompt": prompt, "doc": line.get("doc")},
        target=line.get("target"),
        text=text,
        scores=scores,
        metadata={"doc_hash": line.get("doc_hash")},
    )
