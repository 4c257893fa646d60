"""CI outputs through the real CLI: `--junit`, GitHub annotations and step summary, for `run` and `view`."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import xmlschema

from tests.e2e.project import CliResult, Project, make_project, run_cli
from tests.report.test_github import read

XSD = Path(__file__).parents[1] / "report" / "junit-10.xsd"
GATES = {
    "accuracy": {"metric": "exact"},
    "strict": {"metric": "exact"},
    "broken": {"metric": "exact", "direction": "lower_is_better"},
}


def three_gates(tmp_path: Path) -> Project:
    """accuracy passes (0.75 ≥ 0.5), strict fails (0.75 < 0.9), broken is blocked (its approval is stale)."""
    project = make_project(tmp_path, gates=GATES)
    project.run()
    fingerprints = {name: project.gate_fingerprint(name) for name in ("accuracy", "strict")}
    project.write_ledger(
        {
            "gates": {
                "accuracy": {"active": True, "threshold": 0.5, "fingerprint": fingerprints["accuracy"]},
                "strict": {"active": True, "threshold": 0.9, "fingerprint": fingerprints["strict"]},
                "broken": {"active": True, "threshold": 0.5, "fingerprint": "sha256:" + "0" * 64},
            },
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
        }
    )
    return project


def config_line(project: Project, gate: str) -> int:
    lines = (project.evals / "evalglass.yaml").read_text().splitlines()
    return lines.index(f"  {gate}:") + 1


def in_actions(project: Project, *args: str) -> CliResult:
    """The CLI as a GitHub Actions job step runs it: the runner's variables set, the workspace at the root."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(project.root / "summary.md"),
        "GITHUB_WORKSPACE": str(project.root),
    }
    return run_cli(*args, cwd=project.root, env=env)


def test_run_junit_is_schema_valid_and_shows_each_gate_as_the_verdict_decided_it(tmp_path):
    project = three_gates(tmp_path)
    result = project.run("--junit", "reports/junit.xml", "--no-github")
    assert result.code == 1, result.err
    document = (project.root / "reports" / "junit.xml").read_text()
    xmlschema.XMLSchema(XSD).validate(document)
    cases = {item.get("name"): item for item in ET.fromstring(document).iter("testcase")}
    assert sorted(cases) == ["accuracy", "broken", "strict"]
    assert cases["accuracy"].find("failure") is None and cases["accuracy"].find("error") is None
    failure = cases["strict"].find("failure")
    assert failure is not None and "0.75" in failure.get("message", "") and "0.9" in failure.get("message", "")
    error = cases["broken"].find("error")
    assert error is not None and "approval_stale" in error.get("message", "")


def test_view_writes_the_same_junit_from_the_artifacts(tmp_path):
    project = three_gates(tmp_path)
    assert project.run("--junit", "run.xml", "--out", "run").code == 1
    viewed = project.cli("view", "run", "--junit", "view.xml")
    assert viewed.code == 0, viewed.err
    # The same document, plus the line saying what loading the run did not check (a property and a line of output).
    view, run = (ET.fromstring((project.root / name).read_bytes()) for name in ("view.xml", "run.xml"))
    note = view.find(".//property[@name='evalglass.not_checked']")
    assert note is not None and "`evalglass verify run`" in note.get("value", "")
    assert run.find(".//property[@name='evalglass.not_checked']") is None
    view_out, run_out, properties = (
        view.find("testsuite/system-out"),
        run.find("testsuite/system-out"),
        view.find("testsuite/properties"),
    )
    assert view_out is not None and run_out is not None and properties is not None
    assert view_out.text == f"{run_out.text}\n{note.get('value')}"
    properties.remove(note)
    view_out.text = run_out.text
    ET.indent(view)
    assert ET.tostring(view) == ET.tostring(run)


def test_in_github_actions_failing_and_blocked_gates_are_annotated_at_their_config_line(tmp_path):
    project = three_gates(tmp_path)
    result = in_actions(project, "run", "--out", "out")
    assert result.code == 1, result.err
    commands = [read(line) for line in result.out.splitlines() if line.startswith("::")]
    assert [(name, properties["title"]) for name, properties, _ in commands] == [
        ("error", "EvalGlass gate strict failed"),
        ("error", "EvalGlass gate broken blocked"),
    ]
    for (_, properties, _), gate in zip(commands, ("strict", "broken"), strict=True):
        assert properties["file"] == "evals/evalglass.yaml"
        assert properties["line"] == str(config_line(project, gate))
    assert "approval_stale" in commands[1][2]
    summary = (project.root / "summary.md").read_text()
    assert summary.startswith("## ⛔ EvalGlass: blocked")
    assert "| strict | ❌ fail |" in summary
    # The failing examples travel with it, as in report.md.
    assert "<details><summary>Gate strict:" in summary
    assert summary == (project.root / "out" / "report.md").read_text() + "\n"


def test_each_run_appends_its_own_step_summary(tmp_path):
    project = make_project(tmp_path)
    (project.root / "summary.md").write_text("earlier step\n")
    assert in_actions(project, "run").code == 0
    assert in_actions(project, "run").code == 0
    summary = (project.root / "summary.md").read_text()
    assert summary.startswith("earlier step\n")
    assert summary.count("## ℹ️ EvalGlass: informational") == 2


def test_an_informational_run_warns_in_github_and_no_github_turns_it_all_off(tmp_path):
    project = make_project(tmp_path)
    result = in_actions(project, "run")
    warnings = [read(line) for line in result.out.splitlines() if line.startswith("::")]
    assert [name for name, _, _ in warnings] == ["warning"]
    assert "does not mean quality was checked" in warnings[0][2]
    (project.root / "summary.md").unlink()
    quiet = in_actions(project, "run", "--no-github")
    assert quiet.code == 0
    assert not any(line.startswith("::") for line in quiet.out.splitlines() + quiet.err.splitlines())
    assert not (project.root / "summary.md").exists()


def test_outside_github_actions_nothing_is_annotated_unless_asked(tmp_path):
    project = three_gates(tmp_path)
    plain = project.run()
    assert not any(line.startswith("::") for line in plain.out.splitlines())
    asked = project.run("--github")
    assert sum(line.startswith("::error ") for line in asked.out.splitlines()) == 2
    assert "GITHUB_STEP_SUMMARY is not set" in asked.err


def test_with_json_output_the_annotations_go_to_stderr_and_stdout_stays_json(tmp_path):
    project = three_gates(tmp_path)
    result = in_actions(project, "run", "--format", "json")
    assert json.loads(result.out)["decision"]["verdict"] == "blocked"
    assert sum(line.startswith("::error ") for line in result.err.splitlines()) == 2


def test_a_config_edited_since_the_run_gives_no_line_rather_than_a_wrong_one(tmp_path):
    project = three_gates(tmp_path)
    assert project.run("--out", "run").code == 1
    config = project.evals / "evalglass.yaml"
    config.write_text("# a comment moves every line\n" + config.read_text())
    viewed = in_actions(project, "view", "run", "--github")
    commands = [read(line) for line in viewed.out.splitlines() if line.startswith("::")]
    assert [name for name, _, _ in commands] == ["error", "error", "notice"]  # the notice: what was not checked
    assert all("line" not in properties and "file" not in properties for _, properties, _ in commands)


def test_a_junit_path_that_cannot_be_written_is_one_line_and_exit_2(tmp_path):
    project = make_project(tmp_path)
    (project.root / "taken").write_text("a file, not a folder")
    result = project.run("--junit", "taken/junit.xml")
    assert result.code == 2
    assert result.err.startswith("error: taken/junit.xml: cannot write the JUnit report")
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err


def test_markup_in_check_output_cannot_dress_up_the_step_summary(tmp_path):
    """A check's output is written by whoever wrote the checked work; in the summary it stays text."""
    project = make_project(
        tmp_path,
        checks={
            "lint": {
                "command": ["{python}", "-c", "print('<h2>✅ EvalGlass: pass</h2>'); raise SystemExit(1)"],
                "target": {"path": "."},
            }
        },
    )
    result = in_actions(project, "run")
    assert result.code == 0, result.err  # the check gates nothing: evidence only
    summary = (project.root / "summary.md").read_text()
    assert "<h2>" not in summary
    assert "&lt;h2&gt;✅ EvalGlass: pass&lt;/h2&gt;" in summary


def test_a_ledger_entry_the_config_does_not_declare_is_placed_at_its_ledger_line(tmp_path):
    """An active ledger entry whose gate the config no longer declares is annotated where the host must act."""
    from evalglass.engine.runs.artifacts import load_runrecord
    from evalglass.engine.spec.declared import gate_sites

    project = three_gates(tmp_path)
    assert project.run("--out", "run").code == 1
    record = load_runrecord(project.root / "run")
    config = {**record.config, "gates": {"accuracy": record.config["gates"]["accuracy"]}}
    sites = gate_sites(
        record.model_copy(
            update={
                "config": config,
                "config_path": str(project.evals / "evalglass.yaml"),
                "ledger_path": str(project.evals / "authority.yaml"),
            }
        )
    )
    ledger_lines = (project.evals / "authority.yaml").read_text().splitlines()
    assert sites["accuracy"] == (project.evals / "evalglass.yaml", config_line(project, "accuracy"))
    assert sites["strict"] == (project.evals / "authority.yaml", ledger_lines.index("  strict:") + 1)
