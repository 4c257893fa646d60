"""The hand-off from a run to the host's ledger, end to end through the CLI: `explain` prints every entry a gate
needs (the baseline's included, with its fingerprint and the CI key's), each saying where it goes, so a host who
pastes them into the ledger `init` wrote gets a ledger that loads (no second `gates:` key) and gates that decide; the
baseline then follows main's newest signed run with no ledger edit per merge. And `preflight` says a baseline is
not comparable (naming what differs) before a run does."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.e2e.project import CliResult, base_config, make_project, run_cli

# Many real CLI processes per test on a shared machine: generous, bounded time (the default is per test, 120 s).
pytestmark = pytest.mark.timeout(600)

GATE = {"metric": "exact", "compare_to": "main", "direction": "higher_is_better", "proposed_margin": 0.05}


def ci_key() -> str:
    """An Ed25519 private key as CI holds it (EVALGLASS_SIGNING_KEY)."""
    raw = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return raw.hex()


def job(branch: str, key: str | None = None) -> dict[str, str]:
    """The environment of a CI job on ``branch`` (GitLab's variables), signing with ``key`` when it holds it."""
    env = {"GITLAB_CI": "true", "CI_COMMIT_REF_NAME": branch}
    if key is not None:
        env["EVALGLASS_SIGNING_KEY"] = key
    return env


#: One block of `explain`'s text: where it goes, then the lines to paste (up to the next blank line).
PLACED = re.compile(r"^  In (?P<path>\S+), add under `(?P<section>\w+):` \(line \d+\):\n\n(?P<block>(?:  .*\n)+)", re.M)


def paste(ledger: Path, explained: str) -> int:
    """Do what a host does with `explain`'s text: each block under its section's key, as it says. Returns how many
    blocks were pasted; a block placed any other way (a second section key, a replacement) fails the test."""
    assert "replace" not in explained and "add at the end" not in explained, explained
    pasted = 0
    for found in PLACED.finditer(explained + "\n"):
        lines = ledger.read_text().splitlines()
        at = lines.index(f"{found['section']}:")
        lines[at + 1 : at + 1] = found["block"].rstrip("\n").splitlines()
        ledger.write_text("\n".join(lines) + "\n")
        pasted += 1
    return pasted


def gates_of(result: CliResult) -> dict[str, dict[str, Any]]:
    assert result.code in (0, 1), result.out + result.err
    return {gate["name"]: gate for gate in result.json()["decision"]["gates"]}


def write_outputs(dataset: Path, right: int) -> None:
    """The system under test's answers in the dataset `init` wrote: the first ``right`` examples answered right."""
    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    for n, row in enumerate(rows):
        row["output"] = row["expected"] if n < right else "something else"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_explains_entries_paste_into_the_init_ledger_and_the_baseline_then_follows_main(tmp_path: Path) -> None:
    assert run_cli("init", cwd=tmp_path).code == 0
    evals = tmp_path / "evals"
    config = yaml.safe_load((evals / "evalglass.yaml").read_text())
    config["gates"]["no-regression"] = GATE
    (evals / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    rows = len((evals / "dataset.jsonl").read_text().splitlines())
    write_outputs(evals / "dataset.jsonl", rows)
    key = ci_key()

    main = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
    assert main.code == 0, main.err
    pull_request = run_cli("run", "--no-progress", cwd=tmp_path, env=job("feature"))
    assert pull_request.code == 0, pull_request.err

    explained = run_cli("explain", cwd=tmp_path, env=job("feature"))
    assert explained.code == 0, explained.err
    # The gate, the gold (once, though both gates need it) and the baseline: the one that follows main's signed runs.
    assert paste(evals / "authority.yaml", explained.out) == 4, explained.out
    ledger = yaml.safe_load((evals / "authority.yaml").read_text())
    assert sorted(ledger["gates"]) == ["accuracy", "no-regression"] and list(ledger["datasets"]) == ["my-suite"]
    baseline = ledger["baselines"]["main"]
    assert baseline["branch"] == "main" and baseline["signed_by"].startswith("sha256:")
    assert "fingerprint" not in baseline and "fingerprint: null" not in explained.out

    preflight = run_cli("preflight", "--format", "json", cwd=tmp_path, env=job("feature"))
    assert preflight.code == 0, preflight.out + preflight.err
    assert {gate["standing"] for gate in preflight.json()["gates"]} == {"would_decide"}
    gates = gates_of(run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("feature")))
    assert gates["no-regression"]["outcome"] == "pass" and gates["accuracy"]["outcome"] == "pass", gates
    assert gates["no-regression"]["comparison"]["baseline_run_id"] == main.json()["run_id"]

    # main moves on (one answer fewer right) and nobody edits the ledger: the next pull request compares with it.
    ledger_text = (evals / "authority.yaml").read_text()
    write_outputs(evals / "dataset.jsonl", rows - 1)
    newer = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
    assert newer.code in (0, 1), newer.err
    write_outputs(evals / "dataset.jsonl", rows)
    gates = gates_of(run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("feature")))
    assert (evals / "authority.yaml").read_text() == ledger_text
    gate = gates["no-regression"]
    assert gate["outcome"] == "pass" and gate["comparison"]["baseline_run_id"] == newer.json()["run_id"], gate
    assert gate["value"] > 0  # better than main's newest, not equal to the first run

    # A run of main made without the key (a laptop, a fork) is newer still, and worse: it is never the baseline.
    write_outputs(evals / "dataset.jsonl", 0)
    assert run_cli("run", "--no-progress", cwd=tmp_path, env=job("main")).code == 1
    write_outputs(evals / "dataset.jsonl", rows)
    gate = gates_of(run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("feature")))[
        "no-regression"
    ]
    assert gate["comparison"]["baseline_run_id"] == newer.json()["run_id"], gate
    assert any("baseline_unsigned" in note for note in gate["notes"]), gate


def comparable_project(tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    """A pinned baseline run (approved by fingerprint) and an approved comparative gate that would decide."""
    project = make_project(tmp_path, gates={"no-regression": GATE})
    assert project.run("--out", "runs/base").code == 0
    fingerprint = project.cli("compare", "runs/base", "runs/base", "--format", "json").json()["base"]["fingerprint"]
    ledger = {
        "version": 1,
        "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
        "baselines": {"main": {"run": "../runs/base", "fingerprint": fingerprint}},
        "gates": {"no-regression": {"active": True, "fingerprint": approved(project), "margin": 0.05}},
    }
    project.write_ledger(ledger)
    return project, ledger


def approved(project: Any) -> str:
    """The gate's fingerprint as the host takes it before running anything: from preflight."""
    shown = project.cli("preflight", "--format", "json")
    return str(next(g for g in shown.json()["gates"] if g["name"] == "no-regression")["fingerprint"])


def preview(project: Any) -> tuple[int, dict[str, Any]]:
    shown = project.cli("preflight", "--format", "json")
    assert shown.code in (0, 1), shown.err
    return shown.code, next(g for g in shown.json()["gates"] if g["name"] == "no-regression")


def test_preflight_says_not_comparable_before_the_run_does(tmp_path: Path) -> None:
    project, ledger = comparable_project(tmp_path)
    code, gate = preview(project)
    assert code == 0 and gate["standing"] == "would_decide", gate

    # The metric now ignores case, and the host re-approves the gate: the baseline measured something else.
    metrics = {"exact": {"type": "exact_match", "reference": "expected", "normalize": {"case": True}}}
    project.write_config(base_config(gates={"no-regression": GATE}, metrics=metrics))
    ledger["gates"]["no-regression"]["fingerprint"] = approved(project)
    project.write_ledger(ledger)
    code, gate = preview(project)
    assert code == 1 and gate["standing"] == "blocked", gate
    assert [reason["code"] for reason in gate["reasons"]] == ["not_comparable"]
    message = gate["reasons"][0]["message"]
    assert message.startswith("metric_definition:") and "metric.normalize.case: false → true" in message, message
    # ... which is what the run then says.
    run = gates_of(project.run("--out", "runs/cand", "--format", "json"))["no-regression"]
    assert run["outcome"] == "blocked"
    assert [reason["code"] for reason in run["reasons"]] == ["not_comparable"]
    assert run["reasons"][0]["message"] == message

    # An example the baseline never measured: not the same example set, said before anything runs.
    project.write_config(base_config(gates={"no-regression": GATE}))
    ledger["gates"]["no-regression"]["fingerprint"] = approved(project)
    project.write_ledger(ledger)
    project.write_rows(extra_lines=[json.dumps({"id": "ex-new", "expected": "yes", "output": "yes"})])
    code, gate = preview(project)
    codes = [reason["code"] for reason in gate["reasons"]]
    assert code == 1 and "not_comparable" in codes, gate
    assert any("1 only in this run" in reason["message"] for reason in gate["reasons"]), gate


def test_a_committed_export_of_mains_signed_run_is_the_baseline_on_a_fresh_checkout(tmp_path: Path) -> None:
    """No run history in CI: main's signed run, exported into the repository, is found through `folder:`; the same
    folder holding an unsigned run (a pull request re-exporting its own) is refused, never green."""
    project = make_project(tmp_path, gates={"no-regression": GATE})
    key = ci_key()
    main = run_cli("run", "--no-progress", "--format", "json", cwd=tmp_path, env=job("main", key))
    assert main.code == 0, main.err
    exported = run_cli("history", "export", main.json()["run_id"], "evals/baseline-main", cwd=tmp_path)
    assert exported.code == 0, exported.err
    signer = run_cli("explain", "no-regression", "--format", "json", cwd=tmp_path, env=job("feature"))
    entry = yaml.safe_load(signer.json()[0]["ledger_entry"])["baselines"]["main"]
    project.write_ledger(
        {
            "version": 1,
            "datasets": {"suite": {"validated_gold": True, "fingerprint": project.dataset_fingerprint()}},
            "baselines": {"main": {**entry, "folder": "baseline-main"}},
            "gates": {"no-regression": {"active": True, "fingerprint": approved(project), "margin": 0.05}},
        }
    )
    for state in (tmp_path / ".evalglass", tmp_path / "evals" / ".evalglass-cache.sqlite"):
        shutil.rmtree(state, ignore_errors=True)  # a fresh checkout: no history, no last run

    fresh = run_cli("run", "--no-progress", "--no-history", "--format", "json", cwd=tmp_path, env=job("feature"))
    gate = gates_of(fresh)["no-regression"]
    assert gate["outcome"] == "pass" and gate["comparison"]["baseline_run_id"] == main.json()["run_id"], gate

    # The folder replaced by an unsigned run of the same suite (any pull request can commit one): refused.
    unsigned = run_cli("run", "--no-progress", "--no-history", "--out", "runs/unsigned", cwd=tmp_path, env=job("main"))
    assert unsigned.code in (0, 1), unsigned.err
    shutil.rmtree(tmp_path / "evals" / "baseline-main")
    shutil.copytree(tmp_path / "runs" / "unsigned", tmp_path / "evals" / "baseline-main")
    result = run_cli("run", "--no-progress", "--no-history", "--format", "json", cwd=tmp_path, env=job("feature"))
    gate = gates_of(result)["no-regression"]
    assert result.code == 1 and gate["outcome"] == "blocked", gate
    assert [reason["code"] for reason in gate["reasons"]] == ["baseline_unsigned"], gate
