"""Issue 26, item 2: no renderer shows a pass that does not add up.

Each forgery here is what a pull request (or anyone handed the artifacts) can do to a failing run: edit
``scorecard.json`` so that it still passes its own validators, then rewrite ``digests.json`` to match, as a forger who
knows the format does. Every reader of a finished run (``view``, ``view --junit``, ``view --github``, ``explain``,
``report``, ``load_run``) refuses it in one line naming the field, exit 2; ``verify`` catches it as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evalglass
from tests.e2e.project import CliResult, Project, make_project, run_cli
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_verdicts import approve

Card = dict[str, Any]


def edit_scorecard(folder: Path, edit: Callable[[Card], None]) -> None:
    path = folder / "scorecard.json"
    card = json.loads(path.read_text())
    edit(card)
    path.write_text(json.dumps(card, indent=2) + "\n")
    reseal(folder)


def green(card: Card) -> None:
    card["decision"].update(verdict="pass", ci_should_fail=False, exit_code=0)


def consistent_forged_pass(card: Card) -> None:
    """Outcome, reasons, the compared number raised above the threshold, verdict, CI flag and exit code."""
    gate = card["decision"]["gates"][0]
    gate.update(outcome="pass", reasons=[], compared=0.95)
    green(card)


def direction_flipped(card: Card) -> None:
    """Only the direction (and the outcome and verdict it implies): 0.75 'meets' 0.9 when lower is better."""
    gate = card["decision"]["gates"][0]
    gate.update(direction="lower_is_better", outcome="pass", reasons=[])
    green(card)


def every_check_gate_passes(card: Card) -> None:
    """Each check gate PASS (1.0 against 1.0), while the check results shown beside them say FAIL, INCONCLUSIVE
    and ERROR."""
    for gate in card["decision"]["gates"]:
        gate.update(outcome="pass", reasons=[], value=1.0, compared=1.0, threshold=1.0)
    green(card)


def readers(project: Project, folder: str) -> dict[str, CliResult]:
    """Every command that shows a finished run, with the CI outputs a loaded run can write."""
    env = {"GITHUB_STEP_SUMMARY": str(project.root / "summary.md"), "GITHUB_ACTIONS": "true"}
    return {
        "view": project.cli("view", folder),
        "view --junit": project.cli("view", folder, "--junit", "junit.xml"),
        "view --github": run_cli("view", folder, "--github", cwd=project.root, env=env),
        "view --format json": project.cli("view", folder, "--format", "json"),
        "view --examples": project.cli("view", folder, "--examples"),
        "explain": project.cli("explain", "--run", folder),
        "report": project.cli("report", folder, "--out", "page.html"),
    }


def assert_every_reader_refuses(project: Project, folder: str, field: str) -> None:
    for name, result in readers(project, folder).items():
        assert result.code == 2, (name, result.code, result.out, result.err)
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.err, (name, result.err)
        assert "does not add up" in lines[0] and field in lines[0], (name, lines[0])
        assert "verdict: pass" not in result.out, name
    for written in ("junit.xml", "summary.md", "page.html"):
        assert not (project.root / written).exists(), written
    with pytest.raises(evalglass.SetupError, match="does not add up"):
        evalglass.load_run(project.root / folder)


def failing_project(tmp_path: Path) -> Project:
    """One approved gate that fails: 0.75 measured, 0.9 approved."""
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.9))
    assert project.run("--out", "out").code == 1
    return project


@pytest.mark.parametrize(
    ("forgery", "field"),
    [
        (consistent_forged_pass, "decision.gates.accuracy.compared"),
        (direction_flipped, "decision.gates.accuracy.direction"),
    ],
    ids=["consistent forged pass", "only the direction flipped"],
)
def test_a_forged_pass_of_a_metric_gate_is_refused_by_every_reader(tmp_path, forgery, field):
    project = failing_project(tmp_path)
    edit_scorecard(tmp_path / "out", forgery)
    assert_every_reader_refuses(project, "out", field)
    verified = project.cli("verify", "out")
    assert verified.code == 1 and "scorecard.decision.verdict" in verified.out


def test_a_check_gate_forged_to_pass_while_its_check_ended_error_is_refused_by_every_reader(tmp_path):
    project = Project(tmp_path)
    assert run_cli("run", "--example", "bound-checks", "--out", "out", cwd=tmp_path).code == 1
    shown = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    assert {check["name"]: check["outcome"] for check in shown["checks"]}["notes-moved"] == "ERROR"
    edit_scorecard(tmp_path / "out", every_check_gate_passes)
    assert_every_reader_refuses(project, "out", "decision.gates.")
    assert "scorecard.decision.verdict" in run_cli("verify", "out", cwd=tmp_path).out


def test_an_untouched_run_is_shown_and_every_reader_says_what_it_did_not_check(tmp_path):
    project = failing_project(tmp_path)
    for name, result in readers(project, "out").items():
        assert result.code == 0, (name, result.err)
        said = result.err if name == "view --format json" else result.out
        assert "not re-derived" in said and "`evalglass verify out`" in said, (name, said)
    assert "evalglass verify out" in (tmp_path / "summary.md").read_text().strip().splitlines()[-1]
    assert "evalglass.not_checked" in (tmp_path / "junit.xml").read_text()
    assert "evalglass verify out" in (tmp_path / "page.html").read_text()
    loaded = evalglass.load_run(tmp_path / "out")
    assert loaded.verdict == "fail" and loaded.not_checked is not None and "unsigned" in loaded.not_checked


def rewrite_history(database: Path, run_id: str, card: Card) -> None:
    """What a forger with write access to the history does: the stored scorecard, its hash, the digests stored
    beside it and the summary rows, all made to agree, so that nothing but the check itself can tell."""
    import zlib

    from sqlalchemy import create_engine, delete, insert, select, update

    from evalglass.core.scorecard import Scorecard
    from evalglass.history.rows import gate_rows
    from evalglass.history.schema import ArtifactChunkRow, ArtifactRow, GateResultRow, RunRow

    forged = (json.dumps(card, indent=2) + "\n").encode()
    engine = create_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        pk = connection.execute(select(RunRow.pk).where(RunRow.run_id == run_id)).scalar_one()

        def stored(name: str) -> bytes:
            pieces = connection.execute(
                select(ArtifactChunkRow.data)
                .where(ArtifactChunkRow.run_pk == pk, ArtifactChunkRow.name == name)
                .order_by(ArtifactChunkRow.seq)
            ).scalars()
            return b"".join(zlib.decompress(piece) for piece in pieces)

        def store(name: str, data: bytes) -> str:
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            where = (ArtifactChunkRow.run_pk == pk, ArtifactChunkRow.name == name)
            connection.execute(delete(ArtifactChunkRow).where(*where))
            connection.execute(insert(ArtifactChunkRow).values(run_pk=pk, name=name, seq=0, data=zlib.compress(data)))
            connection.execute(
                update(ArtifactRow)
                .where(ArtifactRow.run_pk == pk, ArtifactRow.name == name)
                .values(sha256=digest, size=len(data), chunks=1)
            )
            return digest

        digests = json.loads(stored("digests.json"))
        digests["files"]["scorecard.json"] = store("scorecard.json", forged)
        store("digests.json", json.dumps(digests).encode())
        connection.execute(update(RunRow).where(RunRow.pk == pk).values(verdict="pass", exit_code=0))
        for row in gate_rows(Scorecard.model_validate_json(forged)):
            connection.execute(
                update(GateResultRow).where(GateResultRow.run_pk == pk, GateResultRow.name == row["name"]).values(**row)
            )
    engine.dispose()


def test_a_forged_run_in_the_history_is_refused_wherever_it_is_read_back(tmp_path):
    """A run reference (a run id, ``last``) and ``history export`` go through the same check; and a forged folder
    cannot enter a history at all (``history import``, as ``run`` records)."""
    project = failing_project(tmp_path)  # `run` recorded it in .evalglass/history.sqlite
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    consistent_forged_pass(card)
    rewrite_history(tmp_path / ".evalglass" / "history.sqlite", card["run_id"], card)
    for args in (
        ("view", card["run_id"]),
        ("view", card["run_id"], "--junit", "junit.xml"),
        ("explain", "--run", card["run_id"]),
        ("report", card["run_id"], "--out", "page.html"),
        ("history", "export", card["run_id"], "copy"),
    ):
        result = project.cli(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert "does not add up" in result.err and "decision.gates.accuracy.compared" in result.err, result.err
    assert not (tmp_path / "copy").exists() and not (tmp_path / "junit.xml").exists()

    edit_scorecard(tmp_path / "out", consistent_forged_pass)
    imported = project.cli("history", "import", "out", "--db", f"sqlite:///{tmp_path / 'other.sqlite'}")
    assert imported.code == 2 and "does not add up" in imported.err, imported.out + imported.err


def test_a_comparative_gate_forged_past_its_incomplete_pairs_is_refused(tmp_path):
    """The pairs' population is in the recorded comparison: a pass that drops the block it implies is refused."""
    from tests.e2e.test_comparative_gates import NO_CHANGE, rows_with, setup

    rows = rows_with(NO_CHANGE)
    rows[3]["new"] = "boom"  # the candidate's score errors on one example: an incomplete pair
    metrics = {"exact": {"type": "python", "function": "scorer.py:score"}}
    project, _ = setup(tmp_path, NO_CHANGE, metrics=metrics, rows=rows)
    assert project.run("--out", "out").code == 1

    def forged(card: Card) -> None:
        gate = card["decision"]["gates"][0]
        assert [reason["code"] for reason in gate["reasons"]] == ["incomplete_pairs"]
        gate.update(outcome="pass", reasons=[])
        green(card)

    edit_scorecard(tmp_path / "out", forged)
    assert_every_reader_refuses(project, "out", "incomplete_pairs")


def test_a_failed_check_passed_by_an_edited_exit_code_policy_is_refused_by_every_reader(tmp_path):
    """The check result validates on its own (exit 1 is PASS under the policy it records, with that policy's
    fingerprint), the scorecard's check summary and gate agree with it: only the config snapshot, which declares
    the policy the check was judged by, says otherwise."""
    from evalglass.core.checks import CheckResult, ExitCodePolicy
    from evalglass.core.scorecard import CheckSummary

    project = Project(tmp_path)
    assert run_cli("run", "--example", "bound-checks", "--out", "out", cwd=tmp_path).code == 1
    record_path = tmp_path / "out" / "runrecord.json"
    record = json.loads(record_path.read_text())
    result = record["check_results"]["notes-draft"]
    assert (result["outcome"], result["exit_code"]) == ("FAIL", 1)
    policy = ExitCodePolicy.model_validate({**result["policy"], "pass_codes": [0, 1], "fail_codes": []})
    result.update(
        outcome="PASS", repair="accept the work", policy=policy.model_dump(mode="json"),
        policy_fingerprint=policy.fingerprint,
    )  # fmt: skip
    forged = CheckResult.model_validate(result)  # it holds together on its own
    record_path.write_text(json.dumps(record, indent=2) + "\n")

    def passed(card: Card) -> None:
        card["checks"] = [
            CheckSummary.of("notes-draft", forged).model_dump(mode="json") if check["name"] == "notes-draft" else check
            for check in card["checks"]
        ]
        gate = next(gate for gate in card["decision"]["gates"] if gate["name"] == "draft")
        gate.update(outcome="pass", reasons=[], value=1.0, compared=1.0)

    edit_scorecard(tmp_path / "out", passed)
    assert_every_reader_refuses(project, "out", "check_results.notes-draft.policy")
