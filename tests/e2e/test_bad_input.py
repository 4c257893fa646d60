"""Hostile input through the real CLI: files that would hang, crash or change a score without a word.

Each case must end in one line naming the file (and line) and the fix, exit 2, no traceback — or, for a bad dataset
line, an ``error`` score whose diagnostic names ``file:line``. Never a hang, never a silent wrong value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalglass.engine.runs.artifacts import score_rows
from tests.e2e.project import DEFAULT_ROWS, Project, make_project, run_cli
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_setup_errors import assert_one_line_error as one_line
from tests.e2e.test_verdicts import approve
from tests.mountns import evalglass_in_namespace, read_only


def assert_one_line_error(result, *needles: str) -> None:
    """One line naming what and where, and never the catch-all for errors nobody foresaw."""
    one_line(result, *needles)
    assert "internal error" not in result.err, result.err


ALIAS_BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 10 if previous else ['lol'] * 10)}]\n"
    for previous, name in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefghi", strict=False)
)


def config_text(project: Project) -> str:
    return (project.evals / "evalglass.yaml").read_text()


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    hits = [number for number, row in enumerate(text.splitlines(), start=1) if needle in row]
    return hits[occurrence - 1]


# --- YAML: what the file says is what is read, or it is refused ---------------------------------------------------


def test_a_second_metrics_block_in_the_config_is_refused_naming_both_lines(tmp_path):
    project = make_project(tmp_path)
    text = config_text(project) + "metrics:\n  loose: {type: contains, value: 'y'}\n"
    (project.evals / "evalglass.yaml").write_text(text)
    first, second = line_of(text, "metrics:"), line_of(text, "metrics:", 2)
    assert_one_line_error(project.run(), f"evalglass.yaml:{second}", f"duplicate key 'metrics' (first at line {first})")


def test_a_repeated_threshold_in_the_ledger_is_refused_naming_both_lines(tmp_path):
    project = make_project(tmp_path)
    ledger = approve(project, threshold=0.99)
    text = json.dumps(ledger, indent=1).replace('"threshold": 0.99,', '"threshold": 0.99,\n"threshold": 0.6,')
    project.write_ledger(text)
    first, second = line_of(text, '"threshold"'), line_of(text, '"threshold"', 2)
    assert_one_line_error(
        project.run(), f"authority.yaml:{second}", f"duplicate key 'threshold' (first at line {first})"
    )


def test_a_second_gates_mapping_in_the_ledger_is_refused(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger("version: 1\ngates:\n  accuracy: {active: true, threshold: 0.7, fingerprint: x}\ngates: {}\n")
    assert_one_line_error(project.run(), "authority.yaml:4", "duplicate key 'gates' (first at line 2)")


@pytest.mark.parametrize("which", ["evalglass.yaml", "authority.yaml"])
def test_an_alias_bomb_fails_at_once_in_config_and_ledger(tmp_path, which):
    project = make_project(tmp_path)
    path = project.evals / which
    path.write_text(path.read_text() + "x-bomb:\n" + "".join(f"  {line}\n" for line in ALIAS_BOMB.splitlines()))
    assert_one_line_error(project.run(), which, "aliases expand the document")


def test_a_recursive_alias_and_deep_nesting_are_one_line_each(tmp_path):
    project = make_project(tmp_path)
    project.write_ledger("version: 1\nx: &a [1, *a]\n")
    assert_one_line_error(project.run(), "authority.yaml:2", "an alias refers to a value that contains it")
    project.write_ledger("version: 1\nx: " + "[" * 3000 + "]" * 3000 + "\n")
    assert_one_line_error(project.run(), "authority.yaml:2", "nested deeper than")


def test_shared_settings_through_an_alias_still_work(tmp_path):
    project = make_project(tmp_path)
    text = config_text(project).replace("  exact:\n", "  exact: &base\n", 1)
    text = text.replace("gates:", "  exact_too:\n    <<: *base\ngates:", 1)
    (project.evals / "evalglass.yaml").write_text(text)
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    assert [metric["name"] for metric in result.json()["metrics"]] == ["exact", "exact_too"]


@pytest.mark.parametrize("word", ["yes", "no", "on", "off"])
def test_a_metric_named_like_a_yaml_boolean_says_so(tmp_path, word):
    project = make_project(tmp_path)
    text = config_text(project).replace("  exact:\n", f"  {word}:\n", 1).replace("metric: exact", f"metric: '{word}'")
    (project.evals / "evalglass.yaml").write_text(text)
    assert_one_line_error(
        project.run(),
        f"evalglass.yaml:{line_of(text, f'  {word}:')}",
        f"the key '{word}' is read by YAML as the boolean",
    )


def test_non_utf8_and_nul_bytes_in_yaml_name_their_line(tmp_path):
    project = make_project(tmp_path)
    path = project.evals / "evalglass.yaml"
    original = path.read_bytes()
    lines = original.count(b"\n")
    path.write_bytes(original + b"# caf\xe9\n")
    assert_one_line_error(project.run(), f"evalglass.yaml:{lines + 1}", "not UTF-8")
    path.write_bytes(original + b"\n# a\x00b\n")
    assert_one_line_error(project.run(), f"evalglass.yaml:{lines + 2}", "character YAML does not allow")


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("gate min_n", "    min_n: 100000000000000000000\n"),
        ("interval seed", "    interval: {method: percentile_bootstrap, seed: 100000000000000000000}\n"),
    ],
)
def test_integers_beyond_64_bits_in_the_config_are_refused_at_their_line(tmp_path, where, text):
    project = make_project(tmp_path)
    anchor = "proposed_threshold: 0.7\n" if "min_n" in text else "reference: expected\n"
    config = config_text(project).replace(anchor, anchor + text)
    (project.evals / "evalglass.yaml").write_text(config)
    assert_one_line_error(project.run(), f"evalglass.yaml:{line_of(config, '100000000000000000000')}", "64 bits")


def test_word_count_max_beyond_64_bits_is_refused_at_its_line(tmp_path):
    project = make_project(tmp_path, metrics={"short": {"type": "word_count", "max": 10**20}}, gates={})
    config = config_text(project)
    assert_one_line_error(project.run(), f"evalglass.yaml:{line_of(config, 'max:')}", "does not fit in 64 bits")


# --- Only regular files are read ------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["evalglass.yaml", "authority.yaml", "data.jsonl"])
def test_a_fifo_in_place_of_config_ledger_or_dataset_is_refused_not_waited_on(tmp_path, which):
    project = make_project(tmp_path)
    (project.evals / which).unlink()
    os.mkfifo(project.evals / which)
    assert_one_line_error(project.run(), which, "named pipe (FIFO), not a regular file")


def test_a_device_or_a_folder_as_the_dataset_is_refused(tmp_path):
    project = make_project(tmp_path)
    (project.evals / "data.jsonl").unlink()
    (project.evals / "data.jsonl").symlink_to("/dev/zero")
    assert_one_line_error(project.run(), "data.jsonl", "a device, not a regular file")
    (project.evals / "data.jsonl").unlink()
    (project.evals / "data.jsonl").mkdir()
    assert_one_line_error(project.run(), "data.jsonl", "a directory")


def test_a_folder_as_the_config_is_refused(tmp_path):
    make_project(tmp_path)
    assert_one_line_error(run_cli("run", "--config", "evals", cwd=tmp_path), "evals", "a directory")


# --- Dataset lines: exact or an error, never a wrong value -------------------------------------------------------


def run_rows(tmp_path: Path, lines: list[str], **config: object) -> tuple[dict, list[dict]]:
    project = make_project(tmp_path, **config)
    (project.evals / "data.jsonl").write_text("\n".join(lines) + "\n")
    result = project.run("--format", "json", "--out", "out")
    assert result.code in (0, 1), result.err
    return result.json(), list(score_rows(tmp_path / "out" / "scores.jsonl"))


def test_integers_beyond_64_bits_are_an_error_not_equal_floats(tmp_path):
    card, rows = run_rows(
        tmp_path,
        [
            '{"id": "big", "expected": 100000000000000000000, "output": 100000000000000000001}',
            '{"id": "ok", "expected": 7, "output": 7}',
        ],
    )
    big = rows[0]["scores"]["exact"]
    assert big["status"] == "error", big
    assert big["diagnostics"][0]["code"] == "integer_too_large"
    assert "data.jsonl:1" in big["diagnostics"][0]["message"]
    assert rows[1]["scores"]["exact"] == 1.0
    assert card["dataset"]["malformed_lines"] == 1


def test_a_key_repeated_in_one_dataset_line_is_an_error(tmp_path):
    _, rows = run_rows(
        tmp_path,
        [
            '{"id": "a", "expected": "yes", "output": "no", "output": "yes"}',
            '{"id": "b", "expected": "yes", "output": {"x": 1, "x": 2}}',
            '{"id": "c", "expected": "a: b", "output": "a: b"}',
        ],
    )
    for row, number in zip(rows[:2], (1, 2), strict=True):
        entry = row["scores"]["exact"]
        assert entry["status"] == "error" and entry["diagnostics"][0]["code"] == "duplicate_key", entry
        assert f"data.jsonl:{number}" in entry["diagnostics"][0]["message"]
    assert rows[2]["scores"]["exact"] == 1.0


def test_deep_json_is_measured_exactly_or_is_an_error(tmp_path):
    deep_text = "[" * 500 + "]" * 500
    _, rows = run_rows(
        tmp_path,
        [
            json.dumps({"id": "text", "output": deep_text}),
            json.dumps({"id": "fine", "output": json.loads("[" * 100 + "]" * 100)}),
            '{"id": "deep", "output": ' + deep_text + "}",
        ],
        metrics={"valid": {"type": "json_valid"}},
        gates={},
    )
    assert rows[0]["scores"]["valid"] == 1.0
    assert rows[1]["scores"]["valid"] == 1.0
    deep = rows[2]["scores"]["valid"]
    assert deep["status"] == "error" and deep["diagnostics"][0]["code"] == "too_deep", deep


def test_a_real_id_equal_to_a_made_up_one_is_refused(tmp_path):
    project = make_project(tmp_path)
    project.write_rows(extra_lines=["{broken", '{"id": "line:9", "expected": "yes", "output": "yes"}'])
    assert_one_line_error(
        project.run(), "data.jsonl:10", "example id 'line:9' is also the id given to malformed line 9"
    )


def test_regex_that_backtracks_catastrophically_is_an_error_per_example(tmp_path):
    _, rows = run_rows(
        tmp_path,
        [
            json.dumps({"id": "slow", "output": "a" * 41 + "!"}),
            json.dumps({"id": "match", "output": "aaaa"}),
            json.dumps({"id": "miss", "output": "b"}),
        ],
        metrics={"shape": {"type": "regex", "pattern": "^(a|aa)+$"}},
        gates={},
    )
    slow = rows[0]["scores"]["shape"]
    assert slow["status"] == "error" and slow["diagnostics"][0]["code"] == "regex_timeout", slow
    assert [rows[1]["scores"]["shape"], rows[2]["scores"]["shape"]] == [1.0, 0.0]


# --- Artifacts being loaded ----------------------------------------------------------------------------------------


def finished_run(tmp_path: Path) -> tuple[Project, Path]:
    project = make_project(tmp_path)
    assert project.run("--out", "out").code == 0
    return project, tmp_path / "out"


def test_a_duplicate_key_in_a_scorecard_is_refused_by_view_and_verify(tmp_path):
    project, out = finished_run(tmp_path)
    card = (out / "scorecard.json").read_text()
    (out / "scorecard.json").write_text(card.replace('"verdict": ', '"verdict": "pass",\n    "verdict": ', 1))
    reseal(out)  # unsealed, view names the edited file first (test_damaged_artifacts.py)
    for args in (("view", "out"), ("verify", "out")):
        assert_one_line_error(project.cli(*args), "scorecard.json", "appears twice in one object")


@pytest.mark.parametrize("artifact", ["scorecard.json", "runrecord.json", "scores.jsonl"])
def test_an_artifact_replaced_by_a_folder_is_one_line_for_every_reader(tmp_path, artifact):
    project, out = finished_run(tmp_path)
    (out / artifact).unlink()
    (out / artifact).mkdir()
    commands = [("verify", "out")]
    if artifact != "scores.jsonl":
        commands.append(("explain", "--run", "out"))
    if artifact == "scorecard.json":
        commands.append(("view", "out"))
    for args in commands:
        assert_one_line_error(project.cli(*args), artifact, "directory")


def test_verify_view_and_explain_on_a_file_say_it_is_not_a_run_folder(tmp_path):
    project, _ = finished_run(tmp_path)
    for args in (("verify", "out/report.md"), ("view", "out/report.md"), ("explain", "--run", "out/report.md")):
        assert_one_line_error(project.cli(*args), "report.md", "not a run folder")


def test_a_binary_last_run_pointer_is_one_line(tmp_path):
    project, _ = finished_run(tmp_path)
    (tmp_path / ".evalglass" / "last-run").write_bytes(b"\xff\xfe\x00garbage\n")
    assert_one_line_error(project.cli("view"), "last-run")


# --- The run folder -------------------------------------------------------------------------------------------------


def test_out_that_is_a_file_or_under_a_file_is_one_line(tmp_path):
    project = make_project(tmp_path)
    (tmp_path / "taken").write_text("a file\n")
    assert_one_line_error(project.run("--out", "taken"), "taken", "is a file")
    assert_one_line_error(project.run("--out", "taken/run"), "taken", "is a file")
    assert (tmp_path / "taken").read_text() == "a file\n"


def run_limited(cwd: Path, *args: str, file_size: int) -> subprocess.CompletedProcess[str]:
    """The CLI with RLIMIT_FSIZE set: writing past it fails with EFBIG, as a full disk fails with ENOSPC."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run(
        [sys.executable, "-m", "evalglass", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize("size", [0, 200, 2000])
def test_running_out_of_space_is_one_line_and_leaves_no_run_behind(tmp_path, size):
    project = make_project(tmp_path)
    rows = [{"id": f"ex-{i}", "expected": "yes", "output": "yes" * 50} for i in range(200)]
    project.write_rows(rows)
    result = run_limited(tmp_path, "run", "--out", "out", file_size=size)
    assert result.returncode == 2, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "file-size limit" in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_read_only_working_folder_is_one_line(tmp_path):
    """A real read-only file system (root writes through permission bits): see tests/mountns.py."""
    project = make_project(tmp_path)
    result = evalglass_in_namespace([read_only(tmp_path)], "run", cwd=tmp_path)
    assert_one_line_error(result, ".evalglass", "the file system is read-only", "--out a writable folder")
    assert not (tmp_path / ".evalglass").exists()
    assert project.run().code == 0  # the same project, writable again


def test_a_read_only_state_folder_leaves_the_run_complete_and_says_so(tmp_path):
    """`.evalglass/` read-only, the run written elsewhere: the verdict stands (exit 0), and each pointer that could
    not be moved is one warning line saying what follows and how to name this run instead."""
    project = make_project(tmp_path)
    assert project.run("--out", "first").code == 0
    state = tmp_path / ".evalglass"
    before = {name: (state / name).read_text() for name in ("last-run", "last-started")}
    result = evalglass_in_namespace([read_only(state)], "run", "--out", "second", cwd=tmp_path)
    assert result.code == 0, result.err
    assert (tmp_path / "second" / "scorecard.json").is_file()
    warnings = [line for line in result.err.splitlines() if line.strip()]
    assert len(warnings) == 3 and all(line.startswith("warning: ") for line in warnings), result.err
    started, finished, history = warnings
    # the run history lives in the same folder: not updated, said once, and how to add the run later
    assert "run history" in history and history.endswith("evalglass history import second")
    assert ".evalglass/last-started" in started and "Read-only file system" in started
    assert "may resume an older run" in started and started.endswith("evalglass run --resume second")
    assert ".evalglass/last-run" in finished and "may show an older run" in finished
    assert finished.endswith("evalglass view second")
    # What the warnings say is what happened: the pointers could not be touched.
    assert {name: (state / name).read_text() for name in before} == before


def test_a_pointer_that_cannot_be_moved_is_one_warning_not_silence(tmp_path):
    """`last-started` a folder (so it can be neither replaced by a file nor unlinked) inside a writable
    `.evalglass/`: the run completes, and the one warning says the pointer still names an older run."""
    project = make_project(tmp_path)
    assert project.run("--out", "first").code == 0
    pointer = tmp_path / ".evalglass" / "last-started"
    pointer.unlink()
    pointer.mkdir()
    result = project.run("--out", "second")
    assert result.code == 0, result.err
    (warning,) = [line for line in result.err.splitlines() if line.strip()]
    assert warning.startswith("warning: .evalglass/last-started: could not record this run as the last one started")
    assert "could not be removed either" in warning  # a folder is not unlinked; said, not hidden
    assert warning.endswith("Name this run explicitly: evalglass run --resume second")


def test_a_read_only_working_folder_is_one_line_for_a_user_too(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes through permissions (the read-only mount case above runs as root)")
    project = make_project(tmp_path)
    tmp_path.chmod(0o555)
    try:
        assert_one_line_error(project.run(), "permission denied", "writable")
    finally:
        tmp_path.chmod(0o755)


def test_a_second_run_into_a_locked_folder_is_refused(tmp_path):
    import fcntl

    project = make_project(tmp_path)
    (tmp_path / "out").mkdir()
    fd = os.open(tmp_path / "out", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a run in progress holds it
        assert_one_line_error(project.run("--out", "out"), "out", "another evalglass run is writing to this folder")
    finally:
        os.close(fd)
    assert project.run("--out", "out").code == 0
    assert (tmp_path / "out" / "scorecard.json").exists()


def test_a_planted_symlink_at_the_old_partial_name_is_never_followed(tmp_path):
    project = make_project(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for name in (".scores.jsonl.partial", ".checks.jsonl.partial"):
        (out / name).symlink_to(victim)
    assert project.run("--out", "out").code == 0
    assert victim.read_text() == "keep me\n"
    assert (out / "scores.jsonl").is_file() and not (out / "scores.jsonl").is_symlink()


def test_folders_are_created_private_even_under_umask_000(tmp_path):
    make_project(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "evalglass", "run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.umask(0),
    )
    assert result.returncode == 0, result.stderr
    state = tmp_path / ".evalglass"
    run = next((state / "runs").iterdir())
    for folder in (state, state / "runs", run):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    for artifact in run.rglob("*"):
        assert artifact.stat().st_mode & 0o777 == (0o700 if artifact.is_dir() else 0o600), artifact


def test_nothing_is_left_when_the_default_rows_run(tmp_path):
    """The run folder holds only artifacts: no lock file, no partial file."""
    project = make_project(tmp_path)
    project.write_rows(DEFAULT_ROWS)
    assert project.run("--out", "out").code == 0
    assert not [path.name for path in (tmp_path / "out").iterdir() if path.name.startswith(".")]
