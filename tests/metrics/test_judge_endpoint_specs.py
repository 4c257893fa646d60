"""Every kind of judge says where it is served, with the API it speaks: what a gate approval's ``judge_endpoint``
binds (an ``llm_judge`` pointwise or pairwise, on any provider; a jury, member by member)."""

from __future__ import annotations

from typing import Any

from evalglass.metrics.jury import JurySpec
from evalglass.metrics.llm_judge import LlmJudgeSpec


def _judge(**overrides: Any) -> LlmJudgeSpec:
    spec: dict[str, Any] = {
        "type": "llm_judge",
        "rubric": "r.md",
        "scale": {"min": 1, "max": 5},
        "model": "m",
        "base_url": "http://127.0.0.1:8000/v1/",
        "api_key_env": None,
        **overrides,
    }
    return LlmJudgeSpec.model_validate(spec)


def test_each_provider_is_its_own_endpoint_and_operational_knobs_are_not() -> None:
    assert _judge().judge_endpoint() == "openai http://127.0.0.1:8000/v1"
    assert _judge(provider="anthropic", max_tokens=5).judge_endpoint() == "anthropic http://127.0.0.1:8000/v1"
    assert _judge(provider="gemini").judge_endpoint() == "gemini http://127.0.0.1:8000/v1"
    knobs = {"timeout": 1, "concurrency": 2, "rpm": 3, "retry": {"max_attempts": 1}, "api_key_env": "OTHER_KEY"}
    assert _judge(**knobs).judge_endpoint() == _judge().judge_endpoint()


def test_a_pairwise_judge_is_bound_like_a_pointwise_one() -> None:
    pairwise = _judge(
        scale=None, mode="pairwise", compare={"a": "x", "b": "y"}, inconsistent="tie", base_url="https://h.example/v1"
    )
    assert pairwise.judge_endpoint() == "openai https://h.example/v1"


def test_a_jury_names_every_member() -> None:
    member = {"base_url": "https://one.example/v1", "model": "m", "api_key_env": None}
    jury = JurySpec.model_validate(
        {
            "type": "jury",
            "rubric": "r.md",
            "scale": {"min": 1, "max": 5},
            "rule": "mean",
            "judges": {"a": member, "b": {**member, "provider": "gemini", "base_url": "https://two.example/v1beta"}},
        }
    )
    assert jury.judge_endpoint() == {"a": "openai https://one.example/v1", "b": "gemini https://two.example/v1beta"}
