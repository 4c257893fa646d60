"""OpenAI Evals record logs (``oaieval ... --record_path FILE.jsonl``; ``dataset.format: openai-evals``).

The log is JSON lines: a ``spec`` line (the eval, its completion functions, the command), a ``final_report`` line,
and events, each ``{run_id, event_id, sample_id, type, data}``. One example per ``sample_id``, its events gathered
from wherever they are in the file: the first ``sampling`` gives the prompt (the input) and the answer (a later one is
a grader's call: model-graded evals record it under the same sample, after the answer); ``match`` gives
the answer (``sampled``), the target (``expected``) and the score ``match`` (``correct``); ``metrics`` events give
one score per key of their data (model-graded evals). An event type not listed here is refused, naming it.

A model-graded eval (``ModelBasedClassify``) records per sample ``choice`` (one of the eval's choice strings) and
``score`` (what the eval's ``choice_scores`` makes it, or null when the eval declares none): the choice's score is
passed on as the label's ``worth`` (the log does not hold ``choice_scores`` otherwise), and one choice worth two
numbers in one log stops the run, naming both lines. ``__invalid__`` (the grader's answer matched no choice) is the
grader's failure: its ``choice`` and ``score`` are errors, never the lowest choice's score evals counts it as.

How many samples ran: the log holds no count, but it says whether the run finished (oaieval writes the
``final_report`` line when it does: a log without one was cut short, and which of its samples are missing cannot be
told, so it is refused), and evals numbers the samples it runs ``<eval>.<split>.<index>``, over every index of its
samples file unless ``max_samples`` (recorded in the spec) took a shuffled subset: without it, an index below the
highest held that the log does not hold is a sample the run started and the log lost (a failed sample, never left
out). Lost samples the spec and the final report can show are refused (which they were cannot be told): a ``Match``
eval's ``accuracy`` is its correct matches over all of them, a model-graded eval's ``counts/...`` add up to the
samples it graded, and under ``max_samples`` M a run holds M samples, or all N (numbered 0 to N-1) of a smaller
file. A log cut after its final report line (evals writes its last batch of events at exit, after the report)
still has one: oaieval sums every sampling event's ``usage`` into the report (``usage_*``), so a log whose sampling
events add up to another total is refused too, for any eval class; and a sample without the score event its eval
records for every sample (``match``, model-graded ``metrics``) lost it, a malformed example. What cannot be told,
in a log whose sampling events hold no usage: a loss in the proportion of a ``Match`` log's accuracy, the losses of
other eval classes (their final reports are their own code's figures), the last samples of a file smaller than
``max_samples``. The events' ``event_id`` (0 onwards) does not help: the ones a log loses are the highest ids,
which leave no gap.

The log records no version of its own: EvalGlass reads the record format of ``evals`` 3.0.x (3.0.1.post1 made the
committed fixture), recognised by its ``spec`` line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import orjson

from evalglass.engine.datasets.toollogs.toolresults import (
    ToolProblem,
    ToolReader,
    ToolSample,
    absent_sample,
    answer_text,
    check_absent,
    load_json,
    score_entry,
)
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import not_json

TESTED_WITH = ("evals 3.0.1.post1",)
EVENT_TYPES = frozenset({"sampling", "match", "metrics"})
MAX_BYTES = 1 << 30
#: What a model-graded eval records as the choice when the grader's answer matched none of the eval's choice strings
#: (``evals.elsuite.modelgraded.classify_utils.INVALID_STR``); evals scores it as the lowest choice.
INVALID_CHOICE = "__invalid__"


class OpenAIEvalsReader(ToolReader):
    tool = "openai-evals"

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        data = self._read_bytes(MAX_BYTES)
        samples: dict[str, ToolSample] = {}
        sampled: set[str] = set()  # the samples whose answer (their first sampling event) is read
        worths: dict[str, tuple[float, int]] = {}  # a model-graded eval's choice → its score, and where first read
        spec_seen = finished = False
        numbered: str | None = None  # the prefix of sample ids numbered 0 to N-1 (a run without max_samples)
        spec: dict[str, Any] = {}
        report: Any = None
        tally = _Tally()
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            try:
                line = load_json(raw, self.mended, number)
            except orjson.JSONDecodeError as exc:
                yield ToolProblem(f"line {number}", number, not_json(raw, exc))
                continue
            if not isinstance(line, dict):
                yield ToolProblem(f"line {number}", number, "is not an object")
                continue
            if "spec" in line:
                spec = line["spec"]
                if not isinstance(spec, dict) or "eval_name" not in spec or "run_config" not in spec:
                    raise self._not_a_log("its spec line has no eval_name and run_config")
                if spec_seen:  # oaieval appends to --record_path: another run's events would mix into these
                    raise SetupError(
                        f"the log holds a second run (its spec line at line {number}): its samples would mix with "
                        "the first run's",
                        where=str(self.path),
                        fix="write each run to a file of its own (oaieval --record_path)",
                    )
                spec_seen = True
                numbered = _numbered(spec)
                self.source = {
                    "tool": "openai-evals",
                    "version": "3.0",
                    "eval": spec.get("eval_name"),
                    "completion_fns": spec.get("completion_fns"),
                    "run_id": spec.get("run_id"),
                }
                continue
            if "final_report" in line:
                finished = True
                report = line["final_report"]
                continue
            if not spec_seen:
                raise self._not_a_log("no spec line before the first event")
            kind = line.get("type")
            if not isinstance(kind, str) or kind not in EVENT_TYPES:
                read = ", ".join(sorted(EVENT_TYPES))
                raise SetupError(
                    f"event type {kind!r} (line {number}) is not one EvalGlass reads ({read})",
                    where=str(self.path),
                    fix="report the eval class that writes it; EvalGlass was tested with evals 3.0.1.post1",
                )
            sample_id = line.get("sample_id")
            event = line.get("data")
            if kind == "sampling" and isinstance(event, dict):
                tally.add_usage(event.get("usage"))
            if not isinstance(sample_id, str) or not isinstance(event, dict):
                yield ToolProblem(f"line {number}", number, "an event without a sample_id or data")
                continue
            sample = samples.get(sample_id)
            if sample is None:
                sample = samples[sample_id] = ToolSample(
                    id=sample_id,
                    epoch=1,
                    place=f"line {number}",
                    line=number,
                    input=None,
                    target=None,
                    text=None,
                    scores={},
                )
            if kind == "sampling":
                if sample_id in sampled:
                    continue
                sampled.add(sample_id)
            if kind == "metrics":
                self._same_worth(event, number, worths)
                tally.graded.add(sample_id)
            elif kind == "match":
                tally.matched[sample_id] = event.get("correct") is True
            problem = self._parse(f"line {number}", number, _apply, sample, kind, event, number)
            if isinstance(problem, ToolProblem):
                yield problem
        if not spec_seen:
            raise self._not_a_log("it has no spec line")
        if not finished:
            raise SetupError(
                "the log has no final_report line: oaieval did not finish this run (cut short, or still running), so "
                "samples it ran may be missing, and which cannot be told",
                where=str(self.path),
                fix="measure the log of a run that completed (oaieval writes final_report when it finishes)",
            )
        scored = _scored_by(spec, tally)
        for sample_id, sample in samples.items():
            if sampled and sample_id not in sampled:
                # A completion function that records sampling records it for every sample: without it, this
                # sample was edited out, not left uncaptured (non_evaluable, which a gate may tolerate).
                yield ToolProblem(
                    sample.place,
                    sample.line,
                    f"sample {sample_id!r} has no sampling event, while the log records one for other samples",
                )
            elif scored is not None and sample_id not in scored[1]:
                # The eval records its score event for every sample it ran, after the sample's sampling: a sample
                # without one lost it (the log cut short after its final report line, or edited).
                yield ToolProblem(
                    sample.place,
                    sample.line,
                    f"sample {sample_id!r} has no {scored[0]} event, while {_eval_class(spec)} records one for "
                    "every sample it runs: the log lost it (cut short after its final report line?)",
                )
            else:
                yield sample
        absent = [] if numbered is None else list(self._absent(numbered, list(samples), data.count(b"\n") + 1))
        self._check_max_samples(spec, list(samples))
        self._check_report(spec, report, tally, len(absent))
        yield from absent

    def _check_max_samples(self, spec: dict[str, Any], held_ids: list[str]) -> None:
        """Under ``max_samples`` M, evals runs M samples, or every one of a file holding fewer (numbered ``0`` to
        ``N-1``): a log with more than M is not one run's, and one with fewer that are not numbered so lost some,
        which cannot be told (the shuffled subset depends on the file's length, which the log does not record)."""
        limit = _max_samples(spec)
        if limit is None:
            return
        held = len(held_ids)
        if held > limit:
            raise SetupError(
                f"the log holds {held} samples and its run's max_samples is {limit}: it is not the log of one run",
                where=str(self.path),
                fix="point dataset.path at the log one `oaieval --record_path` run wrote, unedited",
            )
        prefix = _prefix(spec)
        indices = _indices(prefix, held_ids) if prefix is not None else None
        if held < limit and indices != set(range(held)):
            raise SetupError(
                f"the log holds {held} samples, fewer than its run's max_samples {limit}, and not samples 0 to "
                f"{held - 1} of a smaller file: samples the run made are lost, and which cannot be told",
                where=str(self.path),
                fix="measure the complete log of a run (oaieval --record_path), unedited",
            )

    def _check_report(self, spec: dict[str, Any], report: Any, tally: _Tally, absent: int) -> None:
        """What the final report counts, where evals' own code says how: a ``Match`` eval's ``accuracy`` is its
        correct matches over its matches; a model-graded eval's ``counts/...`` are its graded samples. A log that
        holds fewer than that (``absent``: those already found missing below the highest index) lost samples, and
        one that holds more is not the run's: either way, which are missing cannot be told."""
        if not isinstance(report, dict):
            return
        fix = "measure the complete log of a run (oaieval --record_path), unedited"
        why = "samples are lost (or the log was edited), and which cannot be told"
        unequal = next(_usage_totals(report, tally), None)
        if unequal is not None:
            key, total, held = unequal
            raise SetupError(
                f"the final report's {key} is {total:,} and the log's sampling events add up to {held:,} (oaieval "
                f"sums every sampling event's usage into the report before it writes the last events): {why}",
                where=str(self.path),
                fix=fix,
            )
        eval_class = _eval_class(spec)
        accuracy = report.get("accuracy")
        if eval_class == MATCH_CLASS and isinstance(accuracy, float) and math.isfinite(accuracy) and tally.matched:
            correct, total = sum(tally.matched.values()), len(tally.matched) + absent
            if not any((correct + lost) / total == accuracy for lost in range(absent + 1)):
                below = f", and {absent} lost below its highest index" if absent else ""
                raise SetupError(
                    f"the final report's accuracy {accuracy:g} is not that of the log's matches ({correct} correct "
                    f"of {len(tally.matched)}{below}): {why}",
                    where=str(self.path),
                    fix=fix,
                )
        graded = _graded_total(report)
        if graded is not None and not graded - absent <= len(tally.graded) <= graded:
            raise SetupError(
                f"the final report counts {graded} graded samples (counts/...) and the log holds "
                f"{len(tally.graded)}"
                + (f" (and {absent} lost below its highest index)" if absent else "")
                + f": {why}",
                where=str(self.path),
                fix=fix,
            )

    def _absent(self, prefix: str, held_ids: list[str], lines: int) -> Iterator[ToolSample]:
        """The samples a run without ``max_samples`` ran that the log does not hold: every index below the highest
        held (evals runs indexes 0 to N-1 of its samples file). Ids not numbered so (an eval of its own naming)
        say nothing."""
        held = _indices(prefix, held_ids)
        if not held:
            return
        # Counted before any is made: an index of 10**12 in a tampered log is refused, not a list of that length.
        check_absent(max(held) + 1 - len(held), len(held), self.path, self.tool)
        missing = [index for index in range(max(held) + 1) if index not in held]
        why = (
            f"evals ran every sample of the eval's file (no max_samples), numbered {prefix}0 onwards, and the log "
            f"holds {prefix}{max(held)}"
        )
        for index in missing:
            lines += 1
            yield absent_sample(f"{prefix}{index}", 1, lines, why)

    def _same_worth(self, event: dict[str, Any], number: int, worths: dict[str, tuple[float, int]]) -> None:
        """Refuse a log in which one choice is worth two scores: one eval's ``choice_scores`` gives each choice one
        number, so such a log does not add up (two runs mixed, or edited), and neither number can be taken."""
        choice, worth = _choice_worth(event)
        if choice is None or worth is None:
            return
        first, line = worths.setdefault(choice, (worth, number))
        if first != worth:
            raise SetupError(
                f"choice {choice!r} is worth {first} at line {line} and {worth} at line {number}: one eval's "
                "choice_scores gives each choice one score",
                where=str(self.path),
                fix="point dataset.path at the log one `oaieval --record_path` run wrote, unedited",
            )

    def _not_a_log(self, why: str) -> SetupError:
        return SetupError(
            f"not an OpenAI Evals record log: {why}",
            where=str(self.path),
            fix="point dataset.path at the file `oaieval --record_path` wrote",
        )


#: The eval class whose final report's ``accuracy`` is ``evals.metrics.get_accuracy`` of its ``match`` events.
MATCH_CLASS = "evals.elsuite.basic.match:Match"


#: The model-graded eval class, which records a ``metrics`` event for every sample it grades.
GRADED_CLASS = "evals.elsuite.modelgraded.classify:ModelBasedClassify"


class _Tally:
    """What the log's events hold that its final report counts: each sample's match (correct or not), the samples
    a model-graded eval graded (a ``metrics`` event), and the token usage of every sampling event (``usage``: its
    sum per key, None for a key some event holds as no integer; ``usages``: the events that held a usage)."""

    def __init__(self) -> None:
        self.matched: dict[str, bool] = {}
        self.graded: set[str] = set()
        self.usage: dict[str, int | None] = {}
        self.usages = 0

    def add_usage(self, usage: Any) -> None:
        """Count one sampling event's ``usage`` as oaieval's ``add_token_usage_to_result`` does (events with none
        are left out; a null count is 0)."""
        if not isinstance(usage, dict):
            return
        self.usages += 1
        for key, value in usage.items():
            if not isinstance(key, str):
                continue
            found = self.usage.get(key, 0)
            if value is None:
                self.usage.setdefault(key, 0)
            elif type(value) is int and found is not None:
                self.usage[key] = found + value
            else:  # a nested count (``prompt_tokens_details``) or a float: not summed here, not compared
                self.usage[key] = None


def _usage_totals(report: dict[str, Any], tally: _Tally) -> Iterator[tuple[str, int, int]]:
    """Each ``usage_<key>`` of the final report that the log's sampling events do not add up to: (report key, the
    report's total, the log's). oaieval (``add_token_usage_to_result``) sums the usage of every sampling event the
    run recorded, in memory, into the report before the report line is written, and the events it had not flushed
    yet are written after that line, at exit: a log cut after its report line holds fewer. A log none of whose
    sampling events holds a usage is compared too (its total is 0): the report's totals came from some."""
    for name, total in report.items():
        if not isinstance(name, str) or not name.startswith("usage_") or type(total) is not int:
            continue
        key = name[len("usage_") :]
        held = tally.usage.get(key, 0)
        if held is None:
            continue  # some event's count is not an integer: oaieval's sum is not one this can redo
        if held != total:
            yield name, total, held


def _scored_by(spec: dict[str, Any], tally: _Tally) -> tuple[str, set[str] | dict[str, bool]] | None:
    """The score event the log's eval records for every sample it runs, and the samples the log holds it for:
    ``match`` for a ``Match`` eval, ``metrics`` for a model-graded one; None for other classes (their code says)."""
    eval_class = _eval_class(spec)
    if eval_class == MATCH_CLASS:
        return "match", tally.matched
    if eval_class == GRADED_CLASS:
        return "metrics", tally.graded
    return None


def _eval_class(spec: dict[str, Any]) -> str | None:
    run_config = spec.get("run_config")
    eval_spec = run_config.get("eval_spec") if isinstance(run_config, dict) else None
    cls = eval_spec.get("cls") if isinstance(eval_spec, dict) else None
    return cls if isinstance(cls, str) else None


def _graded_total(report: dict[str, Any]) -> int | None:
    """The samples a model-graded eval graded, from its final report's ``counts/<metric>/<choice>`` (or, in older
    evals, ``counts/<choice>``): per metric, its choices' counts add up to the graded samples; None when the report
    has no counts."""
    totals: dict[str, int] = {}
    for key, value in report.items():
        if isinstance(key, str) and key.startswith("counts/") and type(value) is int:
            metric = key[len("counts/") :].rpartition("/")[0]
            totals[metric] = totals.get(metric, 0) + value
    return max(totals.values()) if totals else None


def _max_samples(spec: dict[str, Any]) -> int | None:
    run_config = spec.get("run_config")
    limit = run_config.get("max_samples") if isinstance(run_config, dict) else None
    return limit if type(limit) is int and limit >= 0 else None


def _prefix(spec: dict[str, Any]) -> str | None:
    """The prefix evals numbers the run's sample ids with (``<base_eval>.<split>.``)."""
    name = spec.get("eval_name")
    parts = name.split(".") if isinstance(name, str) else []
    return ".".join(parts[:2]) + "." if len(parts) >= 2 else None


def _indices(prefix: str, held_ids: list[str]) -> set[int] | None:
    """The sample indexes of ``held_ids`` (None when one is not numbered ``<prefix><index>``)."""
    held: set[int] = set()
    for sample_id in held_ids:
        number = sample_id[len(prefix) :] if sample_id.startswith(prefix) else ""
        if not number.isdigit() or not number.isascii():
            return None
        held.add(int(number))
    return held


def _numbered(spec: dict[str, Any]) -> str | None:
    """The prefix of the sample ids of a run over every sample (``<eval>.<split>.``, as evals names them), or None
    when ``max_samples`` took a shuffled subset (or the spec does not say)."""
    run_config = spec.get("run_config")
    if not isinstance(run_config, dict) or "max_samples" not in run_config or run_config["max_samples"] is not None:
        return None
    return _prefix(spec)


def _apply(sample: ToolSample, kind: str, event: dict[str, Any], number: int) -> ToolSample | ToolProblem:
    """Add one event's data to ``sample``: the sample, or a problem at the event's line."""
    if kind == "sampling":
        sample.input = event.get("prompt")
        sampled = event.get("sampled")
        if isinstance(sampled, list) and sampled:
            sample.text = answer_text(sampled[0])
        return sample
    if kind == "match":
        if "match" in sample.scores:
            return ToolProblem(f"line {number}", number, f"a second match event for sample {sample.id}")
        correct = event.get("correct")
        sample.scores["match"] = score_entry(correct)  # as recorded: recorded_score says what is not a pass/fail
        if sample.text is None:
            sample.text = answer_text(event.get("sampled"))
        sample.target = event.get("expected")
        return sample
    graded = _graded(event)
    for key, value in event.items():
        if key in sample.scores:
            return ToolProblem(f"line {number}", number, f"a second {key!r} score for sample {sample.id}")
        sample.scores[key] = graded.get(key) or score_entry(value)
    return sample


def _choice_worth(event: dict[str, Any]) -> tuple[str | None, float | None]:
    """A model-graded eval's choice and the score its ``choice_scores`` gives it, when the event records both."""
    choice, score = event.get("choice"), event.get("score")
    if not isinstance(choice, str) or choice == INVALID_CHOICE:
        return (choice if isinstance(choice, str) else None), None
    if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
        return choice, None
    return choice, float(score)


def _graded(event: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``choice`` and ``score`` entries of a model-graded eval's metrics event, where they are more than the
    values as recorded: the choice with its worth, or both an error when the grader chose nothing."""
    choice, worth = _choice_worth(event)
    if choice == INVALID_CHOICE:
        why = (
            "the grader's answer matched none of the eval's choice strings (evals records __invalid__ and counts "
            "it as the lowest choice score)"
        )
        return {key: score_entry(None, error=why) for key in ("choice", "score") if key in event}
    if choice is not None and worth is not None:
        return {"choice": score_entry(choice, worth=worth)}
    return {}
