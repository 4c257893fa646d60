"""Readable CI logs (issue 30): `run`, `view`, `compare`, `history` and `explain` of a run with a comparative gate
and an absolute lower-bound gate, at 80 and 160 columns and piped (as in CI): every gate name, value and interval
bound appears whole, and no line is wider than the width.

Not a byte-for-byte golden: what is asserted is what a reader needs (the numbers the JSON output carries, written
as every renderer writes numbers, each found whole on one line), whatever the layout.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.cells import cell_len

from evalglass.report.numbers import number
from tests.e2e.project import Project, base_config, make_project, run_cli

COMPARATIVE = "no_regression_against_main_branch"
LOWER_BOUND = "intent_accuracy_lower_bound_gate"
METRIC = "intent_exact_match"
# 45 examples: the paired difference is undecided against a 0.02 margin, the lower bound straddles 0.6.
PATTERN = [(True, True)] * 30 + [(True, False)] * 3 + [(False, False)] * 10 + [(False, True)] * 2


def _rows() -> list[dict[str, Any]]:
    return [
        {"id": f"q{i:03d}", "expected": "a", "old": "a" if old else "b", "new": "a" if new else "b"}
        for i, (old, new) in enumerate(PATTERN)
    ]


def _config(field: str) -> dict[str, Any]:
    return base_config(
        task={"type": "recorded", "field": field},
        metrics={METRIC: {"type": "exact_match", "reference": "expected"}},
        gates={
            COMPARATIVE: {"metric": METRIC, "compare_to": "main", "rule": "lower_bound"},
            LOWER_BOUND: {"metric": METRIC, "proposed_threshold": 0.6, "rule": "lower_bound"},
        },
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A baseline run, then a candidate run whose two gates are active: both blocked as undecided."""
    project = make_project(tmp_path_factory.mktemp("readable"))
    project.write_rows(_rows())
    project.write_config(_config("old"))
    assert project.run("--out", "runs/base").code == 0
    baseline = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    project.write_config(_config("new"))
    probe = project.run("--out", "runs/probe", "--format", "json").json()
    fingerprints = {gate["name"]: gate["fingerprint"] for gate in probe["decision"]["gates"]}
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": probe["dataset"]["gold_fingerprint"]}},
            "baselines": {"main": {"run": "../runs/base", "fingerprint": baseline}},
            "gates": {
                COMPARATIVE: {"active": True, "fingerprint": fingerprints[COMPARATIVE], "margin": 0.02},
                LOWER_BOUND: {"active": True, "fingerprint": fingerprints[LOWER_BOUND], "threshold": 0.6},
            },
        }
    )
    assert project.run("--out", "runs/cand").code == 1
    return project


def piped(project: Project, columns: int, *args: str) -> str:
    """The command's standard output as a CI log gets it: a pipe, COLUMNS as the runner sets it."""
    result = run_cli(*args, cwd=project.root, env={"COLUMNS": str(columns)})
    assert result.code in (0, 1), result.err
    return result.out


def assert_fits(text: str, columns: int) -> None:
    lines = text.splitlines()
    too_wide = [line for line in lines if cell_len(line.rstrip()) > columns]
    assert not too_wide, too_wide[:3]
    cut = text.replace("min…max", "").replace(" … ", "")
    assert "…" not in cut, [line for line in lines if "…" in line.replace("min…max", "").replace(" … ", "")]


def assert_whole(text: str, *words: str) -> None:
    """Each word appears on one line, not run into a neighbouring word (a cut "0.56…" or a folded "0.56\\n63"
    does not count)."""
    for word in words:
        pattern = rf"(?<![\w.]){re.escape(word)}(?![\w])"
        assert re.search(pattern, text), f"{word!r} not whole in:\n{text}"


def gate_numbers(gate: dict[str, Any]) -> list[str]:
    """A gate's value, its interval's two bounds and its threshold, as every renderer writes them."""
    show = signed if gate.get("comparison") else number
    bounds = sorted((gate["compared"], gate["favourable_bound"]))
    return [show(gate["compared"]), *(show(bound) for bound in bounds), show(gate["threshold"]), show(gate["value"])]


def signed(value: float) -> str:
    return ("-" if value < 0 else "+") + number(abs(value))


def candidate_gates(project: Project) -> list[dict[str, Any]]:
    card = project.cli("view", "runs/cand", "--format", "json").json()
    gates = card["decision"]["gates"]
    assert [gate["outcome"] for gate in gates] == ["blocked", "blocked"]
    return gates


@pytest.mark.parametrize("columns", [80, 160])
def test_run_and_view_name_every_gate_and_number_whole(project: Project, columns: int) -> None:
    gates = candidate_gates(project)
    ran = run_cli("run", "--out", f"runs/again{columns}", cwd=project.root, env={"COLUMNS": str(columns)})
    assert ran.code == 1, ran.err
    for text in (ran.out, piped(project, columns, "view", "runs/cand")):
        assert_fits(text, columns)
        assert_whole(text, COMPARATIVE, LOWER_BOUND, METRIC, "'main'")
        for gate in gates:
            assert_whole(text, *gate_numbers(gate))


@pytest.mark.parametrize("columns", [80, 160])
def test_compare_shows_every_difference_and_bound_whole(project: Project, columns: int) -> None:
    data = project.cli("compare", "runs/base", "runs/cand", "--format", "json").json()
    (metric,) = data["metrics"]
    difference = metric["difference"]
    text = piped(project, columns, "compare", "runs/base", "runs/cand")
    assert_fits(text, columns)
    interval = difference["interval"]
    assert_whole(
        text,
        METRIC,
        "newcombe_paired",
        number(difference["base"]),
        number(difference["candidate"]),
        signed(difference["interval"]["point"]),
        signed(interval["low"]),
        signed(interval["high"]),
        data["base"]["fingerprint"],
        data["candidate"]["fingerprint"],
        *metric["flips"]["regressed"],
    )


@pytest.mark.parametrize("columns", [80, 160])
def test_history_shows_every_run_and_interval_whole(project: Project, columns: int) -> None:
    entries = project.cli("history", "--metric", METRIC, "--gate", COMPARATIVE, "--format", "json").json()
    assert len(entries) >= 3
    text = piped(project, columns, "history", "--metric", METRIC, "--gate", COMPARATIVE)
    assert_fits(text, columns)
    for entry in entries:
        point = entry["metric"]
        assert_whole(text, entry["run_id"], entry["verdict"], number(point["low"]), number(point["high"]))
        assert_whole(text, entry["gate"]["outcome"])
    assert_whole(text, f"{METRIC} in suite 'suite'")


@pytest.mark.parametrize("columns", [80, 160])
def test_explain_folds_its_prose_and_keeps_every_number_whole(project: Project, columns: int) -> None:
    gates = candidate_gates(project)
    text = piped(project, columns, "explain", "--run", "runs/cand")
    assert_fits(text, columns)
    assert_whole(text, f"Gate '{COMPARATIVE}'", f"Gate '{LOWER_BOUND}'")
    for gate in gates:
        low, high = sorted((gate["compared"], gate["favourable_bound"]))
        show = signed if gate.get("comparison") else number
        assert f"[{show(low)}, {show(high)}]" in text  # the interval the rule compared, on one line


def test_explains_ledger_entry_is_not_folded_at_80_columns(project: Project) -> None:
    """A gate not active in the run: its ledger entry is YAML to paste, so it keeps its lines (a folded YAML line
    would not parse); the prose above it fits."""
    text = piped(project, 80, "explain", LOWER_BOUND, "--run", "runs/probe")
    prose, entry = text.split("Ledger entry to write", 1)
    assert_fits(prose, 80)
    assert re.search(r"^ *fingerprint: \"?sha256:[0-9a-f]{64}\"?$", entry, re.MULTILINE), entry


def test_the_quickstart_ends_with_the_next_command_and_it_runs(tmp_path) -> None:
    ran = run_cli("run", "--example", "quickstart", cwd=tmp_path, env={"COLUMNS": "80"})
    assert ran.code == 0, ran.err
    assert_fits(ran.out, 80)
    last = [line.strip() for line in ran.out.splitlines() if line.strip()][-3:]
    assert last[0].startswith("evalglass explain ") and last[-1] == "evalglass init", last
    explained = run_cli(*last[0].split()[1:], cwd=tmp_path)
    assert explained.code == 0 and "Ledger entry to write" in explained.out, explained.err
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert f"`{last[0]}`" in setup  # the README's quickstart names the same next command


def test_history_filters_by_suite_and_names_the_suite_of_each_trend(tmp_path) -> None:
    """Two suites measure a metric of the same name: one trend each, labelled, and --suite keeps one (by dataset
    name or by config path)."""
    project = make_project(tmp_path)
    (project.evals / "billing.yaml").write_text(
        yaml.safe_dump(base_config(dataset={"name": "billing", "path": "billing.jsonl"}), sort_keys=False)
    )
    (project.evals / "billing.jsonl").write_text(
        "\n".join(json.dumps({"id": f"b{i}", "expected": "x", "output": "x" if i % 2 else "y"}) for i in range(6))
    )
    for args in ((), ("--config", "evals/billing.yaml"), ()):
        assert project.run(*args).code == 0
    text = piped(project, 80, "history", "--metric", "exact")
    trends = [line for line in text.splitlines() if "oldest to newest" in line]
    assert len(trends) == 2 and "in suite 'suite'" in trends[0] and "in suite 'billing'" in trends[1], text
    by_name = project.cli("history", "--suite", "billing", "--format", "json").json()
    assert [entry["dataset"] for entry in by_name] == ["billing"]
    by_config = project.cli("history", "--suite", "evals/evalglass.yaml", "--format", "json").json()
    assert [entry["dataset"] for entry in by_config] == ["suite", "suite"]
    one = piped(project, 80, "history", "--suite", "billing", "--metric", "exact")
    assert next(line for line in one.splitlines() if "oldest to newest" in line).startswith("exact in suite 'billing'")
    assert "No recorded runs match." in piped(project, 80, "history", "--suite", "nothing")
