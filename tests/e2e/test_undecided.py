"""Interval rules decide three ways, through the real CLI (issue 27): noise that cannot show a regression is
`undecided` (blocked, "gather better evidence"), never `fail`; a regression the data show still fails; and no power
statement says a suite is large enough beside an interval that straddles the limit.

Every dataset is generated here from a fixed seed: examples of varying difficulty (pass probability ~ Beta(4, 1)),
baseline and candidate drawn on the same examples.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml
from scipy import stats

from evalglass.engine.explore.explorer import html_report
from tests.e2e.test_comparative_gates import gate_of, reasons, rows_with, setup

MARGIN = 0.02
#: Wording that would tell a reader the suite is big enough (the statement the issue saw beside an undecided gate).
ENOUGH = re.compile(r"\benough\b|\bsufficient\b|\badequate\b|\bsuffices?\b", re.IGNORECASE)


def noisy_pair(n: int, seed: int) -> list[tuple[bool, bool]]:
    """Two runs of one unchanged, non-deterministic system: each example's outcome drawn twice."""
    rng = np.random.default_rng(seed)
    p = rng.beta(4.0, 1.0, n)
    old, new = rng.random(n) < p, rng.random(n) < p
    return list(zip(old.tolist(), new.tolist(), strict=True))


def table_pattern(both: int, base_only: int, candidate_only: int, neither: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both
        + [(True, False)] * base_only
        + [(False, True)] * candidate_only
        + [(False, False)] * neither
    )


def scaled(table: dict[str, int], size: int) -> list[tuple[bool, bool]]:
    """The same proportions of the four paired outcomes over ``size`` examples (the observed effect, more pairs)."""
    total = sum(table.values())
    base_only = round(table["base_only"] * size / total)
    candidate_only = round(table["candidate_only"] * size / total)
    both = round(table["both"] * size / total)
    return table_pattern(both, base_only, candidate_only, size - both - base_only - candidate_only)


def texts_of(project, folder: str) -> dict[str, str]:
    """What a reader of the run sees: the terminal summary, explain (text and JSON), report.md."""
    return {
        "view": project.cli("view", folder).out,
        "explain": project.cli("explain", "no-regression", "--run", folder).out,
        "explain json": project.cli("explain", "no-regression", "--run", folder, "--format", "json").out,
        "report.md": (project.root / folder / "report.md").read_text(),
    }


def test_an_aa_noisy_pair_on_2000_is_undecided_not_fail_and_the_pairs_it_names_decide(tmp_path):
    project, _ = setup(tmp_path / "aa", noisy_pair(2000, seed=0), rule="lower_bound", margin=MARGIN)
    result = project.run("--out", "runs/cand", "--format", "json")
    gate = gate_of(result)
    # The one-sided bound misses -0.02 (the old rule's `fail`), but the interval reaches well above it.
    assert gate["compared"] < -MARGIN < gate["favourable_bound"]
    assert result.code == 1 and gate["outcome"] == "blocked" and reasons(gate) == ["undecided"]
    needed = gate["required_n"]
    assert needed is not None and needed > 2000
    message = gate["reasons"][0]["message"]
    assert "straddles the approved threshold -0.02" in message and f"about {needed:,} pairs (now 2,000)" in message
    explained = project.cli("explain", "no-regression", "--run", "runs/cand").out
    assert "gather better evidence" in explained.lower() and "improve the system under test" not in explained
    assert project.cli("verify", "runs/cand").code == 0
    # The same proportions of paired outcomes over the pairs it named decide (here: pass, the point being above
    # the limit); over clearly fewer they stay undecided.
    table = gate["comparison"]["metric"]["difference"]["table"]
    more, _ = setup(tmp_path / "more", scaled(table, needed), rule="lower_bound", margin=MARGIN)
    decided = more.run("--out", "runs/cand", "--format", "json")
    assert decided.code == 0 and gate_of(decided)["outcome"] == "pass", gate_of(decided)["reasons"]
    fewer, _ = setup(tmp_path / "fewer", scaled(table, int(needed * 0.9)), rule="lower_bound", margin=MARGIN)
    assert reasons(gate_of(fewer.run("--out", "runs/cand", "--format", "json"))) == ["undecided"]


def test_a_one_point_drop_on_300_is_undecided_and_nothing_says_enough(tmp_path):
    # 5 discordant pairs: 4 regressed, 1 improved; -0.01 over 300.
    project, _ = setup(tmp_path, table_pattern(255, 4, 1, 40), rule="lower_bound", margin=MARGIN)
    compared = project.cli("compare", "runs/base", "runs/probe", "--format", "json").json()["metrics"][0]
    difference = compared["difference"]
    assert difference["p_value"] == pytest.approx(0.375)
    assert difference["interval"]["low"] == pytest.approx(-0.0288, abs=5e-4)
    assert difference["interval"]["high"] == pytest.approx(0.0077, abs=5e-4)
    result = project.run("--out", "runs/cand", "--format", "json")
    gate = gate_of(result)
    assert result.code == 1 and reasons(gate) == ["undecided"]
    for where, text in texts_of(project, "runs/cand").items():
        assert not ENOUGH.search(text), f"{where} says the suite is large enough beside an undecided gate:\n{text}"
    explained = project.cli("explain", "no-regression", "--run", "runs/cand").out
    assert "Power (from the observed discordant-pair rate" in explained and "5 of 300 pairs flipped" in explained


def three_point_regression(n: int, seed: int) -> list[tuple[bool, bool]]:
    """A real change: the candidate loses 90 examples the baseline got right and wins back 30 (-0.03)."""
    rng = np.random.default_rng(seed)
    old = rng.random(n) < rng.beta(4.0, 1.0, n)
    new = old.copy()
    new[rng.choice(np.flatnonzero(old), 90, replace=False)] = False
    new[rng.choice(np.flatnonzero(~old), 30, replace=False)] = True
    return list(zip(old.tolist(), new.tolist(), strict=True))


def test_a_true_three_point_regression_on_2000_still_fails_with_its_regressed_pairs_first(tmp_path):
    project, _ = setup(tmp_path, three_point_regression(2000, seed=1), rule="lower_bound", margin=MARGIN)
    result = project.run("--out", "runs/cand", "--format", "json")
    gate = gate_of(result)
    assert result.code == 1 and gate["outcome"] == "fail" and reasons(gate) == ["below_threshold"]
    assert gate["value"] == pytest.approx(-0.03) and gate["favourable_bound"] < -MARGIN  # the whole interval misses
    regressed = gate["comparison"]["metric"]["flips"]["regressed"]
    assert len(regressed) == 90
    # explain: the examples that pulled it down start with the regressed pairs, each saying so.
    explained = project.cli("explain", "no-regression", "--run", "runs/cand", "--format", "json").json()[0]
    shown = explained["examples"][:-1]
    assert len(shown) == 5 and all("regressed: passed in the baseline" in line for line in shown)
    assert [line.split(" ")[0] for line in shown] == regressed[:5]
    # report.md (and so GitHub's step summary): the same order.
    report = (tmp_path / "runs/cand/report.md").read_text()
    listed = re.findall(r"^\| `(q\d+)` \| \d+ \| fail · ([^|]+) \|", report, re.MULTILINE)
    assert [example for example, _ in listed] == regressed[:10]
    assert all(why.strip() == "regressed: passed in the baseline" for _, why in listed)
    # The HTML report keeps every regressed pair, past its cap, and lists them first.
    page, _ = html_report(tmp_path / "runs/cand", cap=20)
    embedded = re.findall(r'<span class="ex-id">(q\d+)</span>', page)
    assert embedded[:90] == regressed and len(embedded) == 90
    assert page.count('class="regressed"') == 90


def test_regressed_pairs_come_before_new_failures_whatever_the_dataset_order(tmp_path):
    # q000 passed in the baseline and errors now (a new failure, not a flip); q020 and q021 regressed.
    rows = rows_with(table_pattern(20, 2, 0, 3))
    rows[0]["new"] = "boom"
    metrics = {"exact": {"type": "python", "function": "scorer.py:score"}}
    project, _ = setup(tmp_path, [], rule="lower_bound", margin=0.5, metrics=metrics, rows=rows)
    assert project.run("--out", "runs/cand").code == 1  # incomplete_pairs
    explained = project.cli("explain", "no-regression", "--run", "runs/cand", "--format", "json").json()[0]
    shown = [(line.split(" ")[0], line.split(" — ")[0].split(" · ")[-1]) for line in explained["examples"][:-1]]
    assert shown == [
        ("q020", "regressed: passed in the baseline"),
        ("q021", "regressed: passed in the baseline"),
        ("q000", "new failure: passed in the baseline"),
    ]
    assert explained["examples_order"].startswith("regressed pairs first")


def test_before_a_margin_is_approved_explain_and_preflight_predict_a_chronic_undecided(tmp_path):
    """The baseline-to-be forecasts, at the proposed margin and its size, how often an unchanged candidate would
    come out undecided, and what would bring that under 5%: from its samples when it has them."""
    rng = np.random.default_rng(5)
    n, k = 600, 3
    p = rng.beta(4.0, 1.0, n)
    rows = [
        {"id": f"q{i:03d}", "expected": "a", "output": ["a" if rng.random() < p[i] else "b" for _ in range(k)]}
        for i in range(n)
    ]
    project, _ = setup(tmp_path, [], rule="lower_bound", margin=MARGIN, rows=rows)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["task"] = {"type": "recorded", "field": "output", "samples": True}
    config["gates"]["no-regression"]["proposed_margin"] = MARGIN
    project.write_config(config)
    project.write_ledger({"version": 1})  # nothing approved yet: the gate is informational
    assert project.run("--out", "runs/main").code == 0
    # explain folds its prose to the terminal's width: the statements are read with the folds undone.
    explained = " ".join(project.cli("explain", "no-regression", "--run", "runs/main").out.split())
    # From the samples: two runs of k samples differ per example by 2 W / k, W the mean within-example variance.
    outcomes = np.array([[1.0 if answer == "a" else 0.0 for answer in row["output"]] for row in rows])
    spread = np.sqrt(2.0 * outcomes.var(axis=1, ddof=1).mean() / k)
    z, scaled_margin = stats.norm.ppf(0.95), MARGIN * np.sqrt(n) / spread
    undecided = 1.0 - stats.norm.cdf(scaled_margin - z) - stats.norm.cdf(-scaled_margin - z)
    needed = int(np.floor((2 * z * spread / MARGIN) ** 2)) + 1
    expected = f"undecided about {undecided:.0%} of the time at the margin 0.02 over {n} pairs"
    assert expected in explained and "from how each example's samples vary" in explained, explained
    assert f"under 5% takes about {needed:,} pairs at this margin" in explained
    assert "Minimum detectable effect" in explained
    # preflight, once the ledger names this run as the baseline (the margin still only proposed), says the same.
    fingerprint = project.cli("compare", "runs/main", "runs/main", "--format", "json").json()["base"]["fingerprint"]
    project.write_ledger({"version": 1, "baselines": {"main": {"run": "../runs/main", "fingerprint": fingerprint}}})
    found = project.cli("preflight")
    assert expected in found.out and f"{needed:,} pairs" in found.out, found.out
    forecast = next(g for g in project.cli("preflight", "--format", "json").json()["gates"])["forecast"]
    assert forecast["source"] == "samples" and forecast["undecided"] == pytest.approx(undecided)


def test_one_sample_per_example_forecasts_an_upper_bound_and_says_so(tmp_path):
    project, _ = setup(
        tmp_path, noisy_pair(400, seed=3), rule="lower_bound", margin=MARGIN, gate={"proposed_margin": MARGIN}
    )
    # The probe run had no ledger entry for its baseline: explain forecasts from the run itself, as a baseline-to-be.
    explained = project.cli("explain", "no-regression", "--run", "runs/probe").out
    assert "undecided at most" in explained and "an upper bound: one sample per example" in explained, explained


def test_samples_buy_the_interval_down_as_explain_says(tmp_path):
    """An unchanged system sampled twice per example: the per-example means of the two runs differ only by
    sampling noise, so four times the samples halve the interval. explain says how many would; a run with that
    many shows it."""

    def project_with(k: int, folder: str):
        rng = np.random.default_rng(11)
        p = rng.beta(2.0, 2.0, 500)
        rows = [
            {
                "id": f"q{i:03d}",
                "expected": "a",
                "old": ["a" if rng.random() < p[i] else "b" for _ in range(k)],
                "new": ["a" if rng.random() < p[i] else "b" for _ in range(k)],
            }
            for i in range(500)
        ]
        project, ledger = setup(tmp_path / folder, [], rule="lower_bound", margin=0.1, rows=rows)
        for name, field in (("base", "old"), ("probe", "new")):
            config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
            config["task"] = {"type": "recorded", "field": field, "samples": True}
            project.write_config(config)
            assert project.run("--out", f"runs/{name}-k").code in (0, 1)
        fingerprint = project.cli("compare", "runs/base-k", "runs/base-k", "--format", "json").json()
        ledger["baselines"]["main"] = {"run": "../runs/base-k", "fingerprint": fingerprint["base"]["fingerprint"]}
        ledger["gates"]["no-regression"]["fingerprint"] = gate_of(project.run("--out", "runs/fp", "--format", "json"))[
            "fingerprint"
        ]
        project.write_ledger(ledger)
        result = project.run("--out", "runs/cand", "--format", "json")
        return project, gate_of(result)

    project, gate = project_with(2, "k2")
    halve = gate["comparison"]["epochs_to_halve"]
    assert gate["comparison"]["samples"] == 2 and 6 <= halve <= 10  # about 4x: only sampling noise differs
    explained = " ".join(project.cli("explain", "no-regression", "--run", "runs/cand").out.split())
    assert f"about {halve} samples per example would halve the interval" in explained
    _, bigger = project_with(halve, "halved")
    width = [g["favourable_bound"] - g["compared"] for g in (gate, bigger)]
    assert width[1] / width[0] == pytest.approx(0.5, abs=0.1)


def test_the_undecided_reason_reaches_every_renderer(tmp_path):
    from tests.e2e.project import run_cli

    setup(tmp_path, noisy_pair(2000, seed=0), rule="lower_bound", margin=MARGIN)
    summary = tmp_path / "summary.md"
    result = run_cli(
        "run", "--out", "runs/cand", "--junit", "junit.xml", "--github", cwd=tmp_path,
        env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(tmp_path)},
    )  # fmt: skip
    assert result.code == 1
    assert "undecided" in (tmp_path / "junit.xml").read_text()
    assert "undecided" in result.out  # the workflow annotation
    card = json.loads((tmp_path / "runs/cand/scorecard.json").read_text())
    assert (
        card["decision"]["verdict"] == "blocked" and card["decision"]["gates"][0]["reasons"][0]["code"] == "undecided"
    )
    for text in (summary.read_text(), (tmp_path / "runs/cand/report.md").read_text()):
        assert "undecided: the 90% interval of the paired difference" in text
    page, _ = html_report(tmp_path / "runs/cand")
    assert "undecided" in page
