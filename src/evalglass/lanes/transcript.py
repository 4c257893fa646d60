"""A conversation as a judge reads it: rendered by a declared template, cut to a declared budget, the cut recorded.

An ``llm_judge`` with ``transcript:`` is shown the whole trajectory (``{{ transcript }}`` in its prompt), not only
the final answer. The messages are read from the output (or ``field``) in any shape ``core.trajectory`` reads (an
agent lane's trajectory, a trace record's output, OpenAI or Anthropic messages), after the record's input messages
when ``transcript.input`` names them (a trace's ``input.messages``), and rendered by ``transcript.template`` (Jinja2
over ``messages``: EvalGlass's ``{role, parts}``). A transcript longer than ``max_chars`` keeps its beginning and
its end, and says in the text how much of the middle was cut; the judge's score carries a ``transcript_cut`` note
with the numbers, so a grade given on a cut transcript is never mistaken for one on the whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT, get_path, parse_path
from evalglass.core.score import Diagnostic, Score
from evalglass.core.trajectory import Unreadable, read_messages
from evalglass.lanes.judgespec import TranscriptSpec
from evalglass.lanes.templating import TemplateFailure, compile_template, render


@dataclass(frozen=True, slots=True)
class Cut:
    """How much of a transcript the judge was not shown."""

    length: int
    kept: int

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(
            code="transcript_cut",
            message=f"the judge was shown {self.kept:,} of the transcript's {self.length:,} characters (max_chars); "
            f"{self.length - self.kept:,} in the middle were cut",
        )


class Transcripts:
    """The transcript of each example, for one judge."""

    def __init__(self, spec: TranscriptSpec) -> None:
        self.template = compile_template(spec.template, where="transcript template")
        self.max_chars = spec.max_chars
        self.input = parse_path(spec.input) if spec.input is not None else None
        self.input_path = spec.input

    def of(self, example: Example, target: Any) -> tuple[str, Cut | None] | Unreadable | TemplateFailure | Score:
        """The rendered transcript (and its cut); or why the conversation cannot be read (Unreadable: a wrong
        answer) or rendered; or the Score of a declared ``input`` the record lacks or that is no conversation (what
        the system was given, not what it answered: never a wrong answer)."""
        try:
            messages = read_messages(target)
        except Unreadable as exc:
            return exc
        if self.input is not None:
            before = get_path(example.fields, self.input)
            if before is ABSENT:
                return Score.non_evaluable(
                    "transcript_input_missing",
                    f"example {example.id} has no '{self.input_path}' (the transcript's declared input messages)",
                )
            try:
                messages = read_messages(before) + messages
            except Unreadable as exc:
                return Score.error(
                    "transcript_input_unreadable",
                    f"example {example.id}: '{self.input_path}' (the transcript's input) is not a conversation: {exc}",
                )
        try:
            text = render(self.template, {"messages": messages}, what="the transcript template", example_id=example.id)
        except TemplateFailure as failure:
            return failure
        return cut(text, self.max_chars)


#: What the middle of a cut transcript is replaced with.
MARKER = "\n[... {count:,} characters cut ...]\n"


def cut(text: str, limit: int) -> tuple[str, Cut | None]:
    """``text`` within ``limit`` characters: whole, or its first and last parts around a marker saying how much of
    the middle is gone (the marker counts against the limit)."""
    if len(text) <= limit:
        return text, None
    marker = MARKER.format(count=len(text))  # an upper bound on its own length
    room = max(0, limit - len(marker))
    head = room // 2
    tail = room - head
    removed = len(text) - head - tail
    joined = text[:head] + MARKER.format(count=removed) + (text[len(text) - tail :] if tail else "")
    return joined, Cut(len(text), head + tail)


def with_cut(score: Score, cut: Cut | None) -> Score:
    """The judge's score, noting the cut (whatever the score: a grade on a cut transcript says so)."""
    if cut is None:
        return score
    return Score(
        status=score.status,
        validity=score.validity,
        value=score.value,
        diagnostics=(*score.diagnostics, cut.diagnostic()),
        evidence=score.evidence,
    )


__all__ = ["MARKER", "Cut", "Transcripts", "cut", "with_cut"]
