"""promptfoo output files (``promptfoo eval -o out.json``; ``dataset.format: promptfoo``).

One example per test case; with ``--repeat N`` promptfoo numbers each repetition as a test of its own
(``testIdx``), so the test is ``testIdx // N`` and the repetition is its epoch. Per sample: the test's ``vars``
(the input), the rendered prompt, the answer (``response.output``), and scores:

- ``promptfoo``: the test's own result (``score``, ``success``);
- one per assertion, under its ``metric`` name (else its type; a repeated name gets ``#2``, ``#3``...): ``score``
  and ``pass``. An assertion whose own grading failed is recorded as the tool's error, never as a 0.0, and so is
  the test's own result (``promptfoo``), which promptfoo lowered by it: promptfoo counts each as a failed assertion,
  and says so only in its reason (``Custom function threw error``, ``Invalid regex pattern:``, ``Scoring function
  error:``) or, for a model-graded assertion whose grader failed or answered unreadably, in
  ``metadata.graderError`` (also on the test's ``gradingResult``);
- a test the provider failed (``failureReason`` 2, an error and no output) is a failed sample.

A test promptfoo counted (``results.stats``: its successes, failures and errors, one per test and repetition) whose
result the file does not hold is a failed sample, never left out.

``target`` is the test's ``vars.expected`` when it has one (``null`` otherwise). Pinned to results version 3
(promptfoo 0.121.20); a file holding several prompts or providers is refused (one run per prompt and provider:
compare runs with ``evalglass compare``).
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from typing import Any

import orjson

from evalglass.engine.datasets.toollogs.toolresults import (
    ToolProblem,
    ToolReader,
    ToolSample,
    UnknownVersion,
    absent_sample,
    check_absent,
    score_entry,
)
from evalglass.errors import SetupError
from evalglass.readers.jsonsource import JsonRefused, loads_mending

VERSIONS = (3,)
TESTED_WITH = ("promptfoo 0.121.20",)
#: promptfoo output files are one JSON document, read whole.
MAX_BYTES = 1 << 30
#: The reasons promptfoo gives an assertion whose own grading failed, which it counts as a failed assertion: its
#: code raised (``javascript``/``python``), its pattern does not compile (``regex``), a scoring function raised.
_GRADER_FAILED = ("Custom function threw error", "Invalid regex pattern:", "Scoring function error:")
_PROVIDER_ERROR = 2


class PromptfooReader(ToolReader):
    tool = "promptfoo"

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        data = self._read_bytes(MAX_BYTES)
        try:
            document = loads_mending(data, self.mended)
        except (orjson.JSONDecodeError, JsonRefused) as exc:
            raise SetupError(f"not a promptfoo output file: not valid JSON ({exc})", where=str(self.path)) from None
        results = document.get("results") if isinstance(document, dict) else None
        if not isinstance(results, dict):
            raise SetupError(
                "not a promptfoo output file (no results object)",
                where=str(self.path),
                fix="write it with `promptfoo eval -o FILE.json`",
            )
        version = results.get("version")
        if version not in VERSIONS:
            raise UnknownVersion(self.path, "promptfoo", "results version", version, VERSIONS)
        rows = results.get("results")
        if not isinstance(rows, list) or not rows:
            raise SetupError(
                "the promptfoo output file holds no results",
                where=str(self.path),
                fix="run the evaluation again; an output written before any test ran has nothing to measure",
            )
        metadata = _object(document.get("metadata"))
        options = _object(document.get("runtimeOptions"))
        repeat: int = options["repeat"] if type(options.get("repeat")) is int and options["repeat"] > 0 else 1
        self.source = {
            "tool": "promptfoo",
            "version": str(metadata.get("promptfooVersion", "")),
            "results_version": version,
            "eval_id": document.get("evalId"),
            "repeat": repeat,
        }
        combinations = {
            (_hashable(row.get("promptIdx")), _hashable(row["provider"].get("id")))
            for row in rows
            if isinstance(row, dict) and isinstance(row.get("provider"), dict)
        }
        if len(combinations) > 1:
            shown = ", ".join(f"prompt {prompt} × {provider}" for prompt, provider in sorted(combinations, key=str))
            raise SetupError(
                f"the promptfoo output holds {len(combinations)} prompt/provider combinations ({shown}); EvalGlass "
                "reads one per run",
                where=str(self.path),
                fix="write one output per prompt and provider (promptfoo eval --filter-providers / --filter-prompts)",
            )
        self.source["provider"] = next(iter(combinations))[1] if combinations else None
        # The results in test order (a result without a test index where test 0 is: it is a malformed sample),
        # with the tests promptfoo ran and the file does not hold in their places.
        entries: list[tuple[int, int, dict[str, Any] | ToolSample]] = [
            (_test_index(row), position, row) for position, row in enumerate(rows, start=1) if isinstance(row, dict)
        ]
        held = {index for index, _, row in entries if isinstance(row, dict) and row.get("testIdx") == index}
        entries.extend((index, 0, sample) for index, sample in self._absent(results.get("stats"), held, repeat, rows))
        entries.sort(key=lambda entry: entry[:2])
        for _, position, item in entries:
            if isinstance(item, ToolSample):
                yield item
            else:
                yield self._parse(f"results[{position - 1}]", position, _sample, item, position, repeat)
        for position, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                yield ToolProblem(f"results[{position - 1}]", position, "is not an object")

    def _absent(self, stats: Any, held: set[int], repeat: int, rows: list[Any]) -> Iterator[tuple[int, ToolSample]]:
        """The tests (and repetitions) promptfoo ran whose results the file does not hold, by test index: every
        index below the count promptfoo's ``stats`` gives (successes + failures + errors), and any gap below the
        highest index held."""
        counted = 0
        if isinstance(stats, dict):
            counted = sum(stats[key] for key in ("successes", "failures", "errors") if type(stats.get(key)) is int)
        ran = max(counted, max(held, default=-1) + 1)
        check_absent(ran - sum(1 for index in held if 0 <= index < ran), len(rows), self.path, self.tool)
        why = (
            f"promptfoo counted {counted} test results (results.stats) and the file holds {len(rows)}"
            if counted > len(rows)
            else f"the file holds results of tests up to testIdx {ran - 1}, not of this one"
        )
        for index in range(ran):
            if index not in held:
                yield index, absent_sample(str(index // repeat), index % repeat + 1, len(rows) + 1 + index, why)


def _test_index(row: dict[str, Any]) -> int:
    index = row.get("testIdx")
    return index if type(index) is int else 0


def _sample(row: dict[str, Any], position: int, repeat: int) -> ToolSample | ToolProblem:
    place = f"results[{position - 1}]"
    test_index = row.get("testIdx")
    if type(test_index) is not int or test_index < 0:
        return ToolProblem(place, position, "has no test index (testIdx)")
    variables = _object(row.get("vars"))
    response = _object(row.get("response"))
    output = response.get("output")
    provider_failed = row.get("failureReason") == _PROVIDER_ERROR
    error = str(row.get("error") or "the provider returned no output") if provider_failed else None
    scores: dict[str, dict[str, Any]] = {}
    if not provider_failed:
        scores["promptfoo"] = {}  # first among the scores; filled in after the assertions
        grading = _object(row.get("gradingResult"))
        components = grading.get("componentResults") or ()
        if not isinstance(components, list | tuple):  # a number would raise, a string or an object read as nothing
            return ToolProblem(place, position, "its gradingResult.componentResults is not a list")
        for component in components:
            if not isinstance(component, dict):
                continue
            key = _score_name(_object(component.get("assertion")), scores)
            reason = component.get("reason") if isinstance(component.get("reason"), str) else None
            grader_failed = _grader_error(component, reason)
            value = component.get("score")
            unscored = grader_failed is not None
            scores[key] = score_entry(
                None if unscored or type(value) not in (int, float) else value,
                passed=None if unscored or type(component.get("pass")) is not bool else component["pass"],
                error=grader_failed,
                explanation=reason,
            )
        # promptfoo counts an assertion whose own grading failed as a failed assertion, and lowers the test's
        # overall score by it: that overall result is not a measurement of the answer, so it carries the tool's
        # error too (and so does a test whose grading promptfoo itself marks as failed).
        crashed_names = [name for name, entry in scores.items() if entry.get("error")]
        overall = _grader_error(grading, None) if not crashed_names else None
        score = row.get("score")
        unscored = bool(crashed_names) or overall is not None
        scores["promptfoo"] = score_entry(
            score if type(score) in (int, float) and not unscored else None,
            passed=row.get("success") if type(row.get("success")) is bool and not unscored else None,
            error=(
                f"the test's result counts assertion {', '.join(map(repr, crashed_names))} as failed, but its own "
                f"grading failed: {scores[crashed_names[0]]['error']}"
                if crashed_names
                else overall
            ),
        )
    prompt = _object(row.get("prompt"))
    test = _object(row.get("testCase"))
    declared = _declared(test.get("assert"), scores)
    metadata = {"prompt": prompt.get("raw"), "description": test.get("description")}
    return ToolSample(
        id=str(test_index // repeat),
        epoch=test_index % repeat + 1,
        place=f"{place} (testIdx {test_index})",
        line=position,
        input=variables,
        target=variables.get("expected"),
        text=None if provider_failed else (output if isinstance(output, str) else orjson.dumps(output).decode()),
        scores=scores,
        error=error,
        metadata={key: value for key, value in metadata.items() if value is not None},
        declared=declared,
    )


def _score_name(assertion: dict[str, Any], taken: Container[str]) -> str:
    """The score an assertion's result is recorded under: its ``metric`` name, else its type; a name already
    ``taken`` (by an earlier assertion of the same test) gets ``#2``, ``#3``..."""
    name = str(assertion.get("metric") or assertion.get("type") or "assertion")
    key, count = name, 1
    while key in taken:
        count += 1
        key = f"{name}#{count}"
    return key


def _declared(assertions: Any, scores: dict[str, dict[str, Any]]) -> tuple[str, ...] | None:
    """The scores the test asked promptfoo for (``testCase.assert``, which promptfoo writes with the suite's
    ``defaultTest`` assertions merged in), named as their results are, plus the test's overall result and any
    result the file holds: a score outside them was never declared for this test (``recorded_score`` makes it not
    applicable). None when the file does not say (no ``assert`` list): a missing score then stays the tool's
    error, never guessed inapplicable."""
    if not isinstance(assertions, list):
        return None
    names: dict[str, None] = {"promptfoo": None}  # ordered, and looked up by name
    for assertion in assertions:
        names[_score_name(_object(assertion), names)] = None
    return tuple(dict.fromkeys([*names, *scores]))


def _grader_error(result: dict[str, Any], reason: str | None) -> str | None:
    """Why a grading result (an assertion's, or the test's) is no measurement, or None when it is one: promptfoo
    tags a grader that could not grade (a model-graded assertion whose grader failed or answered unreadably) with
    ``metadata.graderError``, and gives a failed assertion's own code or pattern a reason of its own
    (:data:`_GRADER_FAILED`); each of these it otherwise reports as an ordinary failure (``pass: false``, score 0)."""
    text = reason if reason is not None else result.get("reason") if isinstance(result.get("reason"), str) else None
    first = text.splitlines()[0] if text else None
    if first is not None and first.startswith(_GRADER_FAILED):
        return first
    if _object(result.get("metadata")).get("graderError") is True:
        return f"the grader failed (metadata.graderError): {first}" if first else "the grader failed"
    return None


def _hashable(value: Any) -> Any:
    """A value of the file as a key (an object or a list as its JSON text)."""
    return value if value is None or type(value) in (str, int, float, bool) else orjson.dumps(value).decode()


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
