"""LLM judges: parse every kind of answer honestly; faults are never 0.0; the fingerprint binds the definition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pydantic
import pytest

from evalglass.core.example import Example
from evalglass.core.outputparse import UnparsedOutput
from evalglass.core.score import Status, Validity
from evalglass.core.stats import Direction
from evalglass.lanes.executor import AsyncioExecutor
from evalglass.lanes.judge import (
    Judge,
    JudgeResult,
    LabelsFileError,
    calibrate_judge,
    parse_judge_answer,
    read_labels,
)
from evalglass.lanes.judgespec import JudgeScale
from evalglass.metrics.base import AsyncScorer, BuildContext
from evalglass.metrics.errors import MetricLoadError
from evalglass.metrics.llm_judge import LlmJudgeSpec, judge_fingerprint
from evalglass.readers.jsonsource import MendedLines
from evalglass.testing.fake_openai import FakeOpenAI

from .conftest import KEY_ENV, fast_retrier, run

FIVE = JudgeScale(min=1, max=5)
PASS_FAIL = JudgeScale(labels=("fail", "pass"))


# ------------------------------------------------------------------ parsing
@pytest.mark.parametrize(
    "answer",
    [
        '{"score": 4, "rationale": "mostly right"}',
        'Here you go:\n```json\n{"score": 4, "rationale": "mostly right"}\n```',
        'I think {"score": 4.0, "rationale": "mostly right"} is fair.',
    ],
)
def test_valid_answers_in_the_usual_wrappings(answer: str) -> None:
    verdict = parse_judge_answer(answer, FIVE)
    assert verdict.score.status is Status.SCORED and verdict.score.validity is Validity.VALID
    assert verdict.score.value == 4.0 and verdict.label == 4 and verdict.rationale == "mostly right"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("Great answer, 5/5!", "no JSON object"),
        ('{"rationale": "forgot the score"}', 'no "score"'),
        ('{"score": "four", "rationale": "a string"}', "must be a number"),  # "4" is 4 (json-score@3)
        ('{"score": true}', "must be a number"),
        ('{"score": null}', "must be a number"),
        ('{"score": [4]}', "must be a number"),
        ("", "no JSON object"),
    ],
)
def test_unparseable_answers_are_errors_with_the_raw_answer_kept(answer: str, why: str) -> None:
    verdict = parse_judge_answer(answer, FIVE, evidence=("judge_call:abc",))
    score = verdict.score
    assert score.status is Status.ERROR and score.value is None  # never 0.0
    assert score.diagnostics[0].code == "judge_unparseable" and why in score.diagnostics[0].message
    assert score.diagnostics[0].detail == answer
    assert score.evidence == ("judge_call:abc",)


@pytest.mark.parametrize(("answer", "value"), [('{"score": 7}', 7.0), ('{"score": 0}', 0.0), ('{"score": 3.5}', 3.5)])
def test_off_scale_numbers_are_scored_but_invalid(answer: str, value: float) -> None:
    score = parse_judge_answer(answer, FIVE).score
    assert score.status is Status.SCORED and score.validity is Validity.INVALID and score.value == value
    assert score.diagnostics[0].code == "judge_off_scale"
    assert not score.included


def test_label_scales() -> None:
    verdict = parse_judge_answer('{"score": "pass", "rationale": "ok"}', PASS_FAIL)
    assert verdict.score.included and verdict.score.value == 1.0 and verdict.label == "pass"
    assert parse_judge_answer('{"score": " PASS "}', PASS_FAIL).label == "pass"
    mapped = JudgeScale(labels={"bad": 0.0, "ok": 0.5, "good": 1.0}, ordered=True)
    assert parse_judge_answer('{"score": "ok"}', mapped).score.value == 0.5 and mapped.ordinal
    off = parse_judge_answer('{"score": "maybe"}', PASS_FAIL).score
    assert off.status is Status.ERROR and off.value is None and off.diagnostics[0].code == "judge_off_scale"
    wrong = parse_judge_answer('{"score": 1}', PASS_FAIL).score
    assert wrong.status is Status.ERROR and wrong.diagnostics[0].code == "judge_unparseable"


def test_a_label_matches_its_scale_by_canonical_caseless_matching() -> None:
    """json-score@2: a label the judge (or a labels file) wrote decomposed or in another case is the scale's label;
    casefold alone left the decomposed one off the scale, an error blocking the gate."""
    accented = JudgeScale(labels=("faux", "vrai", "v\u00e9rifi\u00e9"))
    decomposed = "VE\u0301RIFIE\u0301"
    answer = parse_judge_answer(orjson.dumps({"score": decomposed}).decode(), accented)
    assert answer.label == "v\u00e9rifi\u00e9" and answer.score.included
    assert parse_judge_answer('{"score": "verifie"}', accented).score.diagnostics[0].code == "judge_off_scale"


def test_scale_validation() -> None:
    for bad in [{}, {"min": 1}, {"min": 5, "max": 1}, {"labels": ["only"]}, {"min": 1, "max": 3, "labels": ["a", "b"]}]:
        with pytest.raises(pydantic.ValidationError):
            JudgeScale(**bad)
    assert FIVE.categories() == (1, 2, 3, 4, 5) and FIVE.ordinal and not PASS_FAIL.ordinal


# ------------------------------------------------------------------ the judge against a real endpoint
@pytest.fixture
def evals(tmp_path: Path) -> Path:
    (tmp_path / "rubric.md").write_text("Score 5 when the answer is correct and complete.\n")
    return tmp_path


def _spec(server: FakeOpenAI, **fields: Any) -> LlmJudgeSpec:
    data = {
        "type": "llm_judge",
        "rubric": "rubric.md",
        "scale": {"min": 1, "max": 5},
        "base_url": server.base_url,
        "model": "judge-model",
        "api_key_env": "EVALGLASS_TEST_KEY",
        **fields,
    }
    return LlmJudgeSpec.model_validate(data)


def _judge_all(
    spec: LlmJudgeSpec, base_dir: Path, examples: list[Example], direction: Direction = Direction.HIGHER_IS_BETTER
) -> list[JudgeResult]:
    async def go() -> list[JudgeResult]:
        executor = AsyncioExecutor(8)
        definition = spec.judge_definition(BuildContext(base_dir, direction=direction))
        judge = Judge(definition, executor=executor, env=KEY_ENV, retrier=fast_retrier(2))
        try:
            return await executor.run(examples, judge.judge)
        finally:
            await judge.aclose()

    return run(go())


def _answer_from_output(body: dict[str, Any]) -> str:
    """The fake judge answers with whatever the graded output asks for (it follows '>> ')."""
    prompt = body["messages"][-1]["content"]
    return prompt.split(">> ", 1)[1].split("\n", 1)[0] if ">> " in prompt else '{"score": 3, "rationale": "meh"}'


def test_judge_end_to_end_with_every_answer_kind(evals: Path) -> None:
    examples = [
        Example("good", 1, {"q": "2+2"}, ">> " + '{"score": 5, "rationale": "correct"}'),
        Example("off", 2, {"q": "x"}, ">> " + '{"score": 9, "rationale": "very good"}'),
        Example("garbage", 3, {"q": "y"}, ">> I refuse to use JSON"),
        Example("dead", 4, {"q": "z"}, "[[behaviour:500]]"),
    ]
    with FakeOpenAI(reply=_answer_from_output) as server:
        good, off, garbage, dead = _judge_all(_spec(server), evals, examples)
        sent = server.requests[0].body
    assert good.score.included and good.score.value == 5.0 and good.rationale == "correct"
    assert off.score.status is Status.SCORED and off.score.validity is Validity.INVALID and off.score.value == 9.0
    assert garbage.score.status is Status.ERROR and garbage.score.diagnostics[0].code == "judge_unparseable"
    assert garbage.score.diagnostics[0].detail == "I refuse to use JSON"
    assert dead.score.status is Status.ERROR and dead.score.value is None
    assert dead.score.diagnostics[0].code == "call_server_error" and len(dead.attempts) == 2
    prompt = sent["messages"][-1]["content"]
    assert "Score 5 when the answer is correct" in prompt and "an integer from 1 to 5" in prompt
    assert sent["model"] == "judge-model"


def test_judge_uses_field_and_reference_paths_and_reports_missing_ones(evals: Path) -> None:
    spec_fields = {"field": "answer", "reference": "gold", "prompt": '{{ output }} vs {{ reference }} >> {"score": 2}'}
    with FakeOpenAI(reply=_answer_from_output) as server:
        ok, no_field, no_reference, not_json, neither = _judge_all(
            _spec(server, **spec_fields),
            evals,
            [
                Example("a", 1, {"gold": "4"}, {"answer": "4"}),
                Example("b", 2, {"gold": "4"}, {"other": 1}),
                Example("c", 3, {}, {"answer": "4"}),
                Example("d", 4, {"gold": "4"}, UnparsedOutput('{"answer": "4', "Unterminated string")),
                Example("e", 5, {}, UnparsedOutput("{", "Expecting value")),
            ],
        )
        assert server.request_count == 1
    assert ok.score.value == 2.0
    # A wrong answer is measured without asking the judge: the worst grade of its scale (1 of 1..5).
    for result, code in ((no_field, "output_field_missing"), (not_json, "output_not_json")):
        assert result.score.included and result.score.value == 1.0
        assert result.score.diagnostics[0].code == code and result.tries == 0
    # What the evaluator lacks is never measured, whatever the answer.
    for result in (no_reference, neither):
        assert result.score.status is Status.NON_EVALUABLE
        assert result.score.diagnostics[0].code == "reference_missing"


def test_a_reference_json_cannot_write_is_the_golds_problem_and_the_judge_is_not_asked(evals: Path) -> None:
    """llm_judge@4: a NaN reference (a Parquet cell) was shown to the judge as ``null``, a set failed the call."""
    spec_fields = {"field": "answer", "reference": "gold", "prompt": '{{ output }} vs {{ reference }} >> {"score": 2}'}
    with FakeOpenAI(reply=_answer_from_output) as server:
        ok, nan, a_set = _judge_all(
            _spec(server, **spec_fields),
            evals,
            [
                Example("a", 1, {"gold": 4.0}, {"answer": "4"}),
                Example("b", 2, {"gold": float("nan")}, {"answer": "4"}),
                Example("c", 3, {"gold": {1, 2}}, {"answer": "4"}),
            ],
        )
        assert server.request_count == 1
    assert ok.score.value == 2.0
    for result in (nan, a_set):
        assert result.score.status is Status.NON_EVALUABLE and result.tries == 0, result.score
        assert result.score.diagnostics[0].code == "reference_wrong_type"
        assert result.score.diagnostics[0].message.startswith("llm_judge needs a reference that is a JSON value")


def test_a_judge_whose_lower_grades_are_better_scores_a_wrong_answer_its_highest_grade(evals: Path) -> None:
    with FakeOpenAI() as server:
        spec = _spec(server, field="answer")
        (result,) = _judge_all(spec, evals, [Example("a", 1, {}, {"other": 1})], Direction.LOWER_IS_BETTER)
        assert server.request_count == 0
    assert result.score.included and result.score.value == 5.0


def test_a_missing_template_variable_is_an_error_for_that_example(evals: Path) -> None:
    with FakeOpenAI() as server:
        (result,) = _judge_all(_spec(server, prompt="{{ example.context }}"), evals, [Example("a", 1, {}, "x")])
        assert server.request_count == 0
    assert result.score.status is Status.ERROR and result.score.diagnostics[0].code == "template_field_missing"


def test_a_missing_rubric_is_a_config_error(tmp_path: Path) -> None:
    with FakeOpenAI() as server, pytest.raises(MetricLoadError, match="rubric"):
        _judge_all(_spec(server), tmp_path, [])


def test_fingerprint_binds_what_changes_the_answers_and_not_where_the_judge_is_served(evals: Path) -> None:
    base = LlmJudgeSpec.model_validate(
        {"type": "llm_judge", "rubric": "r.md", "scale": {"min": 1, "max": 5}, "base_url": "http://h/v1", "model": "a"}
    )
    rubric = b"Score 5 when right."
    reference = judge_fingerprint(base, rubric)
    assert len(reference) == 64 and reference == judge_fingerprint(base, rubric)
    changed = [
        judge_fingerprint(base, rubric + b" "),
        judge_fingerprint(base.model_copy(update={"model": "b"}), rubric),
        judge_fingerprint(base.model_copy(update={"prompt": base.prompt + "!"}), rubric),
        judge_fingerprint(base.model_copy(update={"system": "be strict"}), rubric),
        judge_fingerprint(base.model_copy(update={"scale": JudgeScale(min=1, max=10)}), rubric),
        judge_fingerprint(base.model_copy(update={"temperature": 1.9}), rubric),
        judge_fingerprint(base.model_copy(update={"temperature": 0.0}), rubric),
        judge_fingerprint(base.model_copy(update={"max_tokens": 16}), rubric),
        judge_fingerprint(base.model_copy(update={"top_p": 0.5}), rubric),
        judge_fingerprint(base.model_copy(update={"seed": 7}), rubric),
        judge_fingerprint(base.model_copy(update={"stop": ("x",)}), rubric),
        judge_fingerprint(base.model_copy(update={"json_mode": True}), rubric),
        judge_fingerprint(base.model_copy(update={"field": "answer"}), rubric),
        judge_fingerprint(base.model_copy(update={"reference": "gold"}), rubric),
    ]
    assert len({reference, *changed}) == 1 + len(changed)
    moved = base.model_copy(update={"base_url": "http://other:8081/v1"})
    same = [
        judge_fingerprint(base.model_copy(update={"timeout": 5.0}), rubric),
        judge_fingerprint(moved, rubric),
        judge_fingerprint(base.model_copy(update={"api_key_env": "OTHER_KEY"}), rubric),
        judge_fingerprint(base.model_copy(update={"concurrency": 3, "rpm": 10.0}), rubric),
    ]
    assert set(same) == {reference}
    # A gate approval is not bound to the endpoint either (a port change must not make it stale) ...
    assert moved.fingerprint_payload() == base.fingerprint_payload()
    # ... but to what the judge does.
    warmer = base.model_copy(update={"temperature": 1.9})
    assert warmer.fingerprint_payload() != base.fingerprint_payload()


def test_llm_judge_is_a_metric_spec_that_builds_only_with_an_executor(evals: Path) -> None:
    spec = LlmJudgeSpec.model_validate(
        {
            "type": "llm_judge",
            "rubric": "r.md",
            "scale": {"labels": ["no", "yes"]},
            "base_url": "http://h/v1",
            "model": "a",
        }
    )
    with pytest.raises(MetricLoadError, match="asynchronous"):
        spec.build(BuildContext(evals))
    assert "retry" not in spec.fingerprint_payload() and spec.fingerprint_payload()["rubric"] == "r.md"
    with pytest.raises(pydantic.ValidationError):
        LlmJudgeSpec.model_validate(
            {
                "type": "llm_judge",
                "rubric": "r.md",
                "scale": {"min": 1, "max": 2},
                "base_url": "http://h/v1",
                "model": "a",
                "rubrik": "typo",
            }
        )


# ------------------------------------------------------------------ calibration through the judge
def test_calibrate_judge_from_a_labels_file(evals: Path) -> None:
    lines = [
        {"id": "1", "q": "a", "output": '>> {"score": 5}', "label": 5},
        {"id": "2", "q": "b", "output": '>> {"score": 4}', "label": 5},
        {"id": "3", "q": "c", "output": '>> {"score": 1}', "label": 1},
        {"id": "4", "q": "d", "output": '>> {"score": 3}', "label": 3.0},
        {"id": "5", "q": "e", "output": ">> no json", "label": 2},
    ]
    labels = evals / "labels.jsonl"
    labels.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n\n")
    records = read_labels(labels, FIVE)
    assert [r.label for r in records] == [5, 5, 1, 3, 2] and records[0].fields == {"q": "a"}

    with FakeOpenAI(reply=_answer_from_output) as server:
        spec = _spec(server)

        async def go():  # type: ignore[no-untyped-def]
            executor = AsyncioExecutor(4)
            judge = Judge(spec.judge_definition(BuildContext(evals)), executor=executor, env=KEY_ENV)
            try:
                calibrated = await calibrate_judge(
                    judge.judge, records, scale=spec.scale, fingerprint=judge.fingerprint, executor=executor
                )
                return calibrated, judge.fingerprint
            finally:
                await judge.aclose()

        result, fingerprint = run(go())
    report = result.calibration
    assert report.n == 4 and report.excluded == 1  # the unparseable answer is excluded, not a disagreement
    assert report.agreed == 3 and report.agreement == 0.75
    assert report.judge_fingerprint == fingerprint and report.ordinal
    assert report.weighted_kappa_quadratic is not None and report.kappa is not None


def test_a_judge_builds_through_the_metric_contract_and_judges(evals: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``spec.build(context)`` with the run's executor gives the async scorer the live run awaits; a missing
    rubric is a MetricLoadError (one line, exit 2 in a run), like any metric that cannot be built."""
    with FakeOpenAI(reply=lambda body: '{"score": 4, "rationale": "fine"}') as server:
        spec = _spec(server)

        async def go() -> JudgeResult:
            executor = AsyncioExecutor(2)
            scorer = spec.build(BuildContext(evals, name="judged", executor=executor))
            assert isinstance(scorer, AsyncScorer) and not callable(scorer)
            try:
                return await scorer.judge(Example(id="1", line=1, fields={}, output="an answer"))  # type: ignore[no-any-return]
            finally:
                await scorer.aclose()

        monkeypatch.setenv("EVALGLASS_TEST_KEY", KEY_ENV["EVALGLASS_TEST_KEY"])
        result = run(go())
    assert result.score.value == 4.0 and result.rationale == "fine"
    missing = _spec(server, rubric="nowhere.md")
    with pytest.raises(MetricLoadError, match=r"nowhere\.md"):
        missing.build(BuildContext(evals, executor=AsyncioExecutor(1)))


def test_labels_file_errors_name_the_line(evals: Path) -> None:
    path = evals / "labels.jsonl"
    path.write_text('{"output": "x", "label": 3}\n{"output": "y"}\n')
    with pytest.raises(LabelsFileError, match=r"labels.jsonl:2"):
        read_labels(path, FIVE)
    path.write_text('{"output": "x", "label": 9}\n')
    with pytest.raises(LabelsFileError, match="not an integer from 1 to 5"):
        read_labels(path, FIVE)
    # A JSON boolean is no grade, though Python counts true as 1 (it was read as the grade 1).
    for boolean in ("true", "false"):
        path.write_text('{"output": "x", "label": 3}\n{"output": "y", "label": ' + boolean + "}\n")
        with pytest.raises(LabelsFileError, match=r"labels.jsonl:2: label (True|False) is not an integer from 1"):
            read_labels(path, FIVE)


def test_a_labels_line_with_a_lone_surrogate_is_read_with_a_note_at_its_line(evals: Path) -> None:
    """A labelled output cut in the middle of an emoji (as JavaScript writes it) is that output with U+FFFD, noted at
    its file:line, not a labels file refused; a line that is not JSON for another reason still is."""
    path = evals / "labels.jsonl"
    path.write_bytes(b'{"output": "x", "label": 3}\n{"output": "cut \\ud83d", "label": 4}\n')
    mended = MendedLines(str(path))
    records = read_labels(path, FIVE, mended)
    assert [(record.output, record.label) for record in records] == [("x", 3), ("cut \ufffd", 4)]
    assert len(mended.notes) == 1 and mended.notes[0].startswith(f"{path}:2: 1 lone surrogate escape"), mended.notes
    path.write_bytes(b'{"output": "cut \\ud83d", "label": 4,}\n')
    with pytest.raises(LabelsFileError, match=r"labels.jsonl:1: not JSON"):
        read_labels(path, FIVE)


def test_a_label_written_as_the_other_type_is_the_scales_label(evals: Path) -> None:
    """json-score@3, a labels file's side: ``"4"`` on a numeric scale is 4, ``2`` on labels ``"1".."3"`` is ``"2"``;
    text that is no plain number, and a number no label spells, are still refused with their line."""
    path = evals / "labels.jsonl"
    path.write_text('{"output": "x", "label": "4"}\n{"output": "y", "label": " 2.0 "}\n')
    assert [record.label for record in read_labels(path, FIVE)] == [4, 2]
    digits = JudgeScale(labels=("1", "2", "3"))
    path.write_text('{"output": "x", "label": 2}\n')
    assert [record.label for record in read_labels(path, digits)] == ["2"]
    for bad, scale in (('"four"', FIVE), ('"4e0"', FIVE), ("9", digits), ("true", digits)):
        path.write_text('{"output": "x", "label": 1}\n{"output": "x", "label": ' + bad + "}\n")
        with pytest.raises(LabelsFileError, match=r"labels.jsonl:2"):
            read_labels(path, scale)
    assert parse_judge_answer('{"score": "4"}', FIVE).score.value == 4.0
    assert parse_judge_answer('{"score": "-0"}', FIVE).score.validity is Validity.INVALID  # off the scale
    assert parse_judge_answer('{"score": "\u0664"}', FIVE).score.diagnostics[0].code == "judge_unparseable"


def test_a_labels_file_saved_with_a_byte_order_mark_reads_as_without_one(evals: Path) -> None:
    path = evals / "labels.jsonl"
    text = '{"id": "a", "output": "x", "label": 3}\r\n{"id": "b", "output": "y", "label": 5}\r\n'
    path.write_text(text)
    plain = read_labels(path, FIVE)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_labels(path, FIVE) == plain and [r.label for r in plain] == [3, 5]


def test_a_labels_file_saved_as_utf16_is_refused_naming_its_encoding(evals: Path) -> None:
    """Read as UTF-8 its first line was "not valid JSON"; it is a file in another encoding, said as such."""
    path = evals / "labels.jsonl"
    path.write_text('{"output": "x", "label": 3}\n', encoding="utf-16")
    with pytest.raises(
        LabelsFileError, match=r"labels\.jsonl: labels file is UTF-16 text, not UTF-8 — save it as UTF-8"
    ):
        read_labels(path, FIVE)
