"""promptfoo output files (``promptfoo eval -o out.json``; ``dataset.format: promptfoo``).

One example per test case; with ``--repeat N`` promptfoo numbers each repetition as a test of its own
(``testIdx``), so the test is ``testIdx // N`` and the repetition is its epoch. Per sample: the test's ``vars``
(the input), the rendered prompt, the answer (``response.output``), and scores:

- ``promptfoo``: the test's own result (``score``, ``success``);
- one per assertion, under its ``metric`` name (else its type; a repeated name gets ``#2``, ``#3``...): ``score``
  and ``pass``. An assertion whose own code failed (promptfoo reports ``Custom function threw error``, and counts
  it as a failed assertion) is recorded as the tool's error, never as a 0.0;
- a test the provider failed (``failureReason`` 2, an error and no output) is a failed sample.

``target`` is the test's ``vars.expected`` when it has one (``null`` otherwise). Pinned to results version 3
(promptfoo 0.121.20); a file holding several prompts or providers is refused (one run per prompt and provider:
compare runs with ``evalglass compare``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from evalglass.engine.datasets.toollogs.toolresults import (
    ToolProblem,
    ToolReader,
    ToolSample,
    UnknownVersion,
    score_entry,
)
from evalglass.errors import SetupError

VERSIONS = (3,)
TESTED_WITH = ("promptfoo 0.121.20",)
#: promptfoo output files are one JSON document, read whole.
MAX_BYTES = 1 << 30
#: promptfoo's reason for an assertion whose own code raised (it then counts the assertion as failed).
_GRADER_FAILED = "Custom function threw error"
_PROVIDER_ERROR = 2


class PromptfooReader(ToolReader):
    tool = "promptfoo"

    def _samples(self) -> Iterator[ToolSample | ToolProblem]:
        data = self._read_bytes(MAX_BYTES)
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
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
            (row.get("promptIdx"), (row.get("provider") or {}).get("id"))
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
        ordered = sorted(
            (row for row in enumerate(rows, start=1) if isinstance(row[1], dict)),
            key=lambda item: item[1].get("testIdx", 0) if type(item[1].get("testIdx")) is int else 0,
        )
        for position, row in ordered:
            yield _sample(row, position, repeat)
        for position, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                yield ToolProblem(f"results[{position - 1}]", position, "is not an object")


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
        score = row.get("score")
        scores["promptfoo"] = score_entry(
            score if type(score) in (int, float) else None,
            passed=row.get("success") if type(row.get("success")) is bool else None,
        )
        grading = _object(row.get("gradingResult"))
        for component in grading.get("componentResults") or ():
            if not isinstance(component, dict):
                continue
            assertion = _object(component.get("assertion"))
            name = str(assertion.get("metric") or assertion.get("type") or "assertion")
            key, count = name, 1
            while key in scores:
                count += 1
                key = f"{name}#{count}"
            reason = component.get("reason") if isinstance(component.get("reason"), str) else None
            crashed = reason is not None and reason.startswith(_GRADER_FAILED)
            value = component.get("score")
            scores[key] = score_entry(
                None if crashed or type(value) not in (int, float) else value,
                passed=None if crashed or type(component.get("pass")) is not bool else component["pass"],
                error=reason.splitlines()[0] if crashed and reason else None,
                explanation=reason,
            )
    prompt = _object(row.get("prompt"))
    test = _object(row.get("testCase"))
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
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
