"""A baseline approved as a source ("the newest run of this suite on main, signed by the CI's key, at most N days
old"), end to end through the CLI with a real run history (SQLite, and a real PostgreSQL server): main's runs are
recorded and signed by a "CI" key, a pull request's run compares with the newest, a newer main run is followed
with no ledger edit, and runs the ledger does not trust (unsigned, another key, another branch, too old) never
become the baseline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import create_engine, text

from evalglass.engine.runs.digests import key_fingerprint
from tests.e2e.project import CliResult, Project, run_cli
from tests.history.postgres import Server

# Real CLI processes (and a real database server) on a shared machine: generous, bounded time.
pytestmark = pytest.mark.timeout(900)

IDS = [f"q{i:02d}" for i in range(50)]
CONFIG = {
    "version": 1,
    "dataset": {"name": "support", "path": "gold.jsonl"},
    "task": {"type": "recorded", "path": "outputs.jsonl", "field": "output"},
    "metrics": {"exact": {"type": "exact_match", "reference": "expected"}},
    "gates": {"no-regression": {"metric": "exact", "compare_to": "main", "direction": "higher_is_better"}},
}


class Key:
    """An Ed25519 key pair as CI holds it: the private key for EVALGLASS_SIGNING_KEY, the public one to approve."""

    def __init__(self) -> None:
        key = Ed25519PrivateKey.generate()
        raw = serialization.Encoding.Raw
        self.private = key.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()).hex()
        self.public = key.public_key().public_bytes(raw, serialization.PublicFormat.Raw).hex()
        self.fingerprint = key_fingerprint(self.public)


class Repo:
    """One project, one history database; each run made as a CI job on a branch would make it."""

    def __init__(self, root: Path, db_url: str) -> None:
        self.root, self.db_url = root, db_url
        self.project = Project(root)
        self.project.evals.mkdir(parents=True)
        self.project.write_config(CONFIG)
        gold = "".join(json.dumps({"id": i, "expected": "a"}) + "\n" for i in IDS)
        (self.project.evals / "gold.jsonl").write_text(gold)
        self.project.write_ledger({"version": 1})
        self.runs = 0

    def outputs(self, correct: int) -> None:
        """The system under test's answers: the first ``correct`` examples right."""
        rows = [{"id": i, "output": "a" if n < correct else "b"} for n, i in enumerate(IDS)]
        (self.project.evals / "outputs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))

    def env(self, branch: str, key: Key | None = None) -> dict[str, str]:
        env = {"EVALGLASS_DB": self.db_url, "GITLAB_CI": "true", "CI_COMMIT_REF_NAME": branch}
        if key is not None:
            env["EVALGLASS_SIGNING_KEY"] = key.private
        return env

    def run(self, branch: str, correct: int, key: Key | None = None, *args: str) -> CliResult:
        self.outputs(correct)
        self.runs += 1
        out = f"runs/{self.runs:02d}-{branch}"
        return run_cli(
            "run", "--no-progress", "--out", out, "--format", "json", *args, cwd=self.root, env=self.env(branch, key)
        )

    def main_run(self, correct: int, key: Key | None) -> str:
        done = self.run("main", correct, key)
        assert done.code in (0, 1), done.err
        assert "history" not in done.err, done.err  # recorded
        return str(done.json()["run_id"])

    def approve(self, key: Key, max_age_days: int = 30, margin: float = 0.05) -> None:
        """The host's ledger: the gold, the gate's margin, and the baseline as a source (no run named)."""
        probe = run_cli("preflight", "--format", "json", cwd=self.root, env=self.env("feature"))
        gate = next(g for g in probe.json()["gates"] if g["name"] == "no-regression")
        self.project.write_ledger(
            {
                "version": 1,
                "datasets": {
                    "support": {"validated_gold": True, "fingerprint": probe.json()["dataset"]["fingerprint"]}
                },
                "baselines": {"main": {"branch": "main", "signed_by": key.fingerprint, "max_age_days": max_age_days}},
                "gates": {"no-regression": {"active": True, "fingerprint": gate["fingerprint"], "margin": margin}},
            }
        )

    def pull_request(self, correct: int, *args: str) -> dict[str, Any]:
        done = self.run("feature", correct, None, *args)
        assert done.code in (0, 1), done.err
        return gate_of(done)

    def preview(self) -> dict[str, Any]:
        shown = run_cli("preflight", "--format", "json", cwd=self.root, env=self.env("feature"))
        assert shown.code in (0, 1), shown.err
        return next(g for g in shown.json()["gates"] if g["name"] == "no-regression")


def gate_of(result: CliResult) -> dict[str, Any]:
    return next(g for g in result.json()["decision"]["gates"] if g["name"] == "no-regression")


def codes(gate: dict[str, Any]) -> list[str]:
    return [reason["code"] for reason in gate["reasons"]]


def test_the_gate_follows_mains_newest_signed_run_and_passes_over_runs_it_does_not_trust(
    tmp_path: Path, db_url: str
) -> None:
    ci, stranger = Key(), Key()
    repo = Repo(tmp_path, db_url)
    first = repo.main_run(40, ci)
    repo.approve(ci)

    # A pull request as good as main: compared with main's newest signed run, it passes.
    gate = repo.pull_request(40)
    assert gate["outcome"] == "pass", gate
    assert gate["comparison"]["baseline_run_id"] == first and gate["value"] == 0.0

    # main moves on (45 right): the same pull request is now 10 points worse, and the gate says so with no ledger edit.
    ledger_before = (repo.project.evals / "authority.yaml").read_bytes()
    second = repo.main_run(45, ci)
    gate = repo.pull_request(40)
    assert (repo.project.evals / "authority.yaml").read_bytes() == ledger_before
    assert gate["comparison"]["baseline_run_id"] == second
    assert gate["outcome"] == "fail" and gate["value"] == pytest.approx(-0.1), gate

    # Newer runs on main that the ledger does not trust: made without the key (a laptop, a fork's `main`), and signed
    # by another key. Both would make the pull request pass; neither becomes the baseline, and both are named.
    unsigned = repo.main_run(30, None)
    foreign = repo.main_run(30, stranger)
    result = repo.run("feature", 40)
    gate = gate_of(result)
    assert gate["comparison"]["baseline_run_id"] == second and gate["outcome"] == "fail", gate
    [note] = [note for note in gate["notes"] if "passed over" in note]
    assert f"{foreign} (baseline_untrusted)" in note and f"{unsigned} (baseline_unsigned)" in note
    folder = repo.root / "runs" / f"{repo.runs:02d}-feature"
    recorded = json.loads((folder / "runrecord.json").read_text())["baselines"]["main"]
    assert recorded["signed_by"] == ci.fingerprint and recorded["branch"] == "main" and len(recorded["skipped"]) == 2
    # The run keeps the baseline and the signed digest list that vouches for it: verify needs nothing else.
    assert sorted(p.name for p in (folder / "baselines" / "main").iterdir()) == [
        "digests.json",
        "runrecord.json",
        "scores.jsonl",
    ]
    verified = run_cli("verify", str(folder), cwd=repo.root)
    assert verified.code == 0, verified.out + verified.err

    # preflight asks the same questions of the same history, before anything runs.
    preview = repo.preview()
    assert preview["standing"] == "would_decide" and preview["reasons"] == []
    assert any(f"{unsigned} (baseline_unsigned)" in n for n in preview["notes"])


def test_a_signed_run_of_another_branch_relabelled_main_in_the_database_is_refused(tmp_path: Path, db_url: str) -> None:
    """Whoever can write the database can change a run's branch column, but not the branch its signature covers."""
    ci = Key()
    repo = Repo(tmp_path, db_url)

    def relabelled_release_run() -> str:
        release = repo.run("release", 45, ci)
        assert release.code in (0, 1), release.err
        run_id = str(release.json()["run_id"])
        engine = create_engine(db_url)
        with engine.begin() as connection:
            connection.execute(text("UPDATE runs SET git_branch = 'main' WHERE run_id = :r"), {"r": run_id})
        engine.dispose()
        return run_id

    relabelled_release_run()
    repo.approve(ci)
    gate = repo.pull_request(40)
    assert gate["outcome"] == "blocked" and codes(gate) == ["baseline_wrong_branch"], gate
    assert "release" in gate["reasons"][0]["message"]
    assert [r["code"] for r in repo.preview()["reasons"]] == ["baseline_wrong_branch"]

    # Once main has a signed run of its own, it is the baseline; a newer relabelled run is passed over, and named.
    main = repo.main_run(40, ci)
    newer = relabelled_release_run()
    gate = repo.pull_request(40)
    assert gate["outcome"] == "pass" and gate["comparison"]["baseline_run_id"] == main, gate
    assert any(f"{newer} (baseline_wrong_branch)" in note for note in gate["notes"])


@pytest.mark.parametrize("signer", ["nobody", "stranger"])
def test_with_no_trusted_run_the_gate_blocks_with_the_newest_runs_reason(
    tmp_path: Path, db_url: str, signer: str
) -> None:
    ci = Key()
    repo = Repo(tmp_path, db_url)
    repo.main_run(40, None if signer == "nobody" else Key())
    repo.approve(ci)
    gate = repo.pull_request(40)
    expected = "baseline_unsigned" if signer == "nobody" else "baseline_untrusted"
    assert gate["outcome"] == "blocked" and codes(gate) == [expected], gate
    assert ci.fingerprint[7:19] in gate["reasons"][0]["message"]  # the key, as messages shorten it
    assert [r["code"] for r in repo.preview()["reasons"]] == [expected]


#: A run made with an older clock (as a run that started that long ago was), signed by the CI's key.
OLD_RUN = """
import sys
from datetime import datetime
from pathlib import Path

from evalglass.engine.jobs.pipeline import RunOptions, run

run(Path(sys.argv[1]), RunOptions(out=Path(sys.argv[2]), now=datetime.fromisoformat(sys.argv[3])))
"""


def test_a_baseline_older_than_max_age_days_blocks_and_an_older_trusted_run_is_never_taken_instead(
    tmp_path: Path, db_url: str
) -> None:
    ci = Key()
    repo = Repo(tmp_path, db_url)
    repo.outputs(40)
    started = (datetime.now(UTC) - timedelta(days=10)).isoformat()
    made = subprocess.run(
        [sys.executable, "-c", OLD_RUN, str(repo.project.evals / "evalglass.yaml"), "runs/old", started],
        cwd=repo.root,
        env={**os.environ, **repo.env("main", ci)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    imported = run_cli("history", "import", "runs/old", cwd=repo.root, env=repo.env("main"))
    assert imported.code == 0, imported.err
    repo.approve(ci, max_age_days=7)
    gate = repo.pull_request(40)
    assert gate["outcome"] == "blocked" and codes(gate) == ["baseline_too_old"], gate
    assert "max_age_days" in gate["reasons"][0]["message"] and "10 days" in gate["reasons"][0]["message"]
    assert [r["code"] for r in repo.preview()["reasons"]] == ["baseline_too_old"]

    # A fresh signed run on main is taken as soon as it is recorded.
    repo.main_run(40, ci)
    assert repo.pull_request(40)["outcome"] == "pass"


def test_the_ledger_entry_explain_prints_is_the_one_that_follows_main(tmp_path: Path, db_url: str) -> None:
    """No fingerprint to dig out: `explain` reads main's newest signed run and prints the source-style entry with the
    CI key's fingerprint (and the pinned entry, fingerprint filled in, as the alternative)."""
    ci = Key()
    repo = Repo(tmp_path, db_url)
    first = repo.main_run(40, ci)
    pr = repo.run("feature", 40)
    assert pr.code == 0, pr.err
    shown = run_cli("explain", "no-regression", "--format", "json", cwd=repo.root, env=repo.env("feature"))
    assert shown.code == 0, shown.err
    [explained] = shown.json()
    entry = yaml.safe_load(explained["ledger_entry"])["baselines"]["main"]
    assert entry == {"branch": "main", "signed_by": ci.fingerprint, "max_age_days": 30, "approved_by": "<your name>"}
    pinned = run_cli("compare", first, first, "--format", "json", cwd=repo.root, env=repo.env("feature"))
    assert f'# fingerprint: "{pinned.json()["base"]["fingerprint"]}"' in explained["ledger_entry"]


def _redate(db_url: str, run_id: str, moment: datetime) -> None:
    """What a job holding the history's credentials can do: the ``created_at`` column is not signed."""
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(
            text("UPDATE runs SET created_at = :m WHERE run_id = :r"), {"m": moment.replace(tzinfo=None), "r": run_id}
        )
    engine.dispose()


def test_an_older_signed_run_of_main_re_dated_in_the_database_never_becomes_the_baseline(
    tmp_path: Path, db_url: str
) -> None:
    """The history lists candidates by its ``created_at`` column, which no signature covers: a row re-dated past
    main's newest run is refused by the start time its signed run record states, and named."""
    ci = Key()
    repo = Repo(tmp_path, db_url)
    weak = repo.main_run(30, ci)
    strong = repo.main_run(45, ci)
    repo.approve(ci)
    _redate(db_url, weak, datetime.now(UTC) + timedelta(hours=1))
    gate = repo.pull_request(40)
    assert gate["comparison"]["baseline_run_id"] == strong and gate["outcome"] == "fail", gate
    [note] = [note for note in gate["notes"] if "passed over" in note]
    assert weak in note and "created_at" in note, note
    preview = repo.preview()
    assert any(weak in n and "created_at" in n for n in preview["notes"]), preview


def _documented_setup(server: Server, tag: str) -> tuple[str, str]:
    """The two roles and the database of docs/history.md's team set-up, its SQL run as written (names made unique
    on the shared server): (main's URL, the pull requests' URL)."""
    import re

    import psycopg

    docs = (Path(__file__).parents[2] / "docs" / "history.md").read_text()
    section = docs.split("## A team set-up", 1)[1]
    server_sql, database_sql = re.findall(r"```sql\n(.*?)```", section, flags=re.S)[:2]
    names = {"evalglass_pr": f"pr_{tag}", "evalglass": f"owner_{tag}", "evals": f"evals_{tag}"}

    def named(sql: str) -> list[str]:
        sql = re.sub(r"\b(evalglass_pr|evalglass|evals)\b", lambda found: names[found.group(1)], sql)
        lines = [line.strip() for line in sql.splitlines() if line.strip() and not line.strip().startswith("--")]
        return [statement for statement in " ".join(lines).split(";") if statement.strip()]

    base = f"postgresql://postgres@127.0.0.1:{server.port}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as connection:
        for statement in named(server_sql):
            connection.execute(statement.encode())
    with psycopg.connect(f"{base}/{names['evals']}", autocommit=True) as connection:
        for statement in named(database_sql):
            connection.execute(statement.encode())
    url = f"postgresql+psycopg://{{}}@127.0.0.1:{server.port}/{names['evals']}"
    return url.format(names["evalglass"]), url.format(names["evalglass_pr"])


def test_with_the_documented_roles_a_pull_requests_job_records_its_run_but_cannot_delete_or_re_date_mains(
    tmp_path: Path, postgres: Server
) -> None:
    """A signature says who made a run, never that it is the newest: whoever can delete main's newest rows (or hide
    them by re-dating or relabelling) chooses an older signed run as the next baseline. The team set-up's roles keep
    that out of a pull request's job: it records its run and reads the history, and every change to main's rows is
    refused by the database."""
    ci = Key()
    main_url, pr_url = _documented_setup(postgres, f"{os.getpid()}_{datetime.now(UTC).strftime('%H%M%S%f')}")
    repo = Repo(tmp_path, main_url)
    repo.main_run(30, ci)
    strong = repo.main_run(45, ci)
    repo.approve(ci)

    repo.db_url = pr_url
    done = repo.run("feature", 40)
    assert done.code == 1 and "history" not in done.err, done.err  # recorded, with the pull request's role
    gate = gate_of(done)
    assert gate["comparison"]["baseline_run_id"] == strong and gate["outcome"] == "fail", gate

    engine = create_engine(pr_url)
    for change in (
        "DELETE FROM runs WHERE run_id = :r",
        "UPDATE runs SET created_at = created_at - interval '1 day' WHERE run_id = :r",
        "UPDATE runs SET git_branch = 'elsewhere' WHERE run_id = :r",
        "DELETE FROM artifact_chunks WHERE run_pk = (SELECT pk FROM runs WHERE run_id = :r)",
    ):
        with pytest.raises(Exception, match="permission denied"), engine.begin() as connection:
            connection.execute(text(change), {"r": strong})
    with engine.connect() as connection:
        listed = connection.execute(text("SELECT run_id FROM runs WHERE git_branch = 'main'")).scalars().all()
    engine.dispose()
    assert strong in listed
    assert gate_of(repo.run("feature", 40))["comparison"]["baseline_run_id"] == strong
