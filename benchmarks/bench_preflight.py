"""`evalglass preflight` of a large suite: 2,000 gates on 2,000 metrics over a 100,000-example dataset.

    python benchmarks/bench_preflight.py                      # 2,000 gates, best of 5
    python benchmarks/bench_preflight.py --gates 200 --repeats 1   # a smoke size

The suite is written once (untimed): metrics of six builtin types (half compare with a reference, so the dataset
is hashed for its gold validation), one gate per metric, a ledger that activates every gate with its current
fingerprint (taken from an untimed `preflight --format json`), three of them expired and one stale, so the
measured command finds blocked gates and exits 1. Then, in rotation, best of --repeats:

- reference: `evalglass preflight` of a one-gate suite on the same dataset (start-up, loading and hashing: what
  any preflight pays);
- `evalglass preflight --format json` of the 2,000-gate suite.

Target (issue 19): well under a second of wall time for the large suite; CPU time beside it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import Measurement, compile_bytecode, generate, machine, rotated  # noqa: E402

TYPES = [
    {"type": "exact_match", "field": "answer", "reference": "expected", "normalize": {"case": True}},
    {"type": "contains", "field": "answer", "value": ["alpha", "beta"]},
    {"type": "regex", "field": "answer", "pattern": r"\d+"},
    {"type": "numeric_bounds", "field": "latency_ms", "max": 900},
    {"type": "word_count", "field": "answer", "max": 5},
    {"type": "set_overlap", "field": "tags", "reference": "gold_tags"},
]


def suite(folder: Path, dataset: Path, gates: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    metrics = {f"m{i:04d}": {**TYPES[i % len(TYPES)], "description": f"metric {i}"} for i in range(gates)}
    declared = {f"g{i:04d}": {"metric": f"m{i:04d}", "proposed_threshold": 0.5, "min_n": 10} for i in range(gates)}
    config = {
        "version": 1,
        "dataset": {"name": "bench", "path": str(dataset)},
        "task": {"type": "recorded", "field": "output"},
        "metrics": metrics,
        "gates": declared,
    }
    (folder / "evalglass.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "authority.yaml").write_text("version: 1\n")
    python = sys.executable
    probe = subprocess.run(
        [python, "-m", "evalglass", "preflight", "--config", str(folder / "evalglass.yaml"), "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    found = json.loads(probe.stdout)
    approvals = {}
    for index, gate in enumerate(found["gates"]):
        entry = {"active": True, "threshold": 0.5, "fingerprint": gate["fingerprint"], "approved_on": "2026-11-01"}
        if gates > 10 and index < 3:
            entry["expires_on"] = "2026-01-31"
        if gates > 10 and index == 3:
            entry["fingerprint"] = "sha256:" + "0" * 64
        approvals[gate["name"]] = entry
    ledger = {
        "version": 1,
        "policy": {"max_age_days": 3650},
        "gates": approvals,
        "datasets": {
            "bench": {
                "validated_gold": True,
                "fingerprint": found["dataset"]["fingerprint"] or "",
                "validated_on": "2026-11-01",
            }
        },
    }
    (folder / "authority.yaml").write_text(yaml.safe_dump(ledger, sort_keys=False))
    return folder / "evalglass.yaml"


def measure(gates: int, examples: int, repeats: int) -> tuple[Measurement, Measurement]:
    """(one-gate preflight, ``gates``-gate preflight), each its best of ``repeats`` in rotation."""
    python = sys.executable
    dataset = generate(examples)
    with tempfile.TemporaryDirectory() as tmp:
        big = suite(Path(tmp) / "big", dataset, gates)
        small = suite(Path(tmp) / "small", dataset, 1)
        measured = rotated(
            repeats,
            [
                ("reference", [python, "-m", "evalglass", "preflight", "--config", str(small)], Path(tmp), {0}),
                (
                    "preflight",
                    [python, "-m", "evalglass", "preflight", "--config", str(big), "--format", "json"],
                    Path(tmp),
                    {1} if gates > 10 else {0},
                ),
            ],
        )
    return measured["reference"], measured["preflight"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gates", type=int, default=2000)
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    compile_bytecode(sys.executable)
    ref, case = measure(args.gates, args.examples, args.repeats)
    print(f"machine: {machine()}; best of {args.repeats}; dataset {args.examples:,} examples")
    print("| suite | wall | CPU | peak RSS | vs one gate |")
    print("|---|---|---|---|---|")
    print(f"| 1 gate (reference) | {ref.seconds:.2f} s | {ref.cpu_seconds:.2f} s | {ref.peak_rss_mb:.0f} MB | |")
    print(
        f"| {args.gates:,} gates | {case.seconds:.2f} s | {case.cpu_seconds:.2f} s | {case.peak_rss_mb:.0f} MB | "
        f"{case.seconds / ref.seconds:.2f}× wall, {case.cpu_seconds / ref.cpu_seconds:.2f}× CPU |"
    )


if __name__ == "__main__":
    main()
