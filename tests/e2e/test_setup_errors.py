"""Bad input: one clear line naming what, where and how to fix; exit 2; no traceback; nothing lost."""

from __future__ import annotations

import json

import pytest

from evalglass.engine.runs.artifacts import score_rows
from tests.e2e.project import make_project, run_cli
from tests.e2e.test_forgery import _reseal as reseal


def assert_one_line_error(result, *needles: str) -> None:
    assert result.code == 2, result
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_missing_config(tmp_path):
    assert_one_line_error(run_cli("run", cwd=tmp_path), "no config found", "evalglass init")


def test_config_path_that_does_not_exist(tmp_path):
    assert_one_line_error(run_cli("run", "--config", "nope.yaml", cwd=tmp_path), "nope.yaml", "not found")


def test_invalid_yaml_names_the_line(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "evalglass.yaml").write_text("version: 1\ndataset:\n  name: [unclosed\n")
    assert_one_line_error(project.run(), "evalglass.yaml:", "not valid YAML")


@pytest.mark.parametrize("file", ["evalglass.yaml", "authority.yaml"])
def test_a_line_indented_with_a_tab_is_named_with_the_fix(tmp_path, file):
    """PyYAML's own words ("found character that cannot start any token") name neither the tab nor the fix, and an
    editor shows the tab as spaces."""
    project = make_project(tmp_path)
    project.write_ledger({"version": 1, "gates": {"accuracy": {"active": False}}})
    path = project.evals / file
    rows = path.read_text().splitlines()
    line = next(i for i, row in enumerate(rows) if row.startswith("  "))
    rows[line] = "\t" + rows[line][2:]
    path.write_text("\n".join(rows) + "\n")
    assert_one_line_error(
        project.run(), f"{file}:{line + 1}: ", "a tab indents this line", "replace the tab with spaces"
    )


def test_unknown_key_is_refused_with_did_you_mean_and_line(tmp_path):
    project = make_project(tmp_path)
    text = (project.evals / "evalglass.yaml").read_text().replace("proposed_threshold", "proposed_treshold")
    (project.evals / "evalglass.yaml").write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if "proposed_treshold" in row)
    assert_one_line_error(
        project.run(),
        f"evalglass.yaml:{line}",
        "unknown key 'proposed_treshold'",
        "did you mean 'proposed_threshold'",
    )


def test_unknown_key_inside_a_metric_suggests_that_metric_types_keys(tmp_path):
    project = make_project(tmp_path)
    text = (project.evals / "evalglass.yaml").read_text().replace("reference: expected", "refrence: expected")
    (project.evals / "evalglass.yaml").write_text(text)
    assert_one_line_error(project.run(), "unknown key 'refrence'", "did you mean 'reference'")


def test_unknown_metric_type_suggests_the_closest(tmp_path):
    project = make_project(tmp_path, metrics={"exact": {"type": "exact_mach", "reference": "expected"}})
    assert_one_line_error(project.run(), "unknown type 'exact_mach'", "did you mean 'exact_match'")


def test_gate_naming_an_undeclared_metric(tmp_path):
    project = make_project(tmp_path, gates={"g": {"metric": "exactt"}})
    assert_one_line_error(project.run(), "gate 'g' names metric 'exactt'")


def test_missing_dataset_file(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "data.jsonl").unlink()
    assert_one_line_error(project.run(), "data.jsonl", "dataset file not found", "dataset.path")


def test_duplicate_example_ids_name_both_lines_and_leave_no_partial_run(tmp_path):
    project = make_project(tmp_path)
    project.write_rows([{"id": "a", "output": "x"}, {"id": "b", "output": "x"}, {"id": "a", "output": "y"}])
    result = project.run("--out", "out")
    assert_one_line_error(result, "data.jsonl:3", "duplicate example id 'a'", "first at line 1")
    assert not (tmp_path / "out").exists()


def test_ledger_that_does_not_parse(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger("gates:\n  accuracy:\n    actve: true\n")
    assert_one_line_error(project.run(), "authority.yaml:3", "unknown key 'actve'", "did you mean 'active'")


def test_missing_ledger(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "authority.yaml").unlink()
    assert_one_line_error(project.run(), "authority.yaml", "ledger not found")


def test_host_metric_that_cannot_load(tmp_path):
    project = make_project(tmp_path, metrics={"mine": {"type": "python", "function": "missing.py:score"}}, gates={})
    assert_one_line_error(project.run(), "metric 'mine'", "missing.py")


def test_debug_shows_the_traceback(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "data.jsonl").unlink()
    result = run_cli("--debug", "run", cwd=tmp_path)
    assert result.code != 0 and "Traceback" in result.err


def test_malformed_lines_become_error_scores_and_the_run_goes_on(tmp_path):
    project = make_project(tmp_path)
    project.write_rows(extra_lines=["{not json", "[1, 2]", '{"output": "no id"}'])
    result = project.run("--format", "json", "--out", "out")
    assert result.code == 0  # no active gate: informational, but the errors are counted
    card = result.json()
    population = card["metrics"][0]["population"]
    assert population["included"] == 8
    assert population["excluded_by_status"] == {"error": 3}
    assert card["dataset"]["malformed_lines"] == 3
    codes = {item["code"] for item in population["top_diagnostics"]}
    assert codes == {"malformed_json", "not_an_object", "id_missing"}
    rows = list(score_rows(tmp_path / "out" / "scores.jsonl"))
    bad = rows[8]["scores"]["exact"]
    assert bad["status"] == "error" and "value" not in bad
    assert "data.jsonl:9" in bad["diagnostics"][0]["message"]


def test_host_metric_raising_on_one_example_is_an_error_score(tmp_path):
    project = make_project(tmp_path, metrics={"mine": {"type": "python", "function": "mymetric.py:score"}}, gates={})
    (project.evals / "mymetric.py").write_text(
        "def score(example):\n"
        "    if example.id == 'ex-3':\n"
        "        raise RuntimeError('cannot score this one')\n"
        "    return 1.0\n"
    )
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    population = result.json()["metrics"][0]["population"]
    assert (population["included"], population["excluded_by_status"]) == (7, {"error": 1})


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_view_refuses_a_scorecard_whose_verdict_was_edited(tmp_path, fmt):
    project = make_project(tmp_path)
    project.run("--out", "out")
    path = tmp_path / "out" / "scorecard.json"
    card = json.loads(path.read_text())
    card["decision"]["verdict"] = "pass"
    path.write_text(json.dumps(card))
    assert_one_line_error(project.cli("view", "out", "--format", fmt), "scorecard.json is not the file digests.json")
    reseal(tmp_path / "out")  # the digests rewritten to match: the scorecard is refused by its own rules
    assert_one_line_error(project.cli("view", "out", "--format", fmt), "scorecard fails its own rules")


def test_duplicate_ids_across_batches_name_both_lines(tmp_path):
    project = make_project(tmp_path)
    rows = [{"id": f"e{i}", "output": "x"} for i in range(700)]
    rows[640]["id"] = "e3"  # far past the first batch of 512 examples
    project.write_rows(rows)
    assert_one_line_error(project.run(), "data.jsonl:641", "duplicate example id 'e3'", "first at line 4")


@pytest.mark.parametrize(
    ("file", "fix"),
    [("data.jsonl", "point at the dataset file itself"), ("evalglass.yaml", "point at the config file itself")],
)
def test_a_directory_where_a_file_belongs_is_named_with_the_fix(tmp_path, file, fix):
    project = make_project(tmp_path)
    (project.evals / file).unlink()
    (project.evals / file).mkdir()
    result = project.run()
    assert_one_line_error(result, f"evals/{file}: ", "is a directory, not a regular file", fix)
    assert "file file" not in result.err, result.err


def test_a_config_behind_a_loop_of_links_is_named_as_one(tmp_path):
    project = make_project(tmp_path)
    (tmp_path / "one.yaml").symlink_to("two.yaml")
    (tmp_path / "two.yaml").symlink_to("one.yaml")
    assert_one_line_error(
        project.run("--config", "one.yaml"), "one.yaml: ", "a loop of symbolic links", "mend the links"
    )


def test_a_run_name_too_long_for_the_file_system_is_one_line_not_an_internal_error(tmp_path):
    project = make_project(tmp_path)
    result = project.cli("view", "r" * 300)
    assert_one_line_error(result, "r" * 300 + ": ", "File name too long", "check the path")
    assert "internal error" not in result.err
