"""LLM judges, the live side of ``llm_judge`` metrics: a host-owned rubric, a judge endpoint, a scale, and a
structured answer. The metric (metrics/llm_judge.py, above lanes) defines what the judge asks and how it grades
(:class:`JudgeDefinition`); this module renders, calls, parses and calibrates.

The judge must answer a JSON object ``{"score": ..., "rationale": "..."}`` (a fenced ```json block or an object
embedded in prose is accepted too: the object holding ``score``, see :func:`extract_answer`). How an answer becomes
a :class:`~evalglass.core.score.Score`:

=====================================  =====================================================================
answer                                 score
=====================================  =====================================================================
on the scale                           ``scored`` + ``valid``: the number (a label's value on label scales); a
                                       plain decimal number written as text (``"4"``) is that number, an integer
                                       on a label scale the label its digits spell (``json-score@3``)
a number off the scale (or between     ``scored`` + ``invalid``, code ``judge_off_scale``: the number is kept
integer points)                        but never enters aggregation
a label that is not on the scale       ``error``, code ``judge_off_scale`` (a label off the scale has no number)
no JSON object, no ``score``, a score  ``error``, code ``judge_unparseable``; the raw answer is kept in the
of the wrong type, or two different    diagnostic's ``detail``
scores (or ``score`` twice)
the call finally failed                ``error`` with the fault's code (``call_timeout``, ``call_rate_limited``
                                       ...) and message
=====================================  =====================================================================

Never 0.0 for a fault. The definition's fingerprint (``metrics.llm_judge.judge_fingerprint``) binds a calibration
(and an approval) to the judge as defined: endpoint model, rubric bytes, prompt templates and scale; where it is
served is bound beside it (``core.endpoint``), and its cached answers are keyed by both.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evalglass import redaction
from evalglass.core.calibration import Calibration, calibrate
from evalglass.core.endpoint import serving_origin
from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.fingerprint import content_address
from evalglass.core.goldfields import record_without
from evalglass.core.pairwise import Inconsistent
from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.core.textcase import caseless
from evalglass.core.trajectory import Inconsistent as InconsistentTrajectory
from evalglass.core.trajectory import Unreadable
from evalglass.errors import SetupError
from evalglass.lanes.callcache import CallStore, Hit, cache_key
from evalglass.lanes.chatcall import ChatAnswer, ChatRequest, TransportChoice, answer
from evalglass.lanes.chatclients import open_chat_client
from evalglass.lanes.executor import Executor
from evalglass.lanes.judgespec import JudgeScale, TranscriptSpec
from evalglass.lanes.retry import Attempt, Retrier
from evalglass.lanes.specs import EndpointSpec
from evalglass.lanes.templating import TemplateFailure, compile_template, render
from evalglass.lanes.transcript import Cut, Transcripts, with_cut
from evalglass.readers import jsonsource
from evalglass.readers.userfiles import read_regular


# ---------------------------------------------------------------------- parsing
@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """A parsed judge answer: the score, the rationale and the scale category (None when off-scale)."""

    score: Score
    rationale: str | None = None
    label: int | str | None = None


_MAX_RAW = 4000


class _Repeated(dict[str, Any]):
    """A JSON object that gave a key twice (``repeated`` names it): which value the judge meant cannot be told."""

    repeated: str = ""


def _object_of(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            twice = _Repeated(pairs)
            twice.repeated = key
            return twice
        found[key] = value
    return found


_DECODER = json.JSONDecoder(object_pairs_hook=_object_of)


def _objects_in(text: str) -> list[dict[str, Any]]:
    """The JSON objects the answer holds: the whole text when it is one, else every object in it that no other
    holds, in order (a fenced block's among them), read left to right."""
    stripped = text.strip()
    try:
        whole = _DECODER.decode(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position >= 0:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _same(values: list[Any]) -> bool:
    """Whether the values are one JSON value (``4`` and ``4.0`` are; ``true`` and ``1`` are not)."""
    first = values[0]
    return all(value == first and isinstance(value, bool) == isinstance(first, bool) for value in values)


def extract_answer(text: str, key: str) -> dict[str, Any] | str:
    """The judge's answer object, the one holding ``key``: the whole text, a fenced block, or an object embedded in
    prose; or why none can be read. A judge that quotes the graded output (itself JSON) before its verdict still
    answers; one whose answer gives ``key`` twice, or several objects giving different ``key`` values (a quoted
    ``{"score": 5}`` beside its own ``{"score": 1}``), did not say one thing, and is never read as its first."""
    objects = _objects_in(text)
    if not objects:
        return "no JSON object in it"
    answers = [found for found in objects if key in found]
    if not answers:
        return f'the JSON object has no "{key}"'
    for found in answers:
        if isinstance(found, _Repeated) and found.repeated == key:
            return f'the JSON object gives "{key}" twice'
    if not _same([found[key] for found in answers]):
        shown = ", ".join(json.dumps(found[key]) for found in answers)
        return _short(f'{len(answers)} JSON objects give different "{key}" values ({shown}): which is meant is unclear')
    return answers[-1]


def _raw(text: str) -> str:
    """The judge's answer as kept in a diagnostic: redacted, then cut to ``_MAX_RAW`` characters."""
    return redaction.current().head(text, _MAX_RAW + 1)


def _short(text: str) -> str:
    """A piece of the answer quoted in a message: redacted, then cut to 200 characters."""
    return redaction.current().head(text, 200, "")


#: A plain decimal number written as text: optional sign, digits, optionally a point and digits; nothing else (no
#: exponent, no ``NaN``, no digit separators, no words around it). ASCII digits only (``re.ASCII``).
_DECIMAL = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?", re.ASCII)


def numeral(value: Any) -> Any:
    """A numeric scale's score as the judge wrote it: a string that is a plain decimal number (``"4"``, ``" 4.0 "``)
    is that number (``json-score@3``: a judge that quotes its number still answered it), anything else as it is (so
    ``"four"``, ``"4/5"``, ``"1e1"`` or ``"NaN"`` stay what the rules refuse). The number then meets the same rules
    as one written bare: on the scale it is the score, between points or off the scale ``judge_off_scale``."""
    if type(value) is str and _DECIMAL.fullmatch(value.strip()):
        text = value.strip()
        return int(text) if "." not in text else float(text)
    return value


def label_text(value: Any, scale: JudgeScale) -> Any:
    """A label scale's score as the judge wrote it: an integer (not a bool) whose digits spell one of the scale's
    labels is that label, so a judge answering ``{"score": 2}`` on labels ``["1", "2", "3"]`` answered ``"2"``
    (``json-score@3``, the mirror of :func:`numeral`); anything else as it is (a number no label spells is still not
    a label: ``judge_unparseable``)."""
    if type(value) is int and str(value) in scale.label_values():
        return str(value)
    return value


#: Said of every judge answer that is not a score on its scale: it is not kept, so asking again can decide.
ASKED_AGAIN = "not kept in the call cache: the next run asks the judge again"


def _unparseable(why: str, text: str, evidence: tuple[str, ...]) -> JudgeAnswer:
    return JudgeAnswer(
        Score.unmeasured(
            Status.ERROR,
            "judge_unparseable",
            f"the judge's answer could not be read: {why} ({ASKED_AGAIN})",
            _raw(text),
            evidence=evidence,
        )
    )


def parse_judge_answer(text: str, scale: JudgeScale, *, evidence: tuple[str, ...] = ()) -> JudgeAnswer:
    """Turn the judge's raw answer into a Score (see the module docstring for the rules)."""
    answer = extract_answer(text, "score")
    if isinstance(answer, str):
        return _unparseable(answer, text, evidence)
    value = answer["score"]
    rationale_value = answer.get("rationale")
    rationale = None if rationale_value is None else str(rationale_value)
    if scale.numeric:
        value = numeral(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _unparseable(
                _short(f'"score" must be a number, got {type(value).__name__} {value!r}'), text, evidence
            )
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            return _unparseable(_short(f'"score" is not a finite number: {value!r}'), text, evidence)
        assert scale.min is not None and scale.max is not None
        if number.is_integer() and scale.min <= number <= scale.max:
            return JudgeAnswer(
                Score(status=Status.SCORED, validity=Validity.VALID, value=number, evidence=evidence),
                rationale,
                int(number),
            )
        return JudgeAnswer(
            Score(
                status=Status.SCORED,
                validity=Validity.INVALID,
                value=number,
                diagnostics=(
                    Diagnostic(
                        code="judge_off_scale",
                        message=f"the judge answered {value!r}, not {scale.describe()} ({ASKED_AGAIN})",
                        detail=_raw(text),
                    ),
                ),
                evidence=evidence,
            ),
            rationale,
            None,
        )
    value = label_text(value, scale)
    if not isinstance(value, str):
        return _unparseable(
            _short(f'"score" must be a label string, got {type(value).__name__} {value!r}'), text, evidence
        )
    values = scale.label_values()
    label = value.strip()
    if label not in values:
        key = caseless(label)
        folded = [name for name in values if caseless(name) == key]
        if len(folded) != 1:
            return JudgeAnswer(
                Score.unmeasured(
                    Status.ERROR,
                    "judge_off_scale",
                    f"the judge answered the label {value!r}, not {scale.describe()} ({ASKED_AGAIN})",
                    _raw(text),
                    evidence=evidence,
                ),
                rationale,
                None,
            )
        label = folded[0]
    return JudgeAnswer(
        Score(status=Status.SCORED, validity=Validity.VALID, value=values[label], evidence=evidence),
        rationale,
        label,
    )


# ---------------------------------------------------------------------- running
@dataclass(frozen=True, slots=True)
class ScoresOnly:
    """The call cache as a judge uses it: only answers that are a score on the judge's scale are kept or replayed.

    An answer the judge's rules cannot read (``judge_unparseable``) or that is off its scale (``judge_off_scale``)
    is the evaluator failing, not a measurement, like a call that timed out: kept, it would be replayed on every
    later run and block every gate on the judge for good, when asking again (a judge sampled above temperature 0,
    a provider's passing glitch) is what decides it. So it is never stored, and one a cache already holds (stored
    before this rule) is asked again; a readable answer then takes its place. ``readable`` is the judge's own rule
    (:meth:`Judge.readable`): a pairwise judge's is its ``winner``."""

    store: CallStore
    readable: Callable[[str], bool]

    def _keeps(self, value: Any) -> bool:
        content = value.get("content") if isinstance(value, dict) else None
        return not isinstance(content, str) or self.readable(content)

    def fetch(self, key: str) -> Hit | None:
        hit = self.store.fetch(key)
        return hit if hit is None or self._keeps(hit.value) else None

    def put(self, key: str, value: Any, *, kind: str, request: Any = None) -> bool:
        return self._keeps(value) and self.store.put(key, value, kind=kind, request=request)


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One judgement: the score, and what it rests on (rationale, raw answer, attempts, cache address)."""

    score: Score
    rationale: str | None = None
    label: int | str | None = None
    raw: str | None = None
    cached: bool = False
    attempts: tuple[Attempt, ...] = ()
    call_id: str | None = None
    usage: Any = None  # lanes.chat.Usage of the call (the original call's, for a cached answer)
    #: Attempts the call took (a cached call keeps the count it was made with); 0 when no call was made.
    tries: int = 0
    #: A cached answer this same run got before it was interrupted (counted as the run's own call).
    replayed: bool = False
    #: What ``outputs.jsonl`` keeps beside the label for a judgement made of several calls (a jury's votes, a
    #: pairwise judge's compared pairs), and those calls (the live run counts each); a single call has neither.
    record: Mapping[str, Any] | None = None
    parts: tuple[JudgeResult, ...] = ()


@dataclass(frozen=True)
class JudgeDefinition:
    """What a judge asks and how it grades, as the metric it is the live side of defines it (an ``llm_judge``
    metric: ``LlmJudgeSpec.judge_definition``, metrics/llm_judge.py). The metric sits above lanes, so it hands down
    what only it knows as values: the judge names no metric type."""

    #: The model and how to reach it (sampling, timeout, retries, the key's variable).
    endpoint: EndpointSpec
    #: The rubric's text, and the fingerprint of everything that changes what the judge answers.
    rubric: str
    fingerprint: str
    scale: JudgeScale
    prompt: str
    system: str | None
    #: The part of the output graded (ABSENT when there is none to show the judge).
    target: Callable[[Example], Any]
    #: The gold value shown beside it (ABSENT when the record has none), or None when the judge is given none.
    reference: Callable[[Example], Any] | None
    #: What an example whose reference the judge cannot be shown scores (none in the record, or a value JSON cannot
    #: write: the gold's problem, decided by the metric), or None when it can be shown; nothing is measured then,
    #: whatever the answer.
    reference_problem: Callable[[Example, Any], Score | None]
    #: What an answer the judge cannot be shown scores (see ``metrics.invalid``).
    invalid: Callable[[Example], Score]
    #: What a judge of transcripts is shown (None: the output only), and what an output that is no conversation
    #: scores, from its diagnostic code and message (a wrong answer: ``metrics.invalid.unreadable_answer``).
    transcript: TranscriptSpec | None = None
    unreadable: Callable[[str, str], Score] | None = None
    #: A pairwise judge's named outputs (name -> path in the graded output) and what an order-inconsistent verdict
    #: counts as; None for a pointwise judge.
    pairwise: PairwiseSetup | None = None
    #: The record's fields holding some variant's recorded output (the run's gold-excluded fields): the judge's
    #: ``example`` is the record without them, as gold sees it, so it never sees a competing answer (nor, by its
    #: field's name, whose answer it grades); the output it grades is ``output`` (``output_a``/``output_b``).
    output_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class PairwiseSetup:
    """What a pairwise judge compares: the outputs' names with their getters, in declared order (the first is the
    one whose value the metric reports), and the ``inconsistent`` option."""

    names: tuple[str, ...]
    getters: tuple[Callable[[Any], Any], ...]
    inconsistent: Inconsistent


class Judge:
    """A built LLM judge. One per spec per run; create inside the event loop that uses it; ``aclose`` it."""

    def __init__(
        self,
        definition: JudgeDefinition,
        *,
        executor: Executor,
        cache: CallStore | None = None,
        env: Mapping[str, str] | None = None,
        retrier: Retrier | None = None,
        transport: TransportChoice = "auto",
    ) -> None:
        self.definition = definition
        self.endpoint = definition.endpoint
        self.rubric = definition.rubric
        self.fingerprint = definition.fingerprint
        # Answers are cached per server as well as per judge: an answer another server gave (a pull request's
        # judge pointed elsewhere for one run) is never replayed as this server's.
        served = serving_origin(definition.endpoint.provider.value, definition.endpoint.base_url)
        self._calls = content_address({"judge": definition.fingerprint, "served_by": served})
        self.executor = executor
        self.cache = ScoresOnly(cache, self.readable) if cache is not None else None
        self.retrier = retrier or Retrier(definition.endpoint.retry)
        self.client = open_chat_client(definition.endpoint, env=env, transport=transport)
        self._templates = [("user", compile_template(definition.prompt))]
        if definition.system is not None:
            self._templates.insert(0, ("system", compile_template(definition.system)))
        self._target = definition.target
        self._invalid = definition.invalid
        self._reference = definition.reference
        self._transcripts = Transcripts(definition.transcript) if definition.transcript is not None else None
        self._shown = record_without(definition.output_fields)

    async def aclose(self) -> None:
        await self.client.aclose()

    def readable(self, content: str) -> bool:
        """Whether ``content`` is an answer this judge's rules read as a score on its scale (:class:`ScoresOnly`)."""
        return parse_judge_answer(content, self.definition.scale).score.included

    def render(self, example: Example) -> list[tuple[str, str]] | Score:
        """The messages for ``example``, or the Score that explains why there are none (the reference is looked at
        first: without it nothing is measured, whatever the answer)."""
        return self.render_with_cut(example)[0]

    def render_with_cut(self, example: Example) -> tuple[list[tuple[str, str]] | Score, Cut | None]:
        """:meth:`render`, and how much of the transcript was cut (None: all of it is shown, or there is none)."""
        reference: Any = ABSENT
        if self._reference is not None:
            reference = self._reference(example)
            problem = self.definition.reference_problem(example, reference)
            if problem is not None:
                return problem, None
        target = self._target(example)
        if target is ABSENT:
            return self._invalid(example), None
        shown_cut: Cut | None = None
        transcript: str | None = None
        if self._transcripts is not None:
            rendered = self._transcripts.of(example, target)
            if isinstance(rendered, InconsistentTrajectory):
                return rendered.score(example), None
            if isinstance(rendered, Unreadable):
                message = f"the output is not a conversation: {rendered}"
                unreadable = self.definition.unreadable
                return (
                    unreadable("trajectory_unreadable", message)
                    if unreadable
                    else Score.error("trajectory_unreadable", message)
                ), None
            if isinstance(rendered, TemplateFailure):
                return Score.error(rendered.code, rendered.message), None
            if isinstance(rendered, Score):
                return rendered, None
            transcript, shown_cut = rendered
        context: dict[str, Any] = {
            "rubric": self.rubric,
            "output": target if isinstance(target, str) else orjson.dumps(target).decode(),
            "example": self._shown(example.fields),
            "example_id": example.id,
            "sample_index": example.sample,
            "scale": self.definition.scale.describe(),
        }
        if reference is not ABSENT:
            context["reference"] = reference if isinstance(reference, str) else orjson.dumps(reference).decode()
        if transcript is not None:
            context["transcript"] = transcript
        try:
            return [
                (role, render(template, context, what=f"the judge {role} prompt", example_id=example.id))
                for role, template in self._templates
            ], shown_cut
        except TemplateFailure as failure:
            return Score.error(failure.code, failure.message), None

    async def ask(self, messages: list[tuple[str, str]], sample: int) -> tuple[ChatAnswer, str]:
        """One call of this judge with ``messages`` through the call cache and retries, and its cache address."""
        request = ChatRequest.build(self.endpoint, messages)
        key = cache_key(self._calls, request.body(), sample)
        made = await answer(
            self.client,
            request,
            key=key,
            cache=self.cache,
            kind="judge",
            executor=self.executor,
            retrier=self.retrier,
        )
        return made, key

    async def judge(self, example: Example) -> JudgeResult:
        """Judge one example (one sample of it). Never raises for a per-example problem."""
        messages, shown_cut = self.render_with_cut(example)
        if isinstance(messages, Score):
            return JudgeResult(messages)
        made, key = await self.ask(messages, example.sample)
        evidence = (f"judge_call:{key}",)
        reply, cached, attempts, tries, replayed = made.reply, made.cached, made.attempts, made.tries, made.replayed
        if reply is None:
            fault = made.fault
            assert fault is not None
            score = Score.unmeasured(
                Status.ERROR, fault.code, f"the judge call failed: {fault.message}", fault.detail, evidence=evidence
            )
            return JudgeResult(score, attempts=attempts, call_id=key, tries=tries)
        parsed = parse_judge_answer(reply.content, self.definition.scale, evidence=evidence)
        return JudgeResult(
            with_cut(parsed.score, shown_cut),
            parsed.rationale,
            parsed.label,
            reply.content,
            cached,
            attempts,
            key,
            usage=reply.usage,
            tries=tries,
            replayed=replayed,
        )


# ---------------------------------------------------------------------- calibration
@dataclass(frozen=True, slots=True)
class LabelledExample:
    """One line of a calibration labels file: the example's fields, the graded output and the human label."""

    id: str
    fields: Mapping[str, Any]
    output: Any
    label: int | str
    line: int = 0


class LabelsFileError(ValueError):
    pass


def read_labels(path: Path, scale: JudgeScale, mended: jsonsource.MendedLines | None = None) -> list[LabelledExample]:
    """Read a labels JSONL file: one object per line with ``output`` and ``label``; ``id`` optional; every other
    key is an example field. Blank lines are skipped. Raises :class:`LabelsFileError` naming ``file:line``. A line
    whose only fault is a lone surrogate escape is read with it as U+FFFD, noted in ``mended`` (for the command's
    warnings)."""
    mended = mended or jsonsource.MendedLines(str(path))
    records: list[LabelledExample] = []
    #: Each id's first line, and whether the line named it (else its line number is its id).
    seen: dict[str, tuple[int, bool]] = {}
    categories = scale.categories()
    try:
        lines = jsonsource.text_start(
            read_regular(path, what="labels file"), what="labels file", where=str(path)
        ).splitlines()
    except SetupError as exc:
        raise LabelsFileError(exc.line()) from None
    for number, raw_line in enumerate(lines, start=1):
        if not raw_line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = jsonsource.loads_mending(raw_line, mended, number, exact=True)
        except jsonsource.JsonRefused as exc:
            raise LabelsFileError(f"{where}: {exc}") from None
        except orjson.JSONDecodeError as exc:
            raise LabelsFileError(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict):
            raise LabelsFileError(f"{where}: each line must be a JSON object")
        if "label" not in record or "output" not in record:
            raise LabelsFileError(f'{where}: needs "output" (what was graded) and "label" (the human grade)')
        label = _normalise_label(record.pop("label"), scale)
        # A JSON true equals 1 to Python, so it passed as the grade 1 (and false as 0): a human grade is a number
        # or a label, never a boolean, as a judge's answer is not (parse_judge_answer).
        if isinstance(label, bool) or label not in categories:
            raise LabelsFileError(f"{where}: label {label!r} is not {scale.describe()}")
        output = record.pop("output")
        named = "id" in record
        example_id = str(record.pop("id", number))
        first = seen.setdefault(example_id, (number, named))
        if first[0] != number:
            # Two grades under one id: a report (and the judge's call cache) would tell them apart by id only, and
            # a pasted line counts its grade twice in the agreement. The first line is named, as a dataset's is.
            earlier = f"line {first[0]}" if first[1] else f"line {first[0]}, which has no id and is named by its number"
            raise LabelsFileError(
                f"{where}: id {example_id!r} is already used (first at {earlier}): give every labelled example a "
                "unique id"
            )
        records.append(LabelledExample(example_id, record, output, label, number))
    return records


def _normalise_label(value: Any, scale: JudgeScale) -> Any:
    value = numeral(value) if scale.numeric else label_text(value, scale)
    if scale.numeric and isinstance(value, float) and value.is_integer():
        return int(value)
    if not scale.numeric and isinstance(value, str):
        stripped = value.strip()
        key = caseless(stripped)
        matches = [name for name in scale.categories() if caseless(str(name)) == key]
        return matches[0] if len(matches) == 1 else stripped
    return value


@dataclass(frozen=True, slots=True)
class JudgeCalibration:
    calibration: Calibration
    results: tuple[JudgeResult, ...] = field(default=())


async def calibrate_judge(
    judge: Callable[[Example], Awaitable[JudgeResult]],
    labelled: Iterable[LabelledExample],
    *,
    scale: JudgeScale,
    fingerprint: str,
    executor: Executor,
    confidence: float = 0.95,
) -> JudgeCalibration:
    """Run ``judge`` (a built judge's ``judge``, as the live run would await it) on every labelled example through
    ``executor`` and compare with the human labels on ``scale``.

    A judgement that is not scored+valid contributes no label, nor does a wrong answer the judge was never shown
    (scored its worst value without a call: it says nothing about the judge): each is counted in ``excluded``, never
    as a disagreement. The result is bound to ``fingerprint``, the judge's as defined when it was built.
    """
    items = list(labelled)

    async def one(item: LabelledExample) -> JudgeResult:
        example = Example(id=item.id, line=item.line, fields=item.fields, output=item.output)
        return await judge(example)

    results = await executor.run(items, one)
    judge_labels: Sequence[int | str | None] = [result.label if result.score.included else None for result in results]
    report = calibrate(
        [item.label for item in items],
        judge_labels,
        categories=scale.categories(),
        ordinal=scale.ordinal,
        confidence=confidence,
        judge_fingerprint=fingerprint,
    )
    return JudgeCalibration(report, tuple(results))


__all__ = [
    "Judge",
    "JudgeAnswer",
    "JudgeCalibration",
    "JudgeDefinition",
    "JudgeResult",
    "LabelledExample",
    "LabelsFileError",
    "PairwiseSetup",
    "calibrate_judge",
    "extract_answer",
    "parse_judge_answer",
    "read_labels",
]
