"""A pairwise judge of variants (issue 33, ``compare_variants``): its declaration, its checks at the config's line,
its fingerprint and the seam it reads (the run scoring it against a fake judge: tests/live_e2e/
test_pairwise_variants_live_cli.py)."""

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


def test_a_judge_of_recorded_variants_is_refused_at_its_line(tmp_path: Path) -> None:
    """A recorded variant's outputs are the user's files, not the run's: compared in one record with `compare`."""
    project = judged_project(tmp_path, pairwise())
    written = variant_config(gates={}, variants={"good": {}, "bad": {"type": "recorded", "field": "expected"}})
    written["metrics"]["preferred"] = pairwise()
    project.write_config(written)
    result = project.run()
    assert result.code == 2 and "evalglass.yaml:" in result.err, result.err
    assert "compares variant 'bad', whose outputs are recorded" in result.err and "Traceback" not in result.err


def test_a_gate_on_a_judge_of_variants_names_no_variant(tmp_path: Path) -> None:
    """Its value is one over the compared variants (`preferred`, never `preferred@good`)."""
    gates = {"liked": {"metric": "preferred", "variant": "good", "proposed_threshold": 0.5}}
    project = judged_project(tmp_path, pairwise())
    written = variant_config(gates=gates)
    written["metrics"]["preferred"] = pairwise()
    project.write_config(written)
    result = project.run()
    assert result.code == 2 and "which compares variants: its value is measured once" in result.err, result.err


def test_each_variants_scoring_leaves_the_judge_of_variants_out() -> None:
    from evalglass.engine.spec.config import Config

    written = variant_config(gates={"liked": {"metric": "preferred", "proposed_threshold": 0.5}})
    written["metrics"]["preferred"] = pairwise()
    config = Config.model_validate(written)
    assert config.compared_metrics == ("preferred",) and config.compared_variants == ["good", "bad"]
    for name in config.variant_names:
        alone = config.for_variant(name)
        assert list(alone.metrics) == ["exact"] and alone.gates == {}
    compared = config.for_compared(Path("/run/compared/graded.jsonl"))
    assert list(compared.metrics) == ["preferred"] and list(compared.gates) == ["liked"]
    assert compared.outputs_path == "/run/compared/graded.jsonl" and compared.variant_names == ()


def test_a_variants_lane_fingerprints_alike_in_every_process(tmp_path: Path) -> None:
    """A gate in a run with variants is bound to every variant's lane, retry policy included, whose `retry_on` is a
    set: dumped in a fixed order, or an approval would go stale from one process to the next."""
    import subprocess
    import sys

    import yaml

    written = variant_config(variants={"small": {"model": "small"}, "big": {"model": "big"}})
    written["task"] = {"type": "chat", "base_url": "http://127.0.0.1:9/v1", "model": "m", "prompt": "{{ q }}"}
    written["gates"] = {"g": {"metric": "exact", "variant": "small", "proposed_threshold": 0.5}}
    (tmp_path / "evalglass.yaml").write_text(yaml.safe_dump(written))
    code = (
        "from pathlib import Path; from evalglass.engine.spec.config import load_config; "
        f"l = load_config(Path({str(tmp_path / 'evalglass.yaml')!r})); print(l.config.gate_fingerprint('g'))"
    )
    found = {
        subprocess.run(
            [sys.executable, "-c", code], env={"PYTHONHASHSEED": str(seed)}, capture_output=True, text=True, check=True
        ).stdout
        for seed in range(6)
    }
    assert len(found) == 1, found


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
