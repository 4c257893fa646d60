"""The examples behind the numbers, in plain sight: view --examples, explain, report.md (issue 13)."""

from __future__ import annotations

import json

from tests.e2e.project import DEFAULT_ROWS, make_project, run_cli

ROWS = [*DEFAULT_ROWS, {"id": "ex-9", "output": "yes"}]  # ex-4 and ex-8 fail; ex-9 has no reference
METRICS = {
    "exact": {"type": "exact_match", "reference": "expected"},
    "score": {"type": "python", "function": "m.py:score"},
}
SCORE = "def score(example):\n    return 0.25 if example.id == 'ex-2' else 0.9\n"


def project_with_failures(tmp_path, **overrides):
    project = make_project(tmp_path, metrics=METRICS, **overrides)
    project.write_rows(ROWS, extra_lines=["{broken"])
    (project.evals / "m.py").write_text(SCORE)
    return project


def test_view_examples_lists_what_did_not_pass_with_state_value_diagnostic_and_output(tmp_path):
    project = project_with_failures(tmp_path)
    project.run()
    rows = project.cli("view", "--examples", "--format", "json").json()["examples"]
    by_key = {(row["id"], row["metric"]): row for row in rows}
    assert by_key[("ex-4", "exact")]["state"] == "fail" and by_key[("ex-4", "exact")]["value"] == 0.0
    assert by_key[("ex-4", "exact")]["output"] == "yes"
    assert by_key[("ex-9", "exact")]["state"] == "non_evaluable"
    assert by_key[("line:10", "exact")]["state"] == "error"
    assert by_key[("line:10", "exact")]["diagnostic"].startswith("malformed_json")
    # A continuous metric without a gate has no rule to fail by: its values are not listed as failures.
    assert ("ex-2", "score") not in by_key
    assert ("ex-1", "exact") not in by_key  # passes


def test_view_examples_filters_by_metric_state_and_limit(tmp_path):
    project = project_with_failures(tmp_path)
    project.run()
    rows = project.cli("view", "--examples", "--metric", "exact", "--state", "fail", "--format", "json").json()
    assert [(row["id"], row["state"]) for row in rows["examples"]] == [("ex-4", "fail"), ("ex-8", "fail")]
    one = project.cli("view", "--examples", "--state", "all", "--limit", "1", "--format", "json").json()
    assert [(row["id"], row["metric"], row["state"]) for row in one["examples"]] == [("ex-1", "exact", "pass")]
    text = project.cli("view", "--examples", "--metric", "exact", "--state", "fail").out
    assert "ex-4 (line 4) · exact · fail 0.0" in text and "output: yes" in text
    unknown = project.cli("view", "--examples", "--metric", "nope")
    assert unknown.code == 2 and "no metric named 'nope'" in unknown.err


def test_a_gate_threshold_defines_failing_for_a_continuous_metric(tmp_path):
    project = project_with_failures(tmp_path, gates={"quality": {"metric": "score", "proposed_threshold": 0.5}})
    project.run()
    rows = project.cli("view", "--examples", "--metric", "score", "--format", "json").json()
    assert [(row["id"], row["state"], row["value"]) for row in rows["examples"]] == [
        ("ex-2", "fail", 0.25),
        ("line:10", "error", None),
    ]
    assert "below gate 'quality''s proposed threshold 0.5" in rows["rules"]["score"]


def test_explain_and_report_name_the_examples_that_pulled_the_gate_down(tmp_path):
    project = project_with_failures(tmp_path)
    project.write_ledger({"version": 1, "gates": {"accuracy": {"active": True, "threshold": 0.9}}})
    project.run("--out", "out")
    explained = project.cli("explain", "accuracy").out
    assert "Examples that pulled it down" in explained
    assert "ex-4 (line 4) · exact · fail 0.0" in explained and "ex-9 (line 9) · exact · non_evaluable" in explained
    report = (tmp_path / "out" / "report.md").read_text()
    assert "<details><summary>Gate accuracy: 4 examples that did not pass</summary>" in report
    assert "| `ex-8` | 8 | fail | 0.0 |" in report
    as_json = project.cli("explain", "accuracy", "--format", "json").json()
    assert as_json[0]["examples"][0].startswith("ex-4")


def test_report_lists_no_examples_for_an_inactive_gate(tmp_path):
    project = project_with_failures(tmp_path)
    project.run("--out", "out")
    assert "<details>" not in (tmp_path / "out" / "report.md").read_text()
    assert json.loads((tmp_path / "out" / "scorecard.json").read_text())["decision"]["verdict"] == "informational"


LONG_ANSWER = " ".join(f"word{i}" for i in range(80))  # 560 characters, words of at most 6
LONG_QUESTION = "Please tell me, in full, " + " ".join(f"clause{i}" for i in range(40))


def test_view_examples_shows_input_reference_and_whole_values(tmp_path):
    """JSON carries every value whole; text shows input, reference and output, cut only at --width (said), and
    folds its lines to the terminal's width (issue 30)."""
    project = make_project(tmp_path)
    rows = [
        {"id": "long", "question": LONG_QUESTION, "expected": "short", "output": LONG_ANSWER},
        {"id": "ok", "question": "q", "expected": "yes", "output": "yes"},
    ]
    project.write_rows(rows)
    assert project.run().code == 0
    (row,) = project.cli("view", "--examples", "--format", "json").json()["examples"]
    assert row["output"] == LONG_ANSWER and row["reference"] == "short"
    assert json.loads(row["input"]) == {"question": LONG_QUESTION}
    text = run_cli("view", "--examples", cwd=tmp_path, env={"COLUMNS": "80"}).out
    assert "  reference: short" in text and "  input: " in text and "word20" in text
    assert LONG_ANSWER not in " ".join(text.split()) and "--width 0" in text  # cut at 200, and said
    assert all(len(line) <= 80 for line in text.splitlines()), text
    whole = run_cli("view", "--examples", "--width", "0", cwd=tmp_path, env={"COLUMNS": "80"}).out
    assert LONG_ANSWER in " ".join(whole.split()) and LONG_QUESTION in " ".join(whole.split())
    assert all(len(line) <= 80 for line in whole.splitlines()), whole
    assert project.cli("view", "--width", "0").code == 2  # --width goes with --examples


def test_view_examples_does_not_show_inputs_of_a_changed_dataset(tmp_path):
    project = make_project(tmp_path)
    project.run()
    project.write_rows([{**row, "expected": "edited"} for row in DEFAULT_ROWS])
    shown = project.cli("view", "--examples", "--format", "json").json()
    assert all(row["input"] is None and row["reference"] is None for row in shown["examples"])
    assert "changed since the run" in shown["inputs_not_shown"]
