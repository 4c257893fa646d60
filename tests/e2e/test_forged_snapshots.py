"""A run record keeps the ledger twice: the text the run read (``ledger_source``, which hashes to
``ledger_fingerprint``) and what it parses to (``ledger``), from which every renderer takes each gate's authority
(active or not, the approved threshold). A forger who edits the parsed snapshot and the scorecard together (the
threshold lowered to what the run measured, the gate and verdict ``pass``) and reseals ``digests.json`` leaves
approvals the embedded text does not contain: every reader refuses that, naming the ledger text, as ``verify`` does.
The config likewise (``config_source``, ``config``): a direction flipped in the snapshot alone is refused.

Through the real CLI on a real run that fails its approved gate (0.75 measured, 0.8 approved).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.project import Project, make_project
from tests.e2e.test_forgery import _reseal as reseal
from tests.e2e.test_renderers_never_decide import forge
from tests.e2e.test_renderers_refuse import readers
from tests.e2e.test_verdicts import approve


def edit_record(folder: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "runrecord.json"
    record: dict[str, Any] = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record, indent=2))


def refused_by_every_reader(project: Project, snapshot: str) -> None:
    for name, result in readers(project, "run").items():
        assert result.code == 2, (name, result.code, result.out, result.err)
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.err, (name, result.err)
        assert "does not add up" in lines[0], (name, lines[0])
        assert f"{snapshot} snapshot" in lines[0] or f"{snapshot} text" in lines[0], (name, lines[0])


Record = dict[str, Any]

# Each edit is made after `forge` rewrote the snapshot, the scorecard and the ledger text with its fingerprint
# together (the consistent forgery only an anchor catches); `honest` is the record as the run wrote it.
SNAPSHOT_EDITS: dict[str, Callable[[Record, Record], None]] = {
    "the parsed snapshot's threshold lowered, the text kept": lambda record, honest: record.update(
        ledger_source=honest["ledger_source"], ledger_fingerprint=honest["ledger_fingerprint"]
    ),
    "the text lowered, its fingerprint kept": lambda record, honest: record.update(
        ledger_fingerprint=honest["ledger_fingerprint"]
    ),
    "the ledger text removed": lambda record, honest: record.pop("ledger_source"),
}


@pytest.mark.parametrize("edit", SNAPSHOT_EDITS.values(), ids=list(SNAPSHOT_EDITS))
def test_a_ledger_snapshot_approving_what_its_text_does_not_is_refused_by_every_reader(tmp_path, edit):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.8))
    assert project.run("--out", "run").code == 1
    folder = project.root / "run"
    honest = json.loads((folder / "runrecord.json").read_text())
    forge(folder / "scorecard.json", 0.7, "pass")
    edit_record(folder, lambda record: edit(record, honest))
    reseal(folder)

    refused_by_every_reader(project, "ledger")
    assert not (project.root / "page.html").exists() and not (project.root / "junit.xml").exists()
    assert project.cli("verify", "run").code == 1


CONFIG_EDITS: dict[str, Callable[[Record], None]] = {
    "the config text kept": lambda record: None,
    "the config text removed": lambda record: record.pop("config_source"),
}


@pytest.mark.parametrize("edit", CONFIG_EDITS.values(), ids=list(CONFIG_EDITS))
def test_a_config_snapshot_declaring_what_its_text_does_not_is_refused_by_every_reader(tmp_path, edit):
    """The gate's direction flipped in the config snapshot and the scorecard together (0.75 then 'meets' 0.8 when
    lower is better), the digests resealed: the config text the run kept still says higher is better."""
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=0.8))
    assert project.run("--out", "run").code == 1
    folder = project.root / "run"

    def flipped(record: Record) -> None:
        record["config"]["gates"]["accuracy"]["direction"] = "lower_is_better"
        edit(record)

    edit_record(folder, flipped)
    card = json.loads((folder / "scorecard.json").read_text())
    card["decision"]["gates"][0].update(direction="lower_is_better", outcome="pass", reasons=[])
    card["decision"].update(verdict="pass", ci_should_fail=False, exit_code=0)
    (folder / "scorecard.json").write_text(json.dumps(card, indent=2))
    reseal(folder)

    refused_by_every_reader(project, "config")
    assert project.cli("verify", "run").code == 1
