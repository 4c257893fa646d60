"""A judge's ``example`` is the record as gold sees it (llm_judge@3): whatever the dataset's fields are called,
the fields holding a recorded output (the run's gold-excluded fields, handed down as ``BuildContext.output_fields``)
never reach the prompt, every other field does, and the graded output is there as ``output``."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalglass.core.example import Example
from evalglass.lanes.judge import Judge
from evalglass.metrics.base import BuildContext
from evalglass.metrics.llm_judge import LlmJudgeSpec

from .conftest import KEY_ENV, run

#: Field names as a dataset may hold them; each named by the quoted path form, which reads any name as one key.
NAMES = st.text(st.characters(blacklist_characters="\\", blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
    lambda name: ".." not in name  # a path may not hold "..", quoted or not (fieldpath.parse_path)
)


def quoted(name: str) -> str:
    return '["' + name.replace('"', '\\"') + '"]'


def spec(**fields: object) -> LlmJudgeSpec:
    return LlmJudgeSpec.model_validate(
        {
            "type": "llm_judge",
            "rubric": "rubric.md",
            "scale": {"min": 1, "max": 5},
            "base_url": "http://127.0.0.1:9/v1",
            "model": "judge-model",
            "api_key_env": "EVALGLASS_TEST_KEY",
            **fields,
        }
    )


def rendered(judge_spec: LlmJudgeSpec, folder: Path, hidden: tuple[str, ...], example: Example) -> str:
    async def go() -> str:
        definition = judge_spec.judge_definition(BuildContext(folder, output_fields=hidden))
        judge = Judge(definition, executor=None, env=KEY_ENV)  # type: ignore[arg-type]  # renders, never calls
        try:
            messages = judge.render(example)
            assert isinstance(messages, list), messages
            return "\n".join(text for _, text in messages)
        finally:
            await judge.aclose()

    return run(go())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NAMES, min_size=1, max_size=6, unique=True), st.data())
def test_no_output_field_reaches_the_judge_whatever_it_is_called(
    tmp_path: Path, names: list[str], data: st.DataObject
) -> None:
    (tmp_path / "rubric.md").write_text("Grade it.\n")
    hidden = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True), label="output fields")
    # Every value is a marker no template text contains; the graded output is one of the hidden fields' values.
    record = {name: f"VALUE{index}MARK" for index, name in enumerate(names)}
    graded = record[hidden[0]]
    walker = "{% for key, value in example.items() %}{{ value }};{% endfor %}"
    for judge_spec in (spec(), spec(system=walker, prompt="{{ output }}")):  # the default prompt, and a walker
        text = rendered(judge_spec, tmp_path, tuple(map(quoted, hidden)), Example("e", 1, record, graded))
        for name, value in record.items():
            if name in hidden and value != graded:
                assert value not in text, (name, judge_spec.system)
            elif name not in hidden:
                assert value in text, (name, judge_spec.system)
        assert text.count(graded) == 1  # as `output`, once: never again inside the example
