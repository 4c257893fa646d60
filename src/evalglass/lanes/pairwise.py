"""A pairwise LLM judge: the same example's named outputs compared two at a time, each pair asked in both orders.

The judge answers ``{"winner": "A" | "B" | "tie", "rationale": "..."}`` (A: the output shown first). The two answers
of a pair become one outcome by ``core.pairwise`` (an answer that flips with the order is the declared
``inconsistent`` outcome, never a win). Every call goes through the judge's call cache and retries (``Judge.ask``).

Where the outputs come from is one seam: :class:`~evalglass.lanes.judge.PairwiseSetup` gives a getter per named
output, applied to the example's graded output (today: paths into a recorded output object that holds several
outputs; a run of several variants hands its variants' outputs the same way).

The metric's value on an example is the first-named output's result against the others: 1 a win, 0.5 a tie, 0 a
loss, averaged over its pairs. A pair with an answer missing makes the example ``error`` (a fault); every pair
excluded makes it ``non_evaluable`` (``pairwise_inconsistent``).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson

from evalglass.core.example import Example
from evalglass.core.fieldpath import ABSENT
from evalglass.core.pairwise import OUTCOME_VALUE, Position, flipped, mirrored, pair_outcome
from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.lanes.judge import ASKED_AGAIN, Judge, JudgeResult, PairwiseSetup, extract_answer
from evalglass.lanes.templating import TemplateFailure, render

_WINNER = {"a": Position.FIRST, "b": Position.SECOND, "tie": Position.TIE}


def parse_winner(text: str) -> Position | str:
    """The position the answer preferred, or why it cannot be read."""
    found = extract_answer(text, "winner")
    if isinstance(found, str):
        return found
    winner = found.get("winner")
    if not isinstance(winner, str) or winner.strip().casefold() not in _WINNER:
        return f'"winner" must be "A", "B" or "tie", got {winner!r}'
    return _WINNER[winner.strip().casefold()]


class PairwiseJudge(Judge):
    """A built pairwise judge (an ``llm_judge`` with ``mode: pairwise``)."""

    @property
    def setup(self) -> PairwiseSetup:
        assert self.definition.pairwise is not None
        return self.definition.pairwise

    def readable(self, content: str) -> bool:
        """A pairwise judge's answer is readable when it names a winner (see ``Judge.readable``)."""
        return isinstance(parse_winner(content), Position)

    def _messages(self, example: Example, first: Any, second: Any, reference: Any) -> list[tuple[str, str]]:
        def shown(value: Any) -> str:
            return value if isinstance(value, str) else orjson.dumps(value).decode()

        context: dict[str, Any] = {
            "rubric": self.rubric,
            "output_a": shown(first),
            "output_b": shown(second),
            "example": self._shown(example.fields),
            "example_id": example.id,
            "sample_index": example.sample,
        }
        if reference is not ABSENT:
            context["reference"] = shown(reference)
        return [
            (role, render(template, context, what=f"the judge {role} prompt", example_id=example.id))
            for role, template in self._templates
        ]

    async def _one_order(self, messages: list[tuple[str, str]], sample: int) -> tuple[Position | Score, JudgeResult]:
        made, key = await self.ask(messages, sample)
        evidence = (f"judge_call:{key}",)
        if made.reply is None:
            assert made.fault is not None
            failure = Score.unmeasured(
                Status.ERROR, made.fault.code, f"the judge call failed: {made.fault.message}", evidence=evidence
            )
            return failure, JudgeResult(failure, attempts=made.attempts, call_id=key, tries=made.tries)
        read = parse_winner(made.reply.content)
        part = JudgeResult(
            Score.unmeasured(Status.SKIPPED, "pairwise_order", "one order of a compared pair", evidence=evidence),
            raw=made.reply.content,
            cached=made.cached,
            attempts=made.attempts,
            call_id=key,
            usage=made.reply.usage,
            tries=made.tries,
            replayed=made.replayed,
        )
        if not isinstance(read, Position):  # (a Position is a str too: test it first)
            return Score.unmeasured(
                Status.ERROR,
                "judge_unparseable",
                f"the judge's answer could not be read: {read} ({ASKED_AGAIN})",
                evidence=evidence,
            ), part
        return read, part

    async def judge(self, example: Example) -> JudgeResult:
        reference: Any = ABSENT
        if self._reference is not None:
            reference = self._reference(example)
            problem = self.definition.reference_problem(example, reference)
            if problem is not None:
                return JudgeResult(problem)
        target = self._target(example)
        if target is ABSENT:
            return JudgeResult(self._invalid(example))
        setup = self.setup
        outputs = {name: getter(target) for name, getter in zip(setup.names, setup.getters, strict=True)}
        absent = [name for name, value in outputs.items() if value is ABSENT]
        if absent:
            return JudgeResult(
                Score.non_evaluable(
                    "pairwise_output_missing", f"example {example.id} has no output '{absent[0]}' to compare"
                )
            )
        pairs = list(itertools.combinations(setup.names, 2))
        try:
            asked = [
                (
                    self._messages(example, outputs[a], outputs[b], reference),
                    self._messages(example, outputs[b], outputs[a], reference),
                )
                for a, b in pairs
            ]
        except TemplateFailure as failure:
            return JudgeResult(Score.error(failure.code, failure.message))
        answers = await asyncio.gather(
            *(self._one_order(messages, example.sample) for both in asked for messages in both)
        )
        return self._combine(pairs, answers)

    def _combine(
        self, pairs: list[tuple[str, str]], answers: list[tuple[Position | Score, JudgeResult]]
    ) -> JudgeResult:
        setup = self.setup
        first = setup.names[0]
        notes: list[dict[str, Any]] = []
        values: list[float] = []
        failures: list[Diagnostic] = []
        excluded = 0
        for index, (a, b) in enumerate(pairs):
            a_first, b_first = answers[2 * index][0], answers[2 * index + 1][0]
            note: dict[str, Any] = {"a": a, "b": b, "outcome": None, "flipped": None}
            if isinstance(a_first, Score) or isinstance(b_first, Score):
                for found in (a_first, b_first):
                    if isinstance(found, Score) and first in (a, b):
                        failures.append(found.diagnostics[0])
                note["answers"] = [_shown(a_first), _shown(b_first)]
                notes.append(note)
                continue
            outcome = pair_outcome(a_first, b_first, setup.inconsistent)
            note.update(
                outcome=outcome.value, flipped=flipped(a_first, b_first), answers=[a_first.value, b_first.value]
            )
            notes.append(note)
            if first not in (a, b):
                continue
            value = OUTCOME_VALUE[outcome if a == first else mirrored(outcome)]
            if value is None:  # the declared `inconsistent: excluded`
                excluded += 1
                continue
            values.append(value)
        parts = tuple(part for _, part in answers)
        evidence = tuple(item for part in parts for item in part.score.evidence)
        label: str | None = None
        if failures:
            score = Score(
                status=Status.ERROR, validity=Validity.NOT_MEASURED, diagnostics=tuple(failures), evidence=evidence
            )
        elif not values:
            score = Score(
                status=Status.NON_EVALUABLE,
                validity=Validity.NOT_APPLICABLE,
                diagnostics=(
                    Diagnostic(
                        code="pairwise_inconsistent",
                        message=f"the verdict flipped with the order in {excluded} pair(s) (inconsistent: excluded)",
                    ),
                ),
                evidence=evidence,
            )
        else:
            score = Score.measured(sum(values) / len(values), evidence=evidence)
            if len(setup.names) == 2:
                label = {1.0: setup.names[0], 0.0: setup.names[1]}.get(values[0], "tie")
        return JudgeResult(score, label=label, record={"pairs": notes}, parts=parts)


def _shown(found: Position | Score) -> str:
    return found.value if isinstance(found, Position) else f"error: {found.diagnostics[0].code}"


__all__ = ["PairwiseJudge", "parse_winner"]
