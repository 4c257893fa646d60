"""A jury: several built LLM judges asked about the same example concurrently, their answers combined by the
declared rule (``core.jury``). The metric (metrics/jury.py) builds each member as the ``Judge`` an ``llm_judge``
with the same definition would be, so every call goes through the run's executor, call cache and retries.

The jury's result carries every member's judgement (``parts``: the live run counts each call, its tokens and
retries) and the votes (``record``: ``outputs.jsonl`` keeps them, agreement is computed from them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from evalglass.core.example import Example
from evalglass.core.jury import JuryRule, NoVerdict, agreeing_share, jury_verdict
from evalglass.core.score import Diagnostic, Score, Status, Validity
from evalglass.lanes.judge import Judge, JudgeResult

_NO_VERDICT = {
    NoVerdict.QUORUM: "fewer judges answered than the quorum",
    NoVerdict.TIE: "the judges' votes tie between categories",
    NoVerdict.DISAGREE: "the judges disagree and the rule is unanimous",
}


@dataclass(frozen=True)
class JuryDefinition:
    rule: JuryRule
    quorum: int
    #: Each category's value on the shared scale.
    values: Mapping[int | str, float]
    #: Below this share of agreeing judge pairs an example carries ``jury_low_agreement`` (a diagnostic only).
    low_agreement: float


class Jury:
    """The built jury: an :class:`~evalglass.metrics.base.AsyncScorer` over its member judges."""

    def __init__(self, definition: JuryDefinition, members: Mapping[str, Judge]) -> None:
        self.definition = definition
        self.members = dict(members)

    async def aclose(self) -> None:
        await asyncio.gather(*(judge.aclose() for judge in self.members.values()), return_exceptions=True)

    async def judge(self, example: Example) -> JudgeResult:
        names = list(self.members)
        results: list[JudgeResult] = await asyncio.gather(*(self.members[name].judge(example) for name in names))
        if all(result.call_id is None for result in results) and len({r.score for r in results}) == 1:
            return JudgeResult(results[0].score)  # no judge was asked (no reference, nothing to show): one outcome
        votes = {name: (r.label if r.score.included else None) for name, r in zip(names, results, strict=True)}
        definition = self.definition
        verdict = jury_verdict(list(votes.values()), definition.values, definition.rule, definition.quorum)
        if verdict.missing is not None:
            score = _no_verdict(verdict.missing, names, results, definition.quorum)
        else:
            assert verdict.value is not None
            score = Score(
                status=Status.SCORED,
                validity=Validity.VALID,
                value=verdict.value,
                diagnostics=_low_agreement(list(votes.values()), definition.low_agreement),
                evidence=tuple(item for r in results for item in r.score.evidence),
            )
        return JudgeResult(score, label=verdict.label, record={"votes": votes}, parts=tuple(results))


def _no_verdict(why: NoVerdict, names: list[str], results: list[JudgeResult], quorum: int) -> Score:
    """No verdict: an ``error`` when a judge failed (a fault, never a wrong answer), ``non_evaluable`` otherwise;
    each member that cast no vote says why."""
    voted = sum(r.score.included for r in results)
    message = f"{_NO_VERDICT[why]} ({voted} of {len(results)} judges voted, quorum {quorum})"
    silent = [(name, r.score) for name, r in zip(names, results, strict=True) if not r.score.included]
    reasons = tuple(
        Diagnostic(code=score.diagnostics[0].code, message=f"judge '{name}': {score.diagnostics[0].message}")
        for name, score in silent
        if score.diagnostics
    )
    failed = why is NoVerdict.QUORUM and any(score.status is Status.ERROR for _, score in silent)
    return Score(
        status=Status.ERROR if failed else Status.NON_EVALUABLE,
        validity=Validity.NOT_MEASURED if failed else Validity.NOT_APPLICABLE,
        diagnostics=(Diagnostic(code=why.value, message=message), *reasons),
        evidence=tuple(item for r in results for item in r.score.evidence),
    )


def _low_agreement(votes: list[int | str | None], threshold: float) -> tuple[Diagnostic, ...]:
    cast = [vote for vote in votes if vote is not None]
    share = agreeing_share(cast)
    if share is None or share >= threshold:
        return ()
    return (
        Diagnostic(
            code="jury_low_agreement",
            message=f"the judges split ({', '.join(map(str, cast))}): {share:.2f} of pairs agree, below {threshold:g}",
        ),
    )


__all__ = ["Jury", "JuryDefinition"]
