"""Case 10: the run history at scale (issue 16).

    python benchmarks/bench_history.py                        # 1,000,000 examples and 10,000 runs, best of 3
    python benchmarks/bench_history.py --n 2000 --runs 200 --repeats 1   # the smoke size

(a) Recording a large run. One run of n examples is made with `--no-history` (untimed), then, in rotation, best of
--repeats:
  - reference: `evalglass run --no-history` writing that same folder again (the run's whole cost), and
    `copy.py`-style plain copy of the folder's bytes (read + write, what "writing the folder again" costs at least);
  - `evalglass history import out` into a new SQLite history: one transaction, every artifact zlib-compressed in
    4 MiB chunks with its SHA-256.
  Target: recording costs at most writing the folder again (the run). Reported with CPU beside wall time.

(b) Listing a large history. A SQLite history is filled with --runs runs (rows written directly through the models,
each with 3 metrics, a gate and 2 small artifacts, branches alternating), then `evalglass history --metric exact`,
`history --branch main --gate accuracy` and `view main@latest` are timed against `evalglass --help` (the process
start). Target: under 1 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zlib
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import CONFIG, Measurement, compile_bytecode, generate, machine, rotated  # noqa: E402

COPY = (
    "import shutil, sys, os\n"
    "shutil.copytree(sys.argv[1], sys.argv[2])\n"
    "for root, _, names in os.walk(sys.argv[2]):\n"
    "    for name in names:\n"
    "        fd = os.open(os.path.join(root, name), os.O_RDONLY); os.fsync(fd); os.close(fd)\n"
)


def recording(python: str, work: Path, n: int, repeats: int) -> tuple[dict[str, Measurement], int, int]:
    """``run`` (the run writing its folder again), ``copy`` (a plain copy of the folder) and ``record`` (`history
    import` of it), each its best of ``repeats`` in rotation; with the folder's size and the stored size in bytes."""
    evalglass = [python, "-m", "evalglass"]
    folder = work / "record"
    folder.mkdir()
    (folder / "evalglass.yaml").write_text(CONFIG.format(dataset=generate(n), gates=""))
    (folder / "authority.yaml").write_text("version: 1\n")
    subprocess.run([*evalglass, "run", "--out", "out", "--no-history"], cwd=folder, check=True, capture_output=True)
    size = sum(path.stat().st_size for path in (folder / "out").rglob("*") if path.is_file())
    wrapper = (
        "import os, subprocess, sys\n"
        "for name in os.listdir('.'):\n"
        "    if name.startswith('h.sqlite') or name == 'copy':\n"
        "        subprocess.run(['rm', '-rf', name], check=True)\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )  # each measured command starts from no history and no copy
    start = [python, "-c", wrapper, python]
    best = rotated(
        repeats,
        [
            ("run", [*evalglass, "run", "--out", "again", "--no-history"], folder, {0}),
            ("copy", [*start, "-c", COPY, "out", "copy"], folder, {0}),
            ("record", [*start, "-m", "evalglass", "history", "--db", "h.sqlite", "import", "out"], folder, {0}),
        ],
    )
    return best, size, (folder / "h.sqlite").stat().st_size


def recording_rows(n: int, best: dict[str, Measurement], size: int, stored: int) -> list[str]:
    run, copy, record = best["run"], best["copy"], best["record"]
    return [
        f"| {n:,} | reference: the run writing this folder again ({size / 1e6:.0f} MB) | {run.seconds:.2f} s "
        f"(CPU {run.cpu_seconds:.2f} s) | {run.peak_rss_mb:.0f} MB | |",
        f"| {n:,} | reference: a plain copy of the folder, fsynced | {copy.seconds:.2f} s "
        f"(CPU {copy.cpu_seconds:.2f} s) | {copy.peak_rss_mb:.0f} MB | |",
        f"| {n:,} | case 10a: `history import` (SQLite, {stored / 1e6:.0f} MB stored) | {record.seconds:.2f} s "
        f"(CPU {record.cpu_seconds:.2f} s) | {record.peak_rss_mb:.0f} MB | {record.seconds / run.seconds:.2f}× run, "
        f"{record.seconds / copy.seconds:.2f}× copy |",
    ]


def filled_history(path: Path, runs: int) -> None:
    from sqlalchemy import insert

    from evalglass.history.schema import ArtifactChunkRow, ArtifactRow, GateResultRow, MetricResultRow, RunRow
    from evalglass.history.session import open_history

    engine = open_history(f"sqlite:///{path}")
    start = datetime(2026, 1, 1)
    blob = zlib.compress(b'{"ids": ["a"], "scores": {"exact": [1.0]}}\n' * 20)
    with engine.begin() as connection:
        for first in range(0, runs, 1000):
            batch = range(first, min(runs, first + 1000))
            connection.execute(
                insert(RunRow),
                [
                    {
                        "pk": i + 1, "run_id": f"run-{i:06d}", "created_at": start + timedelta(minutes=i),
                        "recorded_at": start + timedelta(minutes=i, seconds=5), "source": "run",
                        "tool_version": "0.1.0", "config_path": "evals/evalglass.yaml",
                        "config_fingerprint": "sha256:c",
                        "ledger_fingerprint": "sha256:l", "dataset_name": "bench", "dataset_fingerprint": "sha256:d",
                        "definitions_fingerprint": "sha256:f", "scores_sha256": "sha256:s", "examples": 1000,
                        "verdict": "pass", "exit_code": 0, "git_commit": f"{i:040x}",
                        "git_branch": "main" if i % 2 else f"feature-{i % 50}", "git_dirty": False,
                        "ci_provider": "github", "ci_job_url": f"https://ci.example/{i}",
                    }
                    for i in batch
                ],
            )  # fmt: skip
            connection.execute(
                insert(MetricResultRow),
                [
                    {"run_pk": i + 1, "name": name, "point": 0.8, "low": 0.78, "high": 0.82, "level": 0.95,
                     "method": "wilson", "included": 1000, "excluded": 0}
                    for i in batch for name in ("exact", "has_digits", "latency_ok")
                ],
            )  # fmt: skip
            connection.execute(
                insert(GateResultRow),
                [
                    {"run_pk": i + 1, "name": "accuracy", "subject": "exact", "active": True, "outcome": "pass",
                     "value": 0.8, "threshold": 0.5, "reasons": ""}
                    for i in batch
                ],
            )  # fmt: skip
            for table, rows in (
                (ArtifactRow, [{"run_pk": i + 1, "name": name, "size": 1, "sha256": "sha256:x", "chunks": 1}
                               for i in batch for name in ("scorecard.json", "scores.jsonl")]),
                (ArtifactChunkRow, [{"run_pk": i + 1, "name": name, "seq": 0, "data": blob}
                                    for i in batch for name in ("scorecard.json", "scores.jsonl")]),
            ):  # fmt: skip
                connection.execute(insert(table), rows)
    engine.dispose()


#: The listings case 10b times, by label: what the table calls each, and its arguments after `history --db DB`.
LISTINGS = {
    "metric": ("`history --metric exact` (20 newest)", ["--metric", "exact"]),
    "branch": ("`history --branch main --gate accuracy`", ["--branch", "main", "--gate", "accuracy"]),
    "json": ("`history --limit 100 --format json`", ["--limit", "100", "--format", "json"]),
}


def listing(python: str, work: Path, runs: int, repeats: int) -> dict[str, Measurement]:
    """``help`` (`evalglass --help`, the process start) and each of :data:`LISTINGS` over a history of ``runs``
    runs, each its best of ``repeats`` in rotation."""
    evalglass = [python, "-m", "evalglass"]
    folder = work / "listing"
    folder.mkdir()
    db = folder / "big.sqlite"
    filled_history(db, runs)
    commands = [("help", [*evalglass, "--help"], folder, {0})]
    commands += [
        (label, [*evalglass, "history", "--db", str(db), *argv], folder, {0}) for label, (_, argv) in LISTINGS.items()
    ]
    return rotated(repeats, commands)


def listing_rows(runs: int, best: dict[str, Measurement]) -> list[str]:
    rows = [f"| {runs:,} runs | reference: `evalglass --help` | {best['help'].seconds:.2f} s | | |"]
    for label, (what, _) in LISTINGS.items():
        found = best[label]
        rows.append(
            f"| {runs:,} runs | case 10b: {what} | {found.seconds:.2f} s (CPU {found.cpu_seconds:.2f} s) | "
            f"{found.peak_rss_mb:.0f} MB | {'met' if found.seconds < 1 else 'MISSED'} (< 1 s) |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    python = sys.executable
    compile_bytecode(python)
    with tempfile.TemporaryDirectory(prefix="evalglass-bench-history-") as tmp:
        rows = recording_rows(args.n, *recording(python, Path(tmp), args.n, args.repeats))
        rows += listing_rows(args.runs, listing(python, Path(tmp), args.runs, args.repeats))
    print(f"machine: {machine()}; best of {args.repeats}")
    print("| examples | case | wall | peak RSS | ratio |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
