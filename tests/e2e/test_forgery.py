"""Green must not be forgeable (issue 10): every way found to turn CI green without an approval, through the CLI."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.project import DEFAULT_ROWS, Project, make_project, run_cli
from tests.e2e.test_verdicts import approve


def failing(tmp_path: Path) -> tuple[Project, dict[str, Any]]:
    """A project whose approved gate fails (0.75 measured, 0.9 approved)."""
    project = make_project(tmp_path)
    ledger = approve(project, threshold=0.9)
    project.write_ledger(ledger)
    return project, ledger


def rename_gate(project: Project, new: str) -> None:
    path = project.evals / "evalglass.yaml"
    config = yaml.safe_load(path.read_text())
    config["gates"] = {new: config["gates"]["accuracy"]}
    project.write_config(config)


def one_line_error(result: Any) -> str:
    assert result.code == 2, (result.code, result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    return lines[0]


# 1. An approved gate renamed or deleted in the config blocks the run until the ledger retires it.


@pytest.mark.parametrize("change", ["rename", "delete"])
def test_renaming_or_deleting_an_approved_gate_blocks_everywhere(tmp_path, change):
    project, ledger = failing(tmp_path)
    assert project.run().code == 1
    if change == "rename":
        rename_gate(project, "accuracy_v2")
    else:
        config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
        del config["gates"]
        project.write_config(config)
    result = project.run("--out", "out")
    assert result.code == 1, result.out
    flat = " ".join(result.out.split())
    assert "gate_undeclared" in flat and "verdict: blocked" in flat
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = next(item for item in card["decision"]["gates"] if item["name"] == "accuracy")
    assert (gate["active"], gate["outcome"]) == (True, "blocked")
    assert gate["reasons"][0]["code"] == "gate_undeclared"
    assert re.search(r"authority\.yaml:\d+", gate["reasons"][0]["message"])
    if change == "rename":
        assert "did you mean 'accuracy_v2'" in gate["reasons"][0]["message"]
    assert "gate_undeclared" in (tmp_path / "out" / "report.md").read_text()
    explained = project.cli("explain", "accuracy", "--run", "out")
    assert explained.code == 0 and "gate_undeclared" in explained.out and "active: false" in explained.out
    assert project.cli("verify", "out").code == 0  # verify re-derives the block from the snapshots

    ledger["gates"]["accuracy"]["active"] = False  # the host retires the approval
    project.write_ledger(ledger)
    assert project.run().code == 0


def test_an_undeclared_gate_cannot_be_dropped_from_the_payload_and_still_verify(tmp_path):
    project, _ = failing(tmp_path)
    rename_gate(project, "accuracy_v2")
    assert project.run("--out", "out").code == 1
    path = tmp_path / "out" / "scorecard.json"
    card = json.loads(path.read_text())
    card["decision"]["gates"] = [gate for gate in card["decision"]["gates"] if gate["name"] != "accuracy"]
    card["decision"].update(verdict="informational", ci_should_fail=False, exit_code=0)
    path.write_text(json.dumps(card))
    assert project.cli("view", "out").code == 2
    assert project.cli("verify", "out").code == 1


# 2. Names in the ledger that the config does not declare are refused, with the line and "did you mean".


@pytest.mark.parametrize(
    ("ledger_text", "line", "meant"),
    [
        ("version: 1\npolicy:\n  forbid_gates: [acuracy]\n", 3, "accuracy"),
        ("version: 1\njudges:\n  acuracy:\n    min_agreement: 0.8\n", 3, None),
        ("version: 1\ndatasets:\n  suit:\n    validated_gold: true\n", 3, "suite"),
    ],
)
def test_unknown_names_in_the_ledger_are_one_line_errors(tmp_path, ledger_text, line, meant):
    project = make_project(tmp_path)
    project.write_ledger(ledger_text)
    message = one_line_error(project.run())
    assert f"authority.yaml:{line}" in message
    if meant is not None:
        assert f"did you mean '{meant}'" in message


def test_a_misspelt_active_gate_entry_blocks_naming_the_line_and_the_gate_meant(tmp_path):
    project = make_project(tmp_path)
    ledger = approve(project, threshold=0.7)
    ledger["gates"] = {"acuracy": ledger["gates"]["accuracy"]}
    project.write_ledger(ledger)
    result = project.run("--format", "json")
    assert result.code == 1
    gate = next(item for item in result.json()["decision"]["gates"] if item["name"] == "acuracy")
    message = gate["reasons"][0]["message"]
    assert "did you mean 'accuracy'" in message and re.search(r"authority\.yaml:3\b", message)


def test_a_forbid_naming_a_renamed_gate_is_refused_not_ignored(tmp_path):
    project, ledger = failing(tmp_path)
    ledger["policy"] = {"forbid_gates": ["accuracy"]}
    ledger["gates"]["accuracy"]["active"] = False
    project.write_ledger(ledger)
    rename_gate(project, "accuracy_v2")
    message = one_line_error(project.run())
    assert "forbid" in message and "did you mean 'accuracy_v2'" in message


# 4. Thresholds are strictly typed finite numbers inside the metric's scale.


@pytest.mark.parametrize(
    ("threshold", "direction"),
    [
        ('"0.6"', None),
        ("true", None),
        (".nan", None),
        (".inf", None),
        ("-.inf", "lower_is_better"),
        ("-1", None),
        ("5", "lower_is_better"),
        ("1.5", None),
        ("-0.01", "lower_is_better"),
    ],
)
def test_a_threshold_that_approves_nothing_is_a_one_line_error(tmp_path, threshold, direction):
    project = make_project(tmp_path)
    if direction is not None:
        config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
        config["gates"]["accuracy"]["direction"] = direction
        project.write_config(config)
    fingerprint = approve(project)["gates"]["accuracy"]["fingerprint"]
    project.write_ledger(
        "version: 1\ngates:\n  accuracy:\n    active: true\n"
        f"    threshold: {threshold}\n    fingerprint: '{fingerprint}'\n"
    )
    message = one_line_error(project.run())
    assert "authority.yaml:5" in message, message


@pytest.mark.parametrize(("threshold", "code"), [(1.0, 1), (0.0, 0)])
def test_thresholds_at_the_ends_of_the_scale_are_accepted(tmp_path, threshold, code):
    project = make_project(tmp_path)
    project.write_ledger(approve(project, threshold=threshold))
    assert project.run().code == code  # 0.75 against 1.0 fails, against 0.0 passes: a decision, not a setup error


# 6. Recorded mode: the output field cannot be the gold field, and moving it makes approvals stale.


@pytest.mark.parametrize("field", ["expected", "expected.text", "meta"])
def test_a_recorded_output_overlapping_a_gated_reference_is_refused(tmp_path, field):
    project = make_project(tmp_path)
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["metrics"]["exact"]["reference"] = "meta.expected" if field == "meta" else "expected"
    config["task"]["field"] = field
    project.write_config(config)
    message = one_line_error(project.run())
    assert "task.field" in message and "reference" in message


def test_moving_the_recorded_output_field_makes_the_approval_stale(tmp_path):
    project = make_project(tmp_path)
    project.write_rows([{**row, "answer": row["expected"]} for row in DEFAULT_ROWS])
    project.write_ledger(approve(project, threshold=0.9))
    assert project.run().code == 1  # outputs in `output` fail
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["task"]["field"] = "answer"  # a copy of the gold answers
    project.write_config(config)
    result = project.run("--format", "json")
    assert result.code == 1
    codes = [reason["code"] for reason in result.json()["decision"]["gates"][0]["reasons"]]
    assert "approval_stale" in codes


# 8-10. verify is anchored; view and explain refuse a payload the ledger snapshot contradicts.


def _runrecord(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "out" / "runrecord.json"
    return path, json.loads(path.read_text())


def _forge_pass(tmp_path: Path) -> None:
    path = tmp_path / "out" / "scorecard.json"
    card = json.loads(path.read_text())
    gate = card["decision"]["gates"][0]
    gate.update(outcome="pass", threshold=0.5, reasons=[])
    card["decision"].update(verdict="pass", ci_should_fail=False, exit_code=0)
    path.write_text(json.dumps(card, indent=2) + "\n")


def _reseal(folder: Path) -> None:
    """What a forger who knows the format does: recompute every digest after editing."""
    path = folder / "digests.json"
    digests = json.loads(path.read_text())
    digests["files"] = {
        name: "sha256:" + hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in digests["files"]
    }
    path.write_text(json.dumps(digests))


def reseal_scores(folder: Path) -> None:
    """A forger who also knows the run record binds its scores: every scores hash the record keeps recomputed (and
    the record's bytes with it), then the digests (:func:`_reseal`)."""

    def sha(name: str) -> str:
        return "sha256:" + hashlib.sha256((folder / name).read_bytes()).hexdigest()

    path = folder / "runrecord.json"
    record = json.loads(path.read_text())
    record["scores_sha256"] = sha(record.get("scores_file", "scores.jsonl"))
    record["variant_scores"] = {name: sha(name) for name in record.get("variant_scores", {})}
    if not record["variant_scores"]:
        del record["variant_scores"]
    path.write_text(json.dumps(record, indent=2) + "\n")
    _reseal(folder)


@pytest.mark.parametrize("edit", ["threshold", "inactive", "dataset_fingerprint", "gate_removed_from_config"])
def test_a_forged_ledger_or_config_snapshot_does_not_verify(tmp_path, edit):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    path, record = _runrecord(tmp_path)
    if edit == "threshold":
        record["ledger"]["gates"]["accuracy"]["threshold"] = 0.5
        _forge_pass(tmp_path)
    elif edit == "inactive":
        record["ledger"]["gates"]["accuracy"]["active"] = False
    elif edit == "dataset_fingerprint":
        record["ledger"]["datasets"]["suite"]["fingerprint"] = "sha256:" + "1" * 64
    else:
        record["config"]["gates"] = {}
    path.write_text(json.dumps(record, indent=2) + "\n")
    _reseal(tmp_path / "out")
    result = project.cli("verify", "out", "--format", "json")
    assert result.code == 1
    fields = " ".join(item["field"] for item in result.json()["findings"])
    assert "runrecord.ledger" in fields or "runrecord.config" in fields


def test_a_consistent_rewrite_of_the_snapshot_is_caught_by_the_anchor(tmp_path):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    path, record = _runrecord(tmp_path)
    source = record["ledger_source"].replace("threshold: 0.9", "threshold: 0.5")
    record["ledger_source"] = source
    record["ledger_fingerprint"] = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    record["ledger"]["gates"]["accuracy"]["threshold"] = 0.5
    path.write_text(json.dumps(record, indent=2) + "\n")
    _forge_pass(tmp_path)
    from evalglass.core.scorecard import Scorecard
    from evalglass.engine.explore.reportfile import report_markdown

    # The forger re-renders report.md as the tool does (failing examples included), so only the anchor can tell.
    card = Scorecard.model_validate_json((tmp_path / "out" / "scorecard.json").read_text())
    (tmp_path / "out" / "report.md").write_text(report_markdown(tmp_path / "out", card))
    _reseal(tmp_path / "out")
    result = project.cli("verify", "out", "--format", "json")
    assert result.code == 1
    report = result.json()
    assert [item["field"] for item in report["findings"]] == ["anchor.ledger"]
    assert any("NOT decided under" in line for line in report["anchors"])
    # Anchored to a copy of the forged ledger instead, it is internally consistent: that is all it proves.
    forged = tmp_path / "forged.yaml"
    forged.write_text(source)
    assert project.cli("verify", "out", "--ledger", str(forged)).code == 0


@pytest.mark.parametrize(
    "edit",
    [
        "report_edited",
        "report_deleted",
        "ledger_fingerprint",
        "config_fingerprint",
        "config_path",
        "ledger_path",
        "run_json",
        "duplicate_verdict_key",
    ],
)
def test_every_artifact_is_covered(tmp_path, edit):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    folder = tmp_path / "out"
    path, record = _runrecord(tmp_path)
    if edit == "report_edited":
        report = folder / "report.md"
        report.write_text(report.read_text().replace("exit code 1", "exit code 0").replace("fail", "pass"))
    elif edit == "report_deleted":
        (folder / "report.md").unlink()
    elif edit in {"ledger_fingerprint", "config_fingerprint"}:
        record[edit] = "sha256:" + "2" * 64
        path.write_text(json.dumps(record))
    elif edit in {"config_path", "ledger_path"}:
        record[edit] = "elsewhere/" + Path(record[edit]).name
        path.write_text(json.dumps(record))
    elif edit == "run_json":
        manifest = json.loads((folder / "run.json").read_text())
        manifest["tool_version"] = "9.9.9"
        (folder / "run.json").write_text(json.dumps(manifest))
    else:
        card = (folder / "scorecard.json").read_text()
        (folder / "scorecard.json").write_text(card.replace('"verdict":', '"verdict": "pass", "verdict":', 1))
    result = project.cli("verify", "out")
    if edit == "duplicate_verdict_key":
        # The one exact JSON reader refuses an ambiguous artifact outright: exit 2, naming the file and the key.
        assert result.code == 2, result.out + result.err
        assert "scorecard.json" in result.err and "'verdict' appears twice" in result.err
        return
    assert result.code == 1, result.out + result.err
    assert "NOT verified" in result.out


def test_view_and_explain_refuse_a_payload_flipped_to_inactive(tmp_path):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    path = tmp_path / "out" / "scorecard.json"
    card = json.loads(path.read_text())
    gate = card["decision"]["gates"][0]
    gate.update(active=False, outcome="informational", threshold=None, reasons=[], compared=None)
    card["decision"].update(verdict="informational", ci_should_fail=False, exit_code=0)
    path.write_text(json.dumps(card))
    _reseal(tmp_path / "out")  # unsealed, the readers name the edited file first (test_damaged_artifacts.py)
    for command in (("view", "out"), ("explain", "--run", "out")):
        message = one_line_error(project.cli(*command))
        assert "ledger snapshot" in message and "accuracy" in message


def test_signed_runs_catch_a_consistent_rewrite_of_everything(tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
    project, _ = failing(tmp_path)
    assert run_cli("run", "--out", "out", cwd=tmp_path, env={"EVALGLASS_SIGNING_KEY": private}).code == 1
    good = project.cli("verify", "out", "--key", public)
    assert good.code == 0 and "signature: signed by the given key" in good.out
    unchecked = project.cli("verify", "out")
    assert unchecked.code == 0 and "not checked" in unchecked.out
    # An edit resealed without the key: digests match again, the signature does not.
    report = tmp_path / "out" / "report.md"
    report.write_text(report.read_text() + "\nApproved by the release manager.\n")
    _reseal(tmp_path / "out")
    forged = project.cli("verify", "out", "--key", public)
    assert forged.code == 1 and "digests.json.signature" in forged.out
    # The wrong key, and an unsigned run checked with a key, fail too.
    other = Ed25519PrivateKey.generate().public_key()
    other_hex = other.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()
    assert project.run("--out", "plain").code == 1
    assert project.cli("verify", "plain", "--key", other_hex).code == 1


def test_a_bad_signing_key_is_refused_before_the_run(tmp_path):
    failing(tmp_path)
    runs = tmp_path / ".evalglass" / "runs"
    before = sorted(runs.iterdir())
    result = run_cli("run", cwd=tmp_path, env={"EVALGLASS_SIGNING_KEY": "not a key"})
    message = one_line_error(result)
    assert "EVALGLASS_SIGNING_KEY" in message
    assert sorted(runs.iterdir()) == before


# 5. A JSON Schema `$ref` resolves only inside the document and the files the config names.


def _schema_project(tmp_path: Path, schema: dict[str, Any], refs: dict[str, str] | None = None) -> Project:
    project = make_project(tmp_path)
    project.write_rows([{"id": f"e{i}", "output": {"x": "s" if i % 2 else 1}} for i in range(4)])
    metric: dict[str, Any] = {"type": "json_schema", "schema": schema}
    if refs:
        metric["schema_refs"] = refs
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config.update(metrics={"shape": metric}, gates={"shape_ok": {"metric": "shape"}})
    project.write_config(config)
    return project


def test_a_json_schema_ref_is_never_fetched_nor_read_from_disk(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    local = tmp_path / "outside.json"
    local.write_text('{"type": "string"}')
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        refs = [f"http://127.0.0.1:{server.server_address[1]}/s.json", local.as_uri(), "outside.json"]
        for index, ref in enumerate(refs):
            (tmp_path / str(index)).mkdir()
            project = _schema_project(tmp_path / str(index), {"properties": {"x": {"$ref": ref}}})
            message = one_line_error(project.run())
            assert "$ref" in message and "does not resolve inside the schema" in message
    finally:
        server.shutdown()
        thread.join(timeout=10)
    assert hits == []


def test_schema_files_named_for_refs_resolve_and_are_fingerprinted(tmp_path):
    project = _schema_project(
        tmp_path, {"properties": {"x": {"$ref": "string.json"}}}, refs={"string.json": "schemas/string.json"}
    )
    (project.evals / "schemas").mkdir()
    (project.evals / "schemas" / "string.json").write_text('{"type": "string"}')
    result = project.run("--format", "json")
    assert result.code == 0, result.err
    metric = result.json()["metrics"][0]
    assert metric["estimate"]["point"] == 0.5
    before = project.gate_fingerprint("shape_ok")
    (project.evals / "schemas" / "string.json").write_text('{"type": ["string", "integer"]}')
    project.run()
    assert project.gate_fingerprint("shape_ok") != before


# 7. Check gates: the checker script is part of the approval, and an unbound PASS says so.

SCRIPT_PASSES = "import sys; sys.exit(0)\n"


def _check_gate_project(tmp_path: Path, *, bound: bool) -> Project:
    project = make_project(tmp_path)
    (project.evals / "checker.py").write_text(SCRIPT_PASSES)
    (project.evals / "target.txt").write_text("state\n")
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["checks"] = {"lint": {"command": ["{python}", "checker.py", "{target}"], "target": "target.txt"}}
    config["gates"] = {"lint_ok": {"check": "lint"}}
    project.write_config(config)
    if bound:
        state = project.cli("check", "lint", "--format", "json").json()["lint"]["observed_fingerprint"]
        config["gates"]["lint_ok"]["expect_state"] = state
        project.write_config(config)
    return project


def _approve_check(project: Project, **entry: Any) -> None:
    project.run()
    fingerprint = project.gate_fingerprint("lint_ok")
    project.write_ledger({"version": 1, "gates": {"lint_ok": {"active": True, "fingerprint": fingerprint, **entry}}})


def test_replacing_the_checker_script_makes_the_check_approval_stale(tmp_path):
    project = _check_gate_project(tmp_path, bound=True)
    _approve_check(project)
    assert project.run().code == 0
    (project.evals / "checker.py").write_text("import sys; sys.exit(0)  # accepts anything now\n")
    result = project.run("--format", "json")
    assert result.code == 1
    assert result.json()["decision"]["gates"][0]["reasons"][0]["code"] == "approval_stale"


def test_an_unbound_check_pass_is_visible_everywhere(tmp_path):
    project = _check_gate_project(tmp_path, bound=False)
    _approve_check(project)
    result = project.run("--out", "out")
    assert result.code == 0
    assert "unbound" in " ".join(result.out.split()).split("Gates")[-1]
    card = json.loads((tmp_path / "out" / "scorecard.json").read_text())
    gate = card["decision"]["gates"][0]
    assert gate["outcome"] == "pass" and any("unbound" in note for note in gate["notes"])
    assert "note: unbound" in (tmp_path / "out" / "report.md").read_text()
    assert "note: unbound" in project.cli("explain", "lint_ok", "--run", "out").out


def test_a_ledger_can_require_a_bound_check(tmp_path):
    project = _check_gate_project(tmp_path, bound=False)
    _approve_check(project, require_binding=True)
    result = project.run("--format", "json")
    assert result.code == 1
    assert result.json()["decision"]["gates"][0]["reasons"][0]["code"] == "check_unbound"
    bound = _check_gate_project(tmp_path / "b", bound=True) if (tmp_path / "b").mkdir() is None else None
    assert bound is not None
    _approve_check(bound, require_binding=True)
    assert bound.run().code == 0


def test_require_binding_on_a_metric_gate_is_refused(tmp_path):
    project = make_project(tmp_path)
    ledger = approve(project)
    ledger["gates"]["accuracy"]["require_binding"] = True
    project.write_ledger(ledger)
    assert "require_binding" in one_line_error(project.run())


def test_a_repeated_key_is_caught_even_with_the_digests_resealed(tmp_path):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    path = tmp_path / "out" / "scorecard.json"
    path.write_text(path.read_text().replace('"verdict":', '"verdict": "pass", "verdict":', 1))
    _reseal(tmp_path / "out")
    result = project.cli("verify", "out", "--format", "json")
    # Resealing the digests does not help: the exact JSON reader refuses the ambiguous file before anything else.
    assert result.code == 2, result.out + result.err
    assert "scorecard.json" in result.err and "'verdict' appears twice" in result.err


def test_a_pinned_ledger_refuses_a_config_pointing_at_a_ledger_of_its_own(tmp_path):
    project, ledger = failing(tmp_path)
    assert project.run("--ledger", "evals/authority.yaml").code == 1
    ledger["gates"]["accuracy"]["threshold"] = 0.5  # a pull request writes a friendlier ledger of its own...
    (project.evals / "mine.yaml").write_text(yaml.safe_dump(ledger))
    config = yaml.safe_load((project.evals / "evalglass.yaml").read_text())
    config["ledger"] = "mine.yaml"  # ...and points the config at it
    project.write_config(config)
    message = one_line_error(project.run("--ledger", "evals/authority.yaml"))
    assert "mine.yaml" in message and "--ledger" in message
    # Unpinned, the config may not choose its ledger either (a CI job that forgot --ledger): refused, never green.
    message = one_line_error(project.run())
    assert "mine.yaml" in message and "--ledger" in message and "pull request" in message, message
    assert one_line_error(project.cli("preflight")) == message
    # The host confirms a ledger kept elsewhere by pinning it: then it decides.
    assert project.run("--ledger", "evals/mine.yaml").code == 0


def test_a_file_added_after_the_run_is_named_but_vouches_for_nothing(tmp_path):
    project, _ = failing(tmp_path)
    assert project.run("--out", "out").code == 1
    (tmp_path / "out" / "notes.txt").write_text("looks good to me")
    result = project.cli("verify", "out", "--format", "json")
    assert result.code == 0
    assert any("notes.txt" in line and "not covered" in line for line in result.json()["anchors"])
