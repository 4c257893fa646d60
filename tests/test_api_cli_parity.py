"""Each command is its API function rendered: the same call through ``evalglass COMMAND`` (a real process, from
the forked CLI server) and through ``evalglass.FUNCTION`` gives the same result, and the command exits with the
code the result names. A command that decided or read anything on a path of its own would differ here."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalglass
from evalglass.cli import FLAG_NAMES
from evalglass.report.preflight import preflight_json
from tests.e2e.project import Project, run_cli
from tests.e2e.test_ci_outputs import three_gates


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Three gates (pass, fail, blocked) and one run of them in `run`, both read from the project's folder."""
    made = three_gates(tmp_path)
    monkeypatch.chdir(made.root)
    monkeypatch.setenv("COLUMNS", "200")
    assert made.run("--out", "run", "--no-history").code == 1
    return made


@pytest.fixture(scope="module")
def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = three_gates(tmp_path_factory.mktemp("shared"))
    assert made.run("--out", "run", "--no-history").code == 1
    return made.root


@pytest.fixture
def shared(_shared_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    """The project of ``project`` made once for the module, for tests that only read it (commands that read, and
    commands refused before they write): each test checks that it left every file as it found it."""
    monkeypatch.chdir(_shared_root)
    monkeypatch.setenv("COLUMNS", "200")
    before = _files(_shared_root)
    yield Project(_shared_root)
    assert _files(_shared_root) == before, "this test changed the shared project: give it `project` instead"


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def without_run_identity(card: dict[str, Any]) -> dict[str, Any]:
    """A scorecard without what differs between two runs of one config (its id and time)."""
    return {key: value for key, value in card.items() if key not in ("run_id", "created_at", "folder")}


def test_run(project: Project) -> None:
    cli = project.run("--out", "by-cli", "--no-history", "--format", "json")
    result = evalglass.run(out="by-api", isolate=False)
    assert cli.code == result.exit_code == 1
    assert without_run_identity(cli.json()) == without_run_identity(result.scorecard.model_dump(mode="json"))


def test_view_is_load_run(shared: Project) -> None:
    cli = shared.cli("view", "run", "--format", "json")
    result = evalglass.load_run("run")
    assert cli.code == 0
    assert cli.json() == {"folder": str(result.folder.resolve()), **result.scorecard.model_dump(mode="json")}
    assert cli.err.strip() == result.not_checked


def test_view_of_the_last_run_is_load_run_of_nothing(project: Project) -> None:
    project.run("--out", "later", "--no-history")
    assert evalglass.load_run().folder == Path("later").resolve()
    assert project.cli("view", "--format", "json").json()["folder"] == str(Path("later").resolve())


def test_view_examples_is_list_examples(shared: Project) -> None:
    cli = shared.cli("view", "run", "--examples", "--state", "all", "--limit", "5", "--format", "json")
    listing = evalglass.list_examples("run", states=["all"], limit=5)
    assert cli.code == 0
    assert cli.json() == {
        "folder": str(listing.folder.resolve()),
        "rules": dict(listing.rules),
        "outputs_from": listing.outputs_from,
        "inputs_not_shown": listing.inputs_not_shown,
        "examples": [row.as_dict() for row in listing.rows],
    }
    assert len(listing.rows) == 5


@pytest.mark.parametrize("edited", [False, True])
def test_verify(request: pytest.FixtureRequest, edited: bool) -> None:
    project: Project = request.getfixturevalue("project" if edited else "shared")
    if edited:
        card = Path("run/scorecard.json")
        card.write_text(card.read_text().replace('"point": 0.75', '"point": 0.8', 1))
    cli = project.cli("verify", "run", "--format", "json")
    report = evalglass.verify("run")
    assert cli.code == report.exit_code == (1 if edited else 0)
    assert cli.json()["ok"] is report.ok is not edited
    assert cli.json()["findings"] == [
        {"field": item.field, "recorded": item.recorded, "derived": item.derived} for item in report.findings
    ]


def test_explain(shared: Project) -> None:
    cli = shared.cli("explain", "--run", "run", "--format", "json")
    explained = evalglass.explain(folder="run")
    assert cli.code == 0
    assert cli.json() == [item.as_dict() for item in explained.explanations]
    assert cli.err.strip() == explained.not_checked


def test_compare(project: Project) -> None:
    project.run("--out", "again", "--no-history")
    cli = project.cli("compare", "run", "again", "--format", "json", "--html", "by-cli.html")
    comparison = evalglass.compare("run", "again", html="by-api.html")
    assert cli.code == 0
    assert cli.json() == comparison.model_dump(mode="json")
    assert Path("by-cli.html").read_bytes() == Path("by-api.html").read_bytes()


@pytest.mark.parametrize("today", [None, "2999-01-01"])
def test_preflight(shared: Project, today: str | None) -> None:
    flags = [] if today is None else ["--today", today]
    cli = shared.cli("preflight", *flags, "--format", "json")
    found = evalglass.preflight(today=today)
    assert cli.code == int(found.exit_code) == 1  # `broken` would be blocked: its approval is stale
    assert cli.json() == preflight_json(found)
    assert shared.run("--dry-run", "--format", "json").json() == preflight_json(evalglass.preflight())


def test_report(project: Project) -> None:
    cli = project.cli("report", "run", "--out", "by-cli.html")
    written = evalglass.write_report("run", out="by-api.html")
    assert cli.code == 0
    assert cli.out.splitlines() == ["wrote by-cli.html", written.not_checked]
    assert Path("by-cli.html").read_bytes() == Path("by-api.html").read_bytes()
    assert evalglass.write_report("run").path == Path("run/report.html")


def test_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli = run_cli("check", "--example", "bound-checks", "--format", "json", cwd=tmp_path)
    checked = evalglass.check(example="bound-checks")
    assert cli.code == checked.exit_code == 4
    outcomes = {name: result.model_dump(mode="json")["outcome"] for name, result in checked.results.items()}
    assert {name: record["outcome"] for name, record in cli.json().items()} == outcomes


def test_calibrate_refuses_alike(shared: Project, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"output": "yes", "label": "pass"}\n')
    cli = shared.cli("calibrate", "nobody", "--labels", str(labels))
    with pytest.raises(evalglass.SetupError) as raised:
        evalglass.calibrate("nobody", str(labels))
    assert cli.code == 2
    assert cli.err.strip() == raised.value.stderr_lines()[0]


def test_history_is_recorded_runs(project: Project) -> None:
    assert project.run("--out", "recorded").code == 1
    cli = project.cli("history", "--format", "json")
    entries = evalglass.recorded_runs()
    assert cli.code == 0 and len(entries) == 2  # three_gates ran once before, in the history too
    assert cli.json() == json.loads(json.dumps([entry.as_dict() for entry in entries], default=str))
    assert project.cli("view", entries[0].run_id, "--format", "json").json()["run_id"] == entries[0].run_id
    assert evalglass.load_run(entries[0].run_id).scorecard.run_id == entries[0].run_id


def test_export(shared: Project) -> None:
    cli = shared.cli("export", "run", "--format", "otlp")
    sink = io.BytesIO()
    exported = evalglass.export_otlp("run", out=sink)
    assert cli.code == 0 and exported.events > 0
    assert cli.out == sink.getvalue().decode()


def test_init_and_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "by-cli").mkdir()
    (tmp_path / "by-api").mkdir()
    cli = run_cli("init", cwd=tmp_path / "by-cli")
    monkeypatch.chdir(tmp_path / "by-api")
    written = evalglass.init()
    assert cli.code == 0
    assert cli.out.splitlines() == [
        *(f"wrote {path}" for path in written),
        "next: evalglass run --config evals/evalglass.yaml",
    ]
    for path in written:
        assert (tmp_path / "by-cli" / path).read_bytes() == path.read_bytes()
    assert run_cli("schema", "ledger", cwd=tmp_path).json() == evalglass.schema("ledger")


@pytest.mark.parametrize(
    ("flags", "arguments"),
    [
        (["--resume", "--no-cache"], {"resume": True, "cache": "off"}),
        (["--resume", "run", "--out", "elsewhere"], {"resume": "run", "out": "elsewhere"}),
        (["--example", "quickstart", "--config", "evals/evalglass.yaml"], {"example": "quickstart", "config": "x"}),
    ],
)
def test_one_rule_refuses_both_spellings(shared: Project, flags: list[str], arguments: dict[str, Any]) -> None:
    cli = shared.run(*flags)
    with pytest.raises(evalglass.OptionError) as raised:
        evalglass.run(**arguments)
    assert cli.code == 2
    assert cli.err.strip() == raised.value.spelt(FLAG_NAMES).stderr_lines()[0]
    assert "--" not in str(raised.value)  # the API names its own arguments, never a flag


def test_a_baseline_named_by_reference_decides_alike(project: Project) -> None:
    """The run's locator is an argument of each run, never installed by the command line: the API and the CLI
    find a `run: suite@latest`-style baseline in the same history and decide the same gate."""
    assert project.run("--out", "base").code == 1  # recorded in the history
    run_id = json.loads(Path("base/scorecard.json").read_text())["run_id"]
    config = (project.evals / "evalglass.yaml").read_text()
    (project.evals / "evalglass.yaml").write_text(
        config + "  better:\n    metric: exact\n    compare_to: main\n    direction: higher_is_better\n"
    )
    ledger = (project.evals / "authority.yaml").read_text()
    (project.evals / "authority.yaml").write_text(ledger + f"baselines:\n  main:\n    run: {run_id}\n")
    cli = project.run("--out", "by-cli", "--no-history", "--format", "json")
    result = evalglass.run(out="by-api", isolate=False)
    assert os.path.exists("by-cli") and cli.code == result.exit_code
    by_cli = {gate["name"]: gate for gate in cli.json()["decision"]["gates"]}
    assert by_cli["better"] == result.gate("better").model_dump(mode="json")
    found = result.gate("better").comparison
    assert found is not None and found.baseline_run_id == run_id  # found in the history, by both


def test_history_import_and_export(project: Project) -> None:
    project.run("--out", "second", "--no-history")
    cli = project.cli("history", "import", "run", "nope", "--db", "by-cli.sqlite")
    imported = evalglass.import_runs(["run", "nope"], db="by-api.sqlite")
    assert cli.code == 2 and [problem.line() for problem in imported.problems] == [
        line.removeprefix("error: ") for line in cli.err.splitlines()
    ]
    ((_, recorded),) = imported.outcomes
    assert cli.out.startswith(f"recorded {recorded.run_id} from run ({recorded.files} files")
    again = evalglass.import_runs(["run", "second"], db="by-api.sqlite")
    assert [type(outcome).__name__ for _, outcome in again.outcomes] == ["str", "Recorded"]
    assert project.cli("history", "export", recorded.run_id, "by-cli", "--db", "by-cli.sqlite").code == 0
    assert evalglass.export_recorded(recorded.run_id, "by-api", db="by-api.sqlite") == recorded.run_id
    for path in sorted(Path("by-api").rglob("*")):
        assert path.is_dir() or path.read_bytes() == (Path("by-cli") / path.relative_to("by-api")).read_bytes()


def test_view_of_a_recorded_run_keeps_it_for_the_ci_outputs(project: Project) -> None:
    """`view RUN_ID --github` reads the run's record and report after loading it: the run read back from the
    history stays in its temporary folder until the command ends (``load_run(stack=...)``)."""
    assert project.run("--out", "recorded").code == 1
    run_id = json.loads(Path("recorded/scorecard.json").read_text())["run_id"]
    env = {"GITHUB_STEP_SUMMARY": str(project.root / "summary.md")}
    by_ref = run_cli("view", run_id, "--junit", "by-ref.xml", "--github", cwd=project.root, env=env)
    assert by_ref.code == 0, by_ref.err
    assert 'name="strict"' in Path("by-ref.xml").read_text()
    assert "strict" in (project.root / "summary.md").read_text()
