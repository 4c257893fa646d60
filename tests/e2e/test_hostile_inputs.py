"""Issue 26, items 8 and 9: bad input and small untruths that still got through, each through the CLI.

8. text from data escaped for every renderer it reaches; ``run --out`` into a folder that holds files; non-finite
   numbers in the config and the ledger; an artifact that is not a regular file; a bad metric name's line.
9. the JUnit testcase of a lower_bound gate and of an unbound check; a pass with tolerated exclusions; a reader
   that closes the pipe; history blobs written to disk like every other artifact.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from tests.e2e.project import DEFAULT_ROWS, Project, make_project, run_cli
from tests.e2e.test_forgery import _approve_check, _check_gate_project
from tests.e2e.test_verdicts import approve

FORGED_HEADING = "x\r\r## ✅ EvalGlass: pass\r\r"
MARKDOWN_LINES = re.compile(r"\r\n|\r|\n")  # what a Markdown viewer takes for a line break


def one_line_error(result: Any, *needles: str) -> str:
    assert result.code == 2, (result.code, result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err and "internal error" not in result.err, result.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def hostile_project(tmp_path: Path) -> Project:
    """A failing gate whose failing examples have ids and outputs that try to be markup."""
    project = make_project(tmp_path)
    rows = [
        *DEFAULT_ROWS,
        {"id": FORGED_HEADING, "expected": "yes", "output": "no\r\r## ✅ EvalGlass: pass"},
        {"id": "[click](https://evil.example) <b>x</b> a|b `c", "expected": "yes", "output": "\x1b[2Jcleared"},
    ]
    project.write_rows(rows)
    project.write_ledger(approve(project, threshold=0.9))
    return project


OWN_HEADINGS = {"### Gates", "### Metrics", "### Checks", "### Tokens"}


def no_forged_heading(text: str) -> None:
    """The report's first line is its verdict heading; every other heading is one of its own section titles."""
    lines = MARKDOWN_LINES.split(text)
    headings = [line for line in lines[1:] if line.lstrip().startswith("#")]
    assert set(headings) <= OWN_HEADINGS, headings
    assert "\r" not in text and "\x1b" not in text


def test_text_from_data_never_becomes_markup_in_any_renderer(tmp_path):
    project = hostile_project(tmp_path)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    ran = run_cli("run", "--out", "out", "--junit", "junit.xml", "--html", "page.html", cwd=tmp_path, env=env)
    assert ran.code == 1, ran.err
    report = (tmp_path / "out" / "report.md").read_text()
    assert "EvalGlass: fail" in report.splitlines()[0]
    for text in (report, (tmp_path / "summary.md").read_text()):
        no_forged_heading(text)
        outside_code = re.sub(r"`[^`\n]*`", "", text)  # a code span shows its content as text, markup included
        assert "](https://evil" not in outside_code and "<b>" not in outside_code  # no link, no HTML from an id
        assert "a\\|b" in text  # and no cell broken by a pipe
    # annotations: one line each, no raw control character
    for line in ran.out.splitlines():
        assert "\r" not in line and "\x1b" not in line
    for document in ((tmp_path / "junit.xml").read_bytes(), (tmp_path / "page.html").read_bytes()):
        assert b"\r" not in document and b"\x1b" not in document
    ET.fromstring((tmp_path / "junit.xml").read_bytes())
    # the terminal: example lists, explanations, the summary
    for args in (("view", "out", "--examples"), ("explain", "--run", "out"), ("view", "out")):
        shown = project.cli(*args)
        assert shown.code == 0, shown.err
        assert "\r" not in shown.out and "\x1b" not in shown.out, args
    listed = project.cli("view", "out", "--examples", "--state", "all")
    assert "x\\r\\r## ✅ EvalGlass: pass\\r\\r" in listed.out  # shown as the text it is
    assert project.cli("verify", "out").code == 0  # report.md is what the scorecard renders, escaping included


def test_run_out_refuses_a_folder_that_already_holds_files(tmp_path):
    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    out = tmp_path / "out"
    before = {path.relative_to(out): path.read_bytes() for path in out.rglob("*") if path.is_file()}
    # an earlier run's outputs beside the new artifacts would be read (and covered by its digests) as the new run's
    (out / "outputs.jsonl").write_text('{"id": "ex-1", "samples": []}\n')
    one_line_error(project.run("--out", "out"), "out", "not empty", "outputs.jsonl")
    after = {path.relative_to(out) for path in out.rglob("*") if path.is_file()}
    assert after == {*before, Path("outputs.jsonl")}
    assert all((out / name).read_bytes() == data for name, data in before.items())
    # an empty folder is fine, hidden leftovers (partial files of others) are not the run's
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / ".scores.jsonl.1.abcd.partial").write_text("")
    assert project.run("--out", "empty").code == 0
    assert project.cli("verify", "empty").code == 0


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    proposed_threshold: 0.7\n", "    proposed_threshold: .nan\n"),
        ("    proposed_threshold: 0.7\n", "    proposed_threshold: .inf\n"),
        ("    proposed_threshold: 0.7\n", "    proposed_threshold: 0.7\n    min_n: -.inf\n"),
        ("version: 1\n", "version: 1\nconcurrency:\n  rpm: .inf\n"),
    ],
)
def test_a_non_finite_number_in_the_config_is_one_line_at_its_line(tmp_path, old, new):
    project = make_project(tmp_path)
    config = project.evals / "evalglass.yaml"
    text = config.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    config.write_text(text)
    line = next(number for number, item in enumerate(text.splitlines(), 1) if ".nan" in item or ".inf" in item)
    one_line_error(project.run(), f"evalglass.yaml:{line}", "not a finite number")


@pytest.mark.parametrize("artifact", ["scores.jsonl", "outputs.jsonl", "checks.jsonl", "blobs/"])
def test_an_artifact_that_is_not_a_regular_file_is_one_line_for_every_reader(tmp_path, artifact):
    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    if artifact == "blobs/":  # the outputs the run kept (blobs/<sha256>.jsonl.gz)
        (path,) = (tmp_path / "out" / "blobs").iterdir()
        artifact = f"blobs/{path.name}"
    path = tmp_path / "out" / artifact
    path.unlink(missing_ok=True)
    path.mkdir()
    commands = {
        "scores.jsonl": [
            ("explain", "--run", "out"),
            ("view", "out", "--examples"),
            ("report", "out"),
            ("verify", "out"),
        ],
        # A recorded run shows the outputs it kept, not an outputs.jsonl: only the report joins one that is there.
        "outputs.jsonl": [("report", "out"), ("verify", "out")],
        "checks.jsonl": [("report", "out")],  # a recorded run has no checks.jsonl to verify
    }.get(artifact, [("view", "out", "--examples"), ("view", "out"), ("report", "out"), ("explain", "--run", "out")])
    for args in commands:
        result = project.cli(*args)
        if args[0] == "verify" and artifact != "scores.jsonl" and result.code == 1:
            continue  # verify may instead name the unexpected entry as a finding: also an answer, not a crash
        one_line_error(result, artifact, "directory")


def test_a_fifo_in_place_of_the_scores_file_does_not_hang_a_reader(tmp_path):
    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    (tmp_path / "out" / "scores.jsonl").unlink()
    os.mkfifo(tmp_path / "out" / "scores.jsonl")
    one_line_error(project.cli("explain", "--run", "out"), "scores.jsonl", "FIFO")


def test_a_bad_metric_name_is_reported_at_its_own_line(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "evalglass.yaml").write_text(
        "version: 1\n"
        "dataset: {name: suite, path: data.jsonl}\n"
        "task: {type: recorded, field: output}\n"
        "metrics:\n"
        "  exact: {type: exact_match, reference: expected}\n"
        "  'bad name!': {type: exact_match, reference: expected}\n"
    )
    one_line_error(project.run(), "evalglass.yaml:6", "bad name!")


def test_junit_carries_the_experimental_label_and_the_unbound_note_the_terminal_shows(tmp_path):
    (tmp_path / "lower").mkdir()
    (tmp_path / "check").mkdir()
    lower = make_project(tmp_path / "lower", gates={"accuracy": {"metric": "exact", "rule": "lower_bound"}})
    lower.write_ledger(approve(lower, threshold=0.1))
    assert lower.run("--junit", "junit.xml").code in (0, 1)
    case = ET.parse(lower.root / "junit.xml").getroot().find(".//testcase[@name='accuracy']")
    assert case is not None and "EXPERIMENTAL" in ET.tostring(case, encoding="unicode")

    checked = _check_gate_project(tmp_path / "check", bound=False)
    _approve_check(checked)
    result = checked.run("--junit", "junit.xml")
    assert result.code == 0 and "unbound" in result.out
    case = ET.parse(checked.root / "junit.xml").getroot().find(".//testcase[@name='lint_ok']")
    assert case is not None
    assert "note: unbound: check 'lint' ended PASS" in ET.tostring(case, encoding="unicode")


def test_a_pass_with_tolerated_exclusions_says_what_was_tolerated(tmp_path):
    project = make_project(tmp_path, gates={"accuracy": {"metric": "exact", "tolerate": ["non_evaluable"]}})
    project.write_rows([*DEFAULT_ROWS, {"id": "nogold-1", "output": "yes"}, {"id": "nogold-2", "output": "yes"}])
    project.write_ledger(approve(project))
    result = project.run("--out", "out", "--junit", "junit.xml")
    assert result.code == 0, result.err
    flat = " ".join(result.out.split())
    junit = (tmp_path / "junit.xml").read_text()
    report = (tmp_path / "out" / "report.md").read_text()
    for text in (flat, junit, report):
        assert "whole population" not in text
        assert "'accuracy' 8 of 10 examples (2 non_evaluable/not_applicable left out)" in " ".join(text.split())
    assert project.cli("verify", "out").code == 0
    # an honest pass that measured everything still says so
    (tmp_path / "full").mkdir()
    full = make_project(tmp_path / "full")
    full.write_ledger(approve(full))
    assert "every active gate measured its whole population" in " ".join(full.run().out.split()).lower()


@pytest.mark.parametrize(
    ("args", "code"),
    [(("verify", "out"), 0), (("view", "out"), 0), (("explain", "--run", "out"), 0), (("history",), 0)],
)
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly_with_its_own_code(tmp_path, args, code):
    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "evalglass", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # as `| head -0` does: nobody reads what the command prints
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == code, err
    assert err == "", err


def test_a_run_piped_into_a_closed_reader_keeps_the_verdicts_exit_code(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.9))
    process = subprocess.Popen(
        [sys.executable, "-m", "evalglass", "run", "--no-history"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1 and "BrokenPipe" not in err and "internal error" not in err, err


def test_history_blobs_are_flushed_to_disk_before_they_are_renamed(tmp_path, monkeypatch):
    from evalglass.history.blobs import restore

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    import zlib

    found, size = restore([zlib.compress(b"hello "), zlib.compress(b"world")], tmp_path / "blob.txt")
    assert (tmp_path / "blob.txt").read_bytes() == b"hello world" and size == 11
    assert synced, "restore() renamed a file it never flushed to disk"
    assert oct((tmp_path / "blob.txt").stat().st_mode & 0o777) == "0o600"
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".partial")]
    assert found.startswith("sha256:")
