"""Messages a user reads: each says what happened, where, and what to do (issue 11, items 16-18)."""

from __future__ import annotations

import pytest

from tests.e2e.project import make_project, run_cli
from tests.e2e.test_verdicts import approve


def test_explain_a_gate_blocked_because_no_bound_exists(tmp_path):
    project = make_project(
        tmp_path,
        metrics={"exact": {"type": "exact_match", "reference": "expected", "interval": {"method": "student_t"}}},
        gates={"accuracy": {"metric": "exact", "rule": "lower_bound"}},
    )
    project.write_rows([{"id": "only", "expected": "y", "output": "y"}])
    project.write_ledger(approve(project, threshold=0.5))
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert result.code == 1 and gate["outcome"] == "blocked"
    assert [reason["code"] for reason in gate["reasons"]] == ["interval_undefined"]
    # The reason says why no bound exists and the evidence that would decide it, not only that it cannot decide.
    message = gate["reasons"][0]["message"]
    assert "1 measured examples with student_t (one value: no spread to estimate)" in message
    assert "at least 2 measured examples are needed to decide it" in message
    explained = project.cli("explain", "accuracy")
    assert explained.code == 0, explained.err
    assert "interval_undefined" in explained.out and "add examples" in explained.out


def test_explain_an_unknown_name_is_one_line(tmp_path):
    project = make_project(tmp_path)
    project.run()
    result = project.cli("explain", "nope")
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "error: no gate or metric named 'nope' in this run (known: accuracy, exact) — pass a gate or metric name "
        "from this run"
    ]


@pytest.mark.parametrize(
    ("direction", "threshold", "relation", "sign"),
    [("higher_is_better", 0.8, "below", "≥"), ("lower_is_better", 0.5, "above", "≤")],
)
def test_a_failing_gate_says_below_threshold_with_value_and_threshold(tmp_path, direction, threshold, relation, sign):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "direction": direction}})
    project.write_ledger(approve(project, threshold=threshold))
    result = project.run("--format", "json", "--out", "out")
    gate = result.json()["decision"]["gates"][0]
    assert result.code == 1 and gate["outcome"] == "fail"
    assert gate["reasons"] == [
        {
            "code": "below_threshold",
            "message": f"the value 0.75 is {relation} the approved threshold (needs {sign} {threshold})",
        }
    ]
    verified = project.cli("verify", "out")
    assert verified.code == 0, verified.out  # verify re-derives the reason too
    for shown in (project.cli("view", "out").out, project.cli("explain", "accuracy", "--run", "out").out):
        assert "below_threshold" in shown
    assert "below_threshold" in (tmp_path / "out" / "report.md").read_text()


def test_verify_names_a_removed_below_threshold_reason(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.8))
    project.run("--out", "out")
    card_path = tmp_path / "out" / "scorecard.json"
    card_path.write_text(card_path.read_text().replace('"below_threshold"', '"below_min_n"'))
    result = project.cli("verify", "out")
    assert result.code == 1 and "reasons" in result.out and "below_threshold" in result.out


def error_lines(result) -> list[str]:
    assert result.code == 2, result
    assert "Traceback" not in result.err
    return [line for line in result.err.splitlines() if line.strip()]


def line_of(path, needle: str) -> int:
    return next(number for number, row in enumerate(path.read_text().splitlines(), start=1) if needle in row)


def test_a_gate_naming_an_undeclared_metric_is_reported_at_that_gates_line(tmp_path):
    project = make_project(tmp_path, gates={"g": {"metric": "exactt"}})
    config = project.evals / "evalglass.yaml"
    (line,) = error_lines(project.run())
    assert line.startswith(f"error: {config.relative_to(tmp_path)}:{line_of(config, 'exactt')}: ")
    assert "gate 'g' names metric 'exactt'" in line and "(known: exact)" in line


def test_every_problem_in_a_config_is_shown_each_on_its_line(tmp_path):
    project = make_project(
        tmp_path,
        dataset={"name": "suite", "path": "data.jsonl", "idfield": "id"},
        metrics={"exact": {"type": "exact_match", "refrence": "expected"}, "words": {"type": "word_count", "min": "x"}},
        gates={"a": {"metric": "exact"}},
    )
    config = project.evals / "evalglass.yaml"
    lines = error_lines(project.run())
    assert len(lines) == 3, lines
    assert all(line.startswith(f"error: {config.relative_to(tmp_path)}:") for line in lines)
    assert f":{line_of(config, 'idfield')}: unknown key 'idfield'" in lines[0]
    assert f":{line_of(config, 'refrence')}: unknown key 'refrence'" in lines[1]
    assert f":{line_of(config, 'min: x')}: metrics.words.min" in lines[2]
    assert not any("more problem" in line for line in lines)


def test_several_broken_references_are_each_at_their_line(tmp_path):
    project = make_project(tmp_path, gates={"g1": {"metric": "nope"}, "g2": {"metric": "neither"}})
    config = project.evals / "evalglass.yaml"
    lines = error_lines(project.run())
    assert [line.split(": ", 2)[1] for line in lines] == [
        f"{config.relative_to(tmp_path)}:{line_of(config, 'nope')}",
        f"{config.relative_to(tmp_path)}:{line_of(config, 'neither')}",
    ]


@pytest.mark.parametrize(("key", "value"), [("dataset", {"name": "suite", "path": ""}), ("ledger", " ")])
def test_an_empty_file_path_says_it_is_empty(tmp_path, key, value):
    project = make_project(tmp_path, **{key: value})
    (line,) = error_lines(project.run())
    assert "is empty; name a file" in line and "Is a directory" not in line


def test_a_config_that_is_a_folder_is_one_line(tmp_path):
    (tmp_path / "folder").mkdir()
    (line,) = error_lines(run_cli("run", "--config", "folder", cwd=tmp_path))
    assert line.startswith("error: folder: ") and "Usage" not in line


def test_a_bad_expect_state_is_blamed_on_the_option(tmp_path):
    project = make_project(tmp_path)
    (line,) = error_lines(project.cli("check", "--expect-state", "abc123"))
    assert line.startswith("error: --expect-state: malformed fingerprint 'abc123'")
    assert "evalglass.yaml" not in line


@pytest.mark.parametrize("where", ["gates", "datasets"])
def test_a_malformed_ledger_fingerprint_is_called_malformed(tmp_path, where):
    project = make_project(tmp_path)
    entry = (
        {"gates": {"accuracy": {"active": True, "threshold": 0.5, "fingerprint": "sha256:ABC"}}}
        if where == "gates"
        else {"datasets": {"suite": {"validated_gold": True, "fingerprint": "deadbeef"}}}
    )
    project.write_ledger({"version": 1, **entry})
    ledger = project.evals / "authority.yaml"
    (line,) = error_lines(project.run())
    assert f"authority.yaml:{line_of(ledger, 'fingerprint')}:" in line
    assert "malformed fingerprint" in line and "approval_stale" not in line


def test_the_malformed_line_summary_names_the_first_lines(tmp_path):
    project = make_project(tmp_path, gates={})
    project.write_rows(extra_lines=[f"{{broken {i}" for i in range(7)])
    shown = project.run("--out", "out").out
    lines = ", ".join(f"data.jsonl:{number}" for number in range(9, 14))
    assert f"7 malformed dataset line(s) were scored as errors: {lines} (first 5 of 7)." in shown
    assert f"{lines} (first 5 of 7)" in (tmp_path / "out" / "report.md").read_text()
    assert project.cli("verify", "out").code == 0


def test_the_terminal_lists_gated_metrics_and_counts_the_rest_of_a_long_list(tmp_path):
    from evalglass.report.fmt import TERMINAL_METRICS

    metrics = {f"m{i:03}": {"type": "exact_match", "reference": "expected"} for i in range(TERMINAL_METRICS + 10)}
    last = f"m{TERMINAL_METRICS + 9:03}"
    project = make_project(tmp_path, metrics=metrics, gates={"accuracy": {"metric": last}})
    result = project.run("--out", "out")
    assert result.code == 0, result.err
    shown = [name for name in metrics if f"│ {name} " in result.out]
    assert len(shown) == TERMINAL_METRICS and last in shown  # the gated metric is listed although it comes last
    assert "… and 10 more metrics" in result.out
    report = (tmp_path / "out" / "report.md").read_text()
    assert all(f"| {name} |" in report for name in metrics)  # the artifacts list every metric


def test_a_misspelt_required_key_is_one_line_among_the_others(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger("gates:\n  accuracy:\n    actve: true\n    treshold: 0.5\n")
    lines = error_lines(project.run())
    # `actve` also makes `active` missing; the did-you-mean line fixes both, so only the two typos are listed.
    assert len(lines) == 2, lines
    assert "authority.yaml:3: unknown key 'actve'" in lines[0] and "did you mean 'active'" in lines[0]
    assert "authority.yaml:4: unknown key 'treshold'" in lines[1] and "did you mean 'threshold'" in lines[1]


def test_an_undefined_bound_from_one_cluster_says_more_clusters_decide(tmp_path):
    """Several examples in one cluster: more examples of that cluster would never give a cluster-robust bound, so the
    reason names clusters, not examples, as the evidence that decides."""
    project = make_project(
        tmp_path,
        metrics={"exact": {"type": "exact_match", "reference": "expected", "interval": {"method": "cluster_t"}}},
        gates={"accuracy": {"metric": "exact", "rule": "lower_bound"}},
    )
    config = (project.evals / "evalglass.yaml").read_text()
    (project.evals / "evalglass.yaml").write_text(
        config.replace("  path: data.jsonl\n", "  path: data.jsonl\n  cluster_field: doc\n")
    )
    project.write_rows([{"id": f"e{i}", "doc": "d1", "expected": "y", "output": "y"} for i in range(3)])
    project.write_ledger(approve(project, threshold=0.5))
    result = project.run("--format", "json")
    gate = result.json()["decision"]["gates"][0]
    assert result.code == 1 and [reason["code"] for reason in gate["reasons"]] == ["interval_undefined"], gate
    message = gate["reasons"][0]["message"]
    assert "3 measured examples with cluster_t" in message
    assert "examples measured in at least 2 clusters would decide it" in message
