"""Comparative gates against a baseline run (`compare_to`) in a run with variants (issue 33), through the real CLI.

A gate on variant V compares V's column with the baseline's column of the same metric, paired by example id: the
baseline's variant V when the baseline is a run with variants, its one column when it is a run without. It passes,
fails or blocks as the data say, under the same ledger approval, fingerprints and provenance as any comparative
gate; a baseline that has nothing to compare V with blocks (`not_comparable`), never reads as a pass or a fail.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import Project, make_project, run_cli
from tests.e2e.test_baseline_handoff import ci_key, job
from tests.e2e.test_forgery import reseal_scores
from tests.e2e.test_variants_cli import APP, ROWS, approve, card_of, gate

# Several real CLI processes per test on a shared machine: bounded, generous.
pytestmark = pytest.mark.timeout(600)

METRICS = {"exact": {"type": "exact_match", "reference": "expected"}}
# Out of 60 examples: good answers all, bad 40 (wrong on every third id), worse none, twin all.
BASE_VARIANTS = {"good": {}, "bad": {"function": "app.py:bad"}}


def config(variants: dict[str, Any] | None, gates: dict[str, Any], task: str = "good") -> dict[str, Any]:
    found: dict[str, Any] = {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "python", "function": f"app.py:{task}"},
        "metrics": METRICS,
        "gates": gates,
    }
    if variants is not None:
        found["variants"] = variants
    return found


def no_regression(variant: str | None, **more: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"metric": "exact", "compare_to": "main", "proposed_margin": 0.05, **more}
    return {**spec, "variant": variant} if variant is not None else spec


def baseline_project(
    tmp_path: Path, variants: dict[str, Any] | None, env: dict[str, str] | None = None, task: str = "good"
) -> Project:
    """A project whose run `runs/base` is the baseline, of ``variants`` (None: a run without variants, of
    ``task``)."""
    project = make_project(tmp_path)
    (project.evals / "app.py").write_text(APP)
    project.write_rows(ROWS)
    project.write_config(config(variants, {}, task))
    base = run_cli("run", "--out", "runs/base", "--no-progress", cwd=project.root, env=env)
    assert base.code == 0, base.err
    return project


def candidate(project: Project, variants: dict[str, Any] | None, gates: dict[str, Any]) -> None:
    """The candidate's config, probed once (every gate informational), then approved as a host would: the gates
    and the gold from `explain`, the baseline pinned to `runs/base` by its fingerprint."""
    project.write_config(config(variants, gates))
    assert project.run("--out", "runs/probe").code == 0
    approve(project, *gates)
    ledger = yaml.safe_load((project.evals / "authority.yaml").read_text())
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    ledger["baselines"] = {"main": {"run": "../runs/base", "fingerprint": fingerprint}}
    project.write_ledger(ledger)


def codes(decided: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in decided["reasons"]]


def test_each_variant_is_compared_with_the_baselines_variant_of_the_same_name(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    # The pull request points `bad` at a function that is wrong everywhere; `good` is unchanged.
    variants = {"good": {}, "bad": {"function": "app.py:worse"}}
    candidate(project, variants, {"good-holds": no_regression("good"), "bad-holds": no_regression("bad")})
    code, card = card_of(project, "--out", "runs/cand")
    held, dropped = gate(card, "good-holds"), gate(card, "bad-holds")
    assert code == 1 and card["decision"]["verdict"] == "fail"
    assert held["outcome"] == "pass" and held["value"] == 0.0 and held["subject"] == "exact@good"
    assert held["comparison"]["metric"]["pairs"]["included"] == 60
    # bad's 40 right answers in the baseline against none now: paired with bad's own column, not good's (60).
    assert dropped["outcome"] == "fail" and codes(dropped) == ["below_threshold"]
    assert dropped["value"] == pytest.approx(-40 / 60)
    metric = dropped["comparison"]["metric"]
    assert metric["metric"] == "exact@bad" and len(metric["flips"]["regressed"]) == 40
    assert metric["flips"]["regressed"][:2] == ["ex-1", "ex-2"]  # ex-0 was wrong in the baseline's bad already
    assert project.cli("verify", "runs/cand").code == 0
    # Every variant's scores travel with the run: verify needs nothing outside its folder.
    assert (tmp_path / "runs/cand/baselines/main/variants/bad/scores.jsonl").is_file()
    shutil.rmtree(tmp_path / "runs/base")
    verified = project.cli("verify", "runs/cand")
    assert verified.code == 0, verified.out + verified.err
    assert "not covered by the digests" not in verified.out
    explained = project.cli("explain", "bad-holds", "--run", "runs/cand")
    assert "on metric 'exact@bad'" in explained.out and "regressed: passed in the baseline" in explained.out


def test_a_variant_is_compared_with_a_baseline_run_without_variants(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, None)  # what ships: the task, app.py:good
    variants = {"good": {}, "worse": {"function": "app.py:worse"}}
    candidate(project, variants, {"good-holds": no_regression("good"), "worse-holds": no_regression("worse")})
    code, card = card_of(project, "--out", "runs/cand")
    assert code == 1
    assert gate(card, "good-holds")["outcome"] == "pass" and gate(card, "good-holds")["value"] == 0.0
    worse = gate(card, "worse-holds")
    assert worse["outcome"] == "fail" and worse["value"] == -1.0 and worse["n"] == 60
    assert project.cli("verify", "runs/cand").code == 0


def test_examples_against_a_baseline_without_variants_say_where_each_stood(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, None, task="worse")  # what ships answers every example wrong
    candidate(project, BASE_VARIANTS, {"bad-holds": no_regression("bad")})
    code, card = card_of(project, "--out", "runs/cand")
    assert code == 0 and gate(card, "bad-holds")["value"] == pytest.approx(40 / 60)
    # bad's 20 failures, each read against the baseline's one column: none regressed, all failed there too.
    report = (tmp_path / "runs/cand/report.md").read_text()
    assert report.count("fail · failed in the baseline too") == 10 and "regressed: passed" not in report, report


def test_a_baseline_without_the_gated_variant_blocks_and_says_which_it_has(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    variants = {"good": {}, "twin": {"function": "app.py:twin"}}
    candidate(project, variants, {"twin-holds": no_regression("twin")})
    preflight = project.cli("preflight")
    assert preflight.code == 1 and "has no variant 'twin' (its variants: good, bad)" in preflight.out, preflight.out
    code, card = card_of(project, "--out", "runs/cand")
    twin = gate(card, "twin-holds")
    # twin answers exactly as the baseline's good did: a pass, were it compared with good. It is not.
    assert code == 1 and twin["outcome"] == "blocked" and codes(twin) == ["not_comparable"]
    assert "has no variant 'twin' (its variants: good, bad)" in twin["reasons"][0]["message"]
    assert project.cli("verify", "runs/cand").code == 0


def test_a_run_without_variants_against_a_baseline_with_variants_blocks_not_crashes(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    candidate(project, None, {"holds": no_regression(None)})
    code, card = card_of(project, "--out", "runs/cand")
    held = gate(card, "holds")
    assert code == 1 and held["outcome"] == "blocked" and codes(held) == ["not_comparable"]
    assert "is a run with variants (good, bad)" in held["reasons"][0]["message"]
    assert project.cli("verify", "runs/cand").code == 0


def test_a_baseline_variant_rescored_after_approval_is_stale(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    candidate(project, BASE_VARIANTS, {"bad-holds": no_regression("bad")})
    code, card = card_of(project, "--out", "runs/cand")
    assert code == 0 and gate(card, "bad-holds")["outcome"] == "pass"
    # The baseline's `bad` quietly made worse, so that any candidate looks fine: no longer the approved run.
    scores = tmp_path / "runs/base/variants/bad/scores.jsonl"
    scores.write_text(scores.read_text().replace("1.0,1.0", "0.0,0.0", 5))
    # As the folder is, its digest list says the file is not the run's: refused in one line naming it.
    refused = project.run("--out", "runs/refused")
    assert refused.code == 2 and "baseline 'main' run does not add up" in refused.err, refused.err
    assert "variants/bad/scores.jsonl" in refused.err and refused.err.count("\n") == 1
    reseal_scores(tmp_path / "runs/base")  # made to add up again: still not the approved run
    code, card = card_of(project, "--out", "runs/cand2")
    assert code == 1 and codes(gate(card, "bad-holds")) == ["baseline_stale"]


def test_a_signed_baseline_with_variants_is_followed_on_its_branch(tmp_path: Path) -> None:
    key = ci_key()
    project = baseline_project(tmp_path, BASE_VARIANTS, env=job("main", key))
    gates = {"bad-holds": no_regression("bad")}
    project.write_config(config(BASE_VARIANTS, gates))
    assert run_cli("run", "--no-progress", cwd=project.root, env=job("feature")).code == 0
    explained = project.cli("explain", "bad-holds", "--format", "json").json()[0]["ledger_entry"]
    ledger: dict[str, Any] = {"version": 1}
    for section, entries in yaml.safe_load(explained.replace("<your name>", "host")).items():
        ledger.setdefault(section, {}).update(entries)
    assert ledger["baselines"]["main"]["signed_by"].startswith("sha256:"), explained
    project.write_ledger(ledger)
    result = run_cli("run", "--no-progress", "--format", "json", cwd=project.root, env=job("feature"))
    assert result.code == 0, result.out + result.err
    decided = gate(result.json(), "bad-holds")
    # Every variant's scores are the ones main's CI signed: trusted, compared, decided.
    assert decided["outcome"] == "pass" and decided["comparison"]["metric"]["pairs"]["included"] == 60


def test_an_active_gate_whose_baseline_the_ledger_does_not_list_blocks(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    candidate(project, BASE_VARIANTS, {"bad-holds": no_regression("bad")})
    ledger = yaml.safe_load((project.evals / "authority.yaml").read_text())
    del ledger["baselines"]
    project.write_ledger(ledger)
    code, card = card_of(project, "--out", "runs/cand")
    decided = gate(card, "bad-holds")
    assert code == 1 and codes(decided) == ["baseline_missing"] and decided["subject"] == "exact@bad"


def test_compare_pairs_each_variant_with_a_baseline_run_without_variants(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, None)  # what ships: app.py:good
    project.write_config(config({"good": {}, "bad": {"function": "app.py:bad"}}, {}))
    assert project.run("--out", "runs/cand").code == 0
    result = project.cli("compare", "runs/base", "runs/cand", "--format", "json")
    assert result.code == 0, result.err
    by_name = {metric["metric"]: metric for metric in result.json()["metrics"]}
    assert set(by_name) == {"exact@good", "exact@bad"}
    assert by_name["exact@good"]["difference"]["interval"]["point"] == 0.0
    assert by_name["exact@bad"]["difference"]["interval"]["point"] == pytest.approx(-20 / 60)
    assert len(by_name["exact@bad"]["flips"]["regressed"]) == 20 and by_name["exact@bad"]["pairs"]["included"] == 60
    named = project.cli("compare", "runs/base", "runs/cand", "--metric", "exact@bad", "--format", "json")
    assert [metric["metric"] for metric in named.json()["metrics"]] == ["exact@bad"]
    # The other way round a variant has nothing to be paired with: refused, saying why, never a guess.
    swapped = project.cli("compare", "runs/cand", "runs/base")
    assert (
        swapped.code == 2 and "the baseline is a run with variants (good, bad) and the candidate is not" in swapped.err
    )


def test_a_variant_gate_under_lower_bound_is_undecided_when_the_data_cannot_tell(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    # One answer fewer right than the baseline's bad, over 60 pairs: neither within the margin nor past it, shown.
    with (project.evals / "app.py").open("a") as app:
        app.write("\n\ndef slip(example):\n    return 'no' if example['id'] == 'ex-1' else bad(example)\n")
    variants = {"good": {}, "bad": {"function": "app.py:slip"}}
    candidate(project, variants, {"bad-holds": no_regression("bad", rule="lower_bound")})
    code, card = card_of(project, "--out", "runs/cand")
    decided = gate(card, "bad-holds")
    assert code == 1 and decided["outcome"] == "blocked" and codes(decided) == ["undecided"]
    assert decided["value"] == pytest.approx(-1 / 60) and decided["compared"] < -0.05 < decided["favourable_bound"]
    assert project.cli("verify", "runs/cand").code == 0


def test_a_run_whose_variants_scored_other_examples_is_refused_not_misaligned(tmp_path: Path) -> None:
    project = baseline_project(tmp_path, BASE_VARIANTS)
    scores = tmp_path / "runs/base/variants/bad/scores.jsonl"
    text = scores.read_text()
    assert '"ex-0","ex-1"' in text
    scores.write_text(text.replace('"ex-0","ex-1"', '"ex-1","ex-0"', 1))  # bad's rows now name other examples
    damaged = project.cli("compare", "runs/base", "runs/base")
    assert damaged.code == 2 and "variants/bad/scores.jsonl is not the file digests.json lists" in damaged.err
    reseal_scores(tmp_path / "runs/base")  # past what the hashes tell: the columns themselves are refused
    result = project.cli("compare", "runs/base", "runs/base")
    assert result.code == 2 and "variant 'bad' scored other examples (or in another order)" in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1
