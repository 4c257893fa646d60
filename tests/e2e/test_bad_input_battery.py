"""An outsider's battery of bad input through the real command line: each case one file, flag or artifact gone
wrong, and each must end as the bad-input standard says: exit 2, one line on stderr naming the file (and line,
where there is one) and the fix, no traceback, never the catch-all "internal error", and nothing lost (every file
under ``.evalglass``, the runs and the history already there, byte for byte; a refused run records nothing).

The cases are the classes of failure a fuzz of every command found; each class is fixed at its shared error path
(named above its cases), so a case here stands for every file and flag that goes through that path. The whole
file takes ~20 s (one finished project, copied per case; each command forked from the CLI server).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.project import Project, approve_as_is, base_config, make_project, run_cli
from tests.e2e.test_gold_fields_cli import JUDGE  # an llm_judge on a closed port: refused before any call

Mutation = Callable[[Project], tuple[str, ...]]


@dataclass(frozen=True)
class Case:
    id: str
    #: Breaks the project and returns the command's arguments.
    mutate: Mutation
    #: Each must be in the error line.
    needles: tuple[str, ...]


def _append(name: str, text: str, *args: str) -> Mutation:
    def mutate(project: Project) -> tuple[str, ...]:
        path = project.evals / name
        path.write_text(path.read_text() + text)
        return args or ("run", "--no-progress")

    return mutate


def _replace(name: str, old: str, new: str, *args: str) -> Mutation:
    def mutate(project: Project) -> tuple[str, ...]:
        path = project.evals / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))
        return args or ("run", "--no-progress")

    return mutate


def _folder_for_history(*args: str) -> Mutation:
    def mutate(project: Project) -> tuple[str, ...]:
        database = project.root / ".evalglass" / "history.sqlite"
        database.rename(project.root / "history-moved-away.sqlite")
        database.mkdir()
        return args

    return mutate


def _verify_with(option: str, make: Callable[[Path], str]) -> Mutation:
    """``verify`` of the finished run with ``option`` naming what ``make`` puts in the project root."""

    def mutate(project: Project) -> tuple[str, ...]:
        return ("verify", str(project.last_run()), option, make(project.root))

    return mutate


def _fifo(root: Path) -> str:
    os.mkfifo(root / "pipe")
    return "pipe"


def _file(root: Path, name: str, data: bytes) -> str:
    (root / name).write_bytes(data)
    return name


def _labels(*lines: dict[str, object]) -> Mutation:
    """``calibrate helpful`` with a labels file of ``lines``."""

    def mutate(project: Project) -> tuple[str, ...]:
        config = base_config()
        config["metrics"] = {**config["metrics"], "helpful": JUDGE}
        project.write_config(config)
        (project.evals / "rubric.md").write_text("Is the answer helpful?\n")
        (project.root / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        return ("calibrate", "helpful", "--labels", "labels.jsonl")

    return mutate


def _judged(rubric: bytes | None) -> Mutation:
    """``run`` of a config with an llm_judge metric whose rubric file holds ``rubric`` (None: no file)."""

    def mutate(project: Project) -> tuple[str, ...]:
        config = base_config()
        config["metrics"] = {**config["metrics"], "helpful": JUDGE}
        project.write_config(config)
        if rubric is not None:
            (project.evals / "rubric.md").write_bytes(rubric)
        return ("run", "--no-progress")

    return mutate


def _csv_dataset(tail: bytes, newline: bytes = b"\n", first: str = "") -> Mutation:
    """The project's dataset as a CSV file whose lines end with ``newline``, ``tail`` after its rows (``first``:
    the first row's output, which may hold quoted line breaks)."""

    def mutate(project: Project) -> tuple[str, ...]:
        text = (project.evals / "data.jsonl").read_text()
        project.write_config(base_config(dataset={"name": "suite", "path": "data.csv"}))
        rows = [json.loads(line) for line in text.splitlines()]
        lines = ["id,expected,output", *(f"{row['id']},{row['expected']},{row['output']}" for row in rows)]
        if first:
            lines[1] = lines[1].rsplit(",", 1)[0] + "," + first
        data = newline.join(line.encode() for line in lines) + newline + tail
        (project.evals / "data.csv").write_bytes(data)
        return ("run", "--no-progress")

    return mutate


def _last_started(content: bytes | None) -> Mutation:
    """``run --resume`` with the last-started pointer holding ``content`` (None: a FIFO in its place)."""

    def mutate(project: Project) -> tuple[str, ...]:
        pointer = project.root / ".evalglass" / "last-started"
        pointer.unlink(missing_ok=True)
        if content is None:
            os.mkfifo(pointer)
        else:
            pointer.write_bytes(content)
        return ("run", "--no-progress", "--resume")

    return mutate


def _init_with_fifo_gitignore(project: Project) -> tuple[str, ...]:
    """``init --dir fresh`` where ``fresh/.gitignore``, the file init adds the call cache's pattern to, is a FIFO."""
    (project.root / "fresh").mkdir()
    os.mkfifo(project.root / "fresh" / ".gitignore")
    return ("init", "--dir", "fresh")


def _traces(select: dict[str, object]) -> Mutation:
    """An OTLP dataset (empty: the config is refused before it is read) selected by ``select``."""

    def mutate(project: Project) -> tuple[str, ...]:
        config = base_config(
            dataset={"name": "suite", "path": "t.jsonl", "format": "otlp", "traces": {"select": select}},
            metrics={"fast": {"type": "numeric_bounds", "field": "latency_ms", "max": 2000}},
            gates={"g": {"metric": "fast", "proposed_threshold": 0.5}},
        )
        del config["task"]
        project.write_config(config)
        (project.evals / "t.jsonl").write_text("")
        return ("run", "--no-progress")

    return mutate


CASES = [
    # readers/yamlsource.py: a value whose YAML constructor fails bare (was "internal error: ValueError").
    Case(
        "ledger-date-that-is-no-date",
        _replace("authority.yaml", "threshold: 0.7", "threshold: 0.7\n    expires_on: 2026-13-45"),
        ("authority.yaml:6", "'2026-13-45' reads as a date", "YYYY-MM-DD"),
    ),
    Case(
        "config-year-zero",
        _append("evalglass.yaml", "x-note: 0000-01-01\n"),
        ("evalglass.yaml:16", "'0000-01-01' reads as a date"),
    ),
    # readers/yamlsource.py: a NUL escape in a path (was "internal error: ValueError: embedded null byte").
    Case(
        "dataset-path-with-nul-escape",
        _replace("evalglass.yaml", "path: data.jsonl", 'path: "data\\0.jsonl"'),
        ("evalglass.yaml:4", "NUL character"),
    ),
    Case(
        "config-ledger-with-nul-escape",
        _append("evalglass.yaml", 'ledger: "authority\\x00.yaml"\n'),
        ("evalglass.yaml:16", "NUL character"),
    ),
    # history/refs.py history_exists: a folder at the database's path read as "no history" ("No recorded runs yet",
    # exit 0): now refused wherever a reader asks whether there is a history.
    Case("history-database-is-a-folder", _folder_for_history("history"), ("history.sqlite", "not a file")),
    Case(
        "history-database-is-a-folder-for-a-reference",
        _folder_for_history("view", "main@latest"),
        ("history.sqlite", "not a file"),
    ),
    # engine/jobs/verify.py _checked/_anchor: a --dataset that is not a regular file was "not at hand" and verify
    # passed (exit 0) with nothing re-scored; a FIFO named by --config hung the read.
    Case("verify-dataset-missing", _verify_with("--dataset", lambda root: "nope.jsonl"), ("nope.jsonl", "not found")),
    Case("verify-dataset-folder", _verify_with("--dataset", lambda root: "evals"), ("evals", "is a directory")),
    Case("verify-config-fifo", _verify_with("--config", _fifo), ("pipe", "named pipe", "--config")),
    # engine/runs/digests.py public_key, read first by verify_run: a key that is no key was "NOT signed" (exit 1)
    # for an unsigned run, a FIFO hung the read, and a binary key file was an internal UnicodeDecodeError.
    Case("verify-key-that-is-no-key", _verify_with("--key", lambda root: "zzzz"), ("zzzz", "PEM public key")),
    Case("verify-key-fifo", _verify_with("--key", _fifo), ("pipe", "named pipe")),
    Case("verify-key-folder", _verify_with("--key", lambda root: "evals"), ("evals", "is a directory")),
    # engine/runs/digests.py public_key: a key file that held no key was said as hex parsing gone wrong ("at
    # position 0"), naming no file.
    Case(
        "verify-key-file-binary",
        _verify_with("--key", lambda root: _file(root, "key.der", b"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\xff")),
        ("key.der: the verify key file holds binary bytes", "openssl pkey -pubin -inform DER"),
    ),
    Case(
        "verify-key-file-of-text",
        _verify_with("--key", lambda root: _file(root, "key.txt", b"not a key\n")),
        ("key.txt: the verify key file holds neither a PEM public key nor 64 hex digits",),
    ),
    Case(
        "verify-key-file-bad-pem",
        _verify_with("--key", lambda root: _file(root, "key.pem", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END")),
        ("key.pem: the verify key is not an Ed25519 public key",),
    ),
    # engine/jobs/pipeline.py refuse_occupied: whether --out is empty walked the whole tree under it (`--out /`
    # walked the machine and ended on "/proc/<pid>/net: cannot write the run's artifacts: Invalid argument").
    Case(
        "run-out-at-the-root-of-the-machine",
        lambda project: ("run", "--no-progress", "--out", "/"),
        ("error: /: the run folder is not empty", "and more", "give --out a new or empty folder"),
    ),
    # cli._refuse_unwritable_folder: found after the run, a --html or --junit in a folder that is not there ended a
    # finished run with exit 2, its verdict lost (and the run recorded: the state check below sees it).
    Case(
        "run-html-in-a-missing-folder",
        lambda project: ("run", "--no-progress", "--html", "nope/report.html"),
        ("nope/report.html", "cannot write the HTML report: its folder nope is not there", "--html"),
    ),
    Case(
        "run-junit-under-a-file",
        lambda project: ("run", "--no-progress", "--junit", "evals/data.jsonl/junit.xml"),
        ("evals/data.jsonl/junit.xml", "cannot write the JUnit report: evals/data.jsonl is not a folder"),
    ),
    # engine/runs/runfolder.py naming: a file written through a partial file was named by the partial file's name
    # (".y.jsonl.1234.ab12cd34.partial: No such file or directory"), a name the user never gave.
    Case(
        "export-into-a-missing-folder",
        lambda project: ("export", str(project.last_run()), "--format", "otlp", "--out", "nope/events.jsonl"),
        ("error: nope/events.jsonl: No such file or directory",),
    ),
    Case(
        "export-onto-a-folder",
        lambda project: ("export", str(project.last_run()), "--format", "otlp", "--out", "evals"),
        ("error: evals: Is a directory",),
    ),
    # engine/datasets/tabular.py: a CSV byte that is not UTF-8 was named by its offset in the file ("byte 126").
    Case(
        "csv-dataset-not-utf8",
        _csv_dataset(b"ex-9,caf\xe9,yes\n"),
        ("data.csv:10", "byte 0xe9, byte 9 of the line", "save the file as UTF-8"),
    ),
    # engine/datasets/tabular.py: a line ends at CR LF, LF or a lone CR, as the csv module reads it; counting LF
    # alone put every byte of a file saved with CR line endings on line 1 ("data.csv:1").
    Case(
        "csv-dataset-not-utf8-cr-line-endings",
        _csv_dataset(b"ex-9,caf\xe9,yes\r", newline=b"\r"),
        ("data.csv:10", "byte 0xe9, byte 9 of the line"),
    ),
    # engine/datasets/tabular.py: a row was named by the line it ends on, a line below its first when a quoted cell
    # holds line breaks.
    Case(
        "csv-dataset-row-with-a-multiline-cell-named-by-its-first-line",
        _csv_dataset(b'ex-3,no,"yes\ron two lines"\r', newline=b"\r", first='"yes\rand more\ron three lines"'),
        ("data.csv:12", "duplicate example id 'ex-3' (first at line 6)"),
    ),
    # engine/jobs/calibrate.py current_fingerprint: a rubric that could not be read was named by its path alone, and
    # one not UTF-8 by the config file alone; the config's entry naming it is where to fix it.
    Case(
        "judge-rubric-missing",
        _judged(None),
        ("evalglass.yaml:14: metric 'helpful': rubric not found", "evals/rubric.md", "fix `rubric:`"),
    ),
    Case(
        "judge-rubric-not-utf8",
        _judged(b"Is it helpful?\xff\n"),
        ("evalglass.yaml:14: metric 'helpful': rubric", "is not UTF-8 text (byte 15 is 0xff)", "save the rubric"),
    ),
    # lanes/judge.py read_labels: two lines under one id were both read, a pasted line counting its grade twice.
    Case(
        "calibrate-labels-duplicate-id",
        _labels(
            {"id": "q1", "output": "a", "label": 5},
            {"id": "q2", "output": "b", "label": 2},
            {"id": "q1", "output": "a", "label": 4},
        ),
        ("labels.jsonl:3: id 'q1' is already used (first at line 1)", "give every labelled example a unique id"),
    ),
    Case(
        "calibrate-labels-id-of-an-unnamed-line",
        _labels({"output": "a", "label": 5}, {"id": 1, "output": "b", "label": 2}),
        ("labels.jsonl:2: id '1' is already used (first at line 1, which has no id and is named by its number)",),
    ),
    # api._proposed_baselines: --baseline with no comparative gate to propose it for was ignored (exit 0), even
    # when it named no run; an option that cannot apply is refused, as --resume with --out is.
    Case(
        "explain-baseline-without-a-comparative-gate",
        lambda project: ("explain", "--baseline", "nope"),
        ("--baseline proposes the baseline of a comparative gate", "this run has none", "drop --baseline"),
    ),
    Case(
        "explain-baseline-for-a-gate-that-is-not-comparative",
        lambda project: ("explain", "accuracy", "--baseline", "main@latest"),
        ("gate 'accuracy' is not one", "drop --baseline"),
    ),
    # cli.view: --limit without --examples was ignored (exit 0) where --metric, --state and --width are refused.
    Case(
        "view-limit-without-examples",
        lambda project: ("view", "--limit", "3"),
        ("--limit and --width go with --examples", "add --examples, or drop them"),
    ),
    # readers/userfiles.py read_pointer, which the last-run pointer's reader shares: binary bytes in last-started
    # were "internal error: UnicodeDecodeError", and a FIFO there hung `run --resume`.
    Case(
        "last-started-pointer-binary",
        _last_started(b"\xff\x00not a path"),
        (".evalglass/last-started", "does not hold a folder path", "--resume RUN_FOLDER"),
    ),
    Case("last-started-pointer-fifo", _last_started(None), (".evalglass/last-started", "named pipe")),
    # engine/spec/scaffold.py read the user's .gitignore with read_text: a FIFO there hung `evalglass init`.
    Case("init-gitignore-fifo", _init_with_fifo_gitignore, ("fresh/.gitignore", "named pipe", "regular file")),
    # engine/spec/validation.py refuse_numbers_from_text: lax mode read a YAML boolean as 1 or 0 wherever the config
    # means a number (the ledger reads strictly and refused it): the run went on with the number no one wrote.
    Case(
        "config-threshold-true",
        _replace("evalglass.yaml", "proposed_threshold: 0.7", "proposed_threshold: true"),
        ("evalglass.yaml:15", "gates.accuracy.proposed_threshold: true is a boolean to YAML", "write a number"),
    ),
    Case(
        "config-min-n-yes",
        _replace("evalglass.yaml", "proposed_threshold: 0.7", "proposed_threshold: 0.7\n    min_n: yes"),
        ("evalglass.yaml:16", "gates.accuracy.min_n: true is a boolean"),
    ),
    # engine/spec/validation.py setup_error_from: a value that fits no member of a union was one line per member.
    Case(
        "traces-where-value-of-no-accepted-kind",
        _traces({"where": {"service": {"name": "x"}}}),
        ("evalglass.yaml:9", "select.where.service: {'name': 'x'} is none of the kinds", "str, bool, int, float"),
    ),
    # engine/spec/tracespec.py: `since` after `until` selected no span, and every gate blocked on an empty dataset.
    Case(
        "traces-since-after-until",
        _traces({"since": "2026-12-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}),
        ("evalglass.yaml:", "select.until", "is not after since", "no span can be selected"),
    ),
]


def _state(root: Path) -> dict[str, str]:
    """Every file under ``.evalglass`` by its SHA-256: the runs and the history a bad command must not touch."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((root / ".evalglass").rglob("*"))
        if path.is_file() and path.name not in ("last-started",)
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with an approved gate and one finished, recorded run: what each case copies and then breaks."""
    root = tmp_path_factory.mktemp("finished")
    project = make_project(root)
    approve_as_is(project, 0.7, ["accuracy"])
    done = project.run("--no-progress")
    assert done.code == 0, done
    return root


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_bad_input_is_one_line_exit_2_and_loses_nothing(case: Case, finished: Path, tmp_path: Path) -> None:
    project = _copy(finished, tmp_path)
    root = project.root
    args = case.mutate(project)
    before = _state(root)
    assert any(name.startswith(".evalglass/runs/") for name in before), before  # the check below has a run to lose
    result = project.cli(*args)
    assert result.code == 2, result
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    assert _state(root) == before, "a refused command changed the runs or the history"


@pytest.mark.parametrize(
    "args",
    [
        ("history", "--limit", "99999999999999999999999"),
        ("view", "--examples", "--limit", "99999999999999999999999"),
        ("compare", "last", "last", "--top", "99999999999999999999999"),
    ],
    ids=["history-limit", "view-limit", "compare-top"],
)
def test_a_count_beyond_64_bits_means_all(args: tuple[str, ...], finished: Path) -> None:
    """cli._AtMost: "at most" a number no integer column holds is "all", not "internal error: OverflowError"."""
    result = Project(finished).cli(*args)
    assert result.code == 0, result
    assert "Traceback" not in result.err and "error" not in result.err, result.err


def test_verify_reads_a_relative_dataset_from_the_working_folder(finished: Path, tmp_path: Path) -> None:
    """``--dataset d.jsonl`` was checked in the working folder, then read beside the config ("evals/d.jsonl:
    dataset file not found", with a fix naming the config)."""
    project = _copy(finished, tmp_path)
    shutil.copy(project.evals / "data.jsonl", project.root / "copy.jsonl")
    result = project.cli("verify", str(project.last_run()), "--dataset", "copy.jsonl")
    assert result.code == 0, result
    assert "re-scored 1 of 1 metrics (exact)" in result.out, result.out


def _copy(finished: Path, tmp_path: Path) -> Project:
    """``finished`` copied, its last-run pointer following the copy."""
    root = tmp_path / "project"
    shutil.copytree(finished, root, symlinks=True)
    pointer = root / ".evalglass" / "last-run"
    pointer.write_text(pointer.read_text().replace(str(finished), str(root)))
    return Project(root)


def test_verify_does_not_hang_on_a_fifo_at_the_recorded_config_path(finished: Path, tmp_path: Path) -> None:
    """engine/jobs/verify.py _read_as_recorded: the config path the run recorded was read with ``read_bytes``, so a
    FIFO there (no --config given) hung verify. It is a file not at hand, said as such."""
    project = _copy(finished, tmp_path)
    config = project.evals / "evalglass.yaml"
    config.unlink()
    os.mkfifo(config)
    result = project.cli("verify", str(project.last_run()))
    assert result.code == 0, result
    assert "config: not anchored (evals/evalglass.yaml is not at hand here; pass --config PATH)" in result.out


def test_verify_does_not_hang_on_a_fifo_in_place_of_an_artifact(finished: Path, tmp_path: Path) -> None:
    """engine/jobs/verify.py _artifact_bytes: verify goes on past a damaged folder to name every difference, and read
    ``report.md`` with ``read_bytes``: a FIFO in its place hung it. Now the damage is a finding (exit 1)."""
    project = _copy(finished, tmp_path)
    report = project.last_run() / "report.md"
    report.unlink()
    os.mkfifo(report)
    result = project.cli("verify", str(project.last_run()))
    assert result.code == 1, result
    assert "report.md" in result.out + result.err, result


@pytest.mark.parametrize("named", [False, True], ids=["last-started", "by-its-folder"])
def test_resuming_a_finished_run_says_so_plainly(finished: Path, tmp_path: Path, named: bool) -> None:
    """api.run: a finished run resumed is derived again in its folder (docs/config.md); it ended with exit 0 and only
    the history's warning that it held the run already, telling the user to ``history import`` it again. Now one
    note says the run had finished, that the exit code is its verdict's and how to see it without running anything;
    the folder and the history keep their bytes."""
    project = _copy(finished, tmp_path)
    folder = project.last_run()
    (project.root / ".evalglass" / "last-started").write_text(f"{folder}\n")
    before = _state(project.root)
    result = project.cli("run", "--no-progress", "--resume", *((str(folder),) if named else ()))
    assert result.code == 0, result
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("note: this run had finished already: --resume derived it again in "), lines[0]
    assert "the exit code is its verdict's; to see a finished run without running anything: evalglass view" in lines[0]
    assert _state(project.root) == before


def test_a_fifo_in_place_of_the_cache_key_file_hangs_no_run(finished: Path, tmp_path: Path) -> None:
    """engine/produce/cachekey.py _read: the call cache's key file was read with ``read_text``, so a FIFO in its place
    hung every run (a new run reads the key to seal its manifest). A new run goes on unsealed, as it does when the
    key cannot be had; a resume, which needs the seal, is one line naming the file (exit 2)."""
    project = _copy(finished, tmp_path)
    cache = tmp_path / "xdg"
    (cache / "evalglass").mkdir(parents=True)
    os.mkfifo(cache / "evalglass" / "cache-key")
    (project.root / ".evalglass" / "last-started").write_text(f"{project.last_run()}\n")
    env = {"XDG_CACHE_HOME": str(cache)}
    fresh = run_cli("run", "--no-progress", "--no-history", cwd=project.root, env=env)
    assert fresh.code == 0, fresh
    resumed = run_cli("run", "--no-progress", "--resume", cwd=project.root, env=env)
    assert resumed.code == 2, resumed
    (line,) = [line for line in resumed.err.splitlines() if line.strip()]
    assert "cache-key" in line and "named pipe" in line and "Traceback" not in line, line
