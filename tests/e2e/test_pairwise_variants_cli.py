"""A pairwise judge of variants (issue 33, ``compare_variants``): what is landed is its declaration, its checks at
the config's line, its fingerprint and the seam it reads; scoring it across variants is refused, not faked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalglass.engine.explore.variantoutputs import variant_outputs
from evalglass.metrics.llm_judge import LlmJudgeSpec, judge_fingerprint_of
from tests.e2e.project import Project
from tests.e2e.test_variants_cli import variant_config, variant_project


def pairwise(**overrides: Any) -> dict[str, Any]:
    judge: dict[str, Any] = {
        "type": "llm_judge",
        "rubric": "rubric.md",
        "mode": "pairwise",
        "compare_variants": ["good", "bad"],
        "inconsistent": "tie",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "judge-model",
    }
    judge.update(overrides)
    return judge


def judged_project(tmp_path: Path, judge: dict[str, Any], **config: Any) -> Project:
    project = variant_project(tmp_path, gates={})
    (project.evals / "rubric.md").write_text("Which answer is right?\n")
    written = variant_config(gates={}, **config)
    written["metrics"]["preferred"] = judge
    project.write_config(written)
    return project


def test_an_undeclared_compared_variant_is_refused_at_its_line(tmp_path: Path) -> None:
    result = judged_project(tmp_path, pairwise(compare_variants=["good", "best"])).run()
    assert result.code == 2, result.err
    assert "evalglass.yaml:" in result.err and "compares variant 'best', which is not declared" in result.err
    assert "Traceback" not in result.err


def test_comparing_variants_in_a_run_without_variants_is_refused(tmp_path: Path) -> None:
    project = judged_project(tmp_path, pairwise())
    written = variant_config(gates={})
    del written["variants"]
    written["metrics"]["preferred"] = pairwise()
    project.write_config(written)
    result = project.run()
    assert result.code == 2 and "the run declares no `variants:`" in result.err


def test_a_judge_of_variants_is_refused_not_scored_per_variant(tmp_path: Path) -> None:
    """Scored per variant, every example would lack the other variants' outputs: an honest exit 2 instead."""
    result = judged_project(tmp_path, pairwise(compare_variants=["good", "bad", "worse"])).run()
    assert result.code == 2 and "compares variants, which a run does not score yet" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"compare": {"x": "x", "y": "y"}}, "not both"),
        ({"compare_variants": ["good", "good"]}, "names a variant twice"),
        ({"compare_variants": ["good"]}, "at least two variants"),
        ({"compare_variants": ["tie", "good"]}, "'tie' is an answer"),
        ({"mode": "pointwise", "scale": {"min": 1, "max": 5}}, "apply only to `mode: pairwise`"),
    ],
)
def test_a_malformed_judge_of_variants_is_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        LlmJudgeSpec.model_validate(pairwise(**fields))


def test_the_fingerprint_covers_which_variants_are_compared_and_in_what_order() -> None:
    def fingerprint(**fields: Any) -> str:
        return judge_fingerprint_of(LlmJudgeSpec.model_validate(pairwise(**fields)), "0" * 64)

    both = fingerprint()
    assert both != fingerprint(compare_variants=["bad", "good"])  # the first is the one reported
    assert both != fingerprint(compare_variants=["good", "bad", "worse"])
    assert both != fingerprint(compare_variants=None, compare={"good": '["good"]', "bad": '["bad"]'})
    named = LlmJudgeSpec.model_validate(pairwise(compare_variants=None, compare={"x": "x", "y": "y"}))
    assert "compare_variants" not in named.fingerprint_payload()  # judges of named outputs keep their fingerprint


def test_every_gate_is_bound_to_the_compared_variants_definitions(tmp_path: Path) -> None:
    """A redefined variant changes every gate's fingerprint (the run's `variants` are in each), so a judge's
    verdict on variants can never be approved for one set of variants and reused for another."""
    from evalglass.engine.spec.config import Config

    written = variant_config()
    before = Config.model_validate(written).gate_definition("bad-accuracy")
    written["variants"]["worse"] = {"function": "app.py:twin"}
    after = Config.model_validate(written).gate_definition("bad-accuracy")
    assert before["variants"] != after["variants"]


def test_the_judge_reads_the_variants_outputs_through_its_one_pairwise_setup(tmp_path: Path) -> None:
    from evalglass.lanes.judge import PairwiseSetup

    project = variant_project(tmp_path, gates={})
    assert project.run().code == 0
    setup = LlmJudgeSpec.model_validate(pairwise(compare_variants=["worse", "good"]))._pairwise_setup(PairwiseSetup)
    assert setup.names == ("worse", "good")
    found = list(variant_outputs(project.last_run(), ("good", "bad", "worse")))
    graded = found[3].compared(0)
    assert [getter(graded) for getter in setup.getters] == ["no", "yes"]
