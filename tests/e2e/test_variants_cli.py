"""Variants (issue 33): one run scores every variant on the same examples, compares every pair with Holm-adjusted
paired intervals, gates per variant, and no edit of the variants (a file anyone may change) turns a red run green
without a ledger change."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalglass.errors import SetupError
from tests.e2e.project import Project, make_project, validated_gold
from tests.e2e.test_forgery import _reseal as reseal

APP = textwrap.dedent(
    """
    def good(example):
        return example["expected"]

    def bad(example):
        return "no" if int(example["id"][3:]) % 3 == 0 else example["expected"]

    def worse(example):
        return "no"

    def twin(example):
        return example["expected"]
    """
)
ROWS = [{"id": f"ex-{i}", "expected": "yes" if i % 2 else "maybe"} for i in range(60)]


def variant_config(variants: dict[str, Any] | None = None, gates: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "version": 1,
        "dataset": {"name": "suite", "path": "data.jsonl"},
        "task": {"type": "python", "function": "app.py:good"},
        "variants": variants
        if variants is not None
        else {"good": {}, "bad": {"function": "app.py:bad"}, "worse": {"function": "app.py:worse"}},
        "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
        "gates": gates
        if gates is not None
        else {"bad-accuracy": {"metric": "exact", "variant": "bad", "proposed_threshold": 0.9}},
    }


def variant_project(tmp_path: Path, **config: Any) -> Project:
    project = make_project(tmp_path)
    (project.evals / "app.py").write_text(APP)
    project.write_rows(ROWS)
    project.write_config(variant_config(**config))
    return project


def approve(project: Project, *gates: str) -> None:
    """What a host does: paste explain's entries into the ledger."""
    ledger: dict[str, Any] = {"version": 1}
    for gate in gates:
        entry = project.cli("explain", gate, "--format", "json").json()[0]["ledger_entry"]
        for section, entries in yaml.safe_load(entry.replace("<your name>", "host")).items():
            ledger.setdefault(section, {}).update(entries)
    project.write_ledger(ledger)


def card_of(project: Project, *args: str) -> tuple[int, dict[str, Any]]:
    result = project.run("--format", "json", *args)
    assert result.code in (0, 1), result.err
    return result.code, result.json()


def gate(card: dict[str, Any], name: str) -> dict[str, Any]:
    return next(item for item in card["decision"]["gates"] if item["name"] == name)


def test_every_variant_is_scored_on_the_same_examples_and_every_pair_compared(tmp_path: Path) -> None:
    project = variant_project(tmp_path)
    code, card = card_of(project)
    assert code == 0
    points = {metric["name"]: metric["estimate"]["point"] for metric in card["metrics"]}
    assert points == {"exact@good": 1.0, "exact@bad": pytest.approx(2 / 3), "exact@worse": 0.0}
    summary = card["variants"]
    assert summary["names"] == ["good", "bad", "worse"] and summary["adjustment"] == "holm"
    (exact,) = summary["metrics"]
    pairs = {(pair["first"], pair["second"]): pair for pair in exact["pairs"]}
    assert set(pairs) == {("good", "bad"), ("good", "worse"), ("bad", "worse")}
    assert all(pair["n"] == 60 and pair["distinguishable"] for pair in pairs.values())
    assert pairs[("good", "bad")]["difference"] == pytest.approx(1 / 3)
    # Holm: the three pairs are tested at alpha/3, alpha/2 and alpha, each interval at least as wide as its plain one.
    assert sorted(round(pair["level"], 6) for pair in pairs.values()) == [0.95, 0.975, round(1 - 0.05 / 3, 6)]
    assert exact["groups"] == [["good"], ["bad"], ["worse"]]
    run = project.last_run()
    for name in ("good", "bad", "worse"):
        lines = (run / "variants" / name / "scores.jsonl").read_text().splitlines()
        assert [i for line in lines for i in json.loads(line)["ids"]] == [row["id"] for row in ROWS]
    shown = project.cli("view")
    assert shown.code == 0, shown.err
    assert "Holm-adjusted for 3 pairs" in shown.out and "good − bad" in shown.out
    report = (run / "report.md").read_text()
    assert "### Variants" in report and "| good − bad | +0.3333 |" in report
    assert "groups the data cannot separate, best first: {good} \\| {bad} \\| {worse}" in report
    verified = project.cli("verify", str(run))
    assert verified.code == 0, verified.out + verified.err


def test_variants_the_data_cannot_separate_are_grouped_not_ranked(tmp_path: Path) -> None:
    project = variant_project(tmp_path, variants={"good": {}, "twin": {"function": "app.py:twin"}}, gates={})
    _, card = card_of(project)
    (exact,) = card["variants"]["metrics"]
    assert exact["groups"] == [["good", "twin"]] and not exact["pairs"][0]["distinguishable"]
    assert "indistinguishable at this n: good, twin (no ranking is supported)" in project.cli("view").out


def test_a_gate_on_a_variant_decides_on_that_variant(tmp_path: Path) -> None:
    project = variant_project(
        tmp_path,
        gates={
            "good-accuracy": {"metric": "exact", "variant": "good", "proposed_threshold": 0.9},
            "bad-accuracy": {"metric": "exact", "variant": "bad", "proposed_threshold": 0.9},
        },
    )
    project.run()
    approve(project, "good-accuracy", "bad-accuracy")
    code, card = card_of(project)
    assert code == 1
    assert gate(card, "good-accuracy")["outcome"] == "pass" and gate(card, "good-accuracy")["value"] == 1.0
    assert gate(card, "bad-accuracy")["outcome"] == "fail" and gate(card, "bad-accuracy")["value"] == pytest.approx(
        2 / 3
    )
    assert project.cli("verify", str(project.last_run())).code == 0


@pytest.fixture(scope="module")
def _red_evals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An approved gate on variant `bad` that fails: the run is red. Made once for the module: the tests of what an
    edit does to it each start from a copy of its evals folder (config, data, host code and the ledger the host
    approved), never of its runs, which no decision reads."""
    project = variant_project(tmp_path_factory.mktemp("red"))
    project.run()
    approve(project, "bad-accuracy")
    code, card = card_of(project)
    assert code == 1 and gate(card, "bad-accuracy")["outcome"] == "fail"
    return project.evals


@pytest.fixture
def red_run(_red_evals: Path, tmp_path: Path) -> Project:
    """The red run's project, copied: the edit is made on a copy and run there."""
    project = Project(tmp_path)
    shutil.copytree(_red_evals, project.evals)
    return project


def reasons(card: dict[str, Any], name: str) -> set[str]:
    return {reason["code"] for reason in gate(card, name)["reasons"]}


def test_redefining_the_gated_variant_does_not_turn_the_run_green(red_run: Project) -> None:
    project = red_run
    project.write_config(
        variant_config(variants={"good": {}, "bad": {"function": "app.py:twin"}, "worse": {"function": "app.py:worse"}})
    )
    code, card = card_of(project)
    assert code == 1 and gate(card, "bad-accuracy")["outcome"] == "blocked"
    assert "approval_stale" in reasons(card, "bad-accuracy")


def test_redefining_another_variant_does_not_turn_the_run_green_either(red_run: Project) -> None:
    """Pointing the other side of a comparison at the same thing: every gate is bound to every variant."""
    project = red_run
    project.write_config(
        variant_config(variants={"good": {}, "bad": {"function": "app.py:bad"}, "worse": {"function": "app.py:twin"}})
    )
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-accuracy")


def test_renaming_variants_does_not_turn_the_run_green(red_run: Project) -> None:
    project = red_run
    # The gate keeps its name and now points at a variant called `bad` that runs the good function.
    project.write_config(
        variant_config(variants={"bad": {}, "good": {"function": "app.py:bad"}, "worse": {"function": "app.py:worse"}})
    )
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-accuracy")


def test_dropping_the_failing_variant_and_its_gate_does_not_turn_the_run_green(red_run: Project) -> None:
    project = red_run
    project.write_config(variant_config(variants={"good": {}, "worse": {"function": "app.py:worse"}}, gates={}))
    code, card = card_of(project)
    assert code == 1 and reasons(card, "bad-accuracy") == {"gate_undeclared"}


def test_moving_the_gate_to_another_variant_does_not_turn_the_run_green(red_run: Project) -> None:
    project = red_run
    project.write_config(
        variant_config(gates={"bad-accuracy": {"metric": "exact", "variant": "good", "proposed_threshold": 0.9}})
    )
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-accuracy")


def test_adding_or_removing_a_variant_needs_a_new_approval(red_run: Project) -> None:
    project = red_run
    project.write_config(
        variant_config(
            variants={
                "good": {},
                "bad": {"function": "app.py:bad"},
                "worse": {"function": "app.py:worse"},
                "twin": {"function": "app.py:twin"},
            }
        )
    )
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-accuracy")
    project.write_config(variant_config(variants={"bad": {"function": "app.py:bad"}}))  # one variant: the task
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-accuracy")


def test_a_metric_gate_without_its_variant_is_refused_at_its_line(tmp_path: Path) -> None:
    project = variant_project(tmp_path, gates={"accuracy": {"metric": "exact", "proposed_threshold": 0.9}})
    result = project.run()
    assert result.code == 2
    assert "evalglass.yaml:" in result.err and "must name the variant it decides on" in result.err
    assert "Traceback" not in result.err


def test_two_variants_running_the_same_task_are_refused(tmp_path: Path) -> None:
    project = variant_project(tmp_path, variants={"good": {}, "copy": {"function": "app.py:good"}}, gates={})
    result = project.run()
    assert result.code == 2 and "variants 'good' and 'copy' run the same task" in result.err


def test_a_bad_override_is_refused_at_its_line(tmp_path: Path) -> None:
    project = variant_project(tmp_path, variants={"good": {}, "fast": {"timeout": -1}}, gates={})
    result = project.run()
    assert result.code == 2 and "variants" in result.err and "evalglass.yaml:" in result.err, result.err


def test_an_edited_variant_scores_file_is_found_by_verify(tmp_path: Path) -> None:
    project = variant_project(tmp_path)
    project.run()
    scores = project.last_run() / "variants" / "worse" / "scores.jsonl"
    scores.write_text(scores.read_text().replace("[0.0,", "[1.0,", 1))
    verified = project.cli("verify", str(project.last_run()))
    assert verified.code != 0 and "variants/worse/scores.jsonl" in verified.out + verified.err


def test_a_hand_edited_pair_decision_is_refused_by_every_reader(tmp_path: Path) -> None:
    project = variant_project(tmp_path, variants={"good": {}, "twin": {"function": "app.py:twin"}}, gates={})
    project.run()
    path = project.last_run() / "scorecard.json"
    card = json.loads(path.read_text())
    card["variants"]["metrics"][0]["pairs"][0]["distinguishable"] = True
    card["variants"]["metrics"][0]["groups"] = [["good"], ["twin"]]
    path.write_text(json.dumps(card, indent=2) + "\n")
    reseal(project.last_run())  # unsealed, the edited file is named first (test_damaged_artifacts.py)
    shown = project.cli("view")
    assert shown.code == 2 and "Holm" in shown.err


def test_every_variants_output_of_an_example_is_handed_over_together(tmp_path: Path) -> None:
    """The seam a pairwise judge plugs into: per example, a mapping variant name → its outputs."""
    from evalglass.engine.explore.variantoutputs import variant_outputs

    project = variant_project(tmp_path)
    project.run()
    found = list(variant_outputs(project.last_run(), ("good", "bad", "worse")))
    assert [item.id for item in found] == [row["id"] for row in ROWS]
    assert found[3].outputs == {"good": ("yes",), "bad": ("no",), "worse": ("no",)}
    assert found[1].outputs == {"good": ("yes",), "bad": ("yes",), "worse": ("no",)}
    outputs = project.last_run() / "variants" / "bad" / "outputs.jsonl"
    lines = outputs.read_text().splitlines()
    outputs.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(SetupError, match="disagree"):
        list(variant_outputs(project.last_run(), ("good", "bad", "worse")))


def test_compare_pairs_two_runs_with_variants_metric_by_variant(tmp_path: Path) -> None:
    project = variant_project(tmp_path, gates={})
    assert project.run("--out", "before").code == 0
    project.write_config(
        variant_config(
            variants={"good": {}, "bad": {"function": "app.py:worse"}, "worse": {"function": "app.py:twin"}},
            gates={},
        )
    )
    assert project.run("--out", "after").code == 0
    result = project.cli("compare", "before", "after", "--format", "json")
    assert result.code == 0, result.err
    by_name = {metric["metric"]: metric for metric in result.json()["metrics"]}
    assert set(by_name) == {"exact@good", "exact@bad", "exact@worse"}
    assert by_name["exact@good"]["difference"]["interval"]["point"] == 0.0
    assert by_name["exact@bad"]["difference"]["interval"]["point"] == pytest.approx(-2 / 3)
    assert by_name["exact@worse"]["difference"]["interval"]["point"] == 1.0


def test_the_history_records_every_variants_metric_and_gives_the_run_back_whole(tmp_path: Path) -> None:
    project = variant_project(tmp_path, gates={})
    first = project.run("--format", "json")
    assert first.code == 0, first.err
    run_id = first.json()["run_id"]
    shown = project.cli("history", "--metric", "exact@bad")
    assert shown.code == 0, shown.err
    assert "exact@bad" in shown.out and "0.6667" in shown.out
    shutil.rmtree(project.last_run())  # only the history holds the run now
    verified = project.cli("verify", run_id)
    assert verified.code == 0, verified.out + verified.err
    assert "re-derives exactly from its 60 recorded examples" in verified.out


def difference_project(tmp_path: Path, threshold: float) -> Project:
    gates = {
        "bad-vs-good": {
            "metric": "exact",
            "variant": "bad",
            "compare_to_variant": "good",
            "proposed_threshold": threshold,
        }
    }
    project = variant_project(tmp_path, gates=gates)
    project.run()
    approve(project, "bad-vs-good")
    return project


def test_a_gate_between_two_variants_decides_on_their_paired_difference(tmp_path: Path) -> None:
    project = difference_project(tmp_path, -0.05)
    code, card = card_of(project)
    decided = gate(card, "bad-vs-good")
    assert code == 1 and decided["outcome"] == "fail"
    assert decided["subject"] == "exact@bad-vs-good" and decided["value"] == pytest.approx(-1 / 3)
    difference = next(metric for metric in card["metrics"] if metric["name"] == "exact@bad-vs-good")
    assert difference["population"]["included"] == 60
    assert project.cli("verify", str(project.last_run())).code == 0
    explained = project.cli("explain", "bad-vs-good")
    assert "ex-0 (line 1) · exact@bad-vs-good · fail -1.0" in explained.out, explained.out


def test_a_gate_between_two_variants_passes_when_the_difference_is_within_the_margin(tmp_path: Path) -> None:
    project = difference_project(tmp_path, -0.5)
    code, card = card_of(project)
    assert code == 0 and gate(card, "bad-vs-good")["outcome"] == "pass"


def test_pointing_the_compared_variant_elsewhere_never_turns_the_gate_green(tmp_path: Path) -> None:
    project = difference_project(tmp_path, -0.05)
    # The baseline variant made to answer as the candidate does: refused, the two would be one task.
    project.write_config(
        variant_config(
            variants={
                "good": {"function": "app.py:bad"},
                "bad": {"function": "app.py:bad"},
                "worse": {"function": "app.py:worse"},
            },
            gates={"bad-vs-good": {"metric": "exact", "variant": "bad", "compare_to_variant": "good"}},
        )
    )
    assert project.run().code == 2
    # Compared with the worst variant instead: the approval was for another comparison.
    project.write_config(
        variant_config(gates={"bad-vs-good": {"metric": "exact", "variant": "bad", "compare_to_variant": "worse"}})
    )
    code, card = card_of(project)
    assert code == 1 and "approval_stale" in reasons(card, "bad-vs-good")


def test_preflight_names_the_subject_each_variant_gate_decides_on(tmp_path: Path) -> None:
    """What a gate on a variant decides on is that variant's metric (a gate between two variants: their
    difference), the name the run's scorecard gives it; preflight says the same before anything runs."""
    gates = {
        "bad-accuracy": {"metric": "exact", "variant": "bad", "proposed_threshold": 0.9},
        "bad-vs-good": {"metric": "exact", "variant": "bad", "compare_to_variant": "good", "proposed_threshold": -0.5},
    }
    project = variant_project(tmp_path, gates=gates)
    _, card = card_of(project)
    decided = {name: gate(card, name)["subject"] for name in gates}
    assert decided == {"bad-accuracy": "exact@bad", "bad-vs-good": "exact@bad-vs-good"}
    approve(project, "bad-accuracy")
    shown = project.cli("preflight")
    assert "bad-accuracy  [would decide]  metric 'exact@bad'" in shown.out, shown.out
    assert "bad-vs-good  [informational]  metric 'exact@bad-vs-good'" in shown.out, shown.out
    previews = {item["name"]: item["subject"] for item in project.cli("preflight", "--format", "json").json()["gates"]}
    assert previews == decided
    # The ledger's own messages about a gate name it the same way.
    ledger = (
        (project.evals / "authority.yaml")
        .read_text()
        .replace("active: true", "active: true\n    require_binding: true")
    )
    project.write_ledger(ledger)
    refused = project.cli("preflight")
    assert refused.code == 2 and "decides on metric 'exact@bad', which runs no check" in refused.err, refused.err


#: Four examples: intervals wide enough to leave the range a difference of two [0, 1] metrics can take.
FEW_ROWS = [{"id": f"ex-{i}", "expected": "yes" if i % 2 else "maybe"} for i in range(4)]
BOUND_GATES = {
    "bad-vs-good": {
        "metric": "exact",
        "variant": "bad",
        "compare_to_variant": "good",
        "rule": "lower_bound",
        "proposed_threshold": -0.9,
    }
}
#: What `explain bad-vs-good --format json` gave for this config at main 4e79a57, before the difference's interval
#: was clipped (its low end was -1.419, its Holm-adjusted pairs reached 1.902).
APPROVED_UNCLIPPED = "sha256:d0b24e27530f10cee287e29020f5831d6cbfa796fe8e0cfefe8788fa4026c0bb"


def test_every_interval_of_a_run_with_variants_stays_within_the_range_a_difference_can_take(tmp_path: Path) -> None:
    """The difference a gate between two variants decides on, and every pair's Holm-adjusted and unadjusted
    intervals, lie in ±1 for a [0, 1] metric (they reached -1.419 and 1.902 on these four examples)."""
    project = variant_project(tmp_path, gates=BOUND_GATES)
    project.write_rows(FEW_ROWS)
    _, card = card_of(project)
    difference = next(metric for metric in card["metrics"] if metric["name"] == "exact@bad-vs-good")
    interval = difference["estimate"]["interval"]
    assert interval["low"] == -1.0 and interval["high"] == pytest.approx(0.4186931155185393)
    assert interval["params"]["clipped_to_scale"] is True
    (exact,) = card["variants"]["metrics"]
    ends = [pair[key] for pair in exact["pairs"] for key in ("low", "high", "unadjusted_low", "unadjusted_high")]
    assert all(-1.0 <= end <= 1.0 for end in ends) and 1.0 in ends  # 1.902 and 1.419 before
    approve(project, "bad-vs-good")
    _, card = card_of(project)
    decided = gate(card, "bad-vs-good")
    assert decided["compared"] == -1.0  # the unfavourable bound, clipped too (it was -1.18 at 90%)
    assert decided["outcome"] == "blocked" and decided["reasons"][0]["code"] == "undecided", decided
    assert project.cli("verify", str(project.last_run())).code == 0
    shown = project.cli("preflight")
    assert "variant_difference@3" in shown.out, shown.out


def test_an_approval_of_an_unclipped_bound_between_variants_goes_stale_naming_the_change(tmp_path: Path) -> None:
    """The clip changes what a lower_bound gate between two variants compares for the same data: an approval made
    before it (variant_difference@1, never named in fingerprints) is stale, and says which evaluator changed."""
    project = variant_project(tmp_path, gates=BOUND_GATES)
    project.write_rows(FEW_ROWS)
    project.write_ledger(
        {
            "version": 1,
            "gates": {"bad-vs-good": {"active": True, "threshold": -0.9, "fingerprint": APPROVED_UNCLIPPED}},
            "datasets": validated_gold(project.evals),  # the gold as it is (scheme 2): only the approval is old
        }
    )
    code, card = card_of(project)
    stale = gate(card, "bad-vs-good")
    assert code == 1 and [reason["code"] for reason in stale["reasons"]] == ["approval_stale"], stale
    assert "variant_difference@1 → variant_difference@3" in stale["reasons"][0]["message"]


def test_one_discordant_example_in_ten_does_not_prove_one_variant_better(tmp_path: Path) -> None:
    """`good` never worse than `bad`, and better on one example of ten: the differences are all 0 or 1, which made
    the automatic choice treat them as a proportion (Wilson: never below 0, so its 90% lower end 0.017 passed a
    `lower_bound` gate on "good is better"). A difference is not a proportion: student_t on the differences,
    whose lower end -0.083 leaves the gate undecided, as the data are."""
    rows = [{"id": f"ex-{i}", "expected": "yes"} for i in (1, 2, 3, 4, 5, 7, 8, 10, 11, 13)]  # bad fails ex-3 only
    gates = {
        "good-beats-bad": {
            "metric": "exact",
            "variant": "good",
            "compare_to_variant": "bad",
            "rule": "lower_bound",
            "proposed_threshold": 0.0,
        }
    }
    project = variant_project(tmp_path, gates=gates)
    project.write_rows(rows)
    project.run()
    approve(project, "good-beats-bad")
    code, card = card_of(project)
    decided = gate(card, "good-beats-bad")
    assert decided["value"] == pytest.approx(0.1) and decided["bound_method"] == "student_t"
    assert decided["compared"] == pytest.approx(-0.08331129326562367)
    assert code == 1 and decided["outcome"] == "blocked" and decided["reasons"][0]["code"] == "undecided", decided
    assert project.cli("verify", str(project.last_run())).code == 0
