"""Other evaluation tools' results as a recorded run: what every tool's reader shares (docs/other-tools.md).

Each tool's reader (``toolinspect``, ``toolpromptfoo``, ``toollmeval``, ``toolopenaievals``; ``toolreaders`` picks
one by format) turns the tool's file into :class:`ToolSample` s — one per sample and epoch (or repeat) — and this
module makes them examples with the JSONL reader's interface: one example per sample id, its epochs kept as the
example's samples (``task.samples`` is implied for these formats), in the record shape

    {"id", "input", "target", "metadata", "source": {"tool", "version", ...},
     "output": [{"epoch", "text", "scores": {scorer: {"value", "passed", "error", "explanation"}}, "error",
                 "declared"}, ...]}

(``declared``, only where the tool's file says which scores each sample asked for: promptfoo's per-test
assertions), so ``reference: target`` compares with the tool's target, ``field: text`` measures what the model
answered, and ``recorded_score`` reads the tool's own per-sample scores. The gold fingerprint covers ids,
inputs, targets and metadata, never the outputs.

Each reader is pinned to the file-format versions it was tested on (``VERSIONS``): a file of another version is
refused in one line that names the version. A sample the reader cannot make sense of is a malformed example at its
place (:meth:`ToolReader._parse`: a value of the wrong type anywhere in it included); a file whose own description
is of the wrong shape stops the run in one line naming the file, never a traceback; the same sample id and epoch
twice stops the run, naming both places.

A sample the tool's file says it ran (inspect's declared sample ids and epochs, promptfoo's counts, lm-eval's
``n-samples``) but does not hold is a failed sample (:func:`absent_sample`): left out, it would raise the rate by
the samples a cut-short or pruned file no longer shows.
"""

from __future__ import annotations

import hashlib
import json
import math
from bisect import insort
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evalglass.core.example import MALFORMED_SHOWN, Example, ExampleBatch
from evalglass.core.fingerprint import PREFIX
from evalglass.core.notcaptured import NOT_CAPTURED
from evalglass.core.score import Score
from evalglass.engine.datasets.dataset import BATCH, BadLine, batched, field_getter
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import (
    JsonRefused,
    MendedLines,
    loads_lone_surrogates,
    text_start,
)
from evalglass.readers.userfiles import open_regular, unreadable


@dataclass(slots=True)
class ToolSample:
    """One sample (one epoch of it) as the tool recorded it."""

    id: str
    epoch: int
    #: Where it was read (a line, an entry of a list, a file in an archive), as messages name it.
    place: str
    #: A number for the example's ``line`` (1-based order of the place in the file).
    line: int
    input: Any
    target: Any
    #: The answer (:func:`answer_text`): text, a NaN or an infinity, or None when the file holds none.
    text: str | float | None
    scores: dict[str, dict[str, Any]]
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The scores the tool was asked for on this sample, when its file says (promptfoo's per-test assertions): a
    #: score outside them does not apply to the sample. None: every score the tool ran applies to every sample.
    declared: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ToolProblem:
    """A sample that cannot be read, at its place."""

    place: str
    line: int
    message: str


def score_entry(
    value: Any = None,
    *,
    passed: bool | None = None,
    error: str | None = None,
    explanation: str | None = None,
    worth: float | None = None,
) -> dict[str, Any]:
    """A recorded score in the shape ``recorded_score`` reads (keys left out when the tool recorded nothing).
    ``worth``: for a label, what the tool's own file says it is worth (OpenAI Evals' ``choice_scores``)."""
    entry: dict[str, Any] = {"value": value}
    if passed is not None:
        entry["passed"] = passed
    if worth is not None:
        entry["worth"] = worth
    if error:
        entry["error"] = error
    if explanation is not None:
        entry["explanation"] = explanation
    return entry


class UnknownVersion(SetupError):
    def __init__(self, path: Path, tool: str, what: str, found: object, known: tuple[object, ...]) -> None:
        super().__init__(
            f"{tool} {what} {found} is not one EvalGlass was tested with ({', '.join(map(str, known))})",
            where=str(path),
            fix=f"write the results with a {tool} version listed in docs/other-tools.md, or report the version",
        )


def load_json(raw: bytes, mended: MendedLines, where: str | int | None = None) -> Any:
    """One JSON document of a tool's file (``where``: its line, or its name within the file). Python's ``json``
    (what lm-eval and OpenAI Evals write with) writes a non-finite float as ``NaN``/``Infinity``, which JSON has
    not: those are read as the floats they are, as a Parquet cell's are (never as text, which a target or an answer
    ``"NaN"`` is too): a score that holds one is an error of that score (``recorded_score``), a target one is
    ``reference_wrong_type`` (the gold's problem) and an answer one is the system's answer JSON cannot hold
    (:func:`answer_text`), never a malformed sample. A lone surrogate escape (half an emoji) is read as U+FFFD and
    noted in ``mended`` (:func:`~evalglass.readers.jsonsource.loads_lone_surrogates`), as in a dataset line (never
    kept as Python's ``json`` reads it: a lone surrogate nothing can write again). A number too large for a float
    (``1e400``) is the infinity Python's ``json`` reads it as, for the same reason. Anything else that is not JSON,
    or is nested deeper than the parser can go, raises ``orjson.JSONDecodeError``."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            read = loads_lone_surrogates(raw, constant=float)
        except JsonRefused:
            raise exc from None
        if read is not None:
            mended.add_at(where, read[1])
            return read[0]
        try:
            return json.loads(raw, parse_constant=float)
        except (ValueError, RecursionError):  # RecursionError: deeper than orjson reads (1,024), a malformed sample
            raise exc from None


def answer_text(value: Any) -> str | float | None:
    """A sample's answer as the tool recorded it: text, or a NaN or an infinity (Python's ``json`` writes one where
    the answer was a float): kept as the float it is, the system's answer JSON cannot hold, which a metric scores
    as a wrong answer (never the text ``"NaN"``, which could match a target). None for anything else."""
    if type(value) is str or (type(value) is float and not math.isfinite(value)):
        return value
    return None


#: What a value of the wrong type in a tool's file raises where a reader reads it as the tool writes it.
SHAPE_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError)


def absent_sample(sample_id: str, epoch: int, line: int, why: str) -> ToolSample:
    """A sample the tool's file says it ran but does not hold: the tool's failure, never a sample left out (which
    would raise the rate by what a cut-short or pruned file no longer shows) and never a 0.0."""
    return ToolSample(
        id=sample_id,
        epoch=epoch,
        place=f"sample {sample_id!r} epoch {epoch} (absent)",
        line=line,
        input=None,
        target=None,
        text=None,
        scores={},
        error=f"the file holds no result for this sample: {why}",
    )


#: How many absent samples a file may imply per sample it holds: a run cancelled at 1% of its samples still reads;
#: a count no file of this size can mean (a forged ``epochs: 1000000000``) is refused before anything is made of it.
ABSENT_PER_HELD = 100


def check_absent(absent: int, held: int, path: Path, tool: str) -> None:
    """Refuse, in one line, a file that implies far more absent samples than it holds (:data:`ABSENT_PER_HELD`)."""
    if absent > ABSENT_PER_HELD * max(held, 1):
        raise SetupError(
            f"the {tool} file holds {held:,} sample results and says {absent:,} more were run: it is not the "
            "file of a run EvalGlass can measure",
            where=str(path),
            fix=f"write the results again with {tool}, from a run that completed",
        )


class ToolReader:
    """The JSONL reader's interface over a tool's results; subclasses give :meth:`_samples` in id order (all
    epochs of one id together) and the ``tool`` name."""

    tool = ""
    #: Python's ``json`` writes NaN and Infinity, which these files are read with.
    holds_non_finite = True
    #: What the tool's file is called in messages (lm-eval's is its samples file: its results file is another).
    file_name = "results file"

    def __init__(self, path: Path, *, id_field: str = "id", output_field: str = "output", hash_bytes: bool = True):
        self.path = path
        self._hash = hashlib.sha256() if hash_bytes else None
        self._id = field_getter(id_field)
        self._output = field_getter(output_field)
        self.examples = 0
        self.bad_lines = 0
        self.first_bad_lines: list[int] = []
        #: What the file says about the run that made it (tool version, task, model): the record's ``source``.
        self.source: dict[str, Any] = {"tool": self.tool}
        #: The lines read with lone surrogate escapes as U+FFFD (:func:`load_json`), for the run's warnings.
        self.mended = MendedLines(str(path))
        self._done = False

    def files(self) -> tuple[Path, ...]:
        """Every file the reader opens: a format with a second file (lm-eval's results file) names it here."""
        return (self.path,)

    @property
    def fingerprint(self) -> str:
        if not self._done or self._hash is None:
            raise RuntimeError("the dataset fingerprint is known only after the whole file was read with its hash")
        return PREFIX + self._hash.hexdigest()

    # -- what subclasses use ---------------------------------------------------------------------------------------

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        raise NotImplementedError

    def _parse(
        self, place: str, line: int, parse: Callable[..., ToolSample | ToolProblem], *args: Any
    ) -> ToolSample | ToolProblem:
        """``parse(*args)``, or a malformed sample at ``place`` when a value in it is not of the type the tool writes
        (what would otherwise stop the run with a traceback)."""
        try:
            return parse(*args)
        except SHAPE_ERRORS as exc:
            return ToolProblem(place, line, f"is not a {self.tool} sample as {self.tool} writes it ({exc})")

    def _read_bytes(self, limit: int) -> bytes:
        """The whole file (hashed), for formats that are one JSON document or JSON lines, without a leading byte
        order mark; over ``limit`` bytes is refused."""
        with open_regular(self.path, what=f"{self.tool} {self.file_name}", missing_fix="fix `dataset.path`") as handle:
            try:
                data = handle.read(limit + 1)
            except OSError as exc:
                raise unreadable(self.path, f"{self.tool} {self.file_name}", exc) from None
        if len(data) > limit:
            raise SetupError(
                f"a {self.tool} {self.file_name} larger than {limit:,} bytes (it is read whole, as one JSON document)",
                where=str(self.path),
                fix="split the evaluation into smaller runs",
            )
        self._hash_bytes(data)
        return text_start(data, what=f"{self.tool} {self.file_name}", where=str(self.path))

    def _hash_bytes(self, data: bytes) -> None:
        if self._hash is not None:
            self._hash.update(data)

    def _hash_file(self) -> None:
        """Hash the file's bytes in a pass of their own (formats read by random access, such as a zip)."""
        if self._hash is None:
            return
        with open_regular(self.path, what=f"{self.tool} {self.file_name}", missing_fix="fix `dataset.path`") as handle:
            while chunk := handle.read(1 << 20):
                self._hash.update(chunk)

    # -- the reader interface ----------------------------------------------------------------------------------

    def batches(self, size: int = BATCH) -> Iterator[ExampleBatch | list[Example | BadLine]]:
        return batched(iter(self), size)

    def __iter__(self) -> Iterator[Example | BadLine]:
        # Readers give all epochs of one id together, so a repeated (id, epoch) is found within its group; the same
        # id in two groups (a sample claiming another's id) is refused in _example, naming both places (the run
        # would refuse it too, but by line numbers a zip or a JSON document does not have).
        # A sample that cannot be read, met among one id's epochs, waits until that id's example is made: it must
        # not split the example in two.
        current: list[ToolSample] = []
        waiting: list[ToolProblem] = []
        first_place: dict[str, str] = {}
        for item in self._checked(self._samples()):
            if isinstance(item, ToolProblem):
                if current:
                    waiting.append(item)
                else:
                    yield self._bad(item)
                continue
            if current and current[0].id != item.id:
                yield self._example(current, first_place)
                current = []
                yield from map(self._bad, waiting)
                waiting = []
            previous = next((sample.place for sample in current if sample.epoch == item.epoch), None)
            if previous is not None:
                raise SetupError(
                    f"sample id {item.id!r} epoch {item.epoch} appears twice ({previous} and {item.place}): two "
                    "results for one sample cannot both be its measurement",
                    where=str(self.path),
                    fix=f"keep one {self.tool} run per file",
                )
            current.append(item)
        if current:
            yield self._example(current, first_place)
        yield from map(self._bad, waiting)
        self._done = True

    def _checked(self, samples: Iterator[ToolSample | ToolProblem]) -> Iterator[ToolSample | ToolProblem]:
        """``samples``, with a value of the wrong type in the file's own description (its header, its counts) one
        line naming the file instead of a traceback. (A sample's own values are checked by :meth:`_parse`.)"""
        while True:
            try:
                item = next(samples)
            except StopIteration:
                return
            except SHAPE_ERRORS as exc:
                raise SetupError(
                    f"not a results file as {self.tool} writes it: a value of the wrong type "
                    f"({type(exc).__name__}: {exc})",
                    where=str(self.path),
                    fix=f"point dataset.path at the file {self.tool} wrote, unedited",
                ) from None
            yield item

    def _example(self, samples: list[ToolSample], first_place: dict[str, str]) -> Example:
        samples.sort(key=lambda sample: sample.epoch)
        first = samples[0]
        earlier = first_place.setdefault(first.id, first.place)
        if earlier != first.place:
            raise SetupError(
                f"sample id {first.id!r} is in two places ({earlier} and {first.place}): one sample counted as two "
                "examples",
                where=str(self.path),
                fix=f"keep one {self.tool} run per file, unedited",
            )
        # What the tool's file does not hold (an lm-eval loglikelihood task's text answer, an OpenAI Evals log
        # without sampling events' prompt) is listed, so a metric that needs it is content_not_captured, not a
        # wrong answer. A sample the tool failed has its own error instead.
        missing = []
        if first.input is None:
            missing.append("input")
        if all(sample.text is None and sample.error is None for sample in samples):
            missing.append("output.text")
        record = {
            "id": first.id,
            "input": first.input,
            "target": first.target,
            "metadata": first.metadata,
            "source": self.source,
            "output": [_output(sample) for sample in samples],
            NOT_CAPTURED: missing,
        }
        self.examples += 1
        return Example(id=self._id(record), line=first.line, fields=record, output=self._output(record))

    def _bad(self, problem: ToolProblem) -> BadLine:
        self.examples += 1
        self.bad_lines += 1
        # The first by position in the file, ascending: a reader may meet them in another order (promptfoo's, in
        # test order; a sample that cannot be read waits for its id's example), and the summary listed them so.
        insort(self.first_bad_lines, problem.line)
        del self.first_bad_lines[MALFORMED_SHOWN:]
        return BadLine(
            id=f"line:{problem.line}",
            line=problem.line,
            code="malformed_sample",
            message=f"{self.path}:{problem.line}: {problem.place}: {problem.message}",
        )


def _output(sample: ToolSample) -> dict[str, Any]:
    output: dict[str, Any] = {"epoch": sample.epoch, "scores": sample.scores}
    if sample.text is not None:
        output["text"] = sample.text
    if sample.error is not None:
        output["error"] = sample.error
    if sample.declared is not None:
        output["declared"] = list(sample.declared)
    return output


def sample_failed(output: Any) -> bool:
    """Whether a sample's output says the tool failed it (the tool's ``error``; see :func:`_output`)."""
    return type(output) is dict and bool(output.get("error"))


def failed_sample_score(name: str, example: Example) -> Score:
    """What metric ``name`` scores on a sample the tool failed: what the tool did not produce is not an answer to
    measure, and never a 0.0 (``engine.datasets.sampleguard`` applies it to every metric)."""
    return Score.error(
        "tool_sample_failed",
        f"example {example.id} (sample {example.sample}): the tool did not complete this sample "
        f"({str(example.output.get('error'))[:300]}); metric '{name}' has nothing to measure",
    )
